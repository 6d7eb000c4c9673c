// A thin RAII wrapper over the SQLite3 C API: one connection (Database), prepared statements
// (Statement) and a transaction guard (Transaction) that rolls back unless committed. Errors are
// values (ib::Error) naming the database file, the SQL and sqlite3_errmsg.
//
// The same three over a PostgreSQL server (a team's shared store, docs/store.md): a Database
// connected to a postgresql:// URL runs the same statement texts (SQLite's ?N placeholders
// become $N; store/pg.h), binds the same parameters and reads the same columns; the schema's DDL
// is translated once (pg_ddl). Its file() is the URL with the password hidden.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "store/pg.h"

struct sqlite3;
struct sqlite3_stmt;

namespace ib::store {

/// SQLite's DDL as PostgreSQL takes it: INTEGER PRIMARY KEY becomes an identity column, INTEGER
/// BIGINT and REAL DOUBLE PRECISION (SQLite's integers are 64-bit and its reals doubles).
std::string pg_ddl(std::string_view sqlite_ddl);

struct DatabaseOptions {
  /// How long a statement waits for a lock held by another connection before failing with
  /// "database is locked".
  std::chrono::milliseconds busy_timeout{10000};
  /// Create the file (and its missing parent folders) when absent.
  bool create = true;
  /// Open read-only (implies !create): nothing about the file is changed (no journal-mode
  /// switch, no migration; SQLite may create the -wal and -shm files beside it, as any reader
  /// of a WAL database does). A missing file, a folder, an empty file or one that is not a
  /// database is an error naming it.
  bool read_only = false;
};

class Statement;

/// One SQLite connection, configured for results: WAL journal, synchronous=NORMAL (a process
/// killed at any instant leaves a consistent database; see store.h), foreign keys ON, busy timeout.
/// Not thread-safe: callers serialize use of one Database (Store does).
class Database {
 public:
  /// Opens (or creates, see DatabaseOptions) the database file. Error names the path.
  static Expected<Database> open(const std::filesystem::path& file,
                                 const DatabaseOptions& options = {});
  /// Connects to a PostgreSQL server (store/pg.h). Read-only: every transaction of the session
  /// is read-only (the server refuses a write).
  static Expected<Database> connect(const std::string& url, bool read_only);
  bool is_postgres() const { return pg_ != nullptr; }
  /// PostgreSQL: the caller's transaction is open (PgConnection::set_in_block).
  void pg_block(bool in) {
    if (pg_) pg_->set_in_block(in);
  }

  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  /// Runs one or more ';'-separated statements that return no rows of interest.
  Status exec(std::string_view sql);

  /// Compiles one statement. Error names the SQL.
  Expected<Statement> prepare(std::string_view sql);

  /// A copy of the whole database in memory (one consistent snapshot), for reading an older
  /// schema through a migrated copy; its file() is this one's. Error when the database is larger
  /// than `max_bytes`.
  Expected<Database> copy_to_memory(int64_t max_bytes);

  /// PRAGMA user_version, the schema version (store.h); on PostgreSQL, the one row of
  /// inferbench_schema (0 when there is none).
  Expected<int64_t> user_version();
  Status set_user_version(int64_t version);
  /// Inside a transaction (BEGIN without its COMMIT or ROLLBACK yet).
  bool in_transaction() const;
  /// Whether the database can be written now: a file always is (its errors are other errors); a
  /// server's connection is tried again when it was lost (outside a transaction).
  bool reachable();

  /// Rowid of the last successful INSERT on this connection (PostgreSQL: lastval(), the id the
  /// last INSERT into a table with an identity column drew).
  int64_t last_insert_rowid() const;

  /// Rows changed by the last INSERT/UPDATE/DELETE.
  int64_t changes() const;

  /// The error for a failed call on this connection: "<file>: <what>: <sqlite message>".
  Error error(std::string_view what) const;

  const std::filesystem::path& file() const { return file_; }
  sqlite3* handle() const { return db_; }

 private:
  Database(sqlite3* db, std::filesystem::path file) : db_(db), file_(std::move(file)) {}
  static Expected<Database> open_read_only(const std::filesystem::path& file,
                                           const DatabaseOptions& options);
  sqlite3* db_ = nullptr;
  std::filesystem::path file_;
  std::unique_ptr<PgConnection> pg_;
  std::shared_ptr<int64_t> pg_changes_;  // rows the last statement changed (Statement writes it)
};

/// A prepared statement. Binding indexes start at 1, column indexes at 0 (as in SQLite). A bind
/// failure is remembered and reported by the next step().
/// REQUIRES: destroyed before the connection it was prepared on is closed.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  /// NaN binds NULL (SQLite does the same).
  Statement& bind(int index, double value);
  /// The text is copied.
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  /// nullopt binds NULL.
  Statement& bind(int index, std::optional<int64_t> value);
  Statement& bind_null(int index);

  /// Advances: true when a row is available, false when done. Error names the SQL.
  Expected<bool> step();
  /// Steps to completion, for statements whose rows are not needed (INSERT, UPDATE).
  Status run();
  /// Makes the statement runnable again; bindings are kept.
  void reset();

  bool column_is_null(int column) const;
  int64_t column_int(int column) const;
  /// NULL reads as NaN.
  double column_double(int column) const;
  std::string column_text(int column) const;
  std::optional<int64_t> column_optional_int(int column) const;

  const std::string& sql() const { return sql_; }

 private:
  friend class Database;
  Statement(sqlite3* db, std::string file, sqlite3_stmt* stmt, std::string sql)
      : db_(db), file_(std::move(file)), stmt_(stmt), sql_(std::move(sql)) {}
  void check_bind(int rc, int index);
  Error error(std::string_view what) const;
  // PostgreSQL: parameters are kept until the first step(), which runs the statement.
  Statement& pg_bind(int index, std::optional<std::string> value);
  std::string pg_text(int column) const;

  sqlite3* db_ = nullptr;
  std::string file_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
  std::optional<Error> bind_error_;
  PgConnection* pg_ = nullptr;
  std::shared_ptr<int64_t> pg_changes_;
  std::vector<std::optional<std::string>> params_;
  std::shared_ptr<PgResult> result_;  // after the first step()
  int row_ = -1;
};

/// BEGIN IMMEDIATE ... COMMIT; rolls back at destruction unless commit() succeeded. IMMEDIATE takes
/// the write lock at the start, so a writer waits (busy timeout) instead of failing mid-way.
class Transaction {
 public:
  static Expected<Transaction> begin(Database& db);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  /// REQUIRES: not yet committed or rolled back.
  Status commit();
  /// Idempotent; also what the destructor does.
  void rollback();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_ = nullptr;
};

}  // namespace ib::store
