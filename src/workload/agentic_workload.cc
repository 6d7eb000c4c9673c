#include "workload/agentic_workload.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "core/sha256.h"
#include "workload/weka_trace.h"

namespace ib::workload {

namespace json = boost::json;

std::optional<SessionRouting> parse_session_routing(std::string_view text) {
  if (text == "none") return SessionRouting::kNone;
  if (text == "dynamo-header") return SessionRouting::kDynamoHeader;
  if (text == "dynamo-nvext") return SessionRouting::kDynamoNvext;
  if (text == "smg-routing-key") return SessionRouting::kSmgRoutingKey;
  return std::nullopt;
}

std::string_view session_routing_name(SessionRouting r) {
  switch (r) {
    case SessionRouting::kNone:
      return "none";
    case SessionRouting::kDynamoHeader:
      return "dynamo-header";
    case SessionRouting::kDynamoNvext:
      return "dynamo-nvext";
    case SessionRouting::kSmgRoutingKey:
      return "smg-routing-key";
  }
  return "none";
}

void AgenticParams::apply_fast() {
  fast = true;
  duration_s = 1200;
  warmup_requests_per_lane = 1;
}

Status AgenticParams::validate(const std::string& where) const {
  const std::string at = where.empty() ? "" : where + ": ";
  if (traces.empty()) {
    return Error{at +
                 "no traces given (--traces PATH: Weka trace files, .jsonl corpora or folders)"};
  }
  auto positive = [&](const char* name, double v, bool zero_ok) -> Status {
    if (!std::isfinite(v) || v < 0 || (!zero_ok && v == 0)) {
      return Error{fmt::format("{}{} must be {} (got {})", at, name,
                               zero_ok ? "zero or more" : "positive", v)};
    }
    return Status::Ok();
  };
  if (auto s = positive("duration", duration_s, false); !s) return s;
  if (auto s = positive("time-scale", time_scale, false); !s) return s;
  if (auto s = positive("trace-idle-cap", trace_idle_cap_s, true); !s) return s;
  if (auto s = positive("grace", grace_s, true); !s) return s;
  if (auto s = positive("warmup-grace", warmup_grace_s, true); !s) return s;
  if (warmup_requests_per_lane < 0) {
    return Error{fmt::format("{}warmup-requests-per-lane must be zero or more (got {})", at,
                             warmup_requests_per_lane)};
  }
  if (session_timeout_s < 1) {
    return Error{
        fmt::format("{}session-timeout must be at least 1 s (got {})", at, session_timeout_s)};
  }
  if (max_traces < 0) {
    return Error{fmt::format("{}max-traces must be zero (all) or more (got {})", at, max_traces)};
  }
  if (!(t_star_min >= 0 && t_star_min <= t_star_max && t_star_max <= 1)) {
    return Error{fmt::format("{}the t* window must satisfy 0 <= min <= max <= 1 (got {}..{})", at,
                             t_star_min, t_star_max)};
  }
  return Status::Ok();
}

Expected<std::shared_ptr<AgenticWorkload>> AgenticWorkload::load(AgenticParams params) {
  if (auto s = params.validate(); !s) return s.error();
  std::vector<std::filesystem::path> paths(params.traces.begin(), params.traces.end());
  auto traces = load_weka_traces(paths);
  if (!traces) return traces.error();
  if (traces->empty()) {
    return Error{fmt::format("no trace found in {}", fmt::join(params.traces, ", "))};
  }
  if (params.max_traces > 0 && static_cast<int64_t>(traces->size()) > params.max_traces) {
    traces->resize(static_cast<size_t>(params.max_traces));
  }
  auto plan = std::make_shared<AgenticPlan>();
  auto trees = std::make_shared<std::vector<agentic::ReplayTree>>();
  std::string digest_input;
  for (const auto& t : *traces) {
    auto tree = agentic::build_replay_tree(t);
    if (!tree) return tree.error();
    for (const auto& n : tree->notes) plan->notes.push_back(fmt::format("{}: {}", t.id, n));
    if (tree->streams.empty() || tree->streams[0].turns.empty()) {
      plan->notes.push_back(fmt::format("{}: no top-level request; not replayed", t.id));
      continue;
    }
    // What the replay depends on: every turn's timing, lengths and blocks.
    digest_input += fmt::format("{}|{}|{}|", tree->trace_id, tree->block_size, tree->global_scope);
    for (const auto& s : tree->streams) {
      digest_input +=
          fmt::format("{}:{}:{}:{}|", s.session_id, s.tool_tokens, s.system_tokens, s.start_offset);
      for (const auto& k : s.turns) {
        digest_input += fmt::format("{},{},{},{},{};", k.t, k.api_time, k.in, k.out,
                                    fmt::join(k.hash_ids, " "));
      }
    }
    trees->push_back(std::move(*tree));
  }
  if (trees->empty()) return Error{"none of the traces has a top-level request to replay"};
  if (params.tokenizer) {
    auto corpus = agentic::Corpus::for_tokenizer(params.tokenizer->tokenizer());
    if (!corpus) return corpus.error();
    plan->notes.push_back(fmt::format(
        "blocks are cut from the {} of {} corpus words that are single tokens for {}",
        corpus->size(), agentic::Corpus::words().size(), params.tokenizer->path()));
    plan->corpus = std::make_shared<const agentic::Corpus>(std::move(*corpus));
  } else {
    plan->corpus = std::shared_ptr<const agentic::Corpus>(&agentic::Corpus::words(),
                                                          [](const agentic::Corpus*) {});
  }
  plan->params = std::move(params);
  plan->trees = std::move(trees);
  plan->traces_digest = sha256_hex(digest_input);
  return std::shared_ptr<AgenticWorkload>(new AgenticWorkload(std::move(plan)));
}

std::shared_ptr<AgenticWorkload> AgenticWorkload::with_params(const AgenticParams& params) const {
  auto plan = std::make_shared<AgenticPlan>(*plan_);
  AgenticParams p = params;
  p.traces = plan_->params.traces;
  p.max_traces = plan_->params.max_traces;
  if (p.tokenizer != plan_->params.tokenizer) {
    plan->corpus = std::shared_ptr<const agentic::Corpus>(&agentic::Corpus::words(),
                                                          [](const agentic::Corpus*) {});
    if (p.tokenizer) {
      if (auto corpus = agentic::Corpus::for_tokenizer(p.tokenizer->tokenizer())) {
        plan->corpus = std::make_shared<const agentic::Corpus>(std::move(*corpus));
      } else {
        plan->notes.push_back(corpus.error().message);
      }
    }
  }
  plan->params = std::move(p);
  return std::shared_ptr<AgenticWorkload>(new AgenticWorkload(std::move(plan)));
}

std::string AgenticWorkload::label() const {
  const AgenticParams& p = plan_->params;
  std::string s = fmt::format("agentx {} traces, {:g} s", plan_->trees->size(), p.duration_s);
  if (p.time_scale != 1) s += fmt::format(" (time ÷{:g})", p.time_scale);
  return s;
}

json::object AgenticWorkload::canonical(int64_t concurrency) const {
  const AgenticParams& p = plan_->params;
  json::object o;
  o["traces_digest"] = plan_->traces_digest;
  o["traces"] = static_cast<int64_t>(plan_->trees->size());
  o["lanes"] = concurrency;
  o["duration_s"] = p.duration_s;
  o["warmup_requests_per_lane"] = p.warmup_requests_per_lane;
  o["t_star_min"] = p.t_star_min;
  o["t_star_max"] = p.t_star_max;
  o["trace_idle_cap_s"] = p.trace_idle_cap_s;
  o["system_idle_cap_s"] = p.system_idle_cap_s;
  o["grace_s"] = p.grace_s;
  o["time_scale"] = p.time_scale;
  o["seed"] = static_cast<int64_t>(p.seed);
  o["use_think_time_only"] = p.use_think_time_only;
  // What the requests carry for a router: another wire, another measurement.
  if (p.session_routing != SessionRouting::kNone) {
    o["session_routing"] = std::string(session_routing_name(p.session_routing));
    if (p.session_routing == SessionRouting::kDynamoNvext) {
      o["session_timeout_s"] = p.session_timeout_s;
    }
  }
  if (p.tokenizer) o["tokenizer"] = p.tokenizer->identity();
  return o;
}

Expected<PointPlan> AgenticWorkload::plan(int64_t concurrency) const {
  if (concurrency < 1) {
    return Error{
        fmt::format("agentic replay needs at least one lane (concurrency {})", concurrency)};
  }
  PointPlan plan;
  plan.shape.concurrency = static_cast<int>(concurrency);
  plan.body = ReplayPlan{plan_};
  plan.describe = canonical(concurrency);
  plan.describe["dataset_name"] = "weka-traces";
  plan.describe["scenario"] = plan_->params.fast ? "agentx-fast" : "agentx";
  return plan;
}

}  // namespace ib::workload
