// Hot-path figures: SSE framing plus chunk decoding per event, and metric computation per
// request. Run with scripts/bench.sh; these print numbers, they never pass or fail.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "http/sse.h"
#include "load/stream_request.h"
#include "metrics/result.h"
#include "openai/stream.h"

namespace {

std::string make_stream(int tokens) {
  std::string s =
      "data: "
      "{\"id\":\"chatcmpl-a0e8d16d47a64de58a0a3083e18d432a\",\"object\":\"chat.completion.chunk\","
      "\"created\":1749994809,\"model\":\"Qwen/Qwen3-8B\",\"choices\":[{\"index\":0,\"delta\":{"
      "\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  for (int i = 0; i < tokens; ++i) {
    s += "data: {\"id\":\"chatcmpl-a0e8d16d47a64de58a0a3083e18d432a\",\"object\":\"chat.completion."
         "chunk\",\"created\":1749994809,\"model\":\"Qwen/Qwen3-8B\",\"choices\":[{\"index\":0,"
         "\"delta\":{\"content\":\" word\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  }
  s += "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"total_tokens\":15,"
       "\"completion_tokens\":" +
       std::to_string(tokens) + "}}\n\ndata: [DONE]\n\n";
  return s;
}

// Whole response through StreamingResponse in 1,500-byte reads (a typical TCP segment).
void BM_StreamingResponse(benchmark::State& state) {
  const int tokens = static_cast<int>(state.range(0));
  const std::string s = make_stream(tokens);
  ib::load::StreamingResponse resp;
  ib::metrics::RequestRecord rec;
  ib::http::HttpOutcome outcome;
  outcome.response_started = outcome.complete = true;
  outcome.status = 200;
  for (auto _ : state) {
    rec = ib::metrics::RequestRecord{};
    rec.content_ns.reserve(tokens + 2);
    resp.reset(&rec);
    resp.on_headers(200, 1);
    for (size_t i = 0; i < s.size(); i += 1500) {
      resp.on_body(std::string_view(s).substr(i, 1500), static_cast<int64_t>(i) + 2);
    }
    rec.done_ns = 1 << 30;
    resp.finish(outcome);
    benchmark::DoNotOptimize(rec.content_ns.data());
  }
  state.SetItemsProcessed(state.iterations() * (tokens + 3));  // events
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(s.size()));
}
BENCHMARK(BM_StreamingResponse)->Arg(1024);

void BM_SseFramingOnly(benchmark::State& state) {
  const std::string s = make_stream(1024);
  ib::http::SseParser p;
  size_t n = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < s.size(); i += 1500) {
      p.feed(std::string_view(s).substr(i, 1500),
             [&](const ib::http::SseEvent& e) { n += e.data.size(); });
    }
  }
  benchmark::DoNotOptimize(n);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(s.size()));
}
BENCHMARK(BM_SseFramingOnly);

void BM_ComputeMetrics(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<ib::metrics::RequestRecord> rs(n);
  for (int i = 0; i < n; ++i) {
    auto& r = rs[i];
    r.send_ns = 1000 + i;
    r.sched_ns = r.send_ns;
    for (int64_t t = 0; t < 256; ++t)
      r.content_ns.push_back(r.send_ns + 50'000'000 + t * 10'000'000 + (i % 7));
    r.done_ns = r.content_ns.back();
    r.completion_tokens = 256;
    r.input_len = 1024;
  }
  for (auto _ : state) {
    auto m = ib::metrics::compute_metrics(rs, {});
    benchmark::DoNotOptimize(m.tpot_ms.median);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_ComputeMetrics)->Arg(10000);

}  // namespace
