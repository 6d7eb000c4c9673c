// AgentX traces (Weka JSON): parsed, summarised (`trace stats`) and, when valid, built into the
// replay's conversations. Traces come from outside (recorded sessions, datasets): no input may
// crash the parser or the replay builder.
#include "fuzz_util.h"
#include "workload/agentic_dag.h"
#include "workload/weka_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto trace = ib::workload::parse_weka_trace(json, "fuzz.json");
  if (!trace) return 0;
  (void)ib::workload::trace_stats(*trace);
  auto tree = ib::workload::agentic::build_replay_tree(*trace);
  if (tree) (void)ib::workload::agentic::rewrite_models(*tree, {"served-a", "served-b"});
  return 0;
}
