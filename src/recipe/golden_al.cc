#include "recipe/golden_al.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>

#include "core/strings.h"
#include "recipe/yaml_reader.h"

namespace ib::recipe {

namespace {

constexpr int kMaxDraftTokens = 64;

// One thinking mode's curve: draft length -> AL.
std::map<int, double> read_curve(YamlReader& r, const YAML::Node& node, const std::string& path) {
  std::map<int, double> out;
  auto f = r.open_mapping(node, path);
  if (!f) {
    r.error(node, path, "expected a mapping of num_speculative_tokens: AL, got " + describe(node));
    return out;
  }
  for (const auto& [key, value] : f->values) {
    const std::string p = field_path(path, key);
    int k = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), k);
    if (ec != std::errc() || end != key.data() + key.size() || k < 1 || k > kMaxDraftTokens) {
      r.error(f->key_marks.at(key), p,
              fmt::format("expected a draft length (num_speculative_tokens) from 1 to {}",
                          kMaxDraftTokens));
      continue;
    }
    // An acceptance length counts the target's own token: 1 at least, k + 1 at most.
    if (auto al = r.number(value, p, 1, k + 1)) out[k] = *al;
  }
  return out;
}

// The text of an option's value: `--name value` or `--name=value`.
std::optional<std::string> option_value(const std::vector<std::string>& argv, size_t& i,
                                        std::string_view name) {
  const std::string& a = argv[i];
  if (a == name && i + 1 < argv.size()) return argv[++i];
  if (a.size() > name.size() && a.starts_with(name) && a[name.size()] == '=') {
    return a.substr(name.size() + 1);
  }
  return std::nullopt;
}

std::optional<double> number_of(std::string_view text) {
  text = trim(text);
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<int> draft_length_of(std::string_view text) {
  const auto v = number_of(text);
  if (!v || *v < 1 || *v > kMaxDraftTokens || *v != std::floor(*v)) return std::nullopt;
  return static_cast<int>(*v);
}

// vLLM's --speculative-config JSON.
void read_vllm_config(const std::string& text, SpecKnobs& out) {
  boost::system::error_code ec;
  const auto v = boost::json::parse(text, ec);
  if (ec || !v.is_object()) return;
  const auto& o = v.as_object();
  if (const auto* k = o.if_contains("num_speculative_tokens"); k && k->is_int64()) {
    if (auto n = draft_length_of(std::to_string(k->as_int64()))) {
      out.draft_tokens = n;
      out.draft_tokens_from = "--speculative-config num_speculative_tokens";
    }
  }
  if (const auto* al = o.if_contains("synthetic_acceptance_length"); al && al->is_number()) {
    out.pins.push_back({fmt::format("--speculative-config synthetic_acceptance_length {}",
                                    boost::json::serialize(*al)),
                        al->to_number<double>(), false, ""});
  }
}

struct Acceptance {
  std::optional<double> per_position;  // serve-sim --spec-acceptance P
  std::optional<double> rate;          // ATOM --spec-decode-acceptance-rate
};

void read_argument(const std::vector<std::string>& argv, size_t& i, SpecKnobs& out,
                   Acceptance& acc) {
  for (const char* name : {"--speculative-config", "--speculative_config"}) {
    if (auto v = option_value(argv, i, name)) return read_vllm_config(*v, out);
  }
  for (const char* name :
       {"--speculative-num-steps", "--num-speculative-tokens", "--spec-decode"}) {
    if (auto v = option_value(argv, i, name)) {
      if (auto k = draft_length_of(*v)) {
        out.draft_tokens = k;
        out.draft_tokens_from = name;
      }
      return;
    }
  }
  for (const char* name : {"--spec-decode-acceptance-length", "--spec-acceptance-length"}) {
    if (auto v = option_value(argv, i, name)) {
      if (auto al = number_of(*v)) {
        out.pins.push_back({fmt::format("{} {}", name, *v), *al, false, ""});
      }
      return;
    }
  }
  if (auto v = option_value(argv, i, "--spec-acceptance")) {
    acc.per_position = number_of(*v);
  } else if (auto r = option_value(argv, i, "--spec-decode-acceptance-rate")) {
    acc.rate = number_of(*r);
  } else if (auto d = option_value(argv, i, "--spec-decoding")) {
    out.off = *d == "none";
  }
}

}  // namespace

