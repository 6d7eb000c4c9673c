// Timed request traces (Mooncake, Bailian, BurstGPT, Azure): parsed in every format, cut to a
// window and summarised (`trace stats`). Traces come from outside (public datasets, production
// logs): no input may crash the parsers. The first byte picks the format.
#include "fuzz_util.h"
#include "workload/timed_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using ib::workload::TraceFormat;
  const TraceFormat formats[] = {TraceFormat::kMooncake, TraceFormat::kBailian,
                                 TraceFormat::kBurstGpt, TraceFormat::kAzure};
  const TraceFormat format = formats[data[0] % 4];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto trace = ib::workload::parse_timed_trace(text, format, "fuzz.trace");
  if (!trace) return 0;
  (void)ib::workload::timed_trace_stats(*trace);
  (void)ib::workload::timed_trace_stats(ib::workload::cut_window(*trace, {1, 5}), 0.5);
  (void)ib::workload::theoretical_hits(*trace);
  (void)ib::workload::parse_trace_window(text.substr(0, 16));
  return 0;
}
