#include "store/pg.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <cctype>
#include <charconv>

#include "core/redact.h"

namespace ib::store {

bool is_postgres_url(std::string_view s) {
  return s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0;
}

std::string redact_pg_url(std::string_view url) {
  std::string out(url);
  // user:password@ in the authority.
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t end = out.find_first_of("/?#", start);
    const size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at != std::string::npos && at > start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) {
        out.replace(colon + 1, at - colon - 1, std::string(kRedacted));
      }
    }
  }
  // ?password=... or &password=... in the query.
  for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
    if (p == 0 || (out[p - 1] != '?' && out[p - 1] != '&')) continue;
    const size_t v = p + 9;
    const size_t e = out.find_first_of("&#", v);
    out.replace(v, (e == std::string::npos ? out.size() : e) - v, std::string(kRedacted));
  }
  return out;
}

std::string to_pg_placeholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 8);
  int next = 1;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '\'' || c == '"') {  // a quoted string or identifier, '' / "" escapes included
      const size_t end = sql.find(c, i + 1);
      const size_t stop = end == std::string_view::npos ? sql.size() : end + 1;
      out.append(sql.substr(i, stop - i));
      i = stop - 1;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {  // a line comment
      const size_t end = sql.find('\n', i);
      const size_t stop = end == std::string_view::npos ? sql.size() : end;
      out.append(sql.substr(i, stop - i));
      i = stop - 1;
    } else if (c == '?') {
      size_t j = i + 1;
      while (j < sql.size() && std::isdigit(static_cast<unsigned char>(sql[j]))) ++j;
      if (j > i + 1) {
        out += '$';
        out.append(sql.substr(i + 1, j - i - 1));
      } else {
        out += fmt::format("${}", next);
      }
      ++next;
      i = j - 1;
    } else {
      out += c;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

PgResult::PgResult(PgResult&& o) noexcept : r_(o.r_) {
  o.r_ = nullptr;
}
PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_) PQclear(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}
PgResult::~PgResult() {
  if (r_) PQclear(r_);
}
int PgResult::rows() const {
  return r_ ? PQntuples(r_) : 0;
}
int PgResult::columns() const {
  return r_ ? PQnfields(r_) : 0;
}
bool PgResult::is_null(int row, int column) const {
  return !r_ || PQgetisnull(r_, row, column) != 0;
}
std::string PgResult::text(int row, int column) const {
  if (is_null(row, column)) return {};
  return std::string(PQgetvalue(r_, row, column),
                     static_cast<size_t>(PQgetlength(r_, row, column)));
}
std::optional<int64_t> PgResult::integer(int row, int column) const {
  if (is_null(row, column)) return std::nullopt;
  const std::string t = text(row, column);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}
int64_t PgResult::affected() const {
  if (!r_) return 0;
  const char* n = PQcmdTuples(r_);
  int64_t v = 0;
  if (n && *n) std::from_chars(n, n + std::char_traits<char>::length(n), v);
  return v;
}

// ---------------------------------------------------------------------------------------------

namespace {

std::string statement_head(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  const std::string line(s.substr(0, s.find('\n')));
  return line.size() > 120 ? line.substr(0, 117) + "..." : line;
}

std::string trimmed(const char* s) {
  std::string out = s ? s : "";
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out;
}

}  // namespace

Expected<PgConnection> PgConnection::connect(const std::string& url) {
  const std::string where = redact_pg_url(url);
  if (!is_postgres_url(url)) {
    return usage_error(fmt::format("{}: not a PostgreSQL URL (postgresql://...)", where));
  }
  const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
  const char* values[] = {url.c_str(), "10", "inferbench", nullptr};
  // expand_dbname: the URL's own settings win over these defaults.
  pg_conn* c = PQconnectdbParams(keys, values, 1);
  if (c == nullptr) return Error{fmt::format("{}: cannot allocate a connection", where)};
  if (const char* pw = PQpass(c); pw && *pw) add_secret(pw);
  if (PQstatus(c) != CONNECTION_OK) {
    const std::string why = redact_text(trimmed(PQerrorMessage(c)));
    PQfinish(c);
    return Error{fmt::format("{}: cannot connect: {}", where, why)};
  }
  // Every client speaks UTF-8 and UTC with the store.
  PgConnection conn(c, where);
  // Server notices ("... does not exist, skipping") are not ours to print.
  PQsetNoticeProcessor(
      c, [](void*, const char*) {}, nullptr);
  if (auto st = conn.set_session("SET client_encoding = 'UTF8'; SET TIME ZONE 'UTC'"); !st) {
    return st.error();
  }
  return conn;
}

PgConnection::PgConnection(PgConnection&& o) noexcept
    : c_(o.c_),
      where_(std::move(o.where_)),
      session_(std::move(o.session_)),
      reconnects_(o.reconnects_),
      in_block_(o.in_block_) {
  o.c_ = nullptr;
}
PgConnection& PgConnection::operator=(PgConnection&& o) noexcept {
  if (this != &o) {
    if (c_) PQfinish(c_);
    c_ = o.c_;
    where_ = std::move(o.where_);
    session_ = std::move(o.session_);
    reconnects_ = o.reconnects_;
    in_block_ = o.in_block_;
    o.c_ = nullptr;
  }
  return *this;
}

bool PgConnection::reconnect() {
  if (c_ == nullptr) return false;
  if (PQstatus(c_) == CONNECTION_OK) return true;
  PQreset(c_);
  if (PQstatus(c_) != CONNECTION_OK) return false;
  ++reconnects_;
  for (const auto& s : session_) {
    PgResult r(PQexec(c_, s.c_str()));
    if (!r.r_ || PQresultStatus(r.r_) != PGRES_COMMAND_OK) return false;
  }
  return true;
}

Status PgConnection::set_session(std::string_view sql) {
  session_.emplace_back(sql);
  return exec(sql);
}
PgConnection::~PgConnection() {
  if (c_) PQfinish(c_);
}

bool PgConnection::alive() const {
  return c_ && PQstatus(c_) == CONNECTION_OK;
}

bool PgConnection::in_transaction() const {
  if (c_ == nullptr) return false;
  const auto t = PQtransactionStatus(c_);
  return t != PQTRANS_IDLE && t != PQTRANS_UNKNOWN;
}

Status PgConnection::exec(std::string_view sql) {
  if (!c_) return Error{fmt::format("{}: not connected", where_)};
  if (!in_block_) reconnect();
  const std::string text(sql);
  PgResult r(PQexec(c_, text.c_str()));
  const auto status = r.r_ ? PQresultStatus(r.r_) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return Status::Ok();
  const char* state = r.r_ ? PQresultErrorField(r.r_, PG_DIAG_SQLSTATE) : nullptr;
  return Error{fmt::format("{}: {}: {}{}", where_, statement_head(sql),
                           redact_text(trimmed(PQerrorMessage(c_))),
                           state ? fmt::format(" (SQLSTATE {})", state) : "")};
}

Expected<PgResult> PgConnection::query(std::string_view sql, const std::vector<PgParam>& params) {
  if (!c_) return Error{fmt::format("{}: not connected", where_)};
  // Not inside a transaction: a cut one is the server's to roll back, and its statements fail.
  if (!in_block_) reconnect();
  const std::string text = to_pg_placeholders(sql);
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  PgResult r(PQexecParams(c_, text.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                          nullptr, nullptr, 0));
  const auto status = r.r_ ? PQresultStatus(r.r_) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return r;
  const char* state = r.r_ ? PQresultErrorField(r.r_, PG_DIAG_SQLSTATE) : nullptr;
  return Error{fmt::format("{}: {}: {}{}", where_, statement_head(sql),
                           redact_text(trimmed(PQerrorMessage(c_))),
                           state ? fmt::format(" (SQLSTATE {})", state) : "")};
}

}  // namespace ib::store
