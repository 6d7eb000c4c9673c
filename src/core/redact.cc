#include "core/redact.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <mutex>
#include <optional>
#include <set>

namespace ib {

namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}
bool is_lower(char c) {
  return c >= 'a' && c <= 'z';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Characters of a name (api_key, --api-key, a.b.api_key).
bool is_name_char(char c) {
  return is_alnum(c) || c == '_' || c == '-' || c == '.';
}
// Characters of a token-like word (base64url, JWT dots, base64 '+' and '/').
bool is_token_char(char c) {
  return is_name_char(c) || c == '+' || c == '/' || c == '~';
}

char upper(char c) {
  return is_lower(c) ? static_cast<char>(c - 'a' + 'A') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (upper(a[i]) != upper(b[i])) return false;
  }
  return true;
}

// NAME words: leading dashes dropped, camelCase split, upper-cased, split on '_', '-', '.', ' '.
std::vector<std::string> name_words(std::string_view name) {
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  std::vector<std::string> words;
  std::string cur;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!is_alnum(c)) {
      if (!cur.empty()) words.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    // apiKey -> API KEY; a run of capitals stays one word (HFToken -> HF TOKEN is not needed).
    if (is_upper(c) && i > 0 && (is_lower(name[i - 1]) || is_digit(name[i - 1])) && !cur.empty()) {
      words.push_back(std::move(cur));
      cur.clear();
    }
    cur += upper(c);
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

bool in(std::string_view w, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), w) != set.end();
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// How many characters from `from` satisfy `pred`.
template <typename Pred>
size_t count_while(std::string_view s, size_t from, Pred pred) {
  size_t n = 0;
  while (from + n < s.size() && pred(s[from + n])) ++n;
  return n;
}

// A prefix followed by at least `min_rest` characters of `pred`, and nothing else.
template <typename Pred>
bool prefixed(std::string_view w, std::string_view prefix, size_t min_rest, Pred pred) {
  if (!starts_with(w, prefix)) return false;
  const size_t rest = w.size() - prefix.size();
  return rest >= min_rest && count_while(w, prefix.size(), pred) == rest;
}

bool base64url(char c) {
  return is_alnum(c) || c == '_' || c == '-';
}

bool high_entropy(std::string_view w) {
  if (w.size() < 32) return false;
  int up = 0, lo = 0, dg = 0;
  std::array<int, 128> counts{};
  for (char c : w) {
    if (!is_alnum(c)) return false;
    up += is_upper(c);
    lo += is_lower(c);
    dg += is_digit(c);
    ++counts[static_cast<unsigned char>(c)];
  }
  if (up < 2 || lo < 2 || dg < 2) return false;
  // Random characters change class (upper, lower, digit) at about 60% of positions; CamelCase
  // names with version numbers (DeepSeekR1Distill0528Qwen32B) at under 40%.
  auto cls = [](char c) { return is_upper(c) ? 0 : is_lower(c) ? 1 : 2; };
  size_t changes = 0;
  for (size_t i = 1; i < w.size(); ++i) changes += cls(w[i]) != cls(w[i - 1]);
  if (static_cast<double>(changes) < 0.45 * static_cast<double>(w.size() - 1)) return false;
  double bits = 0;
  for (int n : counts) {
    if (n == 0) continue;
    const double p = static_cast<double>(n) / static_cast<double>(w.size());
    bits -= p * std::log2(p);
  }
  return bits >= 4.0;
}

struct Registry {
  std::mutex mu;
  std::vector<std::string> values;  // longest first, so a secret containing another is hidden whole
};

Registry& registry() {
  static Registry r;
  return r;
}

std::vector<std::string> registered() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.values;
}

// The registered values hidden in `text`.
std::string mask_registered(std::string_view text) {
  std::string out(text);
  for (const std::string& s : registered()) {
    for (size_t p = out.find(s); p != std::string::npos; p = out.find(s, p + kRedacted.size())) {
      out.replace(p, s.size(), kRedacted);
    }
  }
  return out;
}

