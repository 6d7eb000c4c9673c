#include "workload/trace_workload.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

namespace ib::workload {

namespace json = boost::json;

Status TraceReplayParams::validate(const std::string& where) const {
  const std::string at = where.empty() ? "" : where + ": ";
  if (path.empty()) return Error{at + "no trace given (--trace FILE)", ErrorKind::kUsage};
  if (!(time_scale > 0) || !std::isfinite(time_scale) || time_scale > 1e6) {
    return Error{fmt::format("{}time-scale must be a positive number (0.5: twice the rate), got {}",
                             at, time_scale),
                 ErrorKind::kUsage};
  }
  if (!(max_lag_ms > 0) || !std::isfinite(max_lag_ms)) {
    return Error{fmt::format("{}max-lag-ms must be a positive number of milliseconds, got {}", at,
                             max_lag_ms),
                 ErrorKind::kUsage};
  }
  if (max_requests < 0) {
    return Error{fmt::format("{}max-requests must be 0 (all) or more, got {}", at, max_requests),
                 ErrorKind::kUsage};
  }
  if (vocab_size <= 100) {
    return Error{fmt::format("{}vocab size must be over 100, got {}", at, vocab_size),
                 ErrorKind::kUsage};
  }
  return Status::Ok();
}

Expected<std::shared_ptr<TraceWorkload>> TraceWorkload::load(TraceReplayParams params) {
  if (auto st = params.validate(); !st) return st.error();
  auto trace = load_timed_trace(params.path, params.format, params.block_size);
  if (!trace) return trace.error();
  TimedTrace t = std::move(*trace);
  if (params.window) {
    t = cut_window(t, *params.window);
    if (t.requests.empty()) {
      return Error{fmt::format("{}: no request in the window {}:{} s", params.path,
                               params.window->start_s, params.window->end_s),
                   ErrorKind::kUsage};
    }
  }
  if (params.max_requests > 0 && static_cast<int64_t>(t.requests.size()) > params.max_requests) {
    t.requests.resize(static_cast<size_t>(params.max_requests));
  }
  TracePromptOptions po;
  po.chat = params.chat;
  po.seed = params.seed;
  po.vocab_size = params.vocab_size;
  po.tokenizer = params.tokenizer;
  auto prompts = make_trace_prompts(t, po);
  if (!prompts) return prompts.error();
  auto info = std::make_shared<TracePlanInfo>();
  info->format = t.format;
  info->block_size = t.block_size;
  info->time_scale = params.time_scale;
  info->prompt_mode = trace_prompt_mode(po);
  info->theoretical_hit_tokens = theoretical_hits(t);
  info->span_s = t.requests.back().t_s - t.requests.front().t_s;
  info->max_lag_ms = params.max_lag_ms;
  std::shared_ptr<TraceWorkload> w(new TraceWorkload());
  w->params_ = std::move(params);
  w->trace_ = std::make_shared<const TimedTrace>(std::move(t));
  w->prompts_ = std::make_shared<const std::vector<PromptSpec>>(std::move(*prompts));
  w->info_ = std::move(info);
  return w;
}

std::string TraceWorkload::label() const {
  const std::string scale =
      params_.time_scale == 1.0 ? std::string() : fmt::format(", time ×{}", params_.time_scale);
  return fmt::format("{} {} ({} req{})", trace_format_name(trace_->format),
                     std::filesystem::path(params_.path).filename().string(),
                     trace_->requests.size(), scale);
}

json::object TraceWorkload::canonical(int64_t concurrency) const {
  json::object o;
  o["trace_sha256"] = trace_->digest;
  o["trace_format"] = std::string(trace_format_name(trace_->format));
  o["block_size"] = trace_->block_size;
  o["requests"] = static_cast<int64_t>(trace_->requests.size());
  if (params_.window) {
    o["window"] = json::array{params_.window->start_s, params_.window->end_s};
  }
  o["time_scale"] = params_.time_scale;
  o["seed"] = static_cast<int64_t>(params_.seed);
  o["prompt_mode"] = trace_prompt_mode_name(info_->prompt_mode);
  o["api"] = params_.chat ? "chat" : "completions";
  if (params_.tokenizer) o["tokenizer"] = params_.tokenizer->identity();
  o["max_concurrency"] = concurrency;
  return o;
}

Expected<PointPlan> TraceWorkload::plan(int64_t concurrency) const {
  if (concurrency < 0) {
    return Error{fmt::format("the concurrency cap must be 0 (none) or more, got {}", concurrency)};
  }
  PointPlan plan;
  plan.shape.concurrency = static_cast<int>(concurrency);
  plan.shape.measured_requests = static_cast<int>(prompts_->size());
  RequestPlan r;
  r.measured = *prompts_;
  r.schedule_ns.reserve(trace_->requests.size());
  for (const auto& q : trace_->requests) {
    r.schedule_ns.push_back(static_cast<int64_t>(std::llround(q.t_s * params_.time_scale * 1e9)));
  }
  r.trace = info_;
  plan.body = std::move(r);
  plan.describe = canonical(concurrency);
  plan.describe["dataset_name"] = "timed-trace";
  plan.describe["trace_file"] = params_.path;
  plan.describe["num_prompts"] = static_cast<int64_t>(prompts_->size());
  // The rate the replay aims at against the trace's own: 0.5 doubles it, and says so.
  plan.describe["rate_factor"] = 1.0 / params_.time_scale;
  plan.describe["trace_span_s"] = info_->span_s;
  plan.describe["replay_span_s"] = info_->span_s * params_.time_scale;
  json::array notes;
  for (const auto& n : trace_->notes) notes.emplace_back(n);
  if (!notes.empty()) plan.describe["trace_notes"] = std::move(notes);
  return plan;
}

}  // namespace ib::workload
