#include "verdict/sources.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/files.h"
#include "core/json_strict.h"
#include "core/json_text.h"

namespace ib::verdict {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::string str_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return "";
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_bool()) return v->as_bool() ? "true" : "false";
  if (v->is_number()) return fmt::format("{:g}", v->to_number<double>());
  return json_text(*v);
}

double num_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_number() ? v->to_number<double>() : std::numeric_limits<double>::quiet_NaN();
}

std::string repeat_group(const store::RunRecord& r) {
  const auto* rep = r.options.if_contains("repeat");
  if (!rep || !rep->is_object()) return "";
  return str_of(rep->as_object(), "group");
}

// Fields a result JSON carries for itself (InferenceX aggregate, vLLM, ours).
void fill_from_result(SidePoint& p, const json::object& r) {
  p.headline = metrics::Headline::from_json(r);
  if (std::isnan(p.headline.get("median_intvty"))) {
    const double tpot = num_of(r, "median_tpot_ms");
    if (std::isfinite(tpot) && tpot > 0) p.headline.set("median_intvty", 1000.0 / tpot);
  }
  double gpus = num_of(r, "num_gpus");
  if (const double d = num_of(r, "num_decode_gpu"); std::isfinite(d) && d >= 1) {
    p.decode_gpus = static_cast<int>(d);
  }
  const double total = p.headline.get("total_token_throughput");
  const double per_gpu = p.headline.get("tput_per_gpu");
  if (!std::isfinite(gpus) && std::isfinite(total) && std::isfinite(per_gpu) && per_gpu > 0) {
    gpus = std::round(total / per_gpu);
  }
  if (std::isfinite(gpus) && gpus >= 1) {
    p.gpus = static_cast<int>(gpus);
    if (std::isnan(per_gpu) && std::isfinite(total)) p.headline.set("tput_per_gpu", total / gpus);
    const double out = p.headline.get("output_throughput");
    if (std::isnan(p.headline.get("output_tput_per_gpu")) && std::isfinite(out)) {
      p.headline.set("output_tput_per_gpu", out / (p.decode_gpus > 0 ? p.decode_gpus : gpus));
    }
  }
  p.eval = metrics::eval_summary(r);
  // Where the TTFT went: the disaggregated parts, the engine's own timing (medians, ms).
  auto median_of = [&](const json::object& o, const std::string& key, const std::string& name) {
    const auto* v = o.if_contains(key);
    if (v == nullptr || !v->is_object()) return;
    const double m = num_of(v->as_object(), "median_ms");
    if (std::isfinite(m)) p.ttft_parts.emplace_back(name, m);
  };
  if (const auto* a = r.if_contains("ttft_attribution"); a && a->is_object()) {
    if (const auto* parts = a->as_object().if_contains("parts"); parts && parts->is_object()) {
      for (const auto& kv : parts->as_object()) {
        median_of(parts->as_object(), std::string(kv.key()), std::string(kv.key()));
      }
    }
    median_of(a->as_object(), "unattributed", "unattributed");
  }
  if (const auto* st = r.if_contains("server_timing"); st && st->is_object()) {
    median_of(st->as_object(), "queue", "engine queue");
    median_of(st->as_object(), "engine_ttft", "engine ttft");
    median_of(st->as_object(), "outside_engine", "outside engine");
  }
  if (const auto* st = r.if_contains("steady"); st && st->is_object()) {
    p.steady_headline = metrics::Headline::from_json(st->as_object());
  }
  if (const auto* e = r.if_contains("e2e_norm_intvty"); e && e->is_object()) {
    p.agentic = true;
    p.e2e_norm_intvty = num_of(e->as_object(), "p90");
  }
  if (const auto* s = r.if_contains("status"); s && s->is_string()) {
    // A status this version does not know is not a measurement it can vouch for.
    const auto status = metrics::parse_status(s->as_string());
    p.status = status.value_or(metrics::PointStatus::kFailed);
    if (!status) p.error = fmt::format("unknown status '{}'", std::string(s->as_string()));
  }
  if (const auto* v = r.if_contains("validity")) p.validity = metrics::Validity::from_json(*v);
  std::string ts = str_of(r, "time_scale");
  if (const auto* rp = r.if_contains("replay"); ts.empty() && rp && rp->is_object()) {
    ts = str_of(rp->as_object(), "time_scale");
  }
  p.identity.set(metrics::IdentityField::kTimeScale, ts.empty() ? "1" : ts);
  p.identity.set(metrics::IdentityField::kToolVersion, str_of(r, "tool_version"));
}

}  // namespace