Expected<GoldenAl> parse_golden_al(const std::string& text, const std::string& file) {
  std::vector<Diagnostic> diagnostics;
  YamlReader r(file, &diagnostics);
  GoldenAl out;
  out.file = file;
  if (auto doc = r.parse(text)) {
    auto models = r.open_mapping(*doc, "");
    if (!models) {
      r.error(
          *doc, "",
          "expected a mapping of model: {thinking_on|thinking_off: ...}, got " + describe(*doc));
    } else if (std::none_of(models->values.begin(), models->values.end(),
                            [](const auto& kv) { return !kv.first.starts_with('_'); })) {
      r.error(*doc, "", "no model in the file");
    }
    for (const auto& [model, modes] : models ? models->values : decltype(models->values){}) {
      if (model.starts_with('_')) continue;  // `_metadata:` (the draft model, ...)
      auto f = r.mapping(modes, model, {"thinking_on", "thinking_off"});
      if (!f) {
        r.error(modes, model,
                "expected a mapping of thinking_on / thinking_off, got " + describe(modes));
        continue;
      }
      for (const auto& [mode, curve] : f->values) {
        out.curves[model][mode == "thinking_on" ? "on" : "off"] =
            read_curve(r, curve, field_path(model, mode));
      }
    }
  }
  if (!diagnostics.empty()) return input_error(join_diagnostics(diagnostics));
  return out;
}

Expected<GoldenPick> pick_golden(const GoldenAl& golden, const std::string& model,
                                 const std::string& thinking, int draft_tokens) {
  auto keys = [](const auto& map) {
    std::vector<std::string> out;
    for (const auto& kv : map) out.push_back(fmt::format("{}", kv.first));
    return join(out, ", ");
  };
  auto m = model.empty() && golden.curves.size() == 1 ? golden.curves.begin()
                                                      : golden.curves.find(model);
  if (m == golden.curves.end()) {
    return input_error(fmt::format(
        "{}: {} (the file has: {})", golden.file,
        model.empty() ? "several models; say which with model:" : "no model '" + model + "'",
        keys(golden.curves)));
  }
  const auto& modes = m->second;
  auto t = thinking.empty() && modes.size() == 1 ? modes.begin() : modes.find(thinking);
  if (t == modes.end()) {
    return input_error(fmt::format("{}: {}: {} (it has: thinking {})", golden.file, m->first,
                                   thinking.empty()
                                       ? "both thinking modes; say which with thinking: on|off"
                                       : "no thinking_" + thinking + " curve",
                                   keys(modes)));
  }
  const auto k = t->second.find(draft_tokens);
  if (k == t->second.end()) {
    return input_error(fmt::format(
        "{}: {} thinking_{}: no golden AL for {} draft tokens (it has: {}); a missing length is "
        "not interpolated",
        golden.file, m->first, t->first, draft_tokens, keys(t->second)));
  }
  return GoldenPick{k->second, fmt::format("{}: {} thinking_{}, {} draft tokens", golden.file,
                                           m->first, t->first, draft_tokens)};
}

SpecKnobs find_spec_knobs(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env) {
  SpecKnobs out;
  Acceptance acc;
  for (size_t i = 0; i < argv.size(); ++i) read_argument(argv, i, out, acc);
  if (out.draft_tokens && acc.per_position && *acc.per_position >= 0 && *acc.per_position <= 1) {
    // serve-sim's per-position model: position j is accepted with p^j.
    double al = 1, term = 1;
    for (int j = 1; j <= *out.draft_tokens; ++j) al += (term *= *acc.per_position);
    out.pins.push_back({fmt::format("--spec-acceptance {} with {} draft tokens", *acc.per_position,
                                    *out.draft_tokens),
                        al, false, ""});
  }
  if (out.draft_tokens && acc.rate) {
    out.pins.push_back({fmt::format("--spec-decode-acceptance-rate {}", *acc.rate),
                        1 + *acc.rate * *out.draft_tokens, false, ""});
  }
  for (const auto& [name, value] : env) {
    const auto v = number_of(value);
    if (!v) continue;
    if (name == "SGLANG_SIMULATE_ACC_LEN") {
      out.pins.push_back({fmt::format("{}={}", name, value), *v, true, name});
    } else if (name == "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS") {
      // Accepted drafts only: the target's own token is not counted.
      out.pins.push_back({fmt::format("{}={} (AL - 1)", name, value), *v + 1, true, name});
    }
  }
  // A huge value times K is no acceptance length.
  std::erase_if(out.pins, [](const SpecKnobs::Pin& p) { return !std::isfinite(p.al); });
  return out;
}

}  // namespace ib::recipe
