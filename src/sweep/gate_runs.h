// The merge gate's checks that read stored runs (docs/gate.md): whether a passing sweep and its
// evals ran at a commit of the change (1), whether a reuse is allowed (3), whether speculative
// rows went through the chat template (6), whether the change had an effect (10, verify's
// judgement of the stored base and head runs), and the run halves of 5 (the served
// architecture), 7 (writes into the engine's installed files at run time), 8 (the realised
// acceptance length) and 9 (append-only points keep their effective configuration and reads).
#pragma once

#include <set>
#include <string>

#include "core/expected.h"
#include "govern/gate.h"
#include "store/store.h"

namespace ib::sweep {

struct GateRunOptions {
  /// The run a merge would reuse instead of sweeping again (InferenceX's /reuse-sweep-run); ""
  /// none.
  std::string reuse;
  std::set<std::string> ignore_settings;  // settings verify's diff leaves out
};

/// Decides checks 1, 3, 6 and 10 of `report` and adds the run halves of 5, 7, 8 and 9, from the
/// runs in `db`. A run counts for the change when it was measured at a commit of `ctx.range` and
/// its server configuration has the head's fingerprint; a base run is any run of the base's
/// fingerprint. Error only when the database cannot be read.
Status decide_gate_runs(const govern::GateContext& ctx, store::Store& db, const GateRunOptions& o,
                        govern::GateReport& report);

}  // namespace ib::sweep