Expected<std::vector<store::RunRecord>> runs_of(store::Store& st, const std::string& id_or_name) {
  auto found = st.find_run(id_or_name);
  if (!found) return found.error();
  if (!*found) {
    return Error{fmt::format("no run '{}' in {} (see `inferbench runs --db {}`)", id_or_name,
                             st.file().string(), st.file().string())};
  }
  const std::string group = repeat_group(**found);
  if (group.empty()) return std::vector<store::RunRecord>{**found};
  auto all = st.list_runs(0);
  if (!all) return all.error();
  std::vector<store::RunRecord> out;
  for (const auto& s : *all) {
    if (repeat_group(s.run) == group) out.push_back(s.run);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

Expected<std::vector<store::RunRecord>> runs_at_revision(store::Store& st,
                                                         const std::string& revision) {
  auto all = st.list_runs(0);
  if (!all) return all.error();
  std::vector<store::RunRecord> out;
  if (revision.empty()) return out;
  for (const auto& s : *all) {
    const std::string& rev = s.run.git_revision;
    if (s.run.status == store::RunStatus::kRunning || rev.empty()) continue;
    const bool match = rev == revision || (revision.size() >= 4 && rev.starts_with(revision));
    if (match) out.push_back(s.run);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

Expected<std::vector<metrics::RequestRecord>> read_records(const fs::path& file) {
  auto text = read_file(file);
  if (!text) return text.error();
  return parse_records(*text, file);
}

Expected<std::vector<metrics::RequestRecord>> parse_records(const std::string& body,
                                                            const fs::path& file) {
  const std::string* text = &body;
  std::vector<metrics::RequestRecord> out;
  size_t start = 0;
  int line_no = 0;
  auto ns = [](const json::value* v) -> int64_t {
    return v && v->is_number() ? static_cast<int64_t>(std::llround(v->to_number<double>() * 1e6))
                               : 0;
  };
  while (start < text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    const std::string_view line(text->data() + start, end - start);
    start = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto parsed = parse_json_strict(line, file.string(), static_cast<int>(line_no));
    if (!parsed) return parsed.error();
    json::value v = std::move(*parsed);
    if (!v.is_object()) {
      return Error{
          fmt::format("{}:{}: not a JSON object (another JSON value)", file.string(), line_no)};
    }
    const auto& o = v.as_object();
    metrics::RequestRecord r;
    r.index = static_cast<int64_t>(num_of(o, "index") >= 0 ? num_of(o, "index") : 0);
    r.input_len =
        static_cast<int>(std::isfinite(num_of(o, "input_len")) ? num_of(o, "input_len") : 0);
    r.output_len =
        static_cast<int>(std::isfinite(num_of(o, "output_len")) ? num_of(o, "output_len") : 0);
    // Times are ms from the point's origin; 0 means "none" in a record, so shift by 1 ns.
    r.sched_ns = ns(o.if_contains("sched_ms")) + 1;
    r.send_ns = ns(o.if_contains("send_ms")) + 1;
    r.first_byte_ns = o.contains("first_byte_ms") && !o.at("first_byte_ms").is_null()
                          ? ns(o.if_contains("first_byte_ms")) + 1
                          : 0;
    r.done_ns =
        o.contains("done_ms") && !o.at("done_ms").is_null() ? ns(o.if_contains("done_ms")) + 1 : 0;
    if (const auto* c = o.if_contains("content_ms"); c && c->is_array()) {
      for (const auto& t : c->as_array()) {
        if (t.is_number()) r.content_ns.push_back(ns(&t) + 1);
      }
    }
    const double pt = num_of(o, "prompt_tokens"), ct = num_of(o, "completion_tokens");
    r.prompt_tokens = std::isfinite(pt) ? static_cast<int64_t>(pt) : -1;
    r.completion_tokens = std::isfinite(ct) ? static_cast<int64_t>(ct) : -1;
    const auto* ok = o.if_contains("ok");
    if (!ok || !ok->is_bool()) {
      return Error{fmt::format("{}:{}: no boolean \"ok\" field (not a per-request record)",
                               file.string(), line_no)};
    }
    if (!ok->as_bool()) r.failure = metrics::FailureCause::kTransport;
    out.push_back(std::move(r));
  }
  return out;
}

SidePoint point_from_result(const json::object& r, const std::string& source) {
  SidePoint p;
  p.source = source;
  fill_from_result(p, r);
  std::string model = str_of(r, "model");
  if (model.empty()) model = str_of(r, "model_id");
  std::string engine = str_of(r, "framework");
  if (engine.empty()) engine = str_of(r, "backend");
  const std::string hw = str_of(r, "hw");
  using F = metrics::IdentityField;
  p.identity.set(F::kModel, model);
  p.identity.set(F::kImage, str_of(r, "image"));
  p.identity.set(F::kHardware, hw);
  p.identity.set(F::kEngine, engine);
  p.identity.set(F::kPrecision, str_of(r, "precision"));
  p.config_key = str_of(r, "config_key");
  if (p.config_key.empty()) {
    // InferenceX aggregates and vLLM results name no configuration: what they do name.
    std::vector<std::string> parts;
    for (const auto& s : {model, engine, str_of(r, "precision"), hw}) {
      if (!s.empty()) parts.push_back(s);
    }
    if (const std::string tp = str_of(r, "tp"); !tp.empty()) parts.push_back("tp" + tp);
    p.config_key = parts.empty() ? "result" : fmt::format("{}", fmt::join(parts, "/"));
  }
  double conc = num_of(r, "max_concurrency");
  if (!std::isfinite(conc)) conc = num_of(r, "conc");
  if (!std::isfinite(conc)) conc = num_of(r, "concurrency");
  p.concurrency = std::isfinite(conc) ? static_cast<int64_t>(conc) : 0;
  p.workload_label = str_of(r, "workload_label");
  if (p.workload_label.empty()) {
    std::string isl = str_of(r, "isl"), osl = str_of(r, "osl");
    if (isl.empty()) isl = str_of(r, "random_input_len");
    if (osl.empty()) osl = str_of(r, "random_output_len");
    if (!isl.empty() || !osl.empty()) {
      p.workload_label =
          fmt::format("isl {} / osl {}", isl.empty() ? "?" : isl, osl.empty() ? "?" : osl);
    }
  }
  p.workload_key = str_of(r, "workload_key");
  if (p.workload_key.empty()) p.workload_key = p.workload_label;
  if (p.workload_label.empty())
    p.workload_label.assign(1, '-');  // not = "-": a GCC 12 -O3 -Wrestrict false positive
  p.identity.set(F::kWorkload, p.workload_label);
  p.identity.set(F::kValidity, p.validity.valid() ? "valid" : "invalid");
  return p;
}

Expected<Side> side_from_runs(store::Store& st, const std::vector<store::RunRecord>& runs,
                              const std::string& label) {
  Side side;
  side.label = label;
  for (const auto& run : runs) {
    side.sources.push_back(run.name);
    auto configs = st.server_configs(run.id);
    if (!configs) return configs.error();
    std::map<int64_t, const store::ServerConfigRecord*> by_id;
    for (const auto& c : *configs) by_id[c.id] = &c;
    auto points = st.points(run.id);
    if (!points) return points.error();
    for (const auto& rec : *points) {
      SidePoint p = point_from_result(rec.result, fmt::format("run {} point {}", run.name, rec.id));
      p.run = run.name;
      p.concurrency = rec.concurrency;
      p.workload_key = rec.workload_key;
      p.status = rec.status;
      p.validity = rec.validity;
      p.error = rec.error;
      p.headline = rec.headline;
      if (const auto it = by_id.find(rec.server_config_id); it != by_id.end()) {
        const auto& c = *it->second;
        p.config_key = c.config_key;
        // The identity `report`, `verify` and `tune` derive too (metrics/identity.h).
        p.identity = c.identity();
      }
      using F = metrics::IdentityField;
      p.identity.set(F::kToolVersion, run.tool_version);
      p.identity.set(F::kHost, run.host);
      p.identity.set(F::kValidity, p.usable() ? "valid" : "invalid");
      // Per-GPU values of the stored headline fix the GPU count for the resamples.
      const double total = p.headline.get("total_token_throughput");
      const double per_gpu = p.headline.get("tput_per_gpu");
      if (std::isfinite(total) && std::isfinite(per_gpu) && per_gpu > 0) {
        p.gpus = std::max(1, static_cast<int>(std::lround(total / per_gpu)));
      }
      const std::string name = store::records_file_name(rec.concurrency);
      const fs::path records = fs::path(rec.artifacts_dir) / name;
      std::error_code ec;
      if (!rec.artifacts_dir.empty() && fs::exists(records, ec)) {
        auto rs = read_records(records);
        if (!rs) return rs.error();
        p.records = std::move(*rs);
        p.has_records = true;
      } else {
        // Measured on another machine: the copy the store keeps (a team's store, a pulled run).
        auto kept = st.point_file(rec.id, name);
        if (!kept) return kept.error();
        if (*kept) {
          auto rs = parse_records(
              (*kept)->body,
              fmt::format("{} (run {} point {}, kept in the store)", name, run.name, rec.id));
          if (!rs) return rs.error();
          p.records = std::move(*rs);
          p.has_records = true;
        }
      }
      side.points.push_back(std::move(p));
    }
  }
  return side;
}

Expected<Side> side_from_folder(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return Error{fmt::format("{}: not a folder", folder.string())};
  }
  Side side;
  side.label = folder.string();
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".json") files.push_back(it->path());
  }
  if (ec) return Error{fmt::format("{}: {}", folder.string(), ec.message())};
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    if (name.starts_with("agg_") && fs::exists(f.parent_path() / name.substr(4), ec)) continue;
    auto text = read_file(f);
    if (!text) return text.error();
    auto parsed = parse_json_strict(*text, f.string());
    if (!parsed) return parsed.error();
    json::value v = std::move(*parsed);
    if (!v.is_object()) continue;  // e.g. a list of something else
    const auto& o = v.as_object();
    if (metrics::Headline::from_json(o).empty()) continue;  // not a result (summary.json, ...)
    SidePoint p = point_from_result(o, f.string());
    p.run = f.parent_path().string();
    std::string stem = name.starts_with("agg_") ? name.substr(4) : name;
    stem = stem.substr(0, stem.size() - 5);  // drop .json
    const fs::path records = f.parent_path() / ("records_" + stem + ".jsonl");
    if (fs::exists(records, ec)) {
      auto rs = read_records(records);
      if (!rs) return rs.error();
      p.records = std::move(*rs);
      p.has_records = true;
    }
    side.sources.push_back(f.string());
    side.points.push_back(std::move(p));
  }
  if (side.points.empty()) {
    return Error{
        fmt::format("{}: no result files (*.json with benchmark metrics such as "
                    "request_throughput or median_ttft_ms)",
                    folder.string())};
  }
  return side;
}

}  // namespace ib::verdict
