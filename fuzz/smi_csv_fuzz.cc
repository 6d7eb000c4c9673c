// GPU power samplers' output: nvidia-smi, amd-smi and rocm-smi CSV, the timestamps in them and
// `date +%z` offsets (the first input byte picks which). These files come from the GPU host's
// tools, in versions we have not seen: no text may crash the parsers.
#include "fuzz_util.h"
#include "telemetry/power.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ib::fuzz::Input in(data, size);
  const uint8_t which = in.byte();
  const std::string_view text = in.rest();
  switch (which % 5) {
    case 0: {
      auto log = ib::telemetry::parse_nvidia_smi_csv(text);
      if (log) (void)ib::telemetry::integrate_power(log->samples, 0, 1e12, 1);
      break;
    }
    case 1:
      (void)ib::telemetry::parse_amd_smi_csv(text, 3600);
      break;
    case 2:
      (void)ib::telemetry::parse_rocm_smi_csv(text, 1.7e9);
      break;
    case 3:
      (void)ib::telemetry::parse_smi_timestamp(text, -18000);
      break;
    default:
      (void)ib::telemetry::parse_utc_offset(text);
  }
  return 0;
}
