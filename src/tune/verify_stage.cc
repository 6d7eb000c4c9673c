#include "tune/verify_stage.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

#include "core/clock.h"
#include "core/files.h"
#include "core/strings.h"
#include "govern/changed.h"
#include "recipe/matrix.h"

namespace ib::tune {

namespace fs = std::filesystem;

std::string_view to_string(VerifyOutcome o) {
  switch (o) {
    case VerifyOutcome::kSurvives:
      return "survives";
    case VerifyOutcome::kNoOp:
      return "no-op";
    case VerifyOutcome::kFailedToStart:
      return "failed to start";
    case VerifyOutcome::kConfounded:
      return "confounded";
  }
  return "?";
}

std::vector<verify::ChangedField> changed_fields(const recipe::ConfigEntry& base,
                                                 const Candidate& candidate) {
  std::vector<verify::ChangedField> out;
  for (const auto& f : govern::diff_fields(base.raw, candidate.entry.raw)) {
    std::string path = f.path;
    if (path.starts_with("scenarios")) {
      // scenarios.fixed-seq-len[0].search-space[0].tp -> search-space.tp
      const auto dot = path.rfind('.');
      path = "search-space." + (dot == std::string::npos ? path : path.substr(dot + 1));
    }
    out.push_back({path, f.kind, f.detail});
  }
  return out;
}

namespace {

// The server's own first words say why it stopped (a bad argument, a missing file): ": LINE".
std::string server_says(const fs::path& log) {
  if (auto text = read_file(log)) {
    for (const std::string& line : split(*text, '\n')) {
      if (!line.empty()) return fmt::format(": {}", printable(line, 200));
    }
  }
  return "";
}

}  // namespace

Expected<VerifyStage> verify_candidates(const recipe::ConfigEntry& base,
                                        const std::vector<Candidate>& candidates,
                                        const fs::path& dir, const sweep::VerifyOptions& options,
                                        const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  VerifyStage stage;
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  // Every variable any side sets is watched on every server, so "never read" is known for each.
  std::vector<std::string> watch;
  auto watch_name = [&](const std::string& name) {
    if (std::find(watch.begin(), watch.end(), name) == watch.end()) watch.push_back(name);
  };
  auto add_watch = [&](const recipe::ConfigEntry& e) {
    if (!e.serve) return;
    for (const auto& [name, value] : e.serve->env) watch_name(name);
    for (const auto& [role, block] : e.serve->roles) {
      for (const auto& [name, value] : block.env) watch_name(name);
    }
  };
  add_watch(base);
  for (const auto& c : candidates) {
    add_watch(c.entry);
    for (const auto& ch : c.changes) {
      // A role's variable ("decode.NAME") is watched by its name: a variable name has no dot.
      if (ch.kind == KnobKind::kEnv) watch_name(ch.name.substr(ch.name.find('.') + 1));
    }
  }
  const auto base_rows = recipe::expand({base}, nullptr);
  if (base_rows.empty()) return Error{fmt::format("{}: the entry has no benchmark row", base.key)};
  say(fmt::format("stage 1/3 verify: starting the base server ({})", base.key));
  stage.base = sweep::observe_server(base_rows.front(), watch, dir / "base", options, &base);
  ++stage.servers_started;
  if (!stage.base.observed) {
    return Error{fmt::format("the base server did not start: {}{} (log: {})",
                             first_line(stage.base.error), server_says(dir / "base" / "server.log"),
                             (dir / "base" / "server.log").string())};
  }
  size_t index = 0;
  for (const Candidate& c : candidates) {
    ++index;
    const auto t = std::chrono::steady_clock::now();
    VerifyItem item;
    item.candidate_id = c.id;
    item.evidence_dir = (dir / c.id).string();
    say(fmt::format("stage 1/3 verify: {}/{} {}", index, candidates.size(), c.describe()));
    const auto rows = recipe::expand({c.entry}, nullptr);
    const auto fields = changed_fields(base, c);
    if (rows.empty()) {
      item.outcome = VerifyOutcome::kFailedToStart;
      item.error = "the candidate entry has no benchmark row";
    } else {
      verify::ServerObservation obs =
          sweep::observe_server(rows.front(), watch, dir / c.id, options, &c.entry);
      ++stage.servers_started;
      item.verdict = verify::judge_key(c.config_key, "modified", fields, &stage.base, &obs,
                                       options.ignore_settings);
      if (!obs.observed) {
        item.outcome = VerifyOutcome::kFailedToStart;
        item.error = first_line(obs.error);
        const fs::path log =
            obs.log_path.empty() ? dir / c.id / "server.log" : fs::path(obs.log_path);
        item.error += server_says(log) + fmt::format(" (log: {})", log.string());
      } else if (item.verdict.no_op()) {
        item.outcome = VerifyOutcome::kNoOp;
      } else if (!item.verdict.confounders.empty()) {
        item.outcome = VerifyOutcome::kConfounded;
      } else {
        item.outcome = VerifyOutcome::kSurvives;
      }
    }
    item.wall_s = seconds_since(t);
    say(fmt::format("stage 1/3 verify: {}/{} {}: {}", index, candidates.size(), c.describe(),
                    to_string(item.outcome)));
    stage.items.push_back(std::move(item));
  }
  stage.wall_s = seconds_since(t0);
  return stage;
}

namespace {

std::optional<VerifyOutcome> outcome_named(std::string_view name) {
  for (auto o : {VerifyOutcome::kSurvives, VerifyOutcome::kNoOp, VerifyOutcome::kFailedToStart,
                 VerifyOutcome::kConfounded}) {
    if (to_string(o) == name) return o;
  }
  return std::nullopt;
}

}  // namespace

boost::json::object stage_to_json(const VerifyStage& stage) {
  boost::json::array items;
  for (const auto& i : stage.items) {
    items.push_back(boost::json::object{{"candidate", i.candidate_id},
                                        {"outcome", to_string(i.outcome)},
                                        {"verdict", i.verdict.to_json()},
                                        {"error", i.error},
                                        {"evidence_dir", i.evidence_dir},
                                        {"wall_s", i.wall_s}});
  }
  return boost::json::object{{"version", 1},
                             {"base", boost::json::object{{"identity", stage.base.identity.to_json()},
                                                          {"log", stage.base.log_path}}},
                             {"items", std::move(items)},
                             {"wall_s", stage.wall_s},
                             {"servers_started", stage.servers_started}};
}

Expected<VerifyStage> stage_from_json(const boost::json::value& json,
                                      const std::vector<Candidate>& candidates) {
  try {
    const auto& o = json.as_object();
    VerifyStage stage;
    stage.base.observed = true;
    // Read by metrics::Identity: a tune.json written before the one field list (kebab-case
    // keys) reads the same.
    stage.base.identity = metrics::Identity::from_json(o.at("base").at("identity").as_object());
    stage.base.log_path = std::string(o.at("base").at("log").as_string());
    stage.wall_s = o.at("wall_s").to_number<double>();
    stage.servers_started = static_cast<int>(o.at("servers_started").as_int64());
    const auto& items = o.at("items").as_array();
    if (items.size() != candidates.size()) {
      return Error{fmt::format("stage 1 holds {} candidates, the tuning has {}", items.size(),
                               candidates.size())};
    }
    for (size_t k = 0; k < items.size(); ++k) {
      const auto& j = items[k].as_object();
      VerifyItem item;
      item.candidate_id = std::string(j.at("candidate").as_string());
      if (item.candidate_id != candidates[k].id) {
        return Error{fmt::format("stage 1's candidate {} is not the tuning's {}", item.candidate_id,
                                 candidates[k].id)};
      }
      auto outcome = outcome_named(j.at("outcome").as_string());
      if (!outcome) return Error{"stage 1: an unknown outcome"};
      item.outcome = *outcome;
      item.error = std::string(j.at("error").as_string());
      item.evidence_dir = std::string(j.at("evidence_dir").as_string());
      item.wall_s = j.at("wall_s").to_number<double>();
      const auto& v = j.at("verdict").as_object();
      item.verdict.key = std::string(v.at("config-key").as_string());
      item.verdict.status = std::string(v.at("status").as_string());
      item.verdict.verdict = std::string(v.at("verdict").as_string());
      item.verdict.effective_diff = v.at("effective-diff").as_object();
      for (const auto& f : v.at("fields").as_array()) {
        item.verdict.fields.push_back(
            {std::string(f.at("field").as_string()), std::string(f.at("change").as_string()),
             std::string(f.at("verdict").as_string()), std::string(f.at("evidence").as_string())});
      }
      for (const auto& c : v.at("confounders").as_array()) {
        auto cf = metrics::Confounder::from_json(c);
        if (!cf) throw std::runtime_error("a confounder names no identity field");
        item.verdict.confounders.push_back(std::move(*cf));
      }
      for (const auto& n : v.at("notes").as_array()) item.verdict.notes.emplace_back(n.as_string());
      stage.items.push_back(std::move(item));
    }
    return stage;
  } catch (const std::exception& e) {
    return Error{fmt::format("not a stage 1 record ({})", e.what())};
  }
}

}  // namespace ib::tune
