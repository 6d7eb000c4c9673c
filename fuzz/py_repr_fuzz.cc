// Server startup logs: the Python-repr parser (whole text, prefix, keyword arguments) and the
// effective-configuration probes that scan a whole log with it (`verify`). A log is whatever the
// server printed: no text may crash them or make them use unbounded time or memory.
#include "fuzz_util.h"
#include "verify/effective_config.h"
#include "verify/py_repr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t offset = 0;
  (void)ib::verify::parse_py_repr(text, &offset);
  size_t consumed = 0;
  (void)ib::verify::parse_py_repr_prefix(text, &consumed);
  (void)ib::verify::parse_py_kwargs(text, &offset);
  const auto config = ib::verify::probe_effective_config(text, {{"custom", R"(max_num_seqs=(\d+))"}});
  (void)config.to_json();
  (void)ib::verify::diff_effective(config, config);
  return 0;
}
