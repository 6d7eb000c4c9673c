#include "verify/effective_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/regex.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "core/strings.h"
#include "verify/py_repr.h"

namespace ib::verify {

namespace json = boost::json;

namespace {

// One built-in (or recipe) probe. A higher `rank` is more authoritative: the engine's resolved
// state (memory pools, "Using max model len") over full argument dumps over the arguments the
// user changed; recipe probes over everything.
struct Probe {
  const char* name;
  const char* engine;
  int rank;
};

constexpr Probe kSglangArgs{"sglang-server-args", "sglang", 2};
constexpr Probe kSglangPool{"sglang-memory-pool", "sglang", 3};
constexpr Probe kSglangVersion{"sglang-version", "sglang", 2};
constexpr Probe kVllmVersion{"vllm-version", "vllm", 2};
constexpr Probe kVllmNonDefault{"vllm-non-default-args", "vllm", 1};
constexpr Probe kVllmEngineConfig{"vllm-engine-config", "vllm", 2};
constexpr Probe kVllmResolved{"vllm-resolved", "vllm", 3};
constexpr Probe kVllmKvCache{"vllm-kv-cache", "vllm", 3};
constexpr Probe kTrtVersion{"trtllm-version", "trtllm", 2};
constexpr Probe kTrtArgs{"trtllm-llm-args", "trtllm", 2};
constexpr Probe kTrtRuntime{"trtllm-runtime", "trtllm", 3};
constexpr Probe kTrtKvCache{"trtllm-kv-cache", "trtllm", 3};
constexpr Probe kLlamaBuild{"llamacpp-build", "llamacpp", 2};
constexpr Probe kLlamaSystem{"llamacpp-system-info", "llamacpp", 2};
constexpr Probe kLlamaContext{"llamacpp-context", "llamacpp", 2};
constexpr Probe kLlamaModel{"llamacpp-model-info", "llamacpp", 2};
constexpr Probe kLlamaKvCache{"llamacpp-kv-cache", "llamacpp", 3};
constexpr Probe kLlamaServer{"llamacpp-server", "llamacpp", 3};
constexpr Probe kSimArgs{"servesim-args", "serve-sim", 2};
constexpr Probe kSimSources{"servesim-sources", "serve-sim", 2};
constexpr Probe kSimServer{"servesim-server", "serve-sim", 3};
constexpr int kRecipeRank = 10;

constexpr size_t kExcerptWhole = 300;  // lines up to this long are kept whole as evidence

bool starts_with_upper(std::string_view s) {
  return !s.empty() && s[0] >= 'A' && s[0] <= 'Z';
}

// Evidence text: the whole line when short, else its start and the part around `needle`.
std::string excerpt(std::string_view line, std::string_view needle) {
  if (line.size() <= kExcerptWhole) return std::string(line);
  std::string out(line.substr(0, 80));
  size_t at = needle.empty() ? std::string_view::npos : line.find(needle);
  if (at == std::string_view::npos || at < 80) return out + " ...";
  const size_t from = at >= 100 ? at - 20 : 80;
  out += " ... ";
  out += line.substr(from, 200);
  if (from + 200 < line.size()) out += " ...";
  return out;
}

// A captured text typed like a Python literal when it is one (4096 -> 4096, 'x' -> "x",
// True -> true, "false" -> false), else the trimmed text.
json::value typed(std::string_view text) {
  text = trim(text);
  if (text == "true") return true;
  if (text == "false") return false;
  if (auto v = parse_py_repr(text); v.ok()) return std::move(v.value());
  return json::string(text);
}

// A decimal integer a log line's regex matched; nullopt when it does not fit int64 (log lines are
// outside input: a 30-digit "port" is not a reason to stop).
std::optional<int64_t> to_int64(const std::string& digits) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

// a + b, or the largest int64 when that overflows (counts read from a log are outside input).
int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
}

std::optional<double> as_number(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_double()) return v.get_double();
  if (!v.is_string()) return std::nullopt;
  std::string_view s = trim(v.get_string());
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double d = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), d);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return d;
}

std::optional<bool> as_bool(const json::value& v) {
  if (v.is_bool()) return v.get_bool();
  if (!v.is_string()) return std::nullopt;
  const std::string s = lower(trim(v.get_string()));
  if (s == "true") return true;
  if (s == "false") return false;
  return std::nullopt;
}

