#include "workload/fixed_seq_len.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace ib::workload {

Status FixedSeqLenParams::validate(const std::string& where) const {
  const std::string at = where.empty() ? "" : where + ".";
  if (isl < 1) return Error{fmt::format("{}isl must be at least 1 (got {})", at, isl)};
  if (osl < 1) return Error{fmt::format("{}osl must be at least 1 (got {})", at, osl)};
  if (!(range_ratio > 0 && range_ratio <= 1)) {
    return Error{fmt::format("{}range-ratio must be in (0, 1] (got {})", at, range_ratio)};
  }
  if (prompts_per_conc < 1) {
    return Error{
        fmt::format("{}prompts-per-conc must be at least 1 (got {})", at, prompts_per_conc)};
  }
  if (min_prompts < 1) {
    return Error{fmt::format("{}min-prompts must be at least 1 (got {})", at, min_prompts)};
  }
  if (warmups_per_conc < 0) {
    return Error{
        fmt::format("{}warmups-per-conc must not be negative (got {})", at, warmups_per_conc)};
  }
  return Status::Ok();
}

std::string FixedSeqLenWorkload::label() const {
  return fmt::format("isl {} / osl {}", p_.isl, p_.osl);
}

namespace {

// The count at concurrency c, saturated at int's range (plan() refuses what exceeds the limit,
// so a saturated count is never used to allocate).
int saturated(int64_t count) {
  return static_cast<int>(std::min<int64_t>(count, std::numeric_limits<int>::max()));
}

// per_conc × c without overflow (both are non-negative after validate()).
int64_t times(int64_t per_conc, int64_t c) {
  if (c > 0 && per_conc > std::numeric_limits<int64_t>::max() / c) {
    return std::numeric_limits<int64_t>::max();
  }
  return per_conc * c;
}

}  // namespace

int FixedSeqLenWorkload::prompts_at(int64_t c) const {
  return saturated(std::max<int64_t>(p_.min_prompts, times(p_.prompts_per_conc, c)));
}

int FixedSeqLenWorkload::warmups_at(int64_t c) const {
  return saturated(times(p_.warmups_per_conc, c));
}

boost::json::object FixedSeqLenWorkload::canonical(int64_t c) const {
  boost::json::object o;
  o["isl"] = p_.isl;
  o["osl"] = p_.osl;
  o["range_ratio"] = p_.range_ratio;
  o["seed"] = p_.seed;
  o["api"] = p_.api;
  o["prompts"] = prompts_at(c);
  if (p_.tokenizer) o["tokenizer"] = p_.tokenizer->identity();
  o["warmups"] = warmups_at(c);
  return o;
}

Expected<PointPlan> random_point_plan(const RandomWorkload& w, int warmups, int concurrency) {
  PointPlan plan;
  RequestPlan& requests = plan.body.emplace<RequestPlan>();
  auto measured = make_random_prompts(w);
  if (!measured) return measured.error();
  requests.measured = std::move(*measured);
  if (warmups > 0) {
    RandomWorkload ww = w;
    ww.num_prompts = warmups;
    ww.seed = w.seed ^ 0x9e3779b97f4a7c15ULL;  // distinct prompts: warmups must not prime a cache
    auto warm = make_random_prompts(ww);
    if (!warm) return warm.error();
    requests.warmup = std::move(*warm);
  }
  plan.shape.concurrency = concurrency;
  plan.shape.measured_requests = w.num_prompts;
  plan.shape.warmup_requests = warmups;
  plan.describe["num_prompts"] = w.num_prompts;
  plan.describe["random_input_len"] = w.isl;
  plan.describe["random_output_len"] = w.osl;
  plan.describe["random_range_ratio"] = w.range_ratio;
  plan.describe["seed"] = w.seed;
  if (w.tokenizer) {
    int64_t exact = 0;
    for (const auto& p : requests.measured) exact += p.exact_len ? 1 : 0;
    boost::json::object t;
    t["path"] = w.tokenizer->path();
    t["identity"] = w.tokenizer->identity();
    if (w.as_text) {
      t["chat_template"] = w.tokenizer->chat_template_source();
      t["chat_template_overhead"] = w.tokenizer->chat_overhead().value_or(0);
    } else {
      t["special_tokens_added"] = w.tokenizer->prompt_specials();
    }
    t["exact_prompts"] = exact;
    t["inexact_prompts"] = static_cast<int64_t>(requests.measured.size()) - exact;
    plan.describe["tokenizer"] = std::move(t);
  }
  return plan;
}

Status FixedSeqLenWorkload::check_point(int64_t c) const {
  return check_point_size(
      std::max<int64_t>(p_.min_prompts, times(p_.prompts_per_conc, c)),
      times(p_.warmups_per_conc, c), p_.isl,
      fmt::format("concurrency {} (prompts-per-conc {}, min-prompts {}, warmups-per-conc {})", c,
                  p_.prompts_per_conc, p_.min_prompts, p_.warmups_per_conc));
}

Expected<PointPlan> FixedSeqLenWorkload::plan(int64_t c) const {
  if (c < 1) return Error{fmt::format("concurrency must be at least 1 (got {})", c)};
  if (auto s = p_.validate(); !s) return s.error();
  if (auto s = check_point(c); !s) return s.error();
  RandomWorkload w;
  w.isl = p_.isl;
  w.osl = p_.osl;
  w.range_ratio = p_.range_ratio;
  w.seed = p_.seed;
  w.num_prompts = prompts_at(c);
  w.as_text = p_.as_text;
  w.tokenizer = p_.tokenizer;
  auto plan = random_point_plan(w, warmups_at(c), static_cast<int>(c));
  if (!plan) return plan.error();
  plan->describe["workload"] = kind();
  return plan;
}

}  // namespace ib::workload
