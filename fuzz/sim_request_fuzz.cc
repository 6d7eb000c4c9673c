// What serve-sim reads from the network: the bodies of /v1/completions and /v1/chat/completions
// (kv_transfer_params included, as a disaggregated router sends them) and the KV side channel's
// lines (a decode worker's pull, a prefill worker's answer). The input is each of them in turn.
#include <cmath>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz_util.h"
#include "sim/kv_transfer.h"
#include "sim/requests.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ib::sim::ServedModel model;
  model.name = "sim-model";
  model.max_model_len = 4096;
  for (auto parsed :
       {ib::sim::parse_completion_request(text, model), ib::sim::parse_chat_request(text, model)}) {
    if (const auto* r = std::get_if<ib::sim::GenerateRequest>(&parsed)) {
      if (r->max_tokens < 1 || r->prompt_tokens + r->max_tokens > model.max_model_len) {
        __builtin_trap();
      }
      if (r->kv_transfer &&
          (r->kv_transfer->remote_port < 0 || r->kv_transfer->remote_port > 65535)) {
        __builtin_trap();
      }
    }
  }
  if (auto pull = ib::sim::parse_pull_line(text)) {
    if (!(pull->link.bytes_per_s > 0) || !std::isfinite(pull->link.bytes_per_s)) __builtin_trap();
  }
  double bytes = 0;
  int64_t wire = 0;
  if (ib::sim::parse_kv_header(text, bytes, wire) && (wire < 0 || !(bytes >= 0))) {
    __builtin_trap();
  }
  return 0;
}
