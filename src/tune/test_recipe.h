// The recipe the tune unit tests patch: serve-sim at tp 2 with a serve command, an environment
// variable and one fixed-seq-len row.
#pragma once

namespace ib::tune::testing {

inline constexpr const char* kRecipe =
    "k:\n"
    "  image: inferbench/serve-sim\n"
    "  model: meta-llama/Llama-3.1-8B-Instruct\n"
    "  model-prefix: llama8b\n"
    "  precision: bf16\n"
    "  framework: serve-sim\n"
    "  runner: local\n"
    "  multinode: false\n"
    "  serve:\n"
    "    command: [inferbench, serve-sim, --tp, \"{tp}\", --max-num-seqs, \"8\", "
    "--block-size=16, --port, \"{port}\"]\n"
    "    env: { SIM_DISABLE_CUSTOM_ALL_REDUCE: \"1\" }\n"
    "  scenarios:\n"
    "    fixed-seq-len:\n"
    "    - { isl: 512, osl: 64, search-space: [{ tp: 2, conc-list: [32] }] }\n";

}  // namespace ib::tune::testing
