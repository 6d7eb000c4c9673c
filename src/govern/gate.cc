#include "govern/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <ctime>
#include <regex>
#include <stdexcept>
#include <tuple>

#include "core/redact.h"
#include "core/strings.h"
#include "recipe/golden_al.h"

namespace ib::govern {

namespace json = boost::json;

std::string_view gate_verdict_name(GateVerdict v) {
  switch (v) {
    case GateVerdict::kPass:
      return "pass";
    case GateVerdict::kFail:
      return "fail";
    case GateVerdict::kNotApplicable:
      return "n/a";
    case GateVerdict::kCannotDecide:
      return "cannot decide";
  }
  return "cannot decide";
}

std::string GateEvidence::where() const {
  if (file.empty()) return {};
  return line > 0 ? fmt::format("{}:{}", file, line) : file;
}

json::object GateEvidence::to_json() const {
  json::object o{{"file", file}, {"line", line}, {"text", text}, {"what", what}};
  if (waived) o["waived"] = true;
  return o;
}

json::object GateCheck::to_json() const {
  json::array ev;
  for (const auto& e : evidence) ev.push_back(e.to_json());
  return json::object{{"number", number},
                      {"id", id},
                      {"title", title},
                      {"inferencex", inferencex},
                      {"verdict", gate_verdict_name(verdict)},
                      {"summary", summary},
                      {"todo", todo},
                      {"evidence", std::move(ev)}};
}

GateVerdict GateReport::overall() const {
  bool undecided = false;
  for (const auto& c : checks) {
    if (c.verdict == GateVerdict::kFail) return GateVerdict::kFail;
    if (c.verdict == GateVerdict::kCannotDecide) undecided = true;
  }
  return undecided ? GateVerdict::kCannotDecide : GateVerdict::kPass;
}

json::object GateReport::to_json() const {
  json::array cs, ks;
  for (const auto& c : checks) cs.push_back(c.to_json());
  for (const auto& k : keys) ks.emplace_back(k);
  return json::object{{"base", base},
                      {"head", head},
                      {"verdict", gate_verdict_name(overall())},
                      {"keys", std::move(ks)},
                      {"checks", std::move(cs)}};
}

namespace {

// Markdown table cells: no line breaks, no unescaped pipes, no runaway length.
std::string cell(std::string_view s, size_t max = 160) {
  std::string out;
  for (char c : s) {
    if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  if (out.size() > max) out = out.substr(0, max - 3) + "...";
  return out;
}

// Inline code that survives backticks in the text.
std::string code(std::string_view s) {
  const std::string t = cell(s, 200);
  return t.find('`') == std::string::npos ? "`" + t + "`" : "`` " + t + " ``";
}

std::string_view mark(GateVerdict v) {
  switch (v) {
    case GateVerdict::kPass:
      return "✅ pass";
    case GateVerdict::kFail:
      return "❌ fail";
    case GateVerdict::kNotApplicable:
      return "➖ n/a";
    case GateVerdict::kCannotDecide:
      return "❔ cannot decide";
  }
  return "";
}

}  // namespace

std::string GateReport::to_markdown() const {
  std::string md = fmt::format("## inferbench gate: {}\n\n", mark(overall()));
  md += fmt::format("Base {}, head {}; {} config key{} changed", base, head, keys.size(),
                    keys.size() == 1 ? "" : "s");
  if (!keys.empty()) {
    std::vector<std::string> shown;
    for (const auto& k : keys) shown.push_back(code(k));
    md += ": " + fmt::format("{}", fmt::join(shown, ", "));
  }
  md += ".\n\n| # | check | InferenceX | verdict | why |\n|---|---|---|---|---|\n";
  for (const auto& c : checks) {
    md += fmt::format("| {} | {} | {} | {} | {} |\n", c.number, cell(c.title), cell(c.inferencex),
                      mark(c.verdict), cell(c.summary, 400));
  }
  for (const auto& c : checks) {
    if (c.verdict != GateVerdict::kFail && c.verdict != GateVerdict::kCannotDecide) continue;
    md += fmt::format("\n### {}. {}: {}\n\n{}\n", c.number, c.title, mark(c.verdict), c.summary);
    if (!c.evidence.empty()) md += "\n";
    for (const auto& e : c.evidence) {
      md += "- ";
      if (!e.where().empty()) md += fmt::format("{} ", code(e.where()));
      if (!e.text.empty()) md += code(e.text) + " ";
      md += cell(e.what, 300);
      if (e.waived) md += " (waived)";
      md += "\n";
    }
    if (!c.todo.empty()) md += fmt::format("\n**To do:** {}\n", c.todo);
  }
  return md;
}

Expected<ChangelogRun> changelog_between(const TreeView& base, const TreeView& head,
                                         const ChangelogInputs& in) {
  ChangelogRun run;
  auto base_bytes = base.read(in.file);
  if (!base_bytes) return base_bytes.error();
  auto head_bytes = head.read(in.file);
  if (!head_bytes) return head_bytes.error();
  if (!*head_bytes) {
    return Error{fmt::format("{} does not exist at {}", in.file, head.describe()),
                 ErrorKind::kUsage};
  }
  ChangelogContext& ctx = run.context;
  ctx.file = in.file;
  ctx.main = in.main;
  ctx.pr_url = in.pr_url;
  ctx.labels = in.labels;
  auto configs = load_configs_at(head, in.changed);
  if (!configs) return configs.error();
  if (configs->empty()) {
    // Nothing to resolve keys against, and nothing `changed` could report.
    run.note = fmt::format(
        "no recipe files found at {}; config keys are not resolved and coverage is not checked",
        head.describe());
  } else {
    ctx.config_keys.emplace();
    ctx.agentic_keys.emplace();
    for (const auto& c : *configs) {
      ctx.config_keys->push_back(c.key);
      if (!c.agentic_coding.empty()) ctx.agentic_keys->insert(c.key);
    }
    auto changed = changed_keys(base, head, in.changed);
    if (!changed) return changed.error();
    // A removed key cannot be named by a new entry (it no longer resolves), so only added and
    // modified keys need covering.
    ctx.affected_keys.emplace();
    for (const auto& k : changed->keys) {
      if (k.status != "removed") ctx.affected_keys->push_back(k.key);
    }
    run.changed = std::move(*changed);
  }
  run.report = check_changelog(*base_bytes, **head_bytes, ctx);
  return run;
}

namespace {

std::string utc_date_today() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  return fmt::format("{:04}-{:02}-{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

// Files whose text is prose (documentation, waivers): they may describe a patch or an override
// without making one.
bool is_prose(const std::string& path) {
  for (const char* ext : {".md", ".rst", ".txt", ".adoc"}) {
    if (path.ends_with(ext)) return true;
  }
  return path.starts_with("docs/") || path.find("/docs/") != std::string::npos;
}

bool is_patch_file(const FileDiff& f) {
  return f.path.ends_with(".patch") || f.path.ends_with(".diff");
}

struct Pattern {
  std::regex re;
  const char* what;
};

// std::regex recurses per character: a long added line (minified JSON, a generated file) is
// searched in overlapping windows, so that the stack stays bounded and a knob anywhere on the
// line is still found (every pattern matches within a few hundred bytes).
bool search_line(std::string_view line, const std::regex& re) {
  constexpr size_t kWindow = 2048, kOverlap = 512;
  for (size_t start = 0;; start += kWindow - kOverlap) {
    const std::string_view part = line.substr(start, kWindow);
    // Past the first window, ^ and \b see the character before the window.
    const auto flags =
        start == 0 ? std::regex_constants::match_default : std::regex_constants::match_prev_avail;
    if (std::regex_search(part.begin(), part.end(), re, flags)) return true;
    if (start + kWindow >= line.size()) return false;
  }
}

// Every added line of the change's files (prose and deleted files aside) against `patterns`: one
// piece of evidence per matching line, the first pattern's. The line is shown as it may be: its
// secrets hidden (a command line can carry --api-key), control characters escaped, cut.
template <size_t N>
void scan_added_lines(const std::vector<FileDiff>& diff, const std::array<Pattern, N>& patterns,
                      std::vector<GateEvidence>& evidence, bool skip_patch_files = false) {
  for (const auto& f : diff) {
    if (f.deleted || is_prose(f.path) || (skip_patch_files && is_patch_file(f))) continue;
    for (const auto& l : f.added_lines) {
      for (const auto& p : patterns) {
        if (!search_line(l.text, p.re)) continue;
        evidence.push_back(
            {f.path, l.line, printable(redact_text(trim(l.text)), 300), p.what, false});
        break;
      }
    }
  }
}

}  // namespace

GateCheck check_flop_overrides(const std::vector<FileDiff>& diff) {
  GateCheck c;
  c.number = 5;
  c.id = "flop-overrides";
  c.title = "No FLOP-removing overrides";
  c.inferencex = "Check 8";
  // Knobs that change the model's architecture (and so the work per token) rather than how the
  // engine runs it: vLLM's --hf-overrides, SGLang's --json-model-override-args, the config
  // fields they set, indexer skipping, and edits of the model's config.json.
  static const std::array<Pattern, 6> kPatterns = {{
      {std::regex(R"(--hf[-_]overrides|\bhf_overrides\b)"),
       "overrides the model's Hugging Face config (vLLM --hf-overrides)"},
      {std::regex(R"(--json-model-override-args)"),
       "overrides the model's config (SGLang --json-model-override-args)"},
      {std::regex(R"(\b(num_hidden_layers|num_layers|n_layers|num_experts|num_local_experts|)"
                  R"(n_routed_experts|num_experts_per_tok|num_attention_heads|num_key_value_heads|)"
                  R"(first_k_dense_replace|moe_layer_freq)\b)"),
       "sets an architecture field (layers, experts or heads)"},
      {std::regex(R"(\b(index_topk|skip_indexer|disable_indexer)\b|--(skip|disable)-indexer)"),
       "changes or skips the sparse-attention indexer"},
      {std::regex(R"(\bsed\b.*-i.*config\.json|\bjq\b.*config\.json)"),
       "edits the model's config.json"},
      {std::regex(R"(>\s*\S*config\.json)"), "writes the model's config.json"},
  }};
  scan_added_lines(diff, kPatterns, c.evidence);
  size_t lines = 0, files = 0;
  for (const auto& f : diff) {
    if (f.deleted || is_prose(f.path)) continue;
    ++files;
    lines += f.added_lines.size();
  }
  if (!c.evidence.empty()) {
    c.verdict = GateVerdict::kFail;
    c.summary = fmt::format(
        "{} added line{} change{} the model's architecture: the benchmark would serve less work "
        "per token than the model has",
        c.evidence.size(), c.evidence.size() == 1 ? "" : "s", c.evidence.size() == 1 ? "s" : "");
    c.todo =
        "serve the model as released: remove the overrides (lower precision is allowed where "
        "evals pass)";
  } else {
    c.verdict = GateVerdict::kPass;
    c.summary =
        fmt::format("no architecture override among the {} added line{} of {} changed file{}",
                    lines, lines == 1 ? "" : "s", files, files == 1 ? "" : "s");
  }
  return c;
}

std::vector<std::string> waiver_texts(const TreeView& head) {
  std::vector<std::string> waivers;
  if (auto files = head.list("docs/waiver"); files) {
    for (const auto& w : *files) {
      if (!w.ends_with(".md")) continue;
      if (auto text = head.read(w); text && *text) waivers.push_back(**text);
    }
  }
  return waivers;
}

GateCheck check_engine_patches(const std::vector<FileDiff>& diff, const TreeView& head) {
  GateCheck c;
  c.number = 7;
  c.id = "engine-patches";
  c.title = "No engine patches";
  c.inferencex = "Check 10";
  static const std::array<Pattern, 7> kPatterns = {{
      {std::regex(R"((^|[;&|(]\s*|\s)git\s+apply\b)"), "applies a patch (git apply)"},
      {std::regex(R"((^|[;&|(]\s*)\s*patch\s+(-p|<|--))"), "applies a patch (patch)"},
      {std::regex(R"(\bsed\b[^|;]*\s-i\b.*(site-packages|dist-packages|\.py\b|find_spec))"),
       "rewrites installed Python sources in place (sed -i)"},
      {std::regex(R"((cat|tee)\b[^<]*(site-packages|dist-packages|\.py\b)[^<]*<<)"),
       "writes a Python source from a heredoc"},
      {std::regex(R"(\bsitecustomize\b)"), "changes the interpreter at start-up (sitecustomize)"},
      {std::regex(R"(importlib\.util\.find_spec)"),
       "locates an installed package's files (the first step of patching them)"},
      {std::regex(R"(pip3?\s+install\b.*(git\+https?://|\.whl\b).*(vllm|sglang|tensorrt|trtllm))"),
       "installs an engine from a fork or a wheel file"},
  }};
  // A patch file is evidence whole; the other files, line by line.
  for (const auto& f : diff) {
    if (!f.deleted && !is_prose(f.path) && is_patch_file(f)) {
      c.evidence.push_back({f.path, 0, "", "a patch file", false});
    }
  }
  scan_added_lines(diff, kPatterns, c.evidence, /*skip_patch_files=*/true);
  // A waiver (docs/waiver/*.md at head, as InferenceX asks of each patch) that names the file.
  const std::vector<std::string> waivers = waiver_texts(head);
  size_t waived = 0;
  for (auto& e : c.evidence) {
    for (const auto& w : waivers) {
      if (w.find(e.file) != std::string::npos) {
        e.waived = true;
        ++waived;
        break;
      }
    }
  }
  if (c.evidence.size() > waived) {
    c.verdict = GateVerdict::kFail;
    c.summary = fmt::format("{} added line{} or file{} patch{} the engine{}",
                            c.evidence.size() - waived, c.evidence.size() - waived == 1 ? "" : "s",
                            c.evidence.size() - waived == 1 ? "" : "s",
                            c.evidence.size() - waived == 1 ? "es" : "",
                            waived > 0 ? fmt::format(" ({} more waived)", waived) : "");
    c.todo =
        "run the engine as released; a patch that must stay needs docs/waiver/<PR>.md naming the "
        "file: what is patched, why, the upstream link and when it goes";
  } else {
    c.verdict = GateVerdict::kPass;
    c.summary =
        waived > 0
            ? fmt::format("{} patch{} of the engine, each waived in docs/waiver/", waived,
                          waived == 1 ? "" : "es")
            : "no engine patch in the change's text (writes into the engine's installed files at "
              "run time are read from stored runs: --db)";
  }
  return c;
}

namespace {

// The scenario names a deprecation can list: "ISL/OSL" per fixed-seq-len entry, and the other
// scenario types by name.
std::vector<std::string> scenario_names(const recipe::ConfigEntry& e) {
  std::vector<std::string> out;
  for (const auto& f : e.fixed_seq_len) out.push_back(fmt::format("{}/{}", f.isl, f.osl));
  if (!e.agentic_coding.empty()) out.emplace_back("agentic-coding");
  if (!e.timed_trace.empty()) out.emplace_back("timed-trace");
  return out;
}

}  // namespace

GateCheck check_images(const std::vector<const recipe::ConfigEntry*>& changed,
                       const std::optional<GatePolicy>& policy, const std::string& date) {
  GateCheck c;
  c.number = 4;
  c.id = "images";
  c.title = "Upstream images, no deprecated models";
  c.inferencex = "Checks 6-7";
  if (changed.empty()) {
    c.verdict = GateVerdict::kNotApplicable;
    c.summary = "no config key is added or modified";
    return c;
  }
  if (!policy) {
    c.verdict = GateVerdict::kCannotDecide;
    c.summary =
        "the repository keeps no gate policy (the upstream images of each engine, the "
        "deprecated models and scenarios)";
    c.todo = "add gate-policy.yaml (docs/gate.md), or name it with --policy";
    return c;
  }
  int failed = 0, undecided = 0;
  for (const auto* e : changed) {
    const auto it = policy->upstream_images.find(e->framework);
    if (it == policy->upstream_images.end()) {
      c.evidence.push_back({e->file, e->line, "framework: " + e->framework,
                            fmt::format("{}: no upstream images listed for this framework in {}",
                                        e->key, policy->file),
                            false});
      ++undecided;
    } else if (std::none_of(it->second.begin(), it->second.end(), [&](const std::string& p) {
                 return changelog_key_matches(p, e->image);
               })) {
      c.evidence.push_back(
          {e->file, e->line, "image: " + e->image,
           fmt::format("{}: not an upstream {} release ({}:{} lists {})", e->key, e->framework,
                       policy->file, policy->upstream_lines.at(e->framework),
                       fmt::join(it->second, ", ")),
           false});
      ++failed;
    }
    for (const auto& d : policy->models) {
      if (d.from > date || !changelog_key_matches(d.pattern, e->model)) continue;
      c.evidence.push_back({e->file, e->line, "model: " + e->model,
                            fmt::format("{}: deprecated since {} ({}:{}){}", e->key, d.from,
                                        policy->file, d.line, d.why.empty() ? "" : ": " + d.why),
                            false});
      ++failed;
    }
    for (const auto& s : scenario_names(*e)) {
      for (const auto& d : policy->scenarios) {
        if (d.from > date || !changelog_key_matches(d.pattern, s)) continue;
        c.evidence.push_back(
            {e->file, e->line, "scenario: " + s,
             fmt::format("{}: scenario deprecated since {} ({}:{}){}", e->key, d.from, policy->file,
                         d.line, d.why.empty() ? "" : ": " + d.why),
             false});
        ++failed;
      }
    }
  }
  if (failed > 0) {
    c.verdict = GateVerdict::kFail;
    c.summary = fmt::format("{} finding{} among {} changed key{}", failed, failed == 1 ? "" : "s",
                            changed.size(), changed.size() == 1 ? "" : "s");
    c.todo = "use the engine's upstream release image; drop deprecated models and scenarios";
  } else if (undecided > 0) {
    c.verdict = GateVerdict::kCannotDecide;
    c.summary = fmt::format("{} changed key{} of a framework the policy does not list", undecided,
                            undecided == 1 ? "" : "s");
    c.todo = fmt::format("list the framework's upstream images in {}", policy->file);
  } else {
    c.verdict = GateVerdict::kPass;
    c.summary =
        fmt::format("{} changed key{}: upstream images, no model or scenario deprecated on {} ({})",
                    changed.size(), changed.size() == 1 ? "" : "s", date, policy->file);
  }
  return c;
}

namespace {

// Whether the entry's expect block pins a golden acceptance length (`spec-acceptance`, as a
// mapping's field or a list item's).
bool pins_golden(const recipe::ConfigEntry& e) {
  if (!e.expect) return false;
  if (e.expect->is_object()) return e.expect->as_object().contains("spec-acceptance");
  if (!e.expect->is_array()) return false;
  for (const auto& item : e.expect->as_array()) {
    if (item.is_object() && item.as_object().contains("spec-acceptance")) return true;
  }
  return false;
}

bool speculates(const std::vector<recipe::SearchSpaceEntry>& space) {
  return std::any_of(space.begin(), space.end(),
                     [](const auto& s) { return s.spec_decoding != "none"; });
}

// The serve blocks of an entry (one, or one per role), as knob readers see them.
std::vector<const recipe::ServeSpec*> serve_blocks(const recipe::ConfigEntry& e) {
  std::vector<const recipe::ServeSpec*> out;
  if (!e.serve) return out;
  if (!e.serve->has_roles()) out.push_back(&*e.serve);
  for (const auto& [role, spec] : e.serve->roles) out.push_back(&spec);
  return out;
}

}  // namespace

GateCheck check_golden_acceptance(const std::vector<const recipe::ConfigEntry*>& changed) {
  GateCheck c;
  c.number = 8;
  c.id = "golden-acceptance";
  c.title = "Golden acceptance length";
  c.inferencex = "Check 11";
  int agentic_spec = 0, failed = 0;
  for (const auto* e : changed) {
    bool agentic = false;
    for (const auto& a : e->agentic_coding) agentic = agentic || speculates(a.search_space);
    // Synthetic-acceptance knobs in the serve command or environment.
    std::vector<std::string> pins;
    for (const auto* spec : serve_blocks(*e)) {
      std::vector<std::string> argv = spec->command;
      argv.insert(argv.end(), spec->extra_args.begin(), spec->extra_args.end());
      std::vector<std::pair<std::string, std::string>> env(spec->env.begin(), spec->env.end());
      for (const auto& p : recipe::find_spec_knobs(argv, env).pins) pins.push_back(p.knob);
    }
    if (agentic) {
      ++agentic_spec;
      if (!pins_golden(*e)) {
        c.evidence.push_back({e->file, e->line, e->key,
                              "an agentic spec-decoding key without `expect: spec-acceptance`: "
                              "its acceptance length is not pinned to the golden value",
                              false});
        ++failed;
      }
    } else {
      for (const auto& k : pins) {
        c.evidence.push_back({e->file, e->line, k,
                              fmt::format("{}: a synthetic acceptance on a key with no agentic "
                                          "spec-decoding row",
                                          e->key),
                              false});
        ++failed;
      }
    }
  }
  if (failed > 0) {
    c.verdict = GateVerdict::kFail;
    c.summary = fmt::format("{} finding{} in the changed keys", failed, failed == 1 ? "" : "s");
    c.todo =
        "pin agentic spec-decoding keys to the golden acceptance length (expect: spec-acceptance, "
        "docs/metrics.md); remove synthetic acceptance knobs elsewhere";
  } else if (agentic_spec > 0) {
    c.verdict = GateVerdict::kCannotDecide;
    c.summary = fmt::format(
        "{} agentic spec-decoding key{} pin{} the golden acceptance length (the sweep refuses a "
        "pinned value that is not the golden one); whether the runs realised it needs their "
        "stored results (--db)",
        agentic_spec, agentic_spec == 1 ? "" : "s", agentic_spec == 1 ? "s" : "");
    c.todo = "check each run's spec_acceptance (inferbench show) by hand";
  } else {
    c.verdict = GateVerdict::kNotApplicable;
    c.summary = "no changed key speculates in an agentic row or pins a synthetic acceptance";
  }
  return c;
}

namespace {

GateCheck changelog_check(const Expected<ChangelogRun>& run, const ChangelogInputs& in) {
  GateCheck c;
  c.number = 2;
  c.id = "changelog";
  c.title = "Changelog and labels";
  c.inferencex = "perf-changelog rules";
  if (!run) {
    c.verdict = GateVerdict::kCannotDecide;
    c.summary = run.error().message;
    c.todo = fmt::format("make {} readable at both revisions", in.file);
    return c;
  }
  const auto& r = run->report;
  for (const auto& v : r.violations) {
    c.evidence.push_back({in.file, v.line, v.rule, v.message, false});
  }
  if (!r.ok()) {
    c.verdict = GateVerdict::kFail;
    c.summary = fmt::format("{} violation{} of the changelog rules", r.violations.size(),
                            r.violations.size() == 1 ? "" : "s");
    c.todo = "fix each line named below (`inferbench changelog check` gives the same list)";
    return c;
  }
  if (!run->note.empty()) {
    c.verdict = GateVerdict::kCannotDecide;
    c.summary = fmt::format("the file's rules hold, but {}", run->note);
    c.todo = "name the recipe files (--recipes)";
    return c;
  }
  c.verdict = GateVerdict::kPass;
  c.summary = fmt::format("{} appended entr{} cover{} every changed key{}", r.additions.size(),
                          r.additions.size() == 1 ? "y" : "ies", r.additions.size() == 1 ? "s" : "",
                          in.labels.empty() ? " (no labels given)"
                                            : fmt::format("; the labels ({}) agree with them",
                                                          fmt::join(in.labels, ", ")));
  return c;
}

// A check decided from stored runs, when no results database was given: it says so, never pass.
GateCheck needs_runs(int number, std::string id, std::string title, std::string inferencex,
                     std::string asks) {
  GateCheck c;
  c.number = number;
  c.id = std::move(id);
  c.title = std::move(title);
  c.inferencex = std::move(inferencex);
  c.verdict = GateVerdict::kCannotDecide;
  c.summary = "no results database was given (--db), so no run was read: " + asks;
  c.todo = "give the results database the sweeps wrote (--db FILE)";
  return c;
}

// The commits of base..head; for a working-tree head, HEAD as well (a sweep of the working tree
// records the commit it was checked out at).
Expected<std::vector<std::string>> range_commits(const TreeView& base, const TreeView& head) {
  const std::string to = head.is_worktree() ? "HEAD" : head.commit();
  auto out = git(head.root(), {"rev-list", base.commit() + ".." + to});
  if (!out) return out.error();
  std::vector<std::string> commits;
  for (auto& line : split(*out, '\n')) {
    std::string c(trim(line));
    if (!c.empty()) commits.push_back(std::move(c));
  }
  if (head.is_worktree()) {
    auto at = git(head.root(), {"rev-parse", "HEAD"});
    if (!at) return at.error();
    std::string c(trim(*at));
    if (std::find(commits.begin(), commits.end(), c) == commits.end()) commits.push_back(c);
  }
  return commits;
}

// A point's row without the fields that make it a point rather than a server configuration.
json::value server_fields(const recipe::RecipeRow& r) {
  json::object o = r.fields;
  for (const char* k : {"conc", "exp-name", "recipe-fingerprint", "run-eval", "eval-conc"}) {
    o.erase(k);
  }
  return o;
}

}  // namespace

std::string point_name(const recipe::RecipeRow& r, bool with_conc) {
  const auto* v = r.fields.if_contains("exp-name");
  std::string name = v && v->is_string() ? std::string(v->as_string()) : r.config_key;
  // exp-name names a fixed-seq-len row by model and sequence lengths only: the parallelism and
  // speculation tell its rows apart (a multi-node row's exp-name has its workers and conc).
  // Defaults are left out: ep 1, dp-attn false, spec-decoding none.
  const bool has_conc = name.find("_conc") != std::string::npos;
  for (const char* k : {"tp", "ep", "dp-attn", "spec-decoding", "conc"}) {
    const std::string_view key(k);
    const auto* f = r.fields.if_contains(key);
    if (f == nullptr || (key == "conc" && (!with_conc || has_conc))) continue;
    const std::string value = f->is_string() ? std::string(f->as_string()) : json::serialize(*f);
    if ((key == "ep" && value == "1") || (key == "dp-attn" && value == "false") ||
        (key == "spec-decoding" && value == "none") ||
        (key == "tp" && name.find("_tp") != std::string::npos)) {
      continue;
    }
    name += fmt::format(" {} {}", key, value);
  }
  return name;
}

std::vector<const recipe::RecipeRow*> GateContext::head_rows_of(const std::string& key) const {
  std::vector<const recipe::RecipeRow*> out;
  for (const auto& r : head_rows) {
    if (r.config_key == key) out.push_back(&r);
  }
  return out;
}

std::vector<const recipe::RecipeRow*> GateContext::base_rows_of(const std::string& key) const {
  std::vector<const recipe::RecipeRow*> out;
  for (const auto& r : base_rows) {
    if (r.config_key == key) out.push_back(&r);
  }
  return out;
}

bool GateContext::in_range(const std::string& revision) const {
  return !revision.empty() && std::find(range.begin(), range.end(), revision) != range.end();
}

GateCheck& check_of(GateReport& report, int number) {
  for (auto& c : report.checks) {
    if (c.number == number) return c;
  }
  throw std::logic_error(fmt::format("gate report has no check {}", number));
}

GateCheck check_append_only_points(const GateContext& ctx) {
  GateCheck c;
  c.number = 9;
  c.id = "append-only";
  c.title = "Append-only isolation";
  c.inferencex = "Check 12";
  if (ctx.append_only_keys.empty()) {
    c.verdict = GateVerdict::kNotApplicable;
    c.summary = "no appended changelog entry is append-only";
    return c;
  }
  size_t kept = 0;
  for (const auto& key : ctx.append_only_keys) {
    const auto head = ctx.head_rows_of(key);
    for (const auto* b : ctx.base_rows_of(key)) {
      const std::string name = point_name(*b, true);
      const recipe::RecipeRow* h = nullptr;
      for (const auto* r : head) {
        if (point_name(*r, true) == name) h = r;
      }
      std::string file;
      int line = 0;
      for (const auto& e : ctx.head_configs) {
        if (e.key == key) std::tie(file, line) = std::pair(e.file, e.line);
      }
      if (h == nullptr) {
        c.evidence.push_back(
            {file, line, name, fmt::format("{}: this point of base is gone at head", key), false});
        continue;
      }
      if (h->fingerprint == b->fingerprint) {
        ++kept;
        continue;
      }
      std::vector<std::string> what;
      for (const auto& f : diff_fields(server_fields(*b), server_fields(*h))) {
        what.push_back(f.detail.empty() ? f.path : f.detail);
      }
      c.evidence.push_back(
          {file, line, name,
           fmt::format("{}: an existing point's server configuration changed ({}); fingerprint "
                       "{} at base, {} at head",
                       key, what.empty() ? "its fields" : fmt::format("{}", fmt::join(what, "; ")),
                       b->fingerprint.substr(0, 12), h->fingerprint.substr(0, 12)),
           false});
    }
  }
  if (!c.evidence.empty()) {
    c.verdict = GateVerdict::kFail;
    c.summary = fmt::format("{} point{} that existed at base {} not kept by the append-only change",
                            c.evidence.size(), c.evidence.size() == 1 ? "" : "s",
                            c.evidence.size() == 1 ? "is" : "are");
    c.todo =
        "an append-only change may only add points or variants: give the changed configuration a "
        "new key (or new concurrencies), or drop append-only from the changelog entry";
    return c;
  }
  c.verdict = GateVerdict::kPass;
  c.summary = fmt::format(
      "all {} point{} of base in the append-only key{} keep their fingerprint at head (their "
      "effective configuration and environment reads are compared where runs of both are stored)",
      kept, kept == 1 ? "" : "s", ctx.append_only_keys.size() == 1 ? "" : "s");
  return c;
}

namespace {

Expected<GateContext> gate_context(const TreeView& base, const TreeView& head,
                                   const ChangedReport& changed, const GateOptions& o,
                                   const Expected<ChangelogRun>& changelog) {
  GateContext ctx;
  ctx.changed = &changed;
  auto bc = load_configs_at(base, o.changelog.changed);
  if (!bc) return bc.error();
  auto hc = load_configs_at(head, o.changelog.changed);
  if (!hc) return hc.error();
  ctx.base_configs = std::move(*bc);
  ctx.head_configs = std::move(*hc);
  auto br = runners_at(base, o.changelog.changed.runners_path);
  if (!br) return br.error();
  auto hr = runners_at(head, o.changelog.changed.runners_path);
  if (!hr) return hr.error();
  ctx.base_rows = recipe::expand(ctx.base_configs, *br ? &**br : nullptr);
  ctx.head_rows = recipe::expand(ctx.head_configs, *hr ? &**hr : nullptr);
  auto range = range_commits(base, head);
  if (!range) return range.error();
  ctx.range = std::move(*range);
  ctx.labels = o.changelog.labels;
  ctx.waivers = waiver_texts(head);
  if (changelog) {
    const auto& r = changelog->report;
    for (size_t i = 0; i < r.additions.size(); ++i) {
      if (!r.additions[i].append_only) continue;
      const auto& keys =
          i < r.resolved_keys.size() ? r.resolved_keys[i] : r.additions[i].config_keys;
      for (const auto& k : keys) {
        if (std::find(ctx.append_only_keys.begin(), ctx.append_only_keys.end(), k) ==
            ctx.append_only_keys.end()) {
          ctx.append_only_keys.push_back(k);
        }
      }
    }
  }
  return ctx;
}

}  // namespace

Expected<GateReport> run_gate(const TreeView& base, const TreeView& head, const GateOptions& o) {
  GateReport report;
  report.base = base.describe();
  report.head = head.describe();
  auto diff = diff_between(base, head);
  if (!diff) return diff.error();
  // No changelog at head is the changelog check's failure to decide; a recipe that does not
  // load, or git failing, is the gate's error, not a verdict.
  auto exists = head.read(o.changelog.file);
  if (!exists) return exists.error();
  Expected<ChangelogRun> changelog =
      Error{fmt::format("{} does not exist at {}", o.changelog.file, head.describe())};
  if (*exists) {
    changelog = changelog_between(base, head, o.changelog);
    if (!changelog) return changelog.error();
  }
  auto changed = changed_keys(base, head, o.changelog.changed);
  if (!changed) return changed.error();
  for (const auto& k : changed->keys) report.keys.push_back(k.key);
  auto ctx = gate_context(base, head, *changed, o, changelog);
  if (!ctx) return ctx.error();
  std::vector<const recipe::ConfigEntry*> changed_entries;
  for (const auto& k : changed->keys) {
    if (k.status == "removed") continue;
    for (const auto& e : ctx->head_configs) {
      if (e.key == k.key) changed_entries.push_back(&e);
    }
  }
  std::optional<GatePolicy> policy;
  auto policy_text = head.read(o.policy_file);
  if (!policy_text) return policy_text.error();
  if (!*policy_text && o.policy_named) {
    return usage_error(
        fmt::format("--policy: {} does not exist at {}", o.policy_file, head.describe()));
  }
  if (*policy_text) {
    auto p = parse_gate_policy(**policy_text, o.policy_file);
    if (!p) return p.error();
    policy = std::move(*p);
  }
  const std::string date = o.date.empty() ? utc_date_today() : o.date;
  report.checks.push_back(needs_runs(
      1, "sweep-and-evals", "A passing sweep and evals in the range", "Checks 1-2",
      "a sweep of every changed key and its evals, all valid and passing, at a commit in the "
      "range"));
  report.checks.push_back(changelog_check(changelog, o.changelog));
  report.checks.push_back(needs_runs(3, "reuse", "Reuse of a run", "Check 4",
                                     "a reused run is of a commit in the range, covers the keys, "
                                     "and is not reused under evals-only or agentx-fast"));
  report.checks.push_back(check_images(changed_entries, policy, date));
  report.checks.push_back(check_flop_overrides(*diff));
  report.checks.push_back(needs_runs(6, "spec-decoding-chat",
                                     "Spec decoding through the chat template", "Check 9",
                                     "a changed spec-decoding row is benchmarked through chat "
                                     "completions"));
  report.checks.push_back(check_engine_patches(*diff, head));
  report.checks.push_back(check_golden_acceptance(changed_entries));
  report.checks.push_back(check_append_only_points(*ctx));
  report.checks.push_back(needs_runs(10, "effect", "The change has an effect", "verify",
                                     "each changed key's base and head runs show an effect (a "
                                     "no-op change fails)"));
  if (o.run_checks) {
    if (auto st = o.run_checks(*ctx, report); !st) return st.error();
  }
  return report;
}

}  // namespace ib::govern