bool is_scheme(std::string_view w) {
  return iequals(w, "Bearer") || iequals(w, "Basic") || iequals(w, "Token") || iequals(w, "Digest");
}

// Values of a secret name that hide nothing and say something (unset, disabled).
bool is_empty_value(std::string_view v) {
  return v.empty() || v == "None" || v == "none" || v == "null" || v == "NULL" || v == "''" ||
         v == "\"\"";
}

// The extent of a value at `p`: quoted (to the matching quote) or bare (to white space or a
// delimiter). Returns [begin, end) of the value without its quotes and whether it was quoted.
struct Extent {
  size_t begin = 0, end = 0;
  bool quoted = false;
};

Extent value_extent(std::string_view t, size_t p, bool to_line_end) {
  Extent e;
  if (p < t.size() && (t[p] == '"' || t[p] == '\'')) {
    const char q = t[p];
    e.quoted = true;
    e.begin = p + 1;
    size_t i = e.begin;
    while (i < t.size() && t[i] != q && t[i] != '\n') {
      if (t[i] == '\\' && i + 1 < t.size()) ++i;
      ++i;
    }
    e.end = std::min(i, t.size());
    return e;
  }
  e.begin = p;
  size_t i = p;
  if (t.substr(p, kRedacted.size()) == kRedacted) {
    e.end = p + kRedacted.size();
    return e;
  }
  if (to_line_end) {
    while (i < t.size() && t[i] != '\n' && t[i] != '\r' && t[i] != '"' && t[i] != '\'') ++i;
  } else {
    while (i < t.size() && !(t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') &&
           t[i] != ',' && t[i] != ';' && t[i] != ')' && t[i] != '}' && t[i] != ']' && t[i] != '"' &&
           t[i] != '\'' && t[i] != '&') {
      ++i;
    }
  }
  e.end = i;
  return e;
}

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// A cheap test before is_secret_name(), which redact_text() would otherwise run on every word of
// a long log: whether the name contains any fragment a secret name needs.
bool maybe_secret_name(std::string_view name) {
  std::string u;
  u.reserve(name.size());
  for (char c : name) u += upper(c);
  for (std::string_view f :
       {"KEY", "TOKEN", "SECRET", "PASS", "PWD", "AUTH", "CRED", "COOKIE", "SESSION", "BEARER"}) {
    if (u.find(f) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

bool is_secret_name(std::string_view name) {
  const std::vector<std::string> words = name_words(name);
  if (words.empty()) return false;
  std::string joined;
  for (const auto& w : words) joined += w;
  for (std::string_view frag :
       {"SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "COOKIE", "APIKEY", "APITOKEN",
        "ACCESSKEY", "ACCESSTOKEN", "AUTHTOKEN", "REFRESHTOKEN", "PRIVATEKEY", "SECRETKEY",
        "BEARER", "AUTHORIZATION", "SESSIONKEY", "SESSIONTOKEN"}) {
    if (joined.find(frag) != std::string::npos) return true;
  }
  // A cookie's name (JSESSIONID, PHPSESSID); session_id apart is an agentic workload's session.
  for (const auto& w : words) {
    if (w.find("SESSIONID") != std::string::npos || w.find("SESSID") != std::string::npos)
      return true;
  }
  const size_t n = words.size();
  for (size_t k = 0; k < n; ++k) {
    const std::string& w = words[k];
    const std::string_view prev = k > 0 ? std::string_view(words[k - 1]) : std::string_view();
    const std::string_view next = k + 1 < n ? std::string_view(words[k + 1]) : std::string_view();
    if (w == "TOKEN" || (k + 1 == n && w.size() > 5 && w.ends_with("TOKEN"))) {
      // A credential is the thing the name ends with (HF_TOKEN, GITHUB_TOKEN, --token); a token
      // in the sense of the model's vocabulary is qualified (EOS_TOKEN, PER_TOKEN, TOKEN_ID).
      if (k + 1 != n) continue;
      if (in(prev, {"MAX",       "MIN",   "NUM",     "PER",   "FIRST",    "LAST",   "NEXT",
                    "EOS",       "BOS",   "PAD",     "UNK",   "SEP",      "CLS",    "MASK",
                    "SPECIAL",   "START", "END",     "STOP",  "OUTPUT",   "INPUT",  "PROMPT",
                    "IMAGE",     "VIDEO", "AUDIO",   "THINK", "THINKING", "DECODE", "PREFILL",
                    "GENERATED", "EACH",  "DRAFT",   "SPEC",  "BONUS",    "EXTRA",  "TOTAL",
                    "AVG",       "MEAN",  "BATCHED", "NEW",   "CONTEXT",  "CACHED", "DUMMY",
                    "REASONING", "INTER", "SINGLE",  "ONE"})) {
        continue;
      }
      return true;
    }
    if (w == "KEY" || w == "KEYS") {
      // KEY alone (config keys, sort keys, workload keys) is no credential; API_KEY is.
      if (in(prev,
             {"API",       "ACCESS",   "SECRET",  "PRIVATE", "AUTH",   "SIGNING",   "ENCRYPTION",
              "MASTER",    "LICENSE",  "SERVICE", "ACCOUNT", "CLIENT", "SSH",       "GPG",
              "PGP",       "DEPLOY",   "ADMIN",   "SESSION", "SHARED", "HMAC",      "WEBHOOK",
              "APP",       "USER",     "LLM",     "WANDB",   "OPENAI", "ANTHROPIC", "NGC",
              "HF",        "GEMINI",   "GOOGLE",  "MISTRAL", "GROQ",   "COHERE",    "TOGETHER",
              "FIREWORKS", "DEEPSEEK", "XAI"})) {
        return true;
      }
      continue;
    }
    if (w == "AUTH") {
      if (in(next,
             {"TYPE", "MODE", "METHOD", "ENABLED", "ENABLE", "DISABLED", "DISABLE", "REQUIRED",
              "URL", "HOST", "PORT", "SERVER", "PROVIDER", "PATH", "FILE", "DIR", "SCHEME"}) ||
          in(prev, {"DISABLE", "ENABLE", "NO", "REQUIRE", "USE"})) {
        continue;
      }
      return true;
    }
    if (w == "PASS" || w == "PWD") {
      // PWD alone is the working directory; DB_PWD and PASS are passwords.
      if (w == "PWD" && n == 1) continue;
      if (in(next, {"THROUGH", "COUNT", "RATE", "FAIL", "NUM"})) continue;
      return true;
    }
    if (w == "SESSION") {
      // A session's key is a credential; --session-len, MAX_SESSIONS and the sessions of an
      // agentic workload (session_id) are settings and results.
      if (in(next, {"KEY", "TOKEN", "SECRET", "COOKIE"})) return true;
      continue;
    }
  }
  return false;
}

bool is_secret_flag(std::string_view arg) {
  if (arg.size() < 2 || arg.front() != '-') return false;
  std::string_view flag = arg.substr(0, arg.find('='));
  return is_secret_name(flag);
}

bool looks_like_token(std::string_view w) {
  while (!w.empty() && w.back() == '=') w.remove_suffix(1);  // base64 padding
  if (w.size() < 12) return false;
  auto alnum = [](char c) { return is_alnum(c); };
  if (prefixed(w, "sk-", 10, base64url)) return true;  // sk-..., sk-ant-..., sk-proj-...
  if (prefixed(w, "hf_", 20, alnum)) return true;
  for (std::string_view p : {"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}) {
    if (prefixed(w, p, 20, alnum)) return true;
  }
  if (prefixed(w, "github_pat_", 20, base64url)) return true;
  if (prefixed(w, "glpat-", 20, base64url)) return true;
  if (prefixed(w, "nvapi-", 20, base64url)) return true;
  if ((starts_with(w, "AKIA") || starts_with(w, "ASIA")) && w.size() == 20 &&
      count_while(w, 4, [](char c) { return is_upper(c) || is_digit(c); }) == 16) {
    return true;
  }
  if (w.size() > 5 && starts_with(w, "xox") && in(w.substr(3, 1), {"a", "b", "p", "r", "s"}) &&
      w[4] == '-' &&
      count_while(w, 5, [](char c) { return is_alnum(c) || c == '-'; }) == w.size() - 5 &&
      w.size() - 5 >= 10) {
    return true;
  }
  if (starts_with(w, "eyJ")) {
    // header.payload.signature, base64url each.
    size_t a = count_while(w, 0, base64url);
    if (a >= 10 && a < w.size() && w[a] == '.') {
      size_t b = count_while(w, a + 1, base64url);
      if (b >= 10 && a + 1 + b < w.size() && w[a + 1 + b] == '.' &&
          count_while(w, a + 2 + b, base64url) == w.size() - (a + 2 + b)) {
        return true;
      }
    }
  }
  return high_entropy(w);
}

bool add_secret(std::string_view value) {
  if (value.size() < kMinSecretLength) return false;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (std::find(r.values.begin(), r.values.end(), value) != r.values.end()) return true;
  r.values.emplace_back(value);
  std::stable_sort(r.values.begin(), r.values.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return true;
}

void add_secrets_from_argv(const std::vector<std::string>& argv) {
  // A recipe's "--api-key={model}" is filled in later; the value the server gets is registered
  // when the sweep builds its command line.
  auto add = [](std::string_view v) {
    if (v.find('{') == std::string_view::npos) add_secret(v);
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    if (!is_secret_flag(argv[i])) continue;
    if (const size_t eq = argv[i].find('='); eq != std::string::npos) {
      add(std::string_view(argv[i]).substr(eq + 1));
    } else if (i + 1 < argv.size() && !starts_with(argv[i + 1], "--")) {
      add(argv[++i]);
    }
  }
}

void add_secrets_from_env(const std::map<std::string, std::string>& env) {
  for (const auto& [name, value] : env) {
    if (is_secret_name(name)) add_secret(value);
  }
}

bool is_secret_value(std::string_view value) {
  if (value.empty() || value == kRedacted) return false;
  if (looks_like_token(value)) return true;
  for (const std::string& s : registered()) {
    if (value == s) return true;
  }
  return false;
}

namespace {

// Whether `name` is a header whose whole line is the secret (Authorization: Bearer X keeps its
// scheme, the rest of the line is hidden).
bool is_whole_line_header(std::string_view name) {
  return iequals(name, "Authorization") || iequals(name, "Proxy-Authorization") ||
         iequals(name, "Cookie") || iequals(name, "Set-Cookie");
}

// Where the value of the secret name `name` (ending at `p`) starts: NAME=v, NAME: v,
// 'name': 'v', "name"="v", --flag=v, --flag v. nullopt when nothing is assigned, or the value is
// hidden already.
struct Assigned {
  size_t at = 0;
  char separator = ' ';  // '=', ':' or ' ' (a flag's next word)
};

std::optional<Assigned> assigned_value_at(std::string_view t, std::string_view name, size_t p) {
  size_t q = p;
  if (q < t.size() && (t[q] == '"' || t[q] == '\'')) ++q;
  q += count_while(t, q, is_blank);
  const bool is_flag = name.front() == '-';
  bool assigned = q < t.size() && (t[q] == '=' || t[q] == ':');
  if (assigned && t[q] == ':' && q + 1 < t.size() && t[q + 1] == ':') assigned = false;  // a::b
  char separator = ' ';
  if (assigned) {
    separator = t[q];
    ++q;
    q += count_while(t, q, is_blank);
  } else if (!(is_flag && q > p && q < t.size() && t[q] != '-' && t[q] != '\n')) {
    return std::nullopt;
  }
  if (t.substr(q, kRedacted.size()) == kRedacted) return std::nullopt;  // hidden already
  // 'api_key': ['sk-...'] (a list, as vLLM prints it): the first element.
  while (q < t.size() && (t[q] == '[' || t[q] == '(')) ++q;
  if (q >= t.size()) return std::nullopt;
  return Assigned{q, separator};
}

// The end of a bare value after "NAME: " that goes on in words ("HF_TOKEN: never read (...)",
// "token: my pass phrase"): the whole phrase is the value, up to punctuation, the end of the line
// or the next "name:"/"name=", so that no word of it is left to read as something else.
size_t phrase_end(std::string_view t, size_t e) {
  for (;;) {
    const size_t w = e + count_while(t, e, is_blank);
    if (w == e || w >= t.size()) return e;
    const size_t n = count_while(t, w, is_name_char);
    if (n == 0) return e;
    if (w + n < t.size() && (t[w + n] == ':' || t[w + n] == '=')) return e;
    e = w + n;
  }
}

// One pass of redact_text() over `t` (registered values already masked): `out_` is the text
// written so far, `i_` the next character of `t` to read.
class TextRedactor {
 public:
  explicit TextRedactor(std::string_view t) : t_(t) { out_.reserve(t.size()); }

  std::string run();

 private:
  void hide(size_t b, size_t e);
  void url_password();
  void webhook_path(size_t host_end);
  bool token_word();
  void name_word();
  void scheme_credential(size_t p);
  void secret_value(std::string_view name, size_t p);

  std::string_view t_;
  std::string out_;
  size_t i_ = 0;
};

std::string TextRedactor::run() {
  while (i_ < t_.size()) {
    const char c = t_[i_];
    if (c == ':' && t_.compare(i_, 3, "://") == 0) {
      url_password();
      continue;
    }
    const bool word_start = is_token_char(c) && (i_ == 0 || !is_token_char(t_[i_ - 1]));
    if (word_start && token_word()) continue;
    const bool name_start = is_name_char(c) && (i_ == 0 || !is_name_char(t_[i_ - 1]));
    if (!name_start) {
      out_ += c;
      ++i_;
      continue;
    }
    name_word();
  }
  return std::move(out_);
}

// Emits kRedacted for [b, e) unless that text is already the marker or hides nothing.
void TextRedactor::hide(size_t b, size_t e) {
  std::string_view v = t_.substr(b, e - b);
  if (starts_with(v, kRedacted) || is_empty_value(v)) {
    out_.append(v);
  } else {
    out_.append(kRedacted);
  }
}

// At "://": scheme://user:password@host hides the password; a webhook URL hides its path.
void TextRedactor::url_password() {
  out_.append("://");
  i_ += 3;
  size_t j = i_;
  while (j < t_.size() &&
         std::string_view("/ \t\r\n\"'@?#<>").find(t_[j]) == std::string_view::npos) {
    ++j;
  }
  if (j < t_.size() && t_[j] == '@') {
    const size_t colon = t_.substr(i_, j - i_).find(':');
    if (colon != std::string_view::npos && i_ + colon + 1 < j) {
      out_.append(t_.substr(i_, colon + 1));
      hide(i_ + colon + 1, j);
      i_ = j;
    }
    return;
  }
  webhook_path(j);
}

// A webhook URL's path is its credential (whoever has it can post): Slack, Discord, Microsoft
// Teams, Zapier, IFTTT, Google Chat (key= and token= in its query are secret names already).
// `host_end` ends the host that starts at i_; the host and the fixed part of the path stay.
void TextRedactor::webhook_path(size_t host_end) {
  std::string host;
  for (char c : t_.substr(i_, host_end - i_)) host += static_cast<char>(std::tolower(c));
  const size_t colon = host.find(':');
  if (colon != std::string::npos) host.resize(colon);
  auto host_is = [&](std::string_view h) {
    return host == h ||
           (host.size() > h.size() && host.ends_with(h) && host[host.size() - h.size() - 1] == '.');
  };
  std::string_view fixed;  // the path prefix that names the kind of hook, not the hook
  if (host_is("hooks.slack.com")) {
    fixed = "/";
  } else if ((host_is("discord.com") || host_is("discordapp.com")) &&
             t_.compare(host_end, 14, "/api/webhooks/") == 0) {
    fixed = "/api/webhooks/";
  } else if (host_is("webhook.office.com") || host_is("hooks.zapier.com") ||
             host_is("maker.ifttt.com") || host_is("chat.googleapis.com")) {
    fixed = "/";
  } else {
    return;
  }
  if (t_.compare(host_end, fixed.size(), fixed) != 0) return;
  // The path up to white space, a quote or the end of a field: one secret.
  size_t b = host_end + fixed.size();
  if (t_.compare(b, kRedacted.size(), kRedacted) == 0) return;  // hidden already
  size_t e = b;
  while (e < t_.size() &&
         std::string_view(" \t\r\n\"'<>,;)]}`").find(t_[e]) == std::string_view::npos) {
    ++e;
  }
  if (e - b < 8) return;
  out_.append(t_.substr(i_, b - i_));
  hide(b, e);
  i_ = e;
}

// At the start of a token-like word: hides it when it looks like a token; whether it did.
bool TextRedactor::token_word() {
  const size_t tlen = count_while(t_, i_, is_token_char);
  size_t end = i_ + tlen;
  while (end < t_.size() && t_[end] == '=' &&
         (end + 1 == t_.size() || !is_token_char(t_[end + 1]))) {
    ++end;  // base64 padding belongs to the token
  }
  if (!looks_like_token(t_.substr(i_, end - i_))) return false;
  out_.append(kRedacted);
  i_ = end;
  return true;
}

// At the start of a name: emits it, then hides what a scheme or a secret name introduces.
void TextRedactor::name_word() {
  const size_t nlen = count_while(t_, i_, is_name_char);
  const std::string_view name = t_.substr(i_, nlen);
  out_.append(name);
  const size_t p = i_ + nlen;
  i_ = p;
  if (is_scheme(name) && p < t_.size() && is_blank(t_[p])) {
    scheme_credential(p);
    return;
  }
  if (!maybe_secret_name(name) || !is_secret_name(name)) return;
  secret_value(name, p);
}

// Authorization: Bearer X: the credential after a scheme name (ending at `p`, a blank).
void TextRedactor::scheme_credential(size_t p) {
  size_t q = p + count_while(t_, p, is_blank);
  size_t v = count_while(t_, q, [](char ch) { return is_token_char(ch) || ch == '='; });
  if (v > 0) {
    out_.append(t_.substr(p, q - p));
    hide(q, q + v);
    i_ = q + v;
  }
}

// The value assigned to the secret name `name` (ending at `p`), hidden.
void TextRedactor::secret_value(std::string_view name, size_t p) {
  const std::optional<Assigned> at = assigned_value_at(t_, name, p);
  if (!at) return;
  size_t q = at->at;
  const bool whole_line = is_whole_line_header(name);
  // Authorization: Bearer X keeps its scheme (emitted with the text before the value).
  if (whole_line) {
    size_t s = count_while(t_, q, is_name_char);
    if (s > 0 && is_scheme(t_.substr(q, s)) && q + s < t_.size() && is_blank(t_[q + s])) {
      q += s + count_while(t_, q + s, is_blank);
    }
  }
  // No value (a scheme at the end of the text): nothing to hide, and nothing emitted twice.
  if (q >= t_.size()) return;
  Extent e = value_extent(t_, q, whole_line && t_[q] != '"' && t_[q] != '\'');
  if (e.end <= e.begin) return;
  if (!e.quoted && !whole_line && at->separator == ':') e.end = phrase_end(t_, e.end);
  out_.append(t_.substr(p, e.begin - p));
  hide(e.begin, e.end);
  i_ = e.end;
}

}  // namespace

std::string redact_text(std::string_view input) {
  const std::string masked = mask_registered(input);
  return TextRedactor(masked).run();
}

std::string redact_value(std::string_view name, std::string_view value) {
  if (value.empty()) return std::string();
  if (is_secret_name(name) || is_secret_value(value)) return std::string(kRedacted);
  return redact_text(value);
}

std::vector<std::string> redact_argv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (is_secret_flag(a)) {
      const size_t eq = a.find('=');
      if (eq != std::string::npos) {
        out.push_back(a.substr(0, eq + 1) + (eq + 1 < a.size() ? std::string(kRedacted) : ""));
        continue;
      }
      out.push_back(a);
      // The flag's value is the next argument, unless that is a flag itself (a boolean flag
      // such as --disable-auth-check takes none).
      if (i + 1 < argv.size() && !starts_with(argv[i + 1], "--")) {
        out.push_back(argv[i + 1].empty() ? std::string() : std::string(kRedacted));
        ++i;
      }
      continue;
    }
    out.push_back(is_secret_value(a) ? std::string(kRedacted) : redact_text(a));
  }
  return out;
}

namespace {

void walk(boost::json::value& v, bool in_secret);

// The value of a secret: scalars hidden (booleans and null say nothing and stay), lists element
// by element, mappings walked in the secret's context.
void hide(boost::json::value& v) {
  if ((v.is_string() && !v.get_string().empty()) || v.is_number()) {
    v = boost::json::string(kRedacted);
  } else if (v.is_array()) {
    for (auto& e : v.get_array()) hide(e);
  } else if (v.is_object()) {
    walk(v, true);
  }
}

// `in_secret`: below a secret-named member, e.g. {"api_key": {"base": x, "head": y}} or an
// environment trace's {"HF_TOKEN": {"readers": [{"value": x}]}}: the members that carry its value
// are hidden too; the rest (pids, flags, which process read it) stays.
void walk(boost::json::value& v, bool in_secret) {
  switch (v.kind()) {
    case boost::json::kind::string: {
      std::string r = redact_text(v.get_string());
      if (r != std::string_view(v.get_string())) v = boost::json::string(r);
      return;
    }
    case boost::json::kind::array: {
      auto& a = v.get_array();
      const bool argv = !a.empty() && std::all_of(a.begin(), a.end(),
                                                  [](const auto& e) { return e.is_string(); });
      if (argv) {
        std::vector<std::string> args;
        for (const auto& e : a) args.emplace_back(e.get_string());
        const std::vector<std::string> r = redact_argv(args);
        for (size_t k = 0; k < r.size(); ++k) {
          if (r[k] != std::string_view(a[k].get_string())) a[k] = boost::json::string(r[k]);
        }
        return;
      }
      for (auto& e : a) walk(e, in_secret);
      return;
    }
    case boost::json::kind::object:
      for (auto& kv : v.get_object()) {
        const std::string_view key = kv.key();
        if (is_secret_name(key) ||
            (in_secret && in(key, {"value", "values", "base", "head", "old", "new", "default"}))) {
          hide(kv.value());
        } else {
          walk(kv.value(), in_secret);
        }
      }
      return;
    default:
      return;
  }
}

}  // namespace

void redact_json(boost::json::value& v) {
  walk(v, false);
}

boost::json::value redacted(boost::json::value v) {
  redact_json(v);
  return v;
}

boost::json::object redacted(boost::json::object o) {
  boost::json::value v(std::move(o));
  redact_json(v);
  return std::move(v.get_object());
}

}  // namespace ib
