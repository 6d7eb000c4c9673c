#include "store/db.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "store/pg.h"

namespace ib::store {

namespace fs = std::filesystem;

namespace {

// SQL in messages: one line, bounded, so an error stays readable.
std::string sql_excerpt(std::string_view sql) {
  std::string out;
  bool space = false;
  for (char c : sql) {
    if (c == '\n' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
    if (out.size() > 200) {
      out += "...";
      break;
    }
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Database

namespace {

// A reader's checks before SQLite sees the file: SQLite would take a folder for a missing file
// and an empty file for an empty database.
// Opens `file` with `flags` (one connection per thread: no mutex), with extended result codes
// and the busy timeout set; both open paths (read-only and read-write) use it.
Expected<sqlite3*> open_handle(const fs::path& file, int flags, const DatabaseOptions& options) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(file.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return Error{fmt::format("{}: cannot open database: {}", file.string(), msg)};
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, static_cast<int>(options.busy_timeout.count()));
  return raw;
}

Status check_readable(const fs::path& file) {
  std::error_code ec;
  const auto st = fs::status(file, ec);
  if (!fs::exists(st)) return Error{fmt::format("{}: no such database file", file.string())};
  if (fs::is_directory(st)) {
    return Error{fmt::format("{}: a folder, not a database file", file.string())};
  }
  if (fs::is_regular_file(st) && fs::file_size(file, ec) == 0 && !ec) {
    return Error{fmt::format("{}: an empty file, not a database", file.string())};
  }
  return {};
}

// `file` as an SQLite URI that opens it immutable (no locks, no -shm, no -wal): for a WAL database
// in a folder this process cannot write, where SQLite cannot create the shared-memory file that
// even a reader of a WAL database needs.
std::string immutable_uri(const fs::path& file) {
  std::string uri = "file:";
  for (const unsigned char c : fs::absolute(file).string()) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
      uri += fmt::format("%{:02X}", c);
    } else {
      uri += static_cast<char>(c);
    }
  }
  return uri + "?immutable=1";
}

// Whether SQLite refused a read because it could not write beside the file (the -shm of a WAL
// database in a read-only folder).
bool refused_for_writing(sqlite3* raw) {
  const int rc = sqlite3_errcode(raw) & 0xff;
  return rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN;
}

// A read-only connection's set-up and first read; nullopt when it worked, else the error and
// whether SQLite refused for want of writing beside the file.
std::optional<std::pair<Error, bool>> probe_read_only(Database& db, sqlite3* raw) {
  // query_only: even a statement that would write is refused by this connection. The schema
  // query is where a file that is not a database shows.
  if (auto st = db.exec("PRAGMA query_only = 1; PRAGMA foreign_keys = ON"); !st) {
    return std::make_pair(st.error(), refused_for_writing(raw));
  }
  auto probe = db.prepare("SELECT count(*) FROM sqlite_schema");
  if (!probe || !probe->step()) {
    return std::make_pair(Error{fmt::format("{}: not an SQLite database ({})", db.file().string(),
                                            sqlite3_errmsg(raw))},
                          refused_for_writing(raw));
  }
  return std::nullopt;
}

}  // namespace

Expected<Database> Database::open_read_only(const fs::path& file, const DatabaseOptions& options) {
  if (auto st = check_readable(file); !st) return st.error();
  auto handle = open_handle(file, SQLITE_OPEN_READONLY, options);
  if (!handle) return handle.error();
  Database db(*handle, file);
  auto failed = probe_read_only(db, *handle);
  if (!failed) return db;
  if (!failed->second) return failed->first;
  // A WAL database whose folder this process cannot write (docs/sweep.md, the results database).
  // With no -wal file beside it every committed row is in the file itself, and reading it
  // immutable is exact; a -wal file holds rows that only a writer can fold in.
  std::error_code ec;
  if (fs::exists(fs::path(file.string() + "-wal"), ec)) {
    return Error{fmt::format(
        "{}: cannot read it without writing beside it: {}-wal holds rows not yet in the database "
        "file, and reading them needs {}-shm, which this user cannot create in {} (open it once "
        "as a user who can write there, or copy the file and its -wal to a folder you can write)",
        file.string(), file.string(), file.string(), file.parent_path().string())};
  }
  sqlite3* raw = nullptr;
  const std::string uri = immutable_uri(file);
  if (sqlite3_open_v2(uri.c_str(), &raw,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    return Error{fmt::format("{}: cannot open database: {}", file.string(), msg)};
  }
  sqlite3_extended_result_codes(raw, 1);
  Database immutable(raw, file);
  if (auto again = probe_read_only(immutable, raw)) return again->first;
  return immutable;
}

std::string pg_ddl(std::string_view sqlite_ddl) {
  // Word by word outside quotes: the three types that differ.
  std::string out;
  size_t i = 0;
  auto word_at = [&](size_t at, std::string_view w) {
    if (sqlite_ddl.compare(at, w.size(), w) != 0) return false;
    const size_t end = at + w.size();
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    return (at == 0 || !ident(sqlite_ddl[at - 1])) &&
           (end >= sqlite_ddl.size() || !ident(sqlite_ddl[end]));
  };
  while (i < sqlite_ddl.size()) {
    const char c = sqlite_ddl[i];
    if (c == '\'') {
      const size_t end = sqlite_ddl.find('\'', i + 1);
      const size_t stop = end == std::string_view::npos ? sqlite_ddl.size() : end + 1;
      out.append(sqlite_ddl.substr(i, stop - i));
      i = stop;
    } else if (word_at(i, "INTEGER PRIMARY KEY")) {
      out += "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY";
      i += 19;
    } else if (word_at(i, "INTEGER")) {
      out += "BIGINT";
      i += 7;
    } else if (word_at(i, "REAL")) {
      out += "DOUBLE PRECISION";
      i += 4;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

Expected<Database> Database::connect(const std::string& url, bool read_only) {
  auto c = PgConnection::connect(url);
  if (!c) return c.error();
  Database db(nullptr, fs::path(c->where()));
  db.pg_ = std::make_unique<PgConnection>(std::move(*c));
  db.pg_changes_ = std::make_shared<int64_t>(0);
  if (read_only) {
    if (auto st = db.pg_->set_session("SET default_transaction_read_only = on"); !st) {
      return st.error();
    }
  }
  return db;
}

Expected<Database> Database::open(const fs::path& file, const DatabaseOptions& options) {
  if (options.read_only) return open_read_only(file, options);
  int flags = SQLITE_OPEN_READWRITE;
  if (options.create) {
    flags |= SQLITE_OPEN_CREATE;
    if (file.has_parent_path()) {
      std::error_code ec;
      fs::create_directories(file.parent_path(), ec);
      if (ec) {
        return Error{fmt::format("{}: cannot create folder {}: {}", file.string(),
                                 file.parent_path().string(), ec.message())};
      }
    }
  } else if (!fs::exists(file)) {
    return Error{fmt::format("{}: no such database file", file.string())};
  }
  auto handle = open_handle(file, flags, options);
  if (!handle) return handle.error();
  sqlite3* raw = *handle;
  Database db(raw, file);
  // journal_mode=WAL is persistent in the file; the others are per connection. The first query
  // is also where a file that is not a database is detected.
  // Switching the journal mode can answer SQLITE_BUSY at once, without the busy handler, while
  // another connection is creating the same file: retry until the busy timeout.
  const auto deadline = std::chrono::steady_clock::now() + options.busy_timeout;
  while (true) {
    auto st =
        db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
    if (st) break;
    if ((sqlite3_errcode(raw) & 0xff) != SQLITE_BUSY ||
        std::chrono::steady_clock::now() >= deadline) {
      return st.error();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return db;
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      file_(std::move(other.file_)),
      pg_(std::move(other.pg_)),
      pg_changes_(std::move(other.pg_changes_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    file_ = std::move(other.file_);
    pg_ = std::move(other.pg_);
    pg_changes_ = std::move(other.pg_changes_);
  }
  return *this;
}

Database::~Database() {
  sqlite3_close_v2(db_);
}

Status Database::exec(std::string_view sql) {
  if (pg_) return pg_->exec(sql);
  std::string text(sql);
  char* msg = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &msg);
  if (rc != SQLITE_OK) {
    std::string reason = msg ? msg : sqlite3_errstr(rc);
    sqlite3_free(msg);
    return Error{fmt::format("{}: {}: {}", file_.string(), sql_excerpt(sql), reason)};
  }
  return {};
}

Expected<Statement> Database::prepare(std::string_view sql) {
  if (pg_) {
    // PostgreSQL checks the statement when it runs (the first step()).
    Statement s(nullptr, file_.string(), nullptr, std::string(sql));
    s.pg_ = pg_.get();
    s.pg_changes_ = pg_changes_;
    return s;
  }
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return error(sql_excerpt(sql));
  }
  return Statement(db_, file_.string(), stmt, std::string(sql));
}

Expected<Database> Database::copy_to_memory(int64_t max_bytes) {
  if (pg_) return Error{fmt::format("{}: a server's database is not copied", file_.string())};
  auto size = prepare("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()");
  if (!size) return size.error();
  auto row = size->step();
  if (!row) return row.error();
  const int64_t bytes = *row ? size->column_int(0) : 0;
  if (bytes > max_bytes) {
    return Error{
        fmt::format("it is too large to read through a copy in memory ({} MiB; at most "
                    "{} MiB)",
                    bytes >> 20, max_bytes >> 20)};
  }
  sqlite3* mem = nullptr;
  if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string msg = mem ? sqlite3_errmsg(mem) : "out of memory";
    sqlite3_close(mem);
    return Error{fmt::format("cannot open a database in memory: {}", msg)};
  }
  Database copy(mem, file_);
  sqlite3_extended_result_codes(mem, 1);
  // One step of all pages: one read transaction on the source, so one consistent snapshot even
  // while a sweep writes to it.
  sqlite3_backup* b = sqlite3_backup_init(mem, "main", db_, "main");
  if (b == nullptr) return copy.error("copying the database into memory");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int rc;
  while (((rc = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE) {
    return Error{fmt::format("{}: copying the database into memory: {}", file_.string(),
                             sqlite3_errstr(rc))};
  }
  if (auto st = copy.exec("PRAGMA foreign_keys = ON"); !st) return st.error();
  return copy;
}

Expected<int64_t> Database::user_version() {
  if (pg_) {
    auto table = pg_->query("SELECT to_regclass('inferbench_schema') IS NOT NULL");
    if (!table) return table.error();
    if (table->text(0, 0) != "t") return int64_t{0};
    auto v = pg_->query("SELECT max(version) FROM inferbench_schema");
    if (!v) return v.error();
    return v->integer(0, 0).value_or(0);
  }
  auto stmt = prepare("PRAGMA user_version");
  if (!stmt) return stmt.error();
  auto row = stmt->step();
  if (!row) return row.error();
  return *row ? stmt->column_int(0) : 0;
}

Status Database::set_user_version(int64_t version) {
  if (pg_) {
    if (auto st = pg_->exec("CREATE TABLE IF NOT EXISTS inferbench_schema (version BIGINT NOT "
                            "NULL); DELETE FROM inferbench_schema");
        !st) {
      return st;
    }
    auto r = pg_->query("INSERT INTO inferbench_schema (version) VALUES ($1)",
                        {std::to_string(version)});
    if (!r) return r.error();
    return {};
  }
  // PRAGMA takes no parameters; the value is our own integer.
  return exec(fmt::format("PRAGMA user_version = {}", version));
}

bool Database::in_transaction() const {
  if (pg_) return pg_->in_transaction();
  return db_ != nullptr && sqlite3_get_autocommit(db_) == 0;
}

bool Database::reachable() {
  if (!pg_) return true;
  return pg_->alive() || (!pg_->in_transaction() && pg_->reconnect());
}

int64_t Database::last_insert_rowid() const {
  if (pg_) {
    auto r = pg_->query("SELECT lastval()");
    return r && r->rows() == 1 ? r->integer(0, 0).value_or(0) : 0;
  }
  return sqlite3_last_insert_rowid(db_);
}

int64_t Database::changes() const {
  if (pg_) return pg_changes_ ? *pg_changes_ : 0;
  return sqlite3_changes(db_);
}

Error Database::error(std::string_view what) const {
  if (pg_) return Error{fmt::format("{}: {}", file_.string(), what)};
  return Error{fmt::format("{}: {}: {}", file_.string(), what, sqlite3_errmsg(db_))};
}

// ---------------------------------------------------------------------------------------------
// Statement

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      file_(std::move(other.file_)),
      stmt_(std::exchange(other.stmt_, nullptr)),
      sql_(std::move(other.sql_)),
      bind_error_(std::move(other.bind_error_)),
      pg_(std::exchange(other.pg_, nullptr)),
      pg_changes_(std::move(other.pg_changes_)),
      params_(std::move(other.params_)),
      result_(std::move(other.result_)),
      row_(other.row_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    file_ = std::move(other.file_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    sql_ = std::move(other.sql_);
    bind_error_ = std::move(other.bind_error_);
    pg_ = std::exchange(other.pg_, nullptr);
    pg_changes_ = std::move(other.pg_changes_);
    params_ = std::move(other.params_);
    result_ = std::move(other.result_);
    row_ = other.row_;
  }
  return *this;
}

Statement& Statement::pg_bind(int index, std::optional<std::string> value) {
  if (index < 1 || index > 32766) {
    if (!bind_error_) {
      bind_error_ =
          Error{fmt::format("{}: {}: binding parameter {}", file_, sql_excerpt(sql_), index)};
    }
    return *this;
  }
  if (params_.size() < static_cast<size_t>(index)) params_.resize(static_cast<size_t>(index));
  params_[static_cast<size_t>(index - 1)] = std::move(value);
  result_.reset();  // a new binding runs the statement again
  row_ = -1;
  return *this;
}

std::string Statement::pg_text(int column) const {
  if (!result_ || row_ < 0 || row_ >= result_->rows()) return {};
  return result_->text(row_, column);
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Error Statement::error(std::string_view what) const {
  return Error{fmt::format("{}: {}: {}", file_, what, sqlite3_errmsg(db_))};
}

void Statement::check_bind(int rc, int index) {
  if (rc != SQLITE_OK && !bind_error_) {
    bind_error_ = error(fmt::format("{}: binding parameter {}", sql_excerpt(sql_), index));
  }
}

Statement& Statement::bind(int index, int64_t value) {
  if (pg_) return pg_bind(index, std::to_string(value));
  check_bind(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (std::isnan(value)) return bind_null(index);
  if (pg_) {
    // Every double exactly (17 significant digits); infinities as PostgreSQL spells them.
    if (std::isinf(value)) return pg_bind(index, value > 0 ? "Infinity" : "-Infinity");
    return pg_bind(index, fmt::format("{:.17g}", value));
  }
  check_bind(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  if (pg_) return pg_bind(index, std::string(value));
  check_bind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
  return *this;
}

Statement& Statement::bind(int index, std::optional<int64_t> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  if (pg_) return pg_bind(index, std::nullopt);
  check_bind(sqlite3_bind_null(stmt_, index), index);
  return *this;
}

Expected<bool> Statement::step() {
  if (bind_error_) return *bind_error_;
  if (pg_) {
    if (!result_) {
      auto r = pg_->query(sql_, params_);
      if (!r) return r.error();
      result_ = std::make_shared<PgResult>(std::move(*r));
      if (pg_changes_) *pg_changes_ = result_->affected();
      row_ = -1;
    }
    ++row_;
    return row_ < result_->rows();
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return error(sql_excerpt(sql_));
}

Status Statement::run() {
  for (;;) {
    auto row = step();
    if (!row) return row.error();
    if (!*row) return {};
  }
}

void Statement::reset() {
  if (pg_) {
    result_.reset();
    row_ = -1;
    return;
  }
  sqlite3_reset(stmt_);
}

bool Statement::column_is_null(int column) const {
  if (pg_) return !result_ || row_ < 0 || result_->is_null(row_, column);
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::column_int(int column) const {
  if (pg_) {
    // As SQLite reads a real as an integer: truncated; NULL and text that is no number read 0.
    const std::string t = pg_text(column);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc() && p == t.data() + t.size()) return v;
    double d = 0;
    auto [q, ec2] = std::from_chars(t.data(), t.data() + t.size(), d);
    return ec2 == std::errc() && std::isfinite(d) ? static_cast<int64_t>(d) : 0;
  }
  return sqlite3_column_int64(stmt_, column);
}

double Statement::column_double(int column) const {
  if (column_is_null(column)) return std::nan("");
  if (pg_) {
    const std::string t = pg_text(column);
    if (t == "Infinity") return std::numeric_limits<double>::infinity();
    if (t == "-Infinity") return -std::numeric_limits<double>::infinity();
    double d = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
    return ec == std::errc() ? d : std::nan("");
  }
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::column_text(int column) const {
  if (pg_) return pg_text(column);
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::optional<int64_t> Statement::column_optional_int(int column) const {
  if (column_is_null(column)) return std::nullopt;
  return column_int(column);
}

// ---------------------------------------------------------------------------------------------
// Transaction

namespace {
// The store's writers' lock on PostgreSQL (a session-level advisory lock; one key per database).
constexpr std::string_view kPgWriterLock = "SELECT pg_advisory_lock(7305001)";
constexpr std::string_view kPgWriterUnlock = "SELECT pg_advisory_unlock(7305001)";
}  // namespace

Expected<Transaction> Transaction::begin(Database& db) {
  if (db.is_postgres()) {
    // Writers one at a time, as SQLite's BEGIN IMMEDIATE makes them: a lock every writer of the
    // store takes first (readers never wait for it). Taken before BEGIN, not inside: a
    // transaction reads the catalog as it was when it began, so a writer that waited would not
    // see the tables its predecessor just created.
    if (auto st = db.exec(kPgWriterLock); !st) return st.error();
    if (auto st = db.exec("BEGIN"); !st) {
      (void)db.exec(kPgWriterUnlock);
      return st.error();
    }
    db.pg_block(true);
    return Transaction(&db);
  }
  if (auto st = db.exec("BEGIN IMMEDIATE"); !st) {
    if (st.error().message.find("database is locked") == std::string::npos) return st.error();
    return Error{fmt::format(
        "{} (another process held its write lock for longer than the wait allows; `inferbench "
        "runs --db {}` lists the runs still being measured)",
        st.error().message, db.file().string())};
  }
  return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() {
  rollback();
}

Status Transaction::commit() {
  if (db_ == nullptr) return Error{"transaction already finished"};
  auto st = db_->exec("COMMIT");
  if (!st) {
    rollback();
    return st;
  }
  if (db_->is_postgres()) {
    db_->pg_block(false);
    (void)db_->exec(kPgWriterUnlock);
  }
  db_ = nullptr;
  return {};
}

void Transaction::rollback() {
  if (db_ == nullptr) return;
  // Fails harmlessly when SQLite already rolled back on its own (e.g. after SQLITE_FULL).
  if (db_->in_transaction()) (void)db_->exec("ROLLBACK");
  // A connection that went away took its lock with it (the server releases a session's locks).
  if (db_->is_postgres()) {
    db_->pg_block(false);
    (void)db_->exec(kPgWriterUnlock);
  }
  db_ = nullptr;
}

}  // namespace ib::store