bool is_nullish(const json::value& v) {
  if (v.is_null()) return true;
  if (!v.is_string()) return false;
  const std::string s = lower(trim(v.get_string()));
  return s == "none" || s == "null";
}

// "1,234,567" -> 1234567.
std::optional<int64_t> grouped_int(std::string_view s) {
  std::string digits;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (c != ',') {
      return std::nullopt;
    }
  }
  int64_t v = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || r.ec != std::errc()) return std::nullopt;
  return v;
}

// Removes ANSI colour sequences (ESC [ ... letter) some servers write to a TTY-captured log.
std::string strip_ansi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < s.size() && !((s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= 'a' && s[j] <= 'z'))) ++j;
      i = j;
      continue;
    }
    out += s[i];
  }
  return out;
}

struct Setting {
  int rank = 0;
  std::string probe;
};

class Scanner {
 public:
  Scanner(EffectiveConfig* out, const std::vector<RegexProbe>& custom) : out_(out) {
    for (const RegexProbe& p : custom) {
      try {
        custom_.push_back({p.key, boost::regex(p.regex, boost::regex::perl), false});
        if (custom_.back().re.mark_count() < 1) {
          out_->warnings.push_back(
              fmt::format("recipe probe '{}': the regex has no capture group", p.key));
          custom_.pop_back();
        }
      } catch (const std::exception& e) {
        out_->warnings.push_back(
            fmt::format("recipe probe '{}': invalid regex: {}", p.key, e.what()));
      }
    }
  }

