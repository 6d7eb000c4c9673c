// A cold prefix cache before each point (docs/agentic.md, "Routed deployments"): the recipe's
// `workload: flush-cache` posts to every worker's flush endpoint directly (a router does not fan
// it out), and, as SGLang refuses while a request is waiting or running, retries while the
// previous point's requests drain (InferenceX's AMD trace_replay.sh: POST /flush_cache until it
// says "Cache flushed", 120 s). What each worker answered goes into the point's result; a cache
// that could not be confirmed empty is a warning on the point, never a silent warm start.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <string>
#include <vector>

namespace ib::sweep {

struct FlushTarget {
  std::string label;  // "prefill-0", "server"
  std::string url;    // http://host:port
};

struct FlushOptions {
  std::string path = "/flush_cache";
  double timeout_s = 120;  // retry this long while requests drain
  double retry_s = 1;      // between tries
};

struct FlushOutcome {
  boost::json::object json;           // the point's `cache_flush`
  std::vector<std::string> warnings;  // one per worker not confirmed flushed
  bool all_flushed = true;
};

/// Posts `o.path` to each target until it answers 200, or `o.timeout_s` passed, or an interrupt.
FlushOutcome flush_caches(const std::vector<FlushTarget>& targets, const FlushOptions& o);

}  // namespace ib::sweep
