// A PostgreSQL connection through libpq (docs/store.md): what a team's shared results store is
// built on, beside the SQLite file (store/db.h). Parameters are always sent apart from the SQL
// text (PQexecParams), never spliced into it; the SQL may use SQLite's ?N placeholders, translated
// to PostgreSQL's $N, so that one statement text serves both stores. Every message names the
// server by its URL with the password hidden; a password is never printed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

struct pg_conn;
struct pg_result;

namespace ib::store {

/// postgresql:// or postgres:// (libpq's URI forms).
bool is_postgres_url(std::string_view s);

/// The URL with any password hidden (user:password@ and ?password=), for messages.
std::string redact_pg_url(std::string_view url);

/// SQLite-style ?N (and bare ?, numbered in order) to PostgreSQL's $N, outside quoted strings,
/// quoted identifiers and comments.
std::string to_pg_placeholders(std::string_view sql);

/// One statement's rows, as text (PostgreSQL's text format).
class PgResult {
 public:
  PgResult(PgResult&&) noexcept;
  PgResult& operator=(PgResult&&) noexcept;
  ~PgResult();
  int rows() const;
  int columns() const;
  bool is_null(int row, int column) const;
  std::string text(int row, int column) const;
  /// The value as an integer; nullopt when NULL or not an integer.
  std::optional<int64_t> integer(int row, int column) const;
  /// Rows a command changed (INSERT, UPDATE, DELETE); 0 for others.
  int64_t affected() const;

 private:
  friend class PgConnection;
  explicit PgResult(pg_result* r) : r_(r) {}
  pg_result* r_ = nullptr;
};

/// A parameter: text, or NULL.
using PgParam = std::optional<std::string>;

class PgConnection {
 public:
  /// Connects (a 10 s connect timeout unless the URL sets one). The password may come from the
  /// URL, PGPASSWORD or PGPASSFILE (libpq's own rules); it is registered as a secret (never
  /// printed). Error names the redacted URL and libpq's reason.
  static Expected<PgConnection> connect(const std::string& url);

  PgConnection(PgConnection&&) noexcept;
  PgConnection& operator=(PgConnection&&) noexcept;
  ~PgConnection();

  /// One or more ';'-separated statements without parameters.
  Status exec(std::string_view sql);
  /// One statement with parameters ($N or ?N placeholders). Error names the server, the SQL's
  /// first line and PostgreSQL's message (with its SQLSTATE).
  Expected<PgResult> query(std::string_view sql, const std::vector<PgParam>& params = {});
  /// Whether the connection is still up (libpq's status; a server that went away reads false
  /// after the next statement fails).
  bool alive() const;
  /// Inside a transaction block (or one that failed and awaits its ROLLBACK).
  bool in_transaction() const;
  /// A connection that went away is opened again (the same URL, the same session settings);
  /// statements call it before they run. Nothing of a transaction that was cut is kept: the
  /// server rolled it back. True when connected afterwards.
  bool reconnect();
  /// A session setting every (re)connection applies, e.g. "SET default_transaction_read_only =
  /// on".
  Status set_session(std::string_view sql);
  /// How many times the connection was opened again.
  int reconnects() const { return reconnects_; }
  /// Set while the caller's transaction is open (Transaction): a connection lost inside it is
  /// never opened again under it (its COMMIT would then succeed on an empty session).
  void set_in_block(bool in) { in_block_ = in; }
  /// The redacted URL, for messages.
  const std::string& where() const { return where_; }

 private:
  PgConnection(pg_conn* c, std::string where) : c_(c), where_(std::move(where)) {}
  pg_conn* c_ = nullptr;
  std::string where_;
  std::vector<std::string> session_;
  int reconnects_ = 0;
  bool in_block_ = false;
};

}  // namespace ib::store