  void scan(std::string_view text) {
    int number = 0;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(start, end - start);
      ++number;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find('\x1b') != std::string_view::npos) {
        const std::string clean = strip_ansi(line);
        scan_line(number, clean);
      } else {
        scan_line(number, line);
      }
      if (end == text.size()) break;
      start = end + 1;
    }
    finish();
  }

 private:
  struct Custom {
    std::string key;
    boost::regex re;
    bool matched;
  };

  void set(const std::string& key, json::value value, const Probe& probe, int line,
           std::string_view text, std::string_view needle) {
    ++engine_hits_[probe.engine];
    set_ranked(key, std::move(value), probe.name, probe.rank, line, text, needle);
  }

  void set_ranked(const std::string& key, json::value value, const std::string& probe, int rank,
                  int line, std::string_view text, std::string_view needle) {
    auto it = owners_.find(key);
    if (it != owners_.end() && it->second.probe != probe) {
      const json::value& old = out_->settings.at(key);
      const ProbeHit& old_hit = out_->evidence.at(key);
      if (!old.is_null() && !value.is_null() && !same_setting(old, value)) {
        const bool replace = rank >= it->second.rank;
        out_->warnings.push_back(
            fmt::format("{}: {} (line {}) says {}, {} (line {}) says {}; using {}", key,
                        old_hit.probe, old_hit.line, setting_text(old), probe, line,
                        setting_text(value), replace ? probe : old_hit.probe));
      }
      if (rank < it->second.rank) return;
    }
    owners_[key] = Setting{rank, probe};
    out_->settings[key] = std::move(value);
    out_->evidence[key] = ProbeHit{probe, line, excerpt(text, needle)};
  }

  // Sets every leaf of `value` (objects flattened with '.'); `top` is the key as written in the
  // line, for the evidence excerpt.
  void set_flat(const std::string& key, const json::value& value, const Probe& probe, int line,
                std::string_view text, const std::string& needle) {
    if (value.is_object() && !value.get_object().empty()) {
      for (const auto& [k, v] : value.get_object()) {
        set_flat(key + "." + std::string(k), v, probe, line, text, needle);
      }
      return;
    }
    set(key, value, probe, line, text, needle);
  }

  void set_object(const json::object& obj, const Probe& probe, int line, std::string_view text,
                  bool dict_style) {
    for (const auto& [k, v] : obj) {
      const std::string key(k);
      set_flat(key, v, probe, line, text, dict_style ? "'" + key + "'" : key + "=");
    }
  }

  void warn(int line, std::string_view what, const Error& e) {
    out_->warnings.push_back(fmt::format("line {}: {} is unreadable: {}", line, what, e.message));
  }

  void scan_line(int n, std::string_view line) {
    if (pending_trt_args_) {
      if (trim(line).empty()) return;
      pending_trt_args_ = false;
      trt_args(n, line, trim(line));
      return;
    }
    sglang(n, line);
    vllm(n, line);
    trtllm(n, line);
    llamacpp(n, line);
    servesim(n, line);
    for (Custom& c : custom_) {
      boost::cmatch m;
      bool found = false;
      try {
        found = boost::regex_search(line.data(), line.data() + line.size(), m, c.re);
      } catch (const std::exception& e) {
        out_->warnings.push_back(
            fmt::format("line {}: recipe probe '{}' gave up: {}", n, c.key, e.what()));
      }
      if (found && m[1].matched) {
        c.matched = true;
        set_ranked(c.key, typed(std::string_view(m[1].first, m[1].length())), "recipe", kRecipeRank,
                   n, line, std::string_view(m[1].first, m[1].length()));
      }
    }
  }

  // `server_args=ServerArgs(...)` (SGLang) and `server_args=SimArgs(...)` (serve-sim).
  void sglang(int n, std::string_view line) {
    static constexpr std::string_view kArgs = "server_args=";
    if (size_t at = line.find(kArgs); at != std::string_view::npos) {
      const std::string_view rest = line.substr(at + kArgs.size());
      const bool sim = rest.starts_with("SimArgs(");
      if (sim || rest.starts_with("ServerArgs(")) {
        const Probe& probe = sim ? kSimArgs : kSglangArgs;
        size_t used = 0;
        auto v = parse_py_repr_prefix(rest, &used);
        if (!v.ok()) {
          warn(n, sim ? "server_args=SimArgs(...)" : "server_args=ServerArgs(...)", v.error());
        } else if (v->is_object()) {
          set_object(v->get_object(), probe, n, line, false);
        }
      }
    }
    // [2026-05-15 08:40:32 DP0 TP0 EP0] max_total_num_tokens=..., context_len=..., ...
    static constexpr std::string_view kPool = "max_total_num_tokens=";
    if (size_t at = line.find(kPool);
        at != std::string_view::npos && line.find("context_len=") != std::string_view::npos) {
      auto kv = parse_py_kwargs(line.substr(at));
      if (!kv.ok()) return warn(n, "the sglang memory pool line", kv.error());
      set_object(*kv, kSglangPool, n, line, false);
      if (const json::value* tokens = kv->if_contains("max_total_num_tokens")) {
        auto t = as_number(*tokens);
        // A token count, so a whole number a KV pool can have (a log line is outside input:
        // 5.5e40 would overflow the conversion).
        if (t && !(*t >= 0 && *t <= 9007199254740992.0)) {
          warn(n, "the sglang memory pool line",
               Error{fmt::format("max_total_num_tokens {} is not a token count", *t)});
          t.reset();
        }
        if (t) {
          static const boost::regex dp(R"(\bDP(\d+)\b)");
          boost::cmatch m;
          const std::string rank = boost::regex_search(line.data(), line.data() + at, m, dp)
                                       ? m[1].str()
                                       : std::string("0");
          sglang_pools_[rank] = static_cast<int64_t>(*t);
          sglang_pool_line_ = n;
          sglang_pool_text_ = excerpt(line, kPool);
        }
      }
    }
    static const boost::regex version(R"((?i)\bsglang[ _-]?version[:=]?\s*v?(\d+\.\d+[\w.+-]*))");
    if (line.find("ersion") != std::string_view::npos &&
        (line.find("SGLang") != std::string_view::npos ||
         line.find("sglang") != std::string_view::npos)) {
      boost::cmatch m;
      if (boost::regex_search(line.data(), line.data() + line.size(), m, version)) {
        set("engine-version", json::string(m[1].str()), kSglangVersion, n, line, "ersion");
      }
    }
  }

  void vllm(int n, std::string_view line) {
    // vLLM API server version 0.11.0 | vLLM server version 0.27.1, serving model x | the logo's
    // "version 0.25.0" (the logo line holds block characters).
    static const boost::regex version(
        R"((?:vLLM API server version|vLLM server version|\xE2\x96\x88\s+version)\s+v?([^\s,]+))");
    if (line.find("version") != std::string_view::npos &&
        (line.find("vLLM") != std::string_view::npos ||
         line.find("\xE2\x96\x88") != std::string_view::npos)) {
      boost::cmatch m;
      if (boost::regex_search(line.data(), line.data() + line.size(), m, version)) {
        set("engine-version", json::string(m[1].str()), kVllmVersion, n, line, "version");
      }
    }
    static constexpr std::string_view kNonDefault = "non-default args: ";
    if (size_t at = line.find(kNonDefault); at != std::string_view::npos) {
      size_t used = 0;
      auto v = parse_py_repr_prefix(line.substr(at + kNonDefault.size()), &used);
      if (!v.ok()) return warn(n, "vLLM's non-default args", v.error());
      if (v->is_object()) set_object(v->get_object(), kVllmNonDefault, n, line, true);
      return;
    }
    // Initializing a V1 LLM engine (v0.11.0) with config: model='x', speculative_config=None, ..
    static constexpr std::string_view kWithConfig = " with config: ";
    if (size_t at = line.find(kWithConfig);
        at != std::string_view::npos && line.find("LLM engine") != std::string_view::npos) {
      static const boost::regex engine_version(R"(LLM engine \(v([^)\s]+)\))");
      boost::cmatch m;
      if (boost::regex_search(line.data(), line.data() + at, m, engine_version)) {
        set("engine-version", json::string(m[1].str()), kVllmEngineConfig, n, line, "LLM engine");
      }
      auto kv = parse_py_kwargs(line.substr(at + kWithConfig.size()));
      if (!kv.ok()) return warn(n, "vLLM's engine config", kv.error());
      set_object(*kv, kVllmEngineConfig, n, line, false);
      return;
    }
    static constexpr std::string_view kMaxLen = "Using max model len ";
    if (size_t at = line.find(kMaxLen); at != std::string_view::npos) {
      if (auto v = grouped_int(trim(line.substr(at + kMaxLen.size())))) {
        set("max_model_len", *v, kVllmResolved, n, line, kMaxLen);
      }
    }
    static constexpr std::string_view kChunked = "Chunked prefill is enabled with ";
    if (size_t at = line.find(kChunked); at != std::string_view::npos) {
      std::string_view rest = trim(line.substr(at + kChunked.size()));
      if (!rest.empty() && rest.back() == '.') rest.remove_suffix(1);
      if (auto kv = parse_py_kwargs(rest); kv.ok()) {
        set("enable_chunked_prefill", true, kVllmResolved, n, line, kChunked);
        set_object(*kv, kVllmResolved, n, line, false);
      }
    }
    // (EngineCore_DP0 pid=164) INFO ... GPU KV cache size: 840,160 tokens
    static constexpr std::string_view kKv = "GPU KV cache size: ";
    if (size_t at = line.find(kKv); at != std::string_view::npos) {
      std::string_view rest = line.substr(at + kKv.size());
      rest = rest.substr(0, rest.find(' '));
      if (auto tokens = grouped_int(rest)) {
        std::string engine;
        if (size_t open = line.find("(EngineCore"); open != std::string_view::npos && open < at) {
          engine = std::string(line.substr(open, line.find(')', open) - open));
        }
        vllm_pools_[engine] = *tokens;
        vllm_pool_line_ = n;
        vllm_pool_text_ = excerpt(line, kKv);
      }
    }
  }

  void trtllm(int n, std::string_view line) {
    // [TensorRT-LLM] TensorRT LLM version: 1.2.0rc5 (older builds: "TensorRT-LLM version:")
    for (std::string_view marker : {"TensorRT LLM version: ", "TensorRT-LLM version: "}) {
      if (size_t at = line.find(marker); at != std::string_view::npos) {
        std::string_view v = trim(line.substr(at + marker.size()));
        v = v.substr(0, v.find(' '));
        if (!v.empty()) set("engine-version", json::string(v), kTrtVersion, n, line, marker);
        return;
      }
    }
    // logger.info(f"LLM Args:\n{llm_args}"): the args are on the next line, as a pydantic
    // model's str (`model='x' tokenizer=None ...`); some builds print them on the same line.
    static constexpr std::string_view kArgs = "LLM Args:";
    if (size_t at = line.find(kArgs); at != std::string_view::npos) {
      const std::string_view rest = trim(line.substr(at + kArgs.size()));
      if (rest.empty()) {
        pending_trt_args_ = true;
      } else {
        trt_args(n, line, rest);
      }
      return;
    }
    // [TRT-LLM] [I] max_seq_len=131072, max_num_requests=2048, max_num_tokens=8192
    static constexpr std::string_view kRuntime = "max_seq_len=";
    if (size_t at = line.find(kRuntime); at != std::string_view::npos &&
                                         line.find("max_num_requests=") != std::string_view::npos &&
                                         line.find("[TRT-LLM]") != std::string_view::npos) {
      if (auto kv = parse_py_kwargs(line.substr(at)); kv.ok()) {
        set_object(*kv, kTrtRuntime, n, line, false);
      }
    }
    // [TensorRT-LLM][INFO] [MemUsageChange] Allocated 26.91 GiB for max tokens in paged KV cache
    // (220480).  Every rank prints it; the last one counts.
    static const boost::regex kv_cache(R"(max tokens in paged KV cache \((\d+)\))");
    static const boost::regex block(R"(tokens per block[:=]\s*(\d+))");
    if (line.find("paged KV cache (") != std::string_view::npos) {
      boost::cmatch m;
      if (boost::regex_search(line.data(), line.data() + line.size(), m, kv_cache)) {
        if (auto v = to_int64(m[1].str()))
          set("kv_cache_pool_tokens", *v, kTrtKvCache, n, line, "paged KV");
      }
    } else if (line.find("tokens per block") != std::string_view::npos &&
               line.find("TensorRT-LLM") != std::string_view::npos) {
      boost::cmatch m;
      if (boost::regex_search(line.data(), line.data() + line.size(), m, block)) {
        if (auto v = to_int64(m[1].str()))
          set("tokens_per_block", *v, kTrtKvCache, n, line, "tokens per block");
      }
    }
  }

  void trt_args(int n, std::string_view line, std::string_view args) {
    size_t used = 0;
    const size_t paren = args.find('(');
    if (starts_with_upper(args) && paren != std::string_view::npos &&
        args.substr(0, paren).find_first_of(" =") == std::string_view::npos) {
      auto v = parse_py_repr_prefix(args, &used);  // TorchLlmArgs(model='x', ...)
      if (!v.ok()) return warn(n, "TensorRT-LLM's LLM Args", v.error());
      if (v->is_object()) set_object(v->get_object(), kTrtArgs, n, line, false);
      return;
    }
    auto kv = parse_py_kwargs(args);
    if (!kv.ok()) return warn(n, "TensorRT-LLM's LLM Args", kv.error());
    set_object(*kv, kTrtArgs, n, line, false);
  }

  void llamacpp(int n, std::string_view line) {
    // build: 4240 (b548c7c) with cc (Ubuntu 11.4.0) 11.4.0 for x86_64-linux-gnu
    static const boost::regex build(R"(\bbuild: (\d+) \(([0-9a-fA-F]+)\) with .* for \S+)");
    if (line.find("build: ") != std::string_view::npos) {
      boost::cmatch m;
      if (boost::regex_search(line.data(), line.data() + line.size(), m, build)) {
        set("engine-version", json::string("b" + m[1].str()), kLlamaBuild, n, line, "build:");
        set("build_commit", json::string(m[2].str()), kLlamaBuild, n, line, "build:");
        return;
      }
    }
    static constexpr std::string_view kSystem = "system_info: ";
    if (size_t at = line.find(kSystem); at != std::string_view::npos) {
      return system_info(n, line, line.substr(at + kSystem.size()));
    }
    // llama_kv_cache_unified: size = 1536.00 MiB (  4096 cells,  32 layers,  1 seqs),
    //   K (f16):  768.00 MiB, V (f16):  768.00 MiB
    static const boost::regex kv(R"(size = .*K \(([\w.]+)\):.*V \(([\w.]+)\))");
    if (line.find("llama_kv_cache") != std::string_view::npos ||
        line.find("KV self size") != std::string_view::npos) {
      boost::cmatch m;
      if (boost::regex_search(line.data(), line.data() + line.size(), m, kv)) {
        set("cache_type_k", json::string(m[1].str()), kLlamaKvCache, n, line, "K (");
        set("cache_type_v", json::string(m[2].str()), kLlamaKvCache, n, line, "V (");
      }
      return;
    }
    // llama_context: n_ctx = 4096 (older builds: llama_new_context_with_model: n_ctx = 4096)
    static const boost::regex name_value(R"(^\s*([A-Za-z_]\w*)\s*=\s*(.*?)\s*$)");
    for (std::string_view marker : {"llama_context: ", "llama_new_context_with_model: "}) {
      if (size_t at = line.find(marker); at != std::string_view::npos) {
        const std::string_view rest = line.substr(at + marker.size());
        boost::cmatch m;
        if (boost::regex_match(rest.data(), rest.data() + rest.size(), m, name_value)) {
          set(m[1].str(), typed(std::string_view(m[2].first, m[2].length())), kLlamaContext, n,
              line, marker);
        }
        return;
      }
    }
    // print_info: file type   = Q4_K - Medium (older builds: llm_load_print_meta:)
    static const boost::regex info(R"(^\s*([A-Za-z_][\w .]*?)\s*=\s*(.*?)\s*$)");
    for (std::string_view marker : {"print_info: ", "llm_load_print_meta: "}) {
      if (size_t at = line.find(marker); at != std::string_view::npos) {
        const std::string_view rest = line.substr(at + marker.size());
        boost::cmatch m;
        if (boost::regex_match(rest.data(), rest.data() + rest.size(), m, info)) {
          std::string key = "model." + m[1].str();
          for (char& c : key) {
            if (c == ' ') c = '_';
          }
          set(key, typed(std::string_view(m[2].first, m[2].length())), kLlamaModel, n, line,
              marker);
        }
        return;
      }
    }
    static const boost::regex slots(R"(\b(n_slots|n_ctx_slot) = (\d+))");
    if (line.find("n_slots = ") != std::string_view::npos ||
        line.find("n_ctx_slot = ") != std::string_view::npos) {
      boost::cmatch m;
      if (boost::regex_search(line.data(), line.data() + line.size(), m, slots)) {
        if (auto v = to_int64(m[2].str())) set(m[1].str(), *v, kLlamaServer, n, line, m[1].str());
      }
      return;
    }
    // main: server is listening on http://127.0.0.1:8080 - starting the main loop
    static constexpr std::string_view kListening = "server is listening on ";
    if (size_t at = line.find(kListening); at != std::string_view::npos) {
      std::string_view url = line.substr(at + kListening.size());
      url = trim(url.substr(0, url.find(' ')));
      if (!url.empty()) set("listen", json::string(url), kLlamaServer, n, line, kListening);
      return;
    }
    // main: HTTP server is listening, hostname: 127.0.0.1, port: 8080, http threads: 19
    static const boost::regex http(
        R"(HTTP server is listening, hostname: (\S+), port: (\d+), http threads: (\d+))");
    if (line.find("HTTP server is listening") != std::string_view::npos) {
      boost::cmatch m;
      if (boost::regex_search(line.data(), line.data() + line.size(), m, http)) {
        set("host", json::string(m[1].str()), kLlamaServer, n, line, "hostname");
        if (auto v = to_int64(m[2].str())) set("port", *v, kLlamaServer, n, line, "port");
        if (auto v = to_int64(m[3].str()))
          set("threads_http", *v, kLlamaServer, n, line, "http threads");
      }
    }
  }

  // system_info: n_threads = 10 (n_threads_batch = 10) / 20 | CUDA : ARCHS = 890 |
  //   USE_GRAPHS = 1 | CPU : SSE3 = 1 | AVX = 1 |
  void system_info(int n, std::string_view line, std::string_view rest) {
    static const boost::regex threads(
        R"(n_threads = (\d+)(?: \(n_threads_batch = (\d+)\))? / (\d+))");
    std::string backend;
    for (const std::string& part : split(rest, '|')) {
      const std::string_view seg = trim(part);
      if (seg.empty()) continue;
      boost::cmatch m;
      if (boost::regex_search(seg.data(), seg.data() + seg.size(), m, threads)) {
        if (auto v = to_int64(m[1].str())) set("n_threads", *v, kLlamaSystem, n, line, "n_threads");
        if (m[2].matched) {
          if (auto v = to_int64(m[2].str()))
            set("n_threads_batch", *v, kLlamaSystem, n, line, "n_threads_batch");
        }
        if (auto v = to_int64(m[3].str()))
          set("system_info.total_threads", *v, kLlamaSystem, n, line, "/");
        continue;
      }
      std::string_view item = seg;
      if (size_t colon = seg.find(" : "); colon != std::string_view::npos) {
        backend = std::string(trim(seg.substr(0, colon)));
        item = trim(seg.substr(colon + 3));
      }
      const size_t eq = item.find(" = ");
      if (eq == std::string_view::npos) continue;
      const std::string name(trim(item.substr(0, eq)));
      const std::string key =
          backend.empty() ? "system_info." + name : "system_info." + backend + "." + name;
      set(key, typed(item.substr(eq + 3)), kLlamaSystem, n, line, name);
    }
  }

  void servesim(int n, std::string_view line) {
    // setting sources: hardware=cli model_preset=cli kv_cache_dtype=env ...
    static constexpr std::string_view kSources = "setting sources:";
    if (size_t at = line.find(kSources); at != std::string_view::npos) {
      auto kv = parse_py_kwargs(line.substr(at + kSources.size()));
      if (!kv.ok()) return warn(n, "serve-sim's setting sources", kv.error());
      for (const auto& [k, v] : *kv) {
        set("source." + std::string(k), v, kSimSources, n, line, std::string(k) + "=");
      }
      return;
    }
    // [serve-sim] [info] memory: weights 53.53 GiB per GPU; KV cache 215283 blocks x 16 tokens =
    // 3444528 tokens (...)
    static const boost::regex kv(R"(KV cache (\d+) blocks x (\d+) tokens = (\d+) tokens)");
    if (line.find("[serve-sim]") != std::string_view::npos &&
        line.find("KV cache ") != std::string_view::npos) {
      boost::cmatch m;
      if (boost::regex_search(line.data(), line.data() + line.size(), m, kv)) {
        if (auto v = to_int64(m[3].str()))
          set("kv_cache_pool_tokens", *v, kSimServer, n, line, "KV cache");
      }
      return;
    }
    static constexpr std::string_view kListening = "serve-sim listening on ";
    if (size_t at = line.find(kListening); at != std::string_view::npos) {
      const std::string_view url = trim(line.substr(at + kListening.size()));
      set("listen", json::string(url.substr(0, url.find(' '))), kSimServer, n, line, kListening);
    }
  }

  void finish() {
    // KV cache pool size as InferenceX's agentic result aggregation derives it from server logs.
    if (!sglang_pools_.empty()) {
      int64_t total = 0;
      for (const auto& [rank, tokens] : sglang_pools_) total = saturating_add(total, tokens);
      const json::value* dp = out_->settings.if_contains("dp_size");
      if (sglang_pools_.size() == 1 && dp != nullptr) {
        // dp_size comes from a log line too: a rank count, not any number.
        if (auto d = as_number(*dp); d && *d > 1 && *d <= 1e6) {
          int64_t scaled = 0;
          total = __builtin_mul_overflow(total, static_cast<int64_t>(*d), &scaled)
                      ? std::numeric_limits<int64_t>::max()
                      : scaled;
        }
      }
      set_ranked("kv_cache_pool_tokens", total, kSglangPool.name, kSglangPool.rank,
                 sglang_pool_line_, sglang_pool_text_, "");
    }
    if (!vllm_pools_.empty()) {
      int64_t total = 0;
      for (const auto& [engine, tokens] : vllm_pools_) total = saturating_add(total, tokens);
      ++engine_hits_["vllm"];
      set_ranked("kv_cache_pool_tokens", total, kVllmKvCache.name, kVllmKvCache.rank,
                 vllm_pool_line_, vllm_pool_text_, "");
    }
    for (const Custom& c : custom_) {
      if (!c.matched) {
        out_->warnings.push_back(fmt::format("recipe probe '{}' matched no line", c.key));
      }
    }
    // The engine: the one whose probes read the most values.
    std::string best;
    int best_hits = 0;
    for (const auto& [engine, hits] : engine_hits_) {
      if (hits > best_hits) {
        best = engine;
        best_hits = hits;
      }
    }
    if (engine_hits_.size() > 1) {
      std::string all;
      for (const auto& [engine, hits] : engine_hits_) {
        all += fmt::format("{}{} ({} values)", all.empty() ? "" : ", ", engine, hits);
      }
      out_->warnings.push_back(
          fmt::format("the log looks like several engines: {}; taking {}", all, best));
    }
    if (best.empty()) {
      for (const Custom& c : custom_) {
        if (c.matched) best = "custom";
      }
    }
    out_->engine = best;
  }

  EffectiveConfig* out_;
  std::vector<Custom> custom_;
  std::map<std::string, Setting> owners_;
  std::map<std::string, int> engine_hits_;
  bool pending_trt_args_ = false;
  std::map<std::string, int64_t> sglang_pools_;  // DP rank -> tokens
  int sglang_pool_line_ = 0;
  std::string sglang_pool_text_;
  std::map<std::string, int64_t> vllm_pools_;  // "(EngineCore_DPk pid=..)" -> tokens
  int vllm_pool_line_ = 0;
  std::string vllm_pool_text_;
};

