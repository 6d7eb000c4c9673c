#include "sweep/held_writes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/json_strict.h"

namespace ib::sweep {

namespace json = boost::json;

namespace {

std::string_view kind_name(HeldWrite::Kind k) {
  switch (k) {
    case HeldWrite::Kind::kConfig:
      return "config";
    case HeldWrite::Kind::kConfigUpdate:
      return "config_update";
    case HeldWrite::Kind::kPoint:
      return "point";
    case HeldWrite::Kind::kFailure:
      return "failure";
  }
  return "point";
}

json::value opt(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? json::value(*v) : json::value(nullptr);
}
json::value opt(const std::optional<int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::object slice_json(const store::TimesliceRecord& r) {
  return {{"source", r.source},
          {"slice", r.slice},
          {"start_s", r.start_s},
          {"end_s", r.end_s},
          {"running", opt(r.running)},
          {"waiting", opt(r.waiting)},
          {"kv_usage", opt(r.kv_usage)},
          {"prefix_hit_rate", opt(r.prefix_hit_rate)},
          {"preemptions", opt(r.preemptions)},
          {"prompt_tps", opt(r.prompt_tps)},
          {"generation_tps", opt(r.generation_tps)},
          {"spec_acceptance", opt(r.spec_acceptance)},
          {"started", opt(r.started)},
          {"finished", opt(r.finished)},
          {"output_tokens", opt(r.output_tokens)},
          {"mean_ttft_ms", opt(r.mean_ttft_ms)},
          {"mean_intvty", opt(r.mean_intvty)},
          {"data", r.data}};
}

// A malformed file: the path of the member and what is wrong with it. Thrown and caught inside
// held_writes_from_json only.
struct Bad {
  std::string path, what;
};

// Members of one JSON object, each read as the type a record needs.
class Fields {
 public:
  Fields(const json::value& v, std::string path) : path_(std::move(path)) {
    if (!v.is_object()) throw Bad{path_, "not an object"};
    o_ = &v.as_object();
  }
  std::string at(std::string_view key) const { return fmt::format("{}.{}", path_, key); }
  const json::value* find(std::string_view key) const { return o_->if_contains(key); }
  const json::value& need(std::string_view key) const {
    const auto* v = find(key);
    if (!v) throw Bad{at(key), "missing"};
    return *v;
  }
  std::string str(std::string_view key) const {
    const auto& v = need(key);
    if (!v.is_string()) throw Bad{at(key), "not a string"};
    return std::string(v.as_string());
  }
  int64_t integer(std::string_view key) const {
    const auto& v = need(key);
    if (v.is_int64()) return v.as_int64();
    if (v.is_uint64() && v.as_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
      return static_cast<int64_t>(v.as_uint64());
    }
    throw Bad{at(key), "not an integer"};
  }
  std::optional<int64_t> opt_integer(std::string_view key) const {
    const auto* v = find(key);
    if (!v || v->is_null()) return std::nullopt;
    return integer(key);
  }
  double number(std::string_view key) const {
    const auto& v = need(key);
    if (!v.is_number()) throw Bad{at(key), "not a number"};
    return v.to_number<double>();
  }
  std::optional<double> opt_number(std::string_view key) const {
    const auto* v = find(key);
    if (!v || v->is_null()) return std::nullopt;
    return number(key);
  }
  json::object object(std::string_view key) const {
    const auto& v = need(key);
    if (!v.is_object()) throw Bad{at(key), "not an object"};
    return v.as_object();
  }
  bool boolean(std::string_view key) const {
    const auto* v = find(key);
    if (!v) return false;
    if (!v->is_bool()) throw Bad{at(key), "not true or false"};
    return v->as_bool();
  }
  const json::object& all() const { return *o_; }

 private:
  const json::object* o_ = nullptr;
  std::string path_;
};

store::ServerConfigRecord read_config(const json::value& v, const std::string& path) {
  Fields f(v, path);
  store::ServerConfigRecord c;
  c.id = f.integer("id");
  c.run_id = f.integer("run_id");
  c.config_key = f.str("config_key");
  c.fingerprint = f.str("fingerprint");
  c.launcher = f.str("launcher");
  c.row = f.object("row");
  c.effective_config = f.object("effective_config");
  c.env_reads = f.object("env_reads");
  c.log_path = f.str("log_path");
  const auto status = store::parse_config_status(f.str("status"));
  if (!status) throw Bad{f.at("status"), "not pending|ok|failed|skipped"};
  c.status = *status;
  c.error = f.str("error");
  return c;
}

store::PointRecord read_point(const json::value& v, const std::string& path) {
  Fields f(v, path);
  store::PointRecord p;
  p.run_id = f.integer("run_id");
  p.server_config_id = f.opt_integer("server_config_id").value_or(0);
  p.fingerprint = f.str("fingerprint");
  p.workload_key = f.str("workload_key");
  p.concurrency = f.integer("concurrency");
  const auto status = metrics::parse_status(f.str("status"));
  if (!status) throw Bad{f.at("status"), "not a point status"};
  p.status = *status;
  p.error = f.str("error");
  p.reused_from_run = f.opt_integer("reused_from_run");
  p.headline = metrics::Headline::from_json(f.all());
  p.validity = metrics::Validity::from_json(f.need("validity"));
  p.result = f.object("result");
  p.artifacts_dir = f.str("artifacts_dir");
  p.created_at = f.integer("created_at");
  return p;
}

store::FailureRecord read_failure(const json::value& v, const std::string& path) {
  Fields f(v, path);
  store::FailureRecord r;
  r.run_id = f.integer("run_id");
  r.server_config_id = f.opt_integer("server_config_id");
  r.point_id = f.opt_integer("point_id");
  r.kind = f.str("kind");
  if (r.kind.empty()) throw Bad{f.at("kind"), "empty"};
  r.message = f.str("message");
  r.log_tail = f.str("log_tail");
  r.at = f.integer("at");
  return r;
}

store::TimesliceRecord read_slice(const json::value& v, const std::string& path) {
  Fields f(v, path);
  store::TimesliceRecord r;
  r.source = f.str("source");
  if (r.source != "server" && r.source != "client") throw Bad{f.at("source"), "not server|client"};
  r.slice = f.integer("slice");
  r.start_s = f.number("start_s");
  r.end_s = f.number("end_s");
  r.running = f.opt_number("running");
  r.waiting = f.opt_number("waiting");
  r.kv_usage = f.opt_number("kv_usage");
  r.prefix_hit_rate = f.opt_number("prefix_hit_rate");
  r.preemptions = f.opt_number("preemptions");
  r.prompt_tps = f.opt_number("prompt_tps");
  r.generation_tps = f.opt_number("generation_tps");
  r.spec_acceptance = f.opt_number("spec_acceptance");
  r.started = f.opt_integer("started");
  r.finished = f.opt_integer("finished");
  r.output_tokens = f.opt_integer("output_tokens");
  r.mean_ttft_ms = f.opt_number("mean_ttft_ms");
  r.mean_intvty = f.opt_number("mean_intvty");
  r.data = f.object("data");
  return r;
}

HeldWrite read_write(const json::value& v, const std::string& path) {
  Fields f(v, path);
  HeldWrite w;
  const std::string kind = f.str("write");
  if (kind == "config") {
    w.kind = HeldWrite::Kind::kConfig;
    w.config = read_config(f.need("config"), f.at("config"));
    w.config.id = f.integer("provisional_id");
    if (w.config.id >= 0) throw Bad{f.at("provisional_id"), "not negative"};
  } else if (kind == "config_update") {
    w.kind = HeldWrite::Kind::kConfigUpdate;
    w.config = read_config(f.need("config"), f.at("config"));
  } else if (kind == "point") {
    w.kind = HeldWrite::Kind::kPoint;
    w.point = read_point(f.need("point"), f.at("point"));
    const auto& slices = f.need("timeslices");
    if (!slices.is_array()) throw Bad{f.at("timeslices"), "not an array"};
    for (size_t i = 0; i < slices.as_array().size(); ++i) {
      w.timeslices.push_back(
          read_slice(slices.as_array()[i], fmt::format("{}[{}]", f.at("timeslices"), i)));
    }
    if (const auto* fail = f.find("failure"); fail && !fail->is_null()) {
      w.failure = read_failure(*fail, f.at("failure"));
    }
    w.check_stored = f.boolean("check_stored");
  } else if (kind == "failure") {
    w.kind = HeldWrite::Kind::kFailure;
    w.failure = read_failure(f.need("failure"), f.at("failure"));
  } else {
    throw Bad{f.at("write"), fmt::format("'{}' is not config|config_update|point|failure", kind)};
  }
  return w;
}

}  // namespace

json::object to_json(const HeldWrites& h) {
  json::array writes;
  for (const auto& w : h.writes) {
    json::object o{{"write", kind_name(w.kind)}};
    switch (w.kind) {
      case HeldWrite::Kind::kConfig:
        o["provisional_id"] = w.config.id;
        o["config"] = store::to_json(w.config);
        break;
      case HeldWrite::Kind::kConfigUpdate:
        o["config"] = store::to_json(w.config);
        break;
      case HeldWrite::Kind::kPoint: {
        o["point"] = store::to_json(w.point);
        json::array slices;
        for (const auto& s : w.timeslices) slices.push_back(slice_json(s));
        o["timeslices"] = std::move(slices);
        o["failure"] = w.failure ? json::value(store::to_json(*w.failure)) : nullptr;
        o["check_stored"] = w.check_stored;
        break;
      }
      case HeldWrite::Kind::kFailure:
        o["failure"] = w.failure ? json::value(store::to_json(*w.failure)) : nullptr;
        break;
    }
    writes.push_back(std::move(o));
  }
  return {{"inferbench_unstored", 1},
          {"database", h.database},
          {"run_id", h.run_id},
          {"run", h.run_name},
          {"writes", std::move(writes)}};
}

Expected<HeldWrites> held_writes_from_json(std::string_view text, const std::string& source) {
  auto v = parse_json_strict(text, source);
  if (!v) return with_kind(v.error(), ErrorKind::kInput);
  try {
    Fields top(*v, "");
    const auto version = top.integer("inferbench_unstored");
    if (version != 1) {
      throw Bad{"inferbench_unstored", fmt::format("version {} is not 1 (a newer inferbench "
                                                   "wrote it)",
                                                   version)};
    }
    HeldWrites h;
    h.database = top.str("database");
    h.run_id = top.integer("run_id");
    h.run_name = top.str("run");
    const auto& writes = top.need("writes");
    if (!writes.is_array()) throw Bad{"writes", "not an array"};
    for (size_t i = 0; i < writes.as_array().size(); ++i) {
      h.writes.push_back(read_write(writes.as_array()[i], fmt::format("writes[{}]", i)));
    }
    return h;
  } catch (const Bad& b) {
    std::string path = b.path;
    if (!path.empty() && path.front() == '.') path.erase(0, 1);
    return input_error(fmt::format("{}: {}: {}", source, path, b.what));
  }
}

size_t held_points(const std::vector<HeldWrite>& writes) {
  return static_cast<size_t>(std::count_if(writes.begin(), writes.end(), [](const HeldWrite& w) {
    return w.kind == HeldWrite::Kind::kPoint;
  }));
}

}  // namespace ib::sweep
