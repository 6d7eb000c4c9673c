#include "sweep/sweep.h"

namespace ib {

SweepSpec default_sweep_spec() {
  SweepSpec s;
  s.name = "serve-sim quick sweep (llama-3.1-8b on H200, TP1)";
  // The simulator's roofline preset, named explicitly so the run records what it measured.
  s.server_args = {"--hardware=H200", "--model-preset=llama-3.1-8b", "--tp=1"};
  s.isl = 512;
  s.osl = 64;
  s.range_ratio = 0.8;  // InferenceX's --random-range-ratio
  // Requests per point: 4 waves at each concurrency (at least 8), warmups = one wave.
  for (int c : {1, 4, 16, 64}) s.points.push_back({c, std::max(8, 4 * c), c});
  return s;
}

}  // namespace ib