void compact_json(const json::value& v, std::string* out) {
  if (v.is_array()) {
    *out += '[';
    bool first = true;
    for (const json::value& e : v.get_array()) {
      if (!first) *out += ',';
      first = false;
      compact_json(e, out);
    }
    *out += ']';
  } else if (v.is_object()) {
    *out += '{';
    bool first = true;
    for (const auto& [k, e] : v.get_object()) {
      if (!first) *out += ',';
      first = false;
      *out += json::serialize(json::string(k));
      *out += ':';
      compact_json(e, out);
    }
    *out += '}';
  } else if (v.is_string()) {
    *out += json::serialize(v);
  } else if (v.is_null()) {
    *out += "null";
  } else {
    *out += setting_text(v);
  }
}

}  // namespace

std::string setting_text(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return std::string(v.get_string());
    case json::kind::bool_:
      return v.get_bool() ? "true" : "false";
    case json::kind::null:
      return "none";
    case json::kind::int64:
      return std::to_string(v.get_int64());
    case json::kind::uint64:
      return std::to_string(v.get_uint64());
    case json::kind::double_:
      return fmt::format("{}", v.get_double());
    default: {
      std::string out;
      compact_json(v, &out);
      return out;
    }
  }
}

bool same_setting(const json::value& a, const json::value& b) {
  if (is_nullish(a) || is_nullish(b)) return is_nullish(a) && is_nullish(b);
  const auto na = as_number(a);
  const auto nb = as_number(b);
  if (na && nb) {
    return *na == *nb || std::fabs(*na - *nb) <= 1e-12 * std::max(std::fabs(*na), std::fabs(*nb));
  }
  // vLLM logs served_model_name as ['x'] in one line and x in another.
  if (a.is_array() && a.get_array().size() == 1 && !b.is_array()) {
    return same_setting(a.get_array()[0], b);
  }
  if (b.is_array() && b.get_array().size() == 1 && !a.is_array()) {
    return same_setting(a, b.get_array()[0]);
  }
  const auto ba = as_bool(a);
  const auto bb = as_bool(b);
  if (ba && bb) return *ba == *bb;
  // dtype: 'bfloat16' in the arguments, torch.bfloat16 in vLLM's engine config.
  std::string_view ta = a.is_string() ? std::string_view(a.get_string()) : std::string_view();
  std::string_view tb = b.is_string() ? std::string_view(b.get_string()) : std::string_view();
  if (ta.starts_with("torch.")) ta.remove_prefix(6);
  if (tb.starts_with("torch.")) tb.remove_prefix(6);
  if (!ta.empty() && ta == tb) return true;
  return setting_text(a) == setting_text(b);
}

