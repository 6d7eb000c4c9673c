// The one redaction policy (docs/recipes.md, "Secrets"): what counts as a credential, and how every
// output we write (terminal, markdown, JSON, the results database, run artifacts, logs, job
// scripts) hides it. Nothing here changes what a server is given: callers redact copies they
// print or store, never the argv or environment they start a process with.
//
// A value is a secret when any of these says so:
//   - its name (environment variable, config key, JSON member, command-line flag) names a
//     credential: is_secret_name();
//   - it follows a flag that takes one (--api-key X, --api-key=X, --hf-token X): is_secret_flag();
//   - it looks like a token whatever its name (sk-..., hf_..., ghp_..., AKIA..., xoxb-..., JWTs,
//     "Bearer X", the password of a URL's user:password@, the path of a webhook URL (Slack,
//     Discord, Teams, Zapier, IFTTT, Google Chat)): looks_like_token() and redact_text();
//   - it was registered with add_secret(): a recipe value marked `secret: true`, the client's own
//     --api-key. Registered values are hidden wherever they occur, inside any text.
// What is hidden is replaced by kRedacted, so a reader sees that something was there.
#pragma once

#include <boost/json.hpp>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ib {

/// The fixed marker that replaces a hidden value.
inline constexpr std::string_view kRedacted = "(redacted)";

/// Registered secrets shorter than this are not searched for inside text (a 3-character value
/// would hide every occurrence of those letters); recipes reject `secret: true` values shorter
/// than this.
inline constexpr size_t kMinSecretLength = 8;

/// Whether a name (API_KEY, OPENAI_API_KEY, hf-token, --api-key, apiKey, HF_TOKEN, PASSWORD,
/// AWS_SECRET_ACCESS_KEY, ...) names a credential. Case, '-', '.', camelCase and leading dashes do
/// not matter. Names benchmark users need to see stay visible: MAX_TOKENS, *_TOKENS,
/// max-num-batched-tokens, TOKENIZER, TOKENIZERS_PARALLELISM, eos_token_id, time_to_first_token,
/// config_key, workload_key, key, KV_CACHE_*, session-len, PWD.
bool is_secret_name(std::string_view name);

/// Whether `arg` ("--api-key", "--api-key=X", "-H" is not one) is a flag whose value is a
/// secret: it starts with '-' and its name (up to '=') is a secret name.
bool is_secret_flag(std::string_view arg);

/// Whether a whole word looks like a credential whatever its name: OpenAI/Anthropic keys (sk-,
/// sk-ant-), Hugging Face (hf_), GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), GitLab
/// (glpat-), NVIDIA (nvapi-), AWS access key ids (AKIA/ASIA + 16), Slack (xoxa-/xoxb-/xoxp-/...),
/// JWTs (eyJ... . ... . ...), and long high-entropy strings: 32 or more letters and digits with
/// upper case, lower case and digits mixed (the class changes at 45% of positions or more) and at
/// least 4 bits of entropy per character. Conservative: hex (sha, fingerprints, commit ids),
/// UUIDs, paths and model names stay visible, and about 1 random 32-character key in 20 is not
/// caught by shape (its name, its flag or a marker still hides it).
bool looks_like_token(std::string_view word);

/// Registers `value` as a secret of this process: every later redact_*() hides it wherever it
/// occurs. Thread-safe. Returns false (and registers nothing) for values shorter than
/// kMinSecretLength.
bool add_secret(std::string_view value);

/// Registers what a command line gives secret flags (--api-key X, --api-key=X) and the values of
/// secret-named variables (OPENAI_API_KEY=...), so that they are hidden wherever they turn up
/// later (a log tail, an error message, a server's printout of its arguments).
void add_secrets_from_argv(const std::vector<std::string>& argv);
void add_secrets_from_env(const std::map<std::string, std::string>& env);

/// Whether `value` as a whole is a secret by value: registered, or looks_like_token().
bool is_secret_value(std::string_view value);

/// `text` with every secret hidden: registered values anywhere; token-like words; the value of an
/// assignment to a secret name (NAME=v, NAME: v, 'name': 'v', "name": "v", --flag=v; empty, None
/// and null values are left as they are); the word after a secret flag (--api-key v); the
/// credential after "Bearer"/"Basic"/"Token" (Authorization headers); the password of
/// scheme://user:password@host; the path of a webhook URL (https://hooks.slack.com/(redacted)).
/// Idempotent.
std::string redact_text(std::string_view text);

/// The value of `name` as it may be shown: kRedacted when the name is a secret name or the value
/// is a secret value (an empty value stays empty), else redact_text(value).
std::string redact_value(std::string_view name, std::string_view value);

/// An argument vector as it may be shown: the value of a secret flag (next argument, or after
/// '='), and every argument through redact_text().
std::vector<std::string> redact_argv(const std::vector<std::string>& argv);

/// A JSON document as it may be shown or stored: a member whose name is a secret name has its
/// string or number value replaced (booleans, null and "" stay; objects and arrays are walked);
/// an array of strings is redacted as an argv; every string through redact_text().
void redact_json(boost::json::value& v);
boost::json::value redacted(boost::json::value v);
boost::json::object redacted(boost::json::object o);

}  // namespace ib
