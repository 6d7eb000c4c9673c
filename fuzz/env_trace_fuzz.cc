// Environment-trace files (docs/env-trace.md): the JSON lines the tracer writes from inside the
// server's processes, read back by `verify`, `tune` and every sweep. A server can write anything
// into them: no text may crash the collector, its blind-spot rules or the report.
#include "fuzz_util.h"
#include "verify/env_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto report =
      ib::verify::parse_env_trace_text(text, "c-1.jsonl", {"IBT_A", "HF_TOKEN", "X"});
  (void)report.blind_spots();
  const auto json = report.to_json();
  if (const auto writes = ib::verify::engine_writes_from_json(json)) {
    for (const auto& w : *writes) (void)ib::verify::engine_write_text(w);
  }
  return 0;
}