json::object EffectiveConfig::to_json() const {
  json::object evidence_json;
  for (const auto& [key, hit] : evidence) {
    evidence_json[key] = {{"probe", hit.probe}, {"line", hit.line}, {"text", hit.text}};
  }
  json::array warnings_json;
  for (const std::string& w : warnings) warnings_json.emplace_back(w);
  return {{"engine", engine},
          {"settings", settings},
          {"evidence", std::move(evidence_json)},
          {"warnings", std::move(warnings_json)}};
}

EffectiveConfig probe_effective_config(std::string_view log_text,
                                       const std::vector<RegexProbe>& custom) {
  EffectiveConfig out;
  Scanner scanner(&out, custom);
  scanner.scan(log_text);
  return out;
}

json::object diff_effective(const EffectiveConfig& a, const EffectiveConfig& b) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a.settings) keys.insert(std::string(k));
  for (const auto& [k, v] : b.settings) keys.insert(std::string(k));
  json::object out;
  for (const std::string& key : keys) {
    const json::value* va = a.settings.if_contains(key);
    const json::value* vb = b.settings.if_contains(key);
    const json::value base = va != nullptr ? *va : json::value(nullptr);
    const json::value head = vb != nullptr ? *vb : json::value(nullptr);
    if (same_setting(base, head)) continue;
    out[key] = {{"base", base}, {"head", head}};
  }
  return out;
}

}  // namespace ib::verify
