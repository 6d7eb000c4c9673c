// `inferbench bench` against byte-exact transcripts of real servers, replayed by a loopback
// server that controls write boundaries and timing (tests/support/transcript_server.h). The
// shapes follow each server's own stream code: vLLM vllm/entrypoints/openai/ (chat_completion/
// serving.py, completion/serving.py; captures in vllm-project/vllm #19662 and #35705), SGLang
// python/sglang/srt/entrypoints/openai/ (serving_chat.py, serving_completions.py, sse_utils.py),
// TensorRT-LLM tensorrt_llm/serve/postprocess_handlers.py, llama.cpp tools/server/server-task.cpp.
// SSE framing as the WHATWG HTML "server-sent events" section defines it.
//
// Timing assertions are lower bounds only: the client cannot see bytes before the server wrote
// them, so they hold however slow or noisy the machine is. The details file is relative to the
// run's origin; differences (TTFT, gaps) are compared with the server's write times, and, when the
// result reports `origin_mono_ns`, absolute times too (client and server read the same
// CLOCK_MONOTONIC).
#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <boost/asio/write.hpp>

#include "core/clock.h"
#include "e2e_util.h"
#include "support/transcript_server.h"

namespace ib::e2e {
namespace {

using test::Ms;
using test::RequestInfo;
using test::Script;
using test::TranscriptServer;

// Delay before the first content event (what TTFT must at least measure), between content events
// (what ITL must show), and between the two halves of split events.
constexpr int kTtftMs = 150;
constexpr int kGapMs = 100;
constexpr int kSplitGapMs = 20;
constexpr double kEps = 1e-3;  // ms: rounding of the details file's doubles

// ---- Transcripts ------------------------------------------------------------------------------

std::string sse_data(std::string_view json) { return "data: " + std::string(json) + "\n\n"; }
const std::string kDone = "data: [DONE]\n\n";

std::string uvicorn_sse_head() {
  return test::response_head(200, "OK",
                             {{"date", "Mon, 01 Jun 2026 12:00:00 GMT"},
                              {"server", "uvicorn"},
                              {"content-type", "text/event-stream; charset=utf-8"},
                              {"transfer-encoding", "chunked"}});
}

// cpp-httplib's chunked content provider [INF: header set of llama-server builds].
std::string llamacpp_sse_head() {
  return test::response_head(200, "OK",
                             {{"Keep-Alive", "timeout=5, max=100"},
                              {"Content-Type", "text/event-stream"},
                              {"Server", "llama.cpp"},
                              {"Transfer-Encoding", "chunked"}});
}

std::string uvicorn_json(int status, std::string_view reason, std::string_view body) {
  return test::full_response(status, reason,
                             {{"date", "Mon, 01 Jun 2026 12:00:00 GMT"},
                              {"server", "uvicorn"},
                              {"content-type", "application/json"}},
                             body);
}

struct Ev {
  std::string bytes;  // exactly as on the wire, including the blank line
  bool content = false;
  bool same_write_as_next = false;  // llama.cpp: role event and first content in one write
};

struct Dialect {
  std::string name;
  std::string api;  // "chat" | "completions"
  bool headers_with_first_token = false;  // SGLang, llama.cpp: no headers before the first token
  std::string head;
  std::vector<Ev> events;
  int64_t prompt_tokens = -1;      // usage.prompt_tokens (-1: no usage chunk)
  int64_t completion_tokens = -1;  // usage.completion_tokens (-1: no usage chunk)
  std::string finish_reason;

  int content_events() const {
    return static_cast<int>(std::count_if(events.begin(), events.end(),
                                          [](const Ev& e) { return e.content; }));
  }
  std::string body() const {
    std::string s;
    for (const auto& e : events) s += e.bytes;
    return s;
  }
};

void PrintTo(const Dialect& d, std::ostream* os) { *os << d.name; }

Ev meta(std::string bytes) { return Ev{std::move(bytes), false, false}; }
Ev content(std::string bytes) { return Ev{std::move(bytes), true, false}; }

// vLLM chat (0.9–0.16 shape); usage set to the two content events.
Dialect vllm_chat() {
  const std::string p =
      R"({"id":"chatcmpl-a0e8d16d47a64de58a0a3083e18d432a","object":"chat.completion.chunk","created":1749994809,"model":"Qwen/Qwen3-8B","choices":)";
  return Dialect{
      "vllm_chat",
      "chat",
      false,
      uvicorn_sse_head(),
      {
          meta(sse_data(p + R"([{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"content":" world!"},"logprobs":null,"finish_reason":null}]})")),
          meta(sse_data(p + R"([{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]})")),
          meta(sse_data(p + R"([],"usage":{"prompt_tokens":12,"total_tokens":14,"completion_tokens":2}})")),
          meta(kDone),
      },
      12,
      2,
      "stop"};
}

// Newer vLLM with continuous_usage_stats: usage on every chunk (role chunk: 0), `token_ids:null`
// in non-first choices, the last text on the `length` finish chunk.
Dialect vllm_chat_continuous_usage() {
  const std::string p =
      R"({"id":"chatcmpl-9c1f0e2b7a3d4e15","object":"chat.completion.chunk","created":1760000000,"model":"Qwen/Qwen3-8B","choices":)";
  return Dialect{
      "vllm_chat_continuous_usage",
      "chat",
      false,
      uvicorn_sse_head(),
      {
          meta(sse_data(p + R"([{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":12,"completion_tokens":0}})")),
          content(sse_data(p + R"([{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null,"token_ids":null}],"usage":{"prompt_tokens":12,"total_tokens":13,"completion_tokens":1}})")),
          content(sse_data(p + R"([{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null,"token_ids":null}],"usage":{"prompt_tokens":12,"total_tokens":14,"completion_tokens":2}})")),
          content(sse_data(p + R"([{"index":0,"delta":{"content":"!"},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3}})")),
          meta(sse_data(p + R"([],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3}})")),
          meta(kDone),
      },
      12,
      3,
      "length"};
}

// vLLM completions (older field set); usage: 8 prompt tokens (= --isl), 2 completion.
Dialect vllm_completions() {
  const std::string p =
      R"({"id":"cmpl-b0f5a3c0e4b94b2f9a2d7c8e1f6a5d43","object":"text_completion","created":1750000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":)";
  return Dialect{
      "vllm_completions",
      "completions",
      false,
      uvicorn_sse_head(),
      {
          content(sse_data(p + R"([{"index":0,"text":" Paris,","logprobs":null,"finish_reason":null,"stop_reason":null}]})")),
          content(sse_data(p + R"([{"index":0,"text":" the capital","logprobs":null,"finish_reason":"length","stop_reason":null}]})")),
          meta(sse_data(p + R"([],"usage":{"prompt_tokens":8,"total_tokens":10,"completion_tokens":2}})")),
          meta(kDone),
      },
      8,
      2,
      "length"};
}

// SGLang chat, msgspec build (sse_utils.py): headers only with the first token, separate finish
// chunk.
Dialect sglang_chat() {
  const std::string p =
      R"({"id":"chatcmpl-5f2f8f6a-1b3c-4d5e-8f7a-6b5c4d3e2f1a","object":"chat.completion.chunk","created":1750000000,"model":"default","choices":)";
  return Dialect{
      "sglang_chat_msgspec",
      "chat",
      true,
      uvicorn_sse_head(),
      {
          meta(sse_data(p + R"([{"index":0,"delta":{"reasoning_content":null,"role":"assistant","content":""},"logprobs":null,"finish_reason":null,"matched_stop":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"reasoning_content":null,"content":"The capital"},"logprobs":null,"finish_reason":null,"matched_stop":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"reasoning_content":null,"content":" is Paris."},"logprobs":null,"finish_reason":null,"matched_stop":null}]})")),
          meta(sse_data(p + R"([{"index":0,"delta":{"reasoning_content":null},"logprobs":null,"finish_reason":"stop","matched_stop":128009}]})")),
          meta(sse_data(p + R"([],"usage":{"prompt_tokens":12,"total_tokens":14,"completion_tokens":2,"prompt_tokens_details":null,"reasoning_tokens":0}})")),
          meta(kDone),
      },
      12,
      2,
      "stop"};
}

// Older pydantic-only SGLang: every key present, nulls included, "usage":null on each chunk.
Dialect sglang_chat_pydantic() {
  const std::string p =
      R"({"id":"5f2f8f6a1b3c4d5e8f7a6b5c4d3e2f1a","object":"chat.completion.chunk","created":1750000000,"model":"default","choices":)";
  return Dialect{
      "sglang_chat_pydantic",
      "chat",
      true,
      uvicorn_sse_head(),
      {
          meta(sse_data(p + R"([{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null})")),
          content(sse_data(p + R"([{"index":0,"delta":{"role":null,"content":"The capital","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null})")),
          content(sse_data(p + R"([{"index":0,"delta":{"role":null,"content":" is Paris.","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null})")),
          meta(sse_data(p + R"([{"index":0,"delta":{"role":null,"content":null,"reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":"stop","matched_stop":128009}],"usage":null})")),
          meta(sse_data(p + R"([],"usage":{"prompt_tokens":12,"total_tokens":14,"completion_tokens":2,"prompt_tokens_details":null}})")),
          meta(kDone),
      },
      12,
      2,
      "stop"};
}

// SGLang completions: "usage":null on every content chunk.
Dialect sglang_completions() {
  const std::string p =
      R"({"id":"d3f5a5b8c7e64f2b8a1c9d0e7f6b5a4c","object":"text_completion","created":1750000000,"model":"default","choices":)";
  return Dialect{
      "sglang_completions",
      "completions",
      true,
      uvicorn_sse_head(),
      {
          content(sse_data(p + R"([{"index":0,"text":" Paris,","logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null})")),
          content(sse_data(p + R"([{"index":0,"text":" the capital","logprobs":null,"finish_reason":"length","matched_stop":null}],"usage":null})")),
          meta(sse_data(p + R"([],"usage":{"prompt_tokens":8,"total_tokens":10,"completion_tokens":2,"reasoning_tokens":0}})")),
          meta(kDone),
      },
      8,
      2,
      "length"};
}

// TRT-LLM chat: role chunk without content key and with a SPACE before the blank line.
Dialect trtllm_chat() {
  const std::string p =
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1750000000,"model":"llama","choices":)";
  return Dialect{
      "trtllm_chat",
      "chat",
      false,
      uvicorn_sse_head(),
      {
          meta("data: " + p + R"([{"index":0,"delta":{"role":"assistant"}}]})" + " \n\n"),
          content(sse_data(p + R"([{"index":0,"delta":{"content":"Hello","reasoning_content":""}}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"content":"!","reasoning_content":""},"finish_reason":"stop"}]})")),
          meta(sse_data(p + R"([],"usage":{"prompt_tokens":12,"total_tokens":14,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}})")),
          meta(kDone),
      },
      12,
      2,
      "stop"};
}

// TRT-LLM completions, all keys incl. nulls (exclude_unset=False), as postprocess_handlers.py
// writes them: no usage chunk.
Dialect trtllm_completions_no_usage() {
  const std::string p =
      R"({"id":"cmpl-7","object":"text_completion","created":1750000000,"model":"llama","choices":)";
  return Dialect{
      "trtllm_completions_no_usage",
      "completions",
      false,
      uvicorn_sse_head(),
      {
          content(sse_data(p + R"([{"index":0,"text":" Paris","token_ids":null,"logprobs":null,"finish_reason":null,"stop_reason":null,"avg_decoded_tokens_per_iter":null}],"usage":null})")),
          content(sse_data(p + R"([{"index":0,"text":".","token_ids":null,"logprobs":null,"finish_reason":"length","stop_reason":null,"avg_decoded_tokens_per_iter":null}],"usage":null})")),
          meta(kDone),
      },
      -1,
      -1,
      "length"};
}

// The same with the final usage chunk include_usage asks for (model_dump_json: nulls kept) [INF].
Dialect trtllm_completions() {
  Dialect d = trtllm_completions_no_usage();
  d.name = "trtllm_completions";
  d.events.insert(
      d.events.end() - 1,
      meta(sse_data(
          R"({"id":"cmpl-7","object":"text_completion","created":1750000000,"model":"llama","choices":[],"usage":{"prompt_tokens":8,"total_tokens":10,"completion_tokens":2,"prompt_tokens_details":null}})")));
  d.prompt_tokens = 8;
  d.completion_tokens = 2;
  return d;
}

const std::string kLlamaTimings =
    R"("timings":{"cache_n":0,"prompt_n":9,"prompt_ms":12.5,"prompt_per_token_ms":1.388,"prompt_per_second":720.0,"predicted_n":2,"predicted_ms":20.0,"predicted_per_token_ms":10.0,"predicted_per_second":100.0})";

// llama.cpp chat: ordered_json keys, role chunk with "content":null written together with
// the first content event, separate finish chunk with "delta":{}, usage chunk with timings.
Dialect llamacpp_chat() {
  const std::string s =
      R"(,"created":1750000000,"id":"chatcmpl-qC6laQHbZ2CmxNvJ4NoB1L93LcVF7nfe","model":"gpt-3.5-turbo","system_fingerprint":"b6000-abcdef12","object":"chat.completion.chunk")";
  Ev role = meta(sse_data(R"({"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}])" + s + "}"));
  role.same_write_as_next = true;
  return Dialect{
      "llamacpp_chat",
      "chat",
      true,
      llamacpp_sse_head(),
      {
          role,
          content(sse_data(R"({"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hello"}}])" + s + "}")),
          content(sse_data(R"({"choices":[{"finish_reason":null,"index":0,"delta":{"content":" world"}}])" + s + "}")),
          meta(sse_data(R"({"choices":[{"finish_reason":"stop","index":0,"delta":{}}])" + s + "}")),
          meta(sse_data(R"({"choices":[])" + s +
                    R"(,"usage":{"completion_tokens":2,"prompt_tokens":9,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":0}},)" +
                    kLlamaTimings + "}")),
          meta(kDone),
      },
      9,
      2,
      "stop"};
}

// llama.cpp chat without include_usage: no usage chunk; timings on the finish chunk.
Dialect llamacpp_chat_no_usage() {
  Dialect d = llamacpp_chat();
  d.name = "llamacpp_chat_no_usage";
  const std::string s =
      R"(,"created":1750000000,"id":"chatcmpl-qC6laQHbZ2CmxNvJ4NoB1L93LcVF7nfe","model":"gpt-3.5-turbo","system_fingerprint":"b6000-abcdef12","object":"chat.completion.chunk")";
  d.events = {d.events[0], d.events[1], d.events[2],
              meta(sse_data(R"({"choices":[{"finish_reason":"stop","index":0,"delta":{}}])" + s + "," +
                        kLlamaTimings + "}")),
              meta(kDone)};
  d.prompt_tokens = -1;
  d.completion_tokens = -1;
  return d;
}

// llama.cpp /v1/completions: usage (always) and timings on the final chunk.
Dialect llamacpp_completions() {
  const std::string s =
      R"(,"created":1750000000,"model":"gpt-3.5-turbo","system_fingerprint":"b6000-abcdef12","object":"text_completion","id":"chatcmpl-Xr2b1Wq0c8d7e6f5a4b3c2d1e0f9a8b7")";
  return Dialect{
      "llamacpp_completions",
      "completions",
      true,
      llamacpp_sse_head(),
      {
          content(sse_data(R"({"choices":[{"text":" Paris","index":0,"logprobs":null,"finish_reason":null}])" + s + "}")),
          content(sse_data(R"({"choices":[{"text":",","index":0,"logprobs":null,"finish_reason":null}])" + s + "}")),
          meta(sse_data(R"({"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}])" + s +
                    R"(,"usage":{"completion_tokens":2,"prompt_tokens":8,"total_tokens":10},)" +
                    kLlamaTimings + "}")),
          meta(kDone),
      },
      8,
      2,
      "length"};
}

// vLLM with a reasoning parser and a tool parser: `reasoning` + `reasoning_content` deltas, then
// tool-call deltas (name, then argument fragment). All four are content; the role chunk is not.
Dialect vllm_reasoning_tool_calls() {
  const std::string p =
      R"({"id":"chatcmpl-4f6c1b2a9e8d7c6b","object":"chat.completion.chunk","created":1760000000,"model":"Qwen/Qwen3-8B","choices":)";
  return Dialect{
      "vllm_reasoning_tool_calls",
      "chat",
      false,
      uvicorn_sse_head(),
      {
          meta(sse_data(p + R"([{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"reasoning":"The user","reasoning_content":"The user"},"logprobs":null,"finish_reason":null,"token_ids":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"reasoning":" wants weather.","reasoning_content":" wants weather."},"logprobs":null,"finish_reason":null,"token_ids":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-8e1f2a3b4c5d6e7f","type":"function","index":0,"function":{"name":"get_weather"}}]},"logprobs":null,"finish_reason":null,"token_ids":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Paris\"}"}}]},"logprobs":null,"finish_reason":null,"token_ids":null}]})")),
          meta(sse_data(p + R"([{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null,"token_ids":null}]})")),
          meta(sse_data(p + R"([],"usage":{"prompt_tokens":30,"total_tokens":34,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":2}}})")),
          meta(kDone),
      },
      30,
      4,
      "tool_calls"};
}

// SGLang (msgspec) with a reasoning parser: the first content is reasoning_content only.
Dialect sglang_reasoning() {
  const std::string p =
      R"({"id":"chatcmpl-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9","object":"chat.completion.chunk","created":1750000000,"model":"default","choices":)";
  return Dialect{
      "sglang_reasoning",
      "chat",
      true,
      uvicorn_sse_head(),
      {
          meta(sse_data(p + R"([{"index":0,"delta":{"reasoning_content":null,"role":"assistant","content":""},"logprobs":null,"finish_reason":null,"matched_stop":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"reasoning_content":"Okay, the"},"logprobs":null,"finish_reason":null,"matched_stop":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"reasoning_content":" user asks."},"logprobs":null,"finish_reason":null,"matched_stop":null}]})")),
          content(sse_data(p + R"([{"index":0,"delta":{"reasoning_content":null,"content":"Paris."},"logprobs":null,"finish_reason":null,"matched_stop":null}]})")),
          meta(sse_data(p + R"([{"index":0,"delta":{"reasoning_content":null},"logprobs":null,"finish_reason":"stop","matched_stop":151645}]})")),
          meta(sse_data(p + R"([],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3,"prompt_tokens_details":null,"reasoning_tokens":2}})")),
          meta(kDone),
      },
      12,
      3,
      "stop"};
}

// llama.cpp tool call: role chunk and the first tool-call delta in one write, arguments in
// fragments, `"content":null` never counted.
Dialect llamacpp_tool_calls() {
  const std::string s =
      R"(,"created":1750000000,"id":"chatcmpl-T00lCa11ab2Cd3Ef4Gh5Ij6Kl7Mn8Op9","model":"gpt-3.5-turbo","system_fingerprint":"b6000-abcdef12","object":"chat.completion.chunk")";
  Ev role = meta(sse_data(R"({"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}])" + s + "}"));
  role.same_write_as_next = true;
  return Dialect{
      "llamacpp_tool_calls",
      "chat",
      true,
      llamacpp_sse_head(),
      {
          role,
          content(sse_data(R"({"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_Wm3fQ9xK","type":"function","function":{"name":"get_weather","arguments":"{\""}}]}}])" + s + "}")),
          content(sse_data(R"({"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"city\":\"Paris\"}"}}]}}])" + s + "}")),
          meta(sse_data(R"({"choices":[{"finish_reason":"tool_calls","index":0,"delta":{}}])" + s + "}")),
          meta(sse_data(R"({"choices":[])" + s +
                    R"(,"usage":{"completion_tokens":2,"prompt_tokens":30,"total_tokens":32,"prompt_tokens_details":{"cached_tokens":0}},)" +
                    kLlamaTimings + "}")),
          meta(kDone),
      },
      30,
      2,
      "tool_calls"};
}

// ---- Write layouts ----------------------------------------------------------------------------

// How a transcript is cut into writes. Every layout delays the first byte of the first content
// event by at least kTtftMs after the request arrived, so TTFT ≥ kTtftMs in all of them.
enum class Layout {
  kTimed,         // one write (one HTTP chunk) per event; kTtftMs before the first content event
                  // (after the role chunk), kGapMs before each later content event
  kWhole,         // headers, the whole body as one chunk and the terminator in a single write
  kChunkPerByte,  // every body byte its own HTTP chunk and write
  kRawBytewise,   // the chunked encoding itself written one byte per write (cuts chunk headers)
  kMidEvent,      // each write = second half of one event + first half of the next
};
constexpr Layout kLayouts[] = {Layout::kTimed, Layout::kWhole, Layout::kChunkPerByte,
                               Layout::kRawBytewise, Layout::kMidEvent};
constexpr int kNumLayouts = 5;

std::string_view layout_name(Layout l) {
  switch (l) {
    case Layout::kTimed: return "timed";
    case Layout::kWhole: return "whole";
    case Layout::kChunkPerByte: return "chunk-per-byte";
    case Layout::kRawBytewise: return "raw-bytewise";
    case Layout::kMidEvent: return "mid-event";
  }
  return "?";
}

struct Built {
  Script script;
  std::vector<size_t> content_step;  // the step that wrote the last byte of content event k
  // The step that wrote the first byte of content event k (or an earlier one): the kernel stamps
  // a read with the arrival of its first packet, so when the pieces of an event reach the client
  // in one read the event carries the time its first piece arrived, never earlier.
  std::vector<size_t> first_step;
};

size_t first_content(const Dialect& d) {
  for (size_t i = 0; i < d.events.size(); ++i) {
    if (d.events[i].content) return i;
  }
  return d.events.size();
}

Built build(const Dialect& d, Layout layout) {
  Built b;
  Script& s = b.script;
  const Ms ttft{kTtftMs};
  const size_t fc = first_content(d);
  switch (layout) {
    case Layout::kTimed: {
      std::string pending_head = d.headers_with_first_token ? d.head : "";
      if (!d.headers_with_first_token) s.write(d.head);
      int seen = 0;
      for (size_t i = 0; i < d.events.size();) {
        std::string payload;
        int n_content = 0;
        size_t j = i;
        for (;; ++j) {
          payload += d.events[j].bytes;
          if (d.events[j].content) ++n_content;
          if (!d.events[j].same_write_as_next || j + 1 == d.events.size()) break;
        }
        const Ms delay = n_content == 0 ? Ms{0} : seen == 0 ? ttft : Ms{kGapMs};
        for (int k = 0; k < n_content; ++k) {
          b.content_step.push_back(s.size());
          b.first_step.push_back(s.size());
        }
        s.write(pending_head + test::http_chunk(payload), delay);
        pending_head.clear();
        seen += n_content;
        i = j + 1;
      }
      s.end_chunks();
      break;
    }
    case Layout::kWhole:
      b.content_step.assign(static_cast<size_t>(d.content_events()), s.size());
      b.first_step = b.content_step;
      s.write(d.head + test::http_chunk(d.body()) + "0\r\n\r\n", ttft);
      break;
    case Layout::kChunkPerByte:
      s.write(d.head);
      for (size_t i = 0; i < d.events.size(); ++i) {
        const size_t first = s.size();
        s.chunk_bytewise(d.events[i].bytes, i == fc ? ttft : Ms{0});
        if (d.events[i].content) {
          b.content_step.push_back(s.size() - 1);
          b.first_step.push_back(first);
        }
      }
      s.end_chunks();
      break;
    case Layout::kRawBytewise: {
      std::string before = d.head;
      std::string after;
      for (size_t i = 0; i < d.events.size(); ++i) {
        std::string& part = i < fc ? before : after;
        const size_t first = before.size() + after.size();  // the chunk's size line
        part += test::http_chunk(d.events[i].bytes);
        if (d.events[i].content) b.first_step.push_back(first);
        // One step per byte: the event's last byte is the one before the chunk's CRLF.
        if (d.events[i].content) b.content_step.push_back(before.size() + after.size() - 3);
      }
      after += "0\r\n\r\n";
      s.write_bytewise(before);
      s.write_bytewise(after, ttft);
      break;
    }
    case Layout::kMidEvent: {
      s.write(d.head);
      const std::string body = d.body();
      std::vector<size_t> cuts;  // middle of every event
      size_t pos = 0;
      for (const auto& e : d.events) {
        cuts.push_back(pos + e.bytes.size() / 2);
        pos += e.bytes.size();
      }
      cuts.push_back(body.size());
      size_t from = 0;
      for (size_t i = 0; i < cuts.size(); ++i) {
        // Piece i ends in the middle of event i: it starts event i (ends event i-1).
        const Ms delay = i == fc ? ttft : i == 0 ? Ms{0} : Ms{kSplitGapMs};
        s.chunk(std::string_view(body).substr(from, cuts[i] - from), delay);
        from = cuts[i];
        // Event i-1 ends in this piece; it began in the piece before.
        if (i > 0 && d.events[i - 1].content) {
          b.content_step.push_back(s.size() - 1);
          b.first_step.push_back(s.size() - 2);
        }
      }
      s.end_chunks();
      break;
    }
  }
  return b;
}

// The whole response in one write, at once: for tests about something other than timing.
Script immediate(const Dialect& d) {
  return Script().write(d.head + test::http_chunk(d.body()) + "0\r\n\r\n");
}

// ---- Running the client ---------------------------------------------------------------------

struct BenchRun {
  CommandResult cmd;
  bool has_result = false;
  boost::json::object result;
  std::vector<boost::json::object> records;  // details, sorted by index
};

// Runs `inferbench bench --concurrency 1` (so the server's arrival order is the request index),
// bounded by `timeout`, and reads its result and details files.
BenchRun run_bench(const fs::path& dir, const std::string& url, const std::string& api, int osl,
                   int num_prompts, const std::vector<std::string>& extra = {},
                   std::chrono::seconds timeout = std::chrono::seconds(60)) {
  static int counter = 0;
  const int n = ++counter;
  const fs::path out = dir / fmt::format("result{}.json", n);
  const fs::path details = dir / fmt::format("details{}.jsonl", n);
  std::vector<std::string> args = {"bench",
                                   "--endpoint", url,
                                   "--model", "m",
                                   "--api", api,
                                   "--isl", "8",
                                   "--osl", std::to_string(osl),
                                   "--num-prompts", std::to_string(num_prompts),
                                   "--concurrency", "1",
                                   "--warmups", "0",
                                   "--output", out.string(),
                                   "--details", details.string(),
                                   // Protocol checks only: no metrics scrapes beside them.
                                   "--no-server-metrics"};
  args.insert(args.end(), extra.begin(), extra.end());
  BenchRun r;
  r.cmd = run_inferbench(args, dir / fmt::format("bench{}.log", n), timeout);
  if (fs::exists(out)) {
    r.result = read_json(out);
    r.has_result = true;
  }
  std::ifstream in(details);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    if (ec || !v.is_object()) {
      ADD_FAILURE() << "details line is not a JSON object: " << line;
      continue;
    }
    r.records.push_back(v.as_object());
  }
  std::sort(r.records.begin(), r.records.end(),
            [](const boost::json::object& x, const boost::json::object& y) {
    return x.at("index").to_number<int64_t>() < y.at("index").to_number<int64_t>();
  });
  return r;
}

double dbl(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    ADD_FAILURE() << "missing or null key " << key << " in " << boost::json::serialize(o);
    return 0;
  }
  return v->to_number<double>();
}

std::vector<double> content_ms(const boost::json::object& rec) {
  std::vector<double> out;
  if (const auto* v = rec.if_contains("content_ms"); v && v->is_array()) {
    for (const auto& t : v->as_array()) out.push_back(t.to_number<double>());
  } else {
    ADD_FAILURE() << "record without content_ms array: " << boost::json::serialize(rec);
  }
  return out;
}

std::string str(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return {};
  return std::string(v->as_string());
}

int64_t failures_of(const boost::json::object& result, std::string_view cause) {
  const auto* f = result.if_contains("failures");
  if (f == nullptr || !f->is_object()) {
    ADD_FAILURE() << "result has no failures object";
    return -1;
  }
  const auto* n = f->as_object().if_contains(cause);
  return n == nullptr ? 0 : n->to_number<int64_t>();
}

std::vector<std::string> strings(const boost::json::object& o, std::string_view key) {
  std::vector<std::string> out;
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_array()) {
    ADD_FAILURE() << "result has no array " << key;
    return out;
  }
  for (const auto& s : v->as_array()) {
    if (s.is_string()) out.emplace_back(s.as_string());
  }
  return out;
}

bool any_contains(const std::vector<std::string>& v, std::string_view needle) {
  return std::any_of(v.begin(), v.end(),
                     [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

// Warnings that concern output token accounting (other warnings, e.g. about approximate chat
// input lengths or client health, are allowed anywhere).
bool estimate_warning(const std::vector<std::string>& w) {
  return any_contains(w, "estimat") || any_contains(w, "no usage");
}
bool mismatch_warning(const std::vector<std::string>& w) {
  return any_contains(w, "5%") || any_contains(w, "differ");
}

// What every streamed request must carry (the exact-length knobs of src/openai/request.h).
void expect_request(const RequestInfo& req, std::string_view api, int osl) {
  SCOPED_TRACE("request " + std::to_string(req.index) + ": " + req.body);
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, api == "chat" ? "/v1/chat/completions" : "/v1/completions");
  boost::system::error_code ec;
  auto v = boost::json::parse(req.body, ec);
  ASSERT_FALSE(ec) << "request body is not JSON";
  ASSERT_TRUE(v.is_object());
  const auto& o = v.as_object();
  EXPECT_EQ(str(o, "model"), "m");
  ASSERT_TRUE(o.contains("stream"));
  EXPECT_EQ(o.at("stream"), boost::json::value(true));
  ASSERT_TRUE(o.contains("stream_options") && o.at("stream_options").is_object());
  const auto& so = o.at("stream_options").as_object();
  ASSERT_TRUE(so.contains("include_usage"));
  EXPECT_EQ(so.at("include_usage"), boost::json::value(true));
  ASSERT_TRUE(o.contains("ignore_eos"));
  EXPECT_EQ(o.at("ignore_eos"), boost::json::value(true));
  if (api == "chat") {
    ASSERT_TRUE(o.contains("max_completion_tokens"));
    EXPECT_EQ(o.at("max_completion_tokens").to_number<int64_t>(), osl);
    ASSERT_TRUE(o.contains("messages") && o.at("messages").is_array());
    EXPECT_FALSE(o.at("messages").as_array().empty());
  } else {
    ASSERT_TRUE(o.contains("max_tokens"));
    EXPECT_EQ(o.at("max_tokens").to_number<int64_t>(), osl);
    EXPECT_TRUE(o.contains("prompt"));
  }
}

#define ASSERT_RAN(run)                                                                        \
  do {                                                                                         \
    ASSERT_FALSE((run).cmd.timed_out) << "inferbench bench hung; output:\n" << (run).cmd.output; \
    ASSERT_NE((run).cmd.exit.code, 2) << "usage error (flag not implemented?):\n"              \
                                      << (run).cmd.output;                                     \
    ASSERT_TRUE((run).has_result) << "no result JSON; output:\n" << (run).cmd.output;          \
  } while (0)

// ---- Successful transcripts -------------------------------------------------------------------

class DialectTranscripts : public ::testing::TestWithParam<Dialect> {
 protected:
  TempDir dir;
};

TEST_P(DialectTranscripts, MeasuredCorrectlyWhateverTheWriteBoundaries) {
  const Dialect d = GetParam();
  const int n_content = d.content_events();
  ASSERT_EQ(d.completion_tokens, n_content) << "transcript's usage must match its content events";
  // Request i is answered with layout i % 5 (concurrency 1: arrival order = index order).
  TranscriptServer server([d](const RequestInfo& info) {
    return build(d, kLayouts[info.index % kNumLayouts]).script;
  });
  const int k = kNumLayouts;
  auto run = run_bench(dir.path(), server.url(), d.api, n_content, k);
  ASSERT_RAN(run);
  const auto& j = run.result;
  EXPECT_EQ(run.cmd.exit.code, 0) << run.cmd.output;
  EXPECT_EQ(num(j, "completed"), k) << run.cmd.output;
  EXPECT_EQ(num(j, "failed"), 0) << "errors:" << joined(strings(j, "error_samples"));
  EXPECT_EQ(num(j, "retries"), 0);
  EXPECT_EQ(num(j, "total_output_tokens"), k * d.completion_tokens);
  EXPECT_EQ(num(j, "total_input_tokens"), k * d.prompt_tokens);
  ASSERT_TRUE(j.contains("output_tokens_estimated"));
  EXPECT_EQ(j.at("output_tokens_estimated"), boost::json::value(false));
  const auto warnings = strings(j, "warnings");
  EXPECT_FALSE(estimate_warning(warnings)) << joined(warnings);
  EXPECT_FALSE(mismatch_warning(warnings)) << joined(warnings);
  // TTFT is measured from the first content event: every layout delays it by kTtftMs.
  EXPECT_GE(num(j, "median_ttft_ms"), kTtftMs);
  EXPECT_GE(num(j, "mean_e2el_ms"), num(j, "mean_ttft_ms"));

  // The run's origin on the monotonic clock, when the result reports it.
  std::optional<double> origin_ns;
  if (const auto* o = j.if_contains("origin_mono_ns"); o && o->is_number()) {
    origin_ns = o->to_number<double>();
  }
  const auto ex = server.exchanges();
  ASSERT_EQ(ex.size(), static_cast<size_t>(k)) << "the server saw a different number of requests";
  for (const auto& e : ex) expect_request(e.request, d.api, n_content);

  ASSERT_EQ(run.records.size(), static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) {
    const Layout layout = kLayouts[i % kNumLayouts];
    const auto& rec = run.records[i];
    SCOPED_TRACE(fmt::format("request {} (layout {}): {}", i, layout_name(layout),
                             boost::json::serialize(rec)));
    EXPECT_EQ(rec.at("ok"), boost::json::value(true));
    EXPECT_EQ(str(rec, "failure"), "none");
    EXPECT_EQ(dbl(rec, "http_status"), 200);
    EXPECT_EQ(dbl(rec, "retries"), 0);
    EXPECT_EQ(dbl(rec, "completion_tokens"), d.completion_tokens);
    EXPECT_EQ(dbl(rec, "prompt_tokens"), d.prompt_tokens);
    EXPECT_EQ(dbl(rec, "output_len"), n_content);
    EXPECT_EQ(str(rec, "finish_reason"), d.finish_reason);
    const auto c = content_ms(rec);
    ASSERT_EQ(static_cast<int>(c.size()), n_content) << "content events counted differently";
    const double send = dbl(rec, "send_ms");
    EXPECT_GE(c.front() - send, kTtftMs - kEps) << "TTFT shorter than the server's delay";
    EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
    EXPECT_LE(dbl(rec, "first_byte_ms"), c.front() + kEps);
    EXPECT_GE(dbl(rec, "done_ms"), c.back() - kEps);
    EXPECT_LE(dbl(rec, "sched_ms"), send + kEps);

    // Against the server's true write times: the client can't see event m before the write that
    // started it (Built::first_step: a read that holds both pieces of a split event carries the
    // arrival time of the first, as the kernel stamps reads; seen once under ASan in CI).
    const Built b = build(d, layout);
    const auto& e = ex[static_cast<size_t>(i)];
    ASSERT_EQ(b.content_step.size(), c.size());
    ASSERT_EQ(b.first_step.size(), c.size());
    ASSERT_EQ(e.step_ns.size(), b.script.size()) << "the server did not run the whole script";
    for (size_t m = 0; m < c.size(); ++m) {
      const int64_t written_ns = e.step_ns[b.first_step[m]];
      EXPECT_GE(c[m] - send, ns_to_ms(written_ns - e.request.received_ns) - kEps)
          << "content event " << m << " seen before it was written";
      if (origin_ns) {
        // Same CLOCK_MONOTONIC in both processes: compare absolute times.
        const double lag_ms = (*origin_ns + c[m] * 1e6 - static_cast<double>(written_ns)) / 1e6;
        EXPECT_GE(lag_ms, -kEps) << "content event " << m << " timestamped " << -lag_ms
                                 << " ms before the server wrote it";
      }
    }
    if (origin_ns) {
      const double early_ms =
          (static_cast<double>(e.request.received_ns) - (*origin_ns + send * 1e6)) / 1e6;
      EXPECT_GE(early_ms, -kEps) << "send time recorded " << -early_ms
                                 << " ms after the server had the whole request";
    }
    if (layout != Layout::kTimed) continue;
    // The scripted gaps show as ITL. Not every one need show: on a busy machine two writes can
    // reach the client in one read, which carries one receive time. But a client that stamps
    // events when it parses them, not when their bytes arrived, shows none.
    int gaps = 0, shown = 0;
    for (size_t m = 1; m < c.size(); ++m) {
      const double server_gap =
          ns_to_ms(e.step_ns[b.content_step[m]] - e.step_ns[b.content_step[m - 1]]);
      if (server_gap < kGapMs) continue;  // written together (llama.cpp role + first token)
      ++gaps;
      if (c[m] - c[m - 1] >= kGapMs / 2.0) ++shown;
    }
    if (gaps > 0) {
      EXPECT_GT(shown, 0) << "none of the " << gaps << " scripted gaps showed as ITL";
    }
  }
}

std::vector<Dialect> all_dialects() {
  return {vllm_chat(),           vllm_chat_continuous_usage(), vllm_completions(),
          sglang_chat(),         sglang_chat_pydantic(),       sglang_completions(),
          trtllm_chat(),         trtllm_completions(),         llamacpp_chat(),
          llamacpp_completions(), vllm_reasoning_tool_calls(), sglang_reasoning(),
          llamacpp_tool_calls()};
}

INSTANTIATE_TEST_SUITE_P(Dialect, DialectTranscripts, ::testing::ValuesIn(all_dialects()),
                         [](const auto& p) { return p.param.name; });

// ---- Usage accounting -------------------------------------------------------------------------

class DialectUsage : public ::testing::Test {
 protected:
  TempDir dir;
};

TEST_F(DialectUsage, NoUsageChunkMeansEstimatedOutputTokensAndAWarning) {
  for (const Dialect& d : {trtllm_completions_no_usage(), llamacpp_chat_no_usage()}) {
    SCOPED_TRACE(d.name);
    TranscriptServer server(immediate(d));
    auto run = run_bench(dir.path(), server.url(), d.api, d.content_events(), 2);
    ASSERT_RAN(run);
    const auto& j = run.result;
    EXPECT_EQ(run.cmd.exit.code, 0) << run.cmd.output;
    EXPECT_EQ(num(j, "completed"), 2);
    EXPECT_EQ(num(j, "failed"), 0) << joined(strings(j, "error_samples"));
    EXPECT_EQ(num(j, "total_output_tokens"), 2 * d.content_events());
    ASSERT_TRUE(j.contains("output_tokens_estimated"));
    EXPECT_EQ(j.at("output_tokens_estimated"), boost::json::value(true));
    const auto warnings = strings(j, "warnings");
    EXPECT_TRUE(estimate_warning(warnings)) << "warnings:" << joined(warnings);
    for (const auto& rec : run.records) {
      EXPECT_EQ(dbl(rec, "completion_tokens"), -1) << boost::json::serialize(rec);
      EXPECT_EQ(static_cast<int>(content_ms(rec).size()), d.content_events());
    }
  }
}

TEST_F(DialectUsage, ServerCountFarFromTheRequestedLengthIsWarned) {
  // The server says 3 tokens for a request of 2 (50% off); its count is used, with a warning.
  Dialect d = vllm_chat();
  const std::string usage2 = R"("completion_tokens":2)";
  auto& usage_ev = d.events[4].bytes;
  usage_ev.replace(usage_ev.find(usage2), usage2.size(), R"("completion_tokens":3)");
  TranscriptServer server(immediate(d));
  auto run = run_bench(dir.path(), server.url(), "chat", 2, 2);
  ASSERT_RAN(run);
  const auto& j = run.result;
  EXPECT_EQ(run.cmd.exit.code, 0) << run.cmd.output;
  EXPECT_EQ(num(j, "completed"), 2);
  EXPECT_EQ(num(j, "total_output_tokens"), 6);
  EXPECT_EQ(j.at("output_tokens_estimated"), boost::json::value(false));
  const auto warnings = strings(j, "warnings");
  EXPECT_TRUE(mismatch_warning(warnings)) << "warnings:" << joined(warnings);
  EXPECT_FALSE(estimate_warning(warnings)) << joined(warnings);
}

// ---- Failures, each counted by cause ----------------------------------------------------------

struct FailureCase {
  std::string name;
  std::string api;
  std::function<Script()> script;
  std::string cause;    // expected failure cause
  std::string message;  // must appear in an error sample (the server's own words)
  int http_status = 200;
};

const std::string kVllmFlat400 =
    R"({"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 4096 tokens (4000 in the messages, 96 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400})";
const std::string kVllmNested400 =
    R"({"error":{"message":"max_tokens must be at least 1, got 0.","type":"BadRequestError","param":null,"code":400}})";

Script sse_script(const std::string& head, std::vector<std::string> writes, Script tail) {
  Script s;
  s.write(head);
  for (auto& w : writes) s.chunk(w);
  for (const auto& st : tail.steps()) {
    switch (st.kind) {
      case test::Step::Kind::kWrite: s.write(st.bytes, st.delay); break;
      case test::Step::Kind::kStall: s.stall(st.delay); break;
      case test::Step::Kind::kClose: s.close(st.delay); break;
      case test::Step::Kind::kReset: s.reset(st.delay); break;
      case test::Step::Kind::kHang: s.hang(); break;
    }
  }
  return s;
}

std::vector<FailureCase> failure_cases() {
  const Dialect vc = vllm_chat();
  const Dialect sc = sglang_chat();
  const Dialect tc = trtllm_chat();
  const Dialect lc = llamacpp_chat();
  const std::string vllm_error =
      sse_data(R"({"error": {"message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}})");
  const std::string sglang_error =
      sse_data(R"({"error": {"object": "error", "message": "Request timed out.", "type": "SERVICE_UNAVAILABLE", "param": null, "code": 503}})");
  const std::string llama_error =
      sse_data(R"({"error":{"code":500,"message":"Failed to decode the batch","type":"server_error"}})");
  const std::string llama_old_error =
      R"(error: {"code":500,"message":"slot unavailable","type":"server_error"})" "\n\n";
  std::vector<FailureCase> v;
  v.push_back({"vllm_http400_flat_error", "completions",
               [] { return Script().write(uvicorn_json(400, "Bad Request", kVllmFlat400)); },
               "http_status", "maximum context length is 2048 tokens", 400});
  v.push_back({"vllm_http400_nested_error", "chat",
               [] { return Script().write(uvicorn_json(400, "Bad Request", kVllmNested400)); },
               "http_status", "max_tokens must be at least 1", 400});
  v.push_back({"llamacpp_http400", "chat",
               [] {
                 return Script().write(test::full_response(
                     400, "Bad Request",
                     {{"Keep-Alive", "timeout=5, max=100"},
                      {"Content-Type", "application/json; charset=utf-8"},
                      {"Server", "llama.cpp"}},
                     R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}})"));
               },
               "http_status", "exceeds the available context size", 400});
  v.push_back({"uvicorn_http500_then_close", "completions",
               [] {
                 return Script()
                     .write(test::full_response(500, "Internal Server Error",
                                                {{"date", "Mon, 01 Jun 2026 12:00:00 GMT"},
                                                 {"server", "uvicorn"},
                                                 {"content-type", "text/plain; charset=utf-8"},
                                                 {"connection", "close"}},
                                                "Internal Server Error"))
                     .close();
               },
               "http_status", "500", 500});
  v.push_back({"sglang_http503_queue_full", "completions",
               [] {
                 return Script().write(uvicorn_json(
                     503, "Service Unavailable",
                     R"({"object":"error","message":"The request queue is full.","type":"SERVICE_UNAVAILABLE","param":null,"code":503})"));
               },
               "http_status", "The request queue is full.", 503});
  v.push_back({"vllm_error_event_then_done", "chat",
               [=] {
                 return sse_script(vc.head, {vc.events[0].bytes, vllm_error, kDone},
                                   Script().end_chunks());
               },
               "stream_error", "Internal server error"});
  v.push_back({"vllm_error_event_after_content", "chat",
               [=] {
                 return sse_script(vc.head,
                                   {vc.events[0].bytes, vc.events[1].bytes, vllm_error, kDone},
                                   Script().end_chunks());
               },
               "stream_error", "Internal server error"});
  v.push_back({"sglang_error_event_then_done", "chat",
               [=] {
                 return sse_script(sc.head, {sc.events[0].bytes, sc.events[1].bytes, sglang_error, kDone},
                                   Script().end_chunks());
               },
               "stream_error", "Request timed out."});
  v.push_back({"llamacpp_error_event_without_done", "chat",
               [=] {
                 return sse_script(lc.head,
                                   {lc.events[0].bytes + lc.events[1].bytes, llama_error},
                                   Script().end_chunks());
               },
               "stream_error", "Failed to decode the batch"});
  v.push_back({"llamacpp_old_error_line", "chat",
               [=] {
                 return sse_script(lc.head,
                                   {lc.events[0].bytes + lc.events[1].bytes, llama_old_error},
                                   Script().end_chunks());
               },
               "stream_error", "slot unavailable"});
  v.push_back({"chunked_end_without_done", "chat",
               [=] {
                 std::vector<std::string> w;
                 for (size_t i = 0; i + 1 < vc.events.size(); ++i) w.push_back(vc.events[i].bytes);
                 return sse_script(vc.head, w, Script().end_chunks());
               },
               "no_done", ""});
  v.push_back({"trtllm_fin_mid_stream", "chat",
               [=] {
                 return sse_script(tc.head, {tc.events[0].bytes, tc.events[1].bytes},
                                   Script().close(Ms{30}));
               },
               "no_done", ""});
  v.push_back({"fin_mid_chunk", "chat",
               [=] {
                 const std::string c = test::http_chunk(tc.events[2].bytes);
                 return sse_script(tc.head, {tc.events[0].bytes, tc.events[1].bytes},
                                   Script().write(c.substr(0, c.size() / 2)).close(Ms{30}));
               },
               "no_done", ""});
  v.push_back({"reset_mid_stream", "chat",
               [=] {
                 return sse_script(vc.head, {vc.events[0].bytes, vc.events[1].bytes},
                                   Script().reset(Ms{30}));
               },
               "connection_reset", ""});
  v.push_back({"malformed_truncated_json", "chat",
               [=] {
                 return sse_script(
                     vc.head,
                     {vc.events[0].bytes,
                      sse_data(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel)"),
                      vc.events[2].bytes, kDone},
                     Script().end_chunks());
               },
               "malformed", ""});
  v.push_back({"malformed_not_json", "completions",
               [] {
                 return sse_script(uvicorn_sse_head(),
                                   {sse_data("<html><body>502 Bad Gateway</body></html>"), kDone},
                                   Script().end_chunks());
               },
               "malformed", ""});
  v.push_back({"role_chunk_only", "chat",
               [=] {
                 const std::string p =
                     R"({"id":"chatcmpl-a0e8d16d47a64de58a0a3083e18d432a","object":"chat.completion.chunk","created":1749994809,"model":"Qwen/Qwen3-8B","choices":)";
                 return sse_script(
                     vc.head,
                     {vc.events[0].bytes,
                      sse_data(p + R"([{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]})"),
                      sse_data(p + R"([],"usage":{"prompt_tokens":12,"total_tokens":12,"completion_tokens":0}})"),
                      kDone},
                     Script().end_chunks());
               },
               "no_content", ""});
  return v;
}

void PrintTo(const FailureCase& c, std::ostream* os) { *os << c.name; }

class DialectFailures : public ::testing::TestWithParam<FailureCase> {
 protected:
  TempDir dir;
};

TEST_P(DialectFailures, CountedByCauseAndNeverRetried) {
  const FailureCase& fc = GetParam();
  TranscriptServer server(fc.script());
  constexpr int k = 2;
  auto run = run_bench(dir.path(), server.url(), fc.api, 2, k);
  ASSERT_RAN(run);
  const auto& j = run.result;
  EXPECT_EQ(run.cmd.exit.code, 1) << "every request failed: exit 1 expected\n" << run.cmd.output;
  EXPECT_EQ(num(j, "completed"), 0);
  EXPECT_EQ(num(j, "failed"), k);
  EXPECT_EQ(failures_of(j, fc.cause), k) << "failures: " << boost::json::serialize(j.at("failures"))
                                         << "\nerrors:" << joined(strings(j, "error_samples"));
  EXPECT_EQ(num(j, "retries"), 0);
  const auto samples = strings(j, "error_samples");
  EXPECT_FALSE(samples.empty());
  if (!fc.message.empty()) {
    EXPECT_TRUE(any_contains(samples, fc.message))
        << "the server's message '" << fc.message << "' is not in error_samples:" << joined(samples);
  }
  ASSERT_EQ(run.records.size(), static_cast<size_t>(k));
  for (const auto& rec : run.records) {
    SCOPED_TRACE(boost::json::serialize(rec));
    EXPECT_EQ(rec.at("ok"), boost::json::value(false));
    EXPECT_EQ(str(rec, "failure"), fc.cause);
    EXPECT_FALSE(str(rec, "error").empty());
    EXPECT_EQ(dbl(rec, "http_status"), fc.http_status);
    EXPECT_EQ(dbl(rec, "retries"), 0);
  }
  // Each failed after response bytes arrived: never sent twice.
  EXPECT_EQ(server.exchanges().size(), static_cast<size_t>(k));
}

INSTANTIATE_TEST_SUITE_P(Dialect, DialectFailures, ::testing::ValuesIn(failure_cases()),
                         [](const auto& p) { return p.param.name; });

// ---- Timeouts -----------------------------------------------------------------------------------

class DialectTimeouts : public ::testing::Test {
 protected:
  TempDir dir;
  // Bounded: a client that ignores its timeouts is killed and reported as hung.
  static constexpr std::chrono::seconds kBound{30};
};

TEST_F(DialectTimeouts, FirstByteTimeoutWhenTheServerNeverAnswers) {
  TranscriptServer server(Script().hang());
  auto run = run_bench(dir.path(), server.url(), "completions", 2, 2,
                       {"--first-byte-timeout", "0.3"}, kBound);
  ASSERT_RAN(run);
  EXPECT_EQ(run.cmd.exit.code, 1) << run.cmd.output;
  EXPECT_EQ(failures_of(run.result, "first_byte_timeout"), 2)
      << boost::json::serialize(run.result.at("failures"));
  for (const auto& rec : run.records) {
    SCOPED_TRACE(boost::json::serialize(rec));
    EXPECT_EQ(str(rec, "failure"), "first_byte_timeout");
    EXPECT_GE(dbl(rec, "done_ms") - dbl(rec, "send_ms"), 300 - kEps);
    EXPECT_EQ(dbl(rec, "retries"), 0) << "a request the server may be processing is not re-sent";
  }
  EXPECT_EQ(server.exchanges().size(), 2u);
}

TEST_F(DialectTimeouts, IdleTimeoutWhenTheStreamStallsMidway) {
  const Dialect d = vllm_chat();
  Script s;
  s.write(d.head).chunk(d.events[0].bytes).chunk(d.events[1].bytes).stall(Ms{2000});
  for (size_t i = 2; i < d.events.size(); ++i) s.chunk(d.events[i].bytes);
  s.end_chunks();
  TranscriptServer server(s);
  auto run = run_bench(dir.path(), server.url(), "chat", 2, 2, {"--idle-timeout", "0.3"}, kBound);
  ASSERT_RAN(run);
  EXPECT_EQ(run.cmd.exit.code, 1) << run.cmd.output;
  EXPECT_EQ(failures_of(run.result, "idle_timeout"), 2)
      << boost::json::serialize(run.result.at("failures"));
  for (const auto& rec : run.records) {
    SCOPED_TRACE(boost::json::serialize(rec));
    EXPECT_EQ(str(rec, "failure"), "idle_timeout");
    const auto c = content_ms(rec);
    ASSERT_EQ(c.size(), 1u) << "the content before the stall is recorded, nothing after it";
    EXPECT_GE(dbl(rec, "done_ms") - c.back(), 300 - kEps);
    EXPECT_EQ(dbl(rec, "retries"), 0);
  }
  EXPECT_EQ(server.exchanges().size(), 2u);
}

TEST_F(DialectTimeouts, RequestTimeoutCutsAStreamThatTricklesForever) {
  // One content event every 100 ms for 3 s: never idle, but far over the 0.5 s total budget.
  const Dialect d = vllm_completions();
  const std::string p =
      R"({"id":"cmpl-b0f5a3c0e4b94b2f9a2d7c8e1f6a5d43","object":"text_completion","created":1750000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null,"stop_reason":null}]})";
  Script s;
  s.write(d.head);
  constexpr int kEvents = 30;
  for (int i = 0; i < kEvents; ++i) s.chunk(sse_data(p), Ms{100});
  s.chunk(kDone).end_chunks();
  TranscriptServer server(s);
  auto run = run_bench(dir.path(), server.url(), "completions", kEvents, 2,
                       {"--request-timeout", "0.5"}, kBound);
  ASSERT_RAN(run);
  EXPECT_EQ(run.cmd.exit.code, 1) << run.cmd.output;
  EXPECT_EQ(failures_of(run.result, "total_timeout"), 2)
      << boost::json::serialize(run.result.at("failures"));
  for (const auto& rec : run.records) {
    SCOPED_TRACE(boost::json::serialize(rec));
    EXPECT_EQ(str(rec, "failure"), "total_timeout");
    EXPECT_GE(dbl(rec, "done_ms") - dbl(rec, "send_ms"), 500 - kEps);
    const auto c = content_ms(rec);
    EXPECT_GE(c.size(), 1u);
    EXPECT_LT(c.size(), static_cast<size_t>(kEvents)) << "the client waited for the whole stream";
    EXPECT_EQ(dbl(rec, "retries"), 0);
  }
  EXPECT_EQ(server.exchanges().size(), 2u);
}

// A non-blocking connect to 127.0.0.1:port; true when it completed within `wait`.
bool connect_completes(int port, int& fd_out, std::chrono::milliseconds wait) {
  fd_out = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd_out < 0) return false;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_out, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) return true;
  pollfd p{fd_out, POLLOUT, 0};
  return ::poll(&p, 1, static_cast<int>(wait.count())) == 1;
}

TEST_F(DialectTimeouts, ConnectTimeoutWhenTheAcceptQueueIsFull) {
  // A listener that never accepts, its queue filled: Linux drops further SYNs, so connect()
  // neither succeeds nor fails until the client's connect timeout.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(io);
  acceptor.open(boost::asio::ip::tcp::v4());
  acceptor.bind({boost::asio::ip::make_address("127.0.0.1"), 0});
  acceptor.listen(0);
  const int port = acceptor.local_endpoint().port();
  std::vector<int> fds;
  bool full = false;
  for (int i = 0; i < 16 && !full; ++i) {
    int fd = -1;
    full = !connect_completes(port, fd, std::chrono::milliseconds(200));
    if (fd >= 0) fds.push_back(fd);
  }
  if (!full) {
    for (int fd : fds) ::close(fd);
    GTEST_SKIP() << "could not fill the accept queue on this kernel";
  }
  auto run = run_bench(dir.path(), "http://127.0.0.1:" + std::to_string(port), "completions", 2,
                       2, {"--connect-timeout", "0.3"}, kBound);
  for (int fd : fds) ::close(fd);
  ASSERT_RAN(run);
  EXPECT_EQ(run.cmd.exit.code, 1) << run.cmd.output;
  EXPECT_EQ(failures_of(run.result, "connect_timeout"), 2)
      << boost::json::serialize(run.result.at("failures"));
  for (const auto& rec : run.records) {
    EXPECT_EQ(str(rec, "failure"), "connect_timeout") << boost::json::serialize(rec);
  }
}

// ---- Retries --------------------------------------------------------------------------------

class DialectRetry : public ::testing::Test {
 protected:
  TempDir dir;
  const Dialect d = vllm_completions();
  Script ok() const { return immediate(d); }
  // Answers normally, except the second request on the first connection gets `stale`.
  TranscriptServer::Responder second_on_first_connection(Script stale) const {
    return [ok_script = ok(), stale](const RequestInfo& info) {
      return info.connection == 0 && info.on_connection == 1 ? stale : ok_script;
    };
  }
};

TEST_F(DialectRetry, KeepAliveConnectionEndedBeforeAnyByteIsRetriedOnceOnANewConnection) {
  for (const auto& [how, stale] : {std::pair{"FIN", Script().close()},
                                   std::pair{"RST", Script().reset()}}) {
    SCOPED_TRACE(how);
    TranscriptServer server(second_on_first_connection(stale));
    auto run = run_bench(dir.path(), server.url(), "completions", 2, 3);
    ASSERT_RAN(run);
    const auto& j = run.result;
    EXPECT_EQ(run.cmd.exit.code, 0) << run.cmd.output;
    EXPECT_EQ(num(j, "completed"), 3);
    EXPECT_EQ(num(j, "failed"), 0) << joined(strings(j, "error_samples"));
    EXPECT_EQ(num(j, "retries"), 1);
    EXPECT_EQ(num(j, "total_output_tokens"), 6);
    ASSERT_EQ(run.records.size(), 3u);
    EXPECT_EQ(dbl(run.records[0], "retries"), 0);
    EXPECT_EQ(dbl(run.records[1], "retries"), 1) << boost::json::serialize(run.records[1]);
    EXPECT_EQ(dbl(run.records[2], "retries"), 0);
    EXPECT_EQ(run.records[1].at("ok"), boost::json::value(true));
    const auto ex = server.exchanges();
    ASSERT_EQ(ex.size(), 4u) << "expected: request 0, request 1 (dropped), its retry, request 2";
    EXPECT_EQ(ex[0].request.connection, 0);
    EXPECT_EQ(ex[1].request.connection, 0) << "the client did not reuse the keep-alive connection";
    EXPECT_EQ(ex[1].request.on_connection, 1);
    EXPECT_NE(ex[2].request.connection, 0) << "the retry must use a new connection";
    EXPECT_EQ(ex[2].request.body, ex[1].request.body) << "the retry re-sends the same request";
  }
}

TEST_F(DialectRetry, RequestThatFailedAfterResponseBytesIsNeverRetried) {
  const std::string content_chunk = test::http_chunk(d.events[0].bytes);
  struct Case {
    const char* name;
    Script script;
    const char* cause;
  };
  const Case cases[] = {
      {"reset after a content event", Script().write(d.head).write(content_chunk).reset(Ms{30}),
       "connection_reset"},
      {"FIN after the headers", Script().write(d.head).close(Ms{30}), "no_done"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TranscriptServer server(second_on_first_connection(c.script));
    auto run = run_bench(dir.path(), server.url(), "completions", 2, 3);
    ASSERT_RAN(run);
    const auto& j = run.result;
    EXPECT_EQ(num(j, "completed"), 2);
    EXPECT_EQ(num(j, "failed"), 1);
    EXPECT_EQ(failures_of(j, c.cause), 1) << boost::json::serialize(j.at("failures"));
    EXPECT_EQ(num(j, "retries"), 0);
    ASSERT_EQ(run.records.size(), 3u);
    EXPECT_EQ(str(run.records[1], "failure"), c.cause) << boost::json::serialize(run.records[1]);
    EXPECT_EQ(dbl(run.records[1], "retries"), 0);
    EXPECT_EQ(server.exchanges().size(), 3u) << "the failed request was sent again";
  }
}

TEST_F(DialectRetry, OneRetryAtMostByDefault) {
  // The stale connection drops request 1, and its retry on a new connection is reset too.
  TranscriptServer server([ok_script = ok()](const RequestInfo& info) {
    const bool drop = (info.connection == 0 && info.on_connection == 1) ||
                      (info.connection == 1 && info.on_connection == 0);
    return drop ? Script().reset() : ok_script;
  });
  auto run = run_bench(dir.path(), server.url(), "completions", 2, 3);
  ASSERT_RAN(run);
  const auto& j = run.result;
  EXPECT_EQ(num(j, "completed"), 2);
  EXPECT_EQ(num(j, "failed"), 1);
  EXPECT_EQ(num(j, "retries"), 1);
  ASSERT_EQ(run.records.size(), 3u);
  EXPECT_EQ(run.records[1].at("ok"), boost::json::value(false));
  EXPECT_EQ(dbl(run.records[1], "retries"), 1) << boost::json::serialize(run.records[1]);
  EXPECT_EQ(server.exchanges().size(), 4u);
}

TEST_F(DialectRetry, MaxRetriesZeroDisablesTheRetry) {
  TranscriptServer server(second_on_first_connection(Script().close()));
  auto run = run_bench(dir.path(), server.url(), "completions", 2, 3, {"--max-retries", "0"});
  ASSERT_RAN(run);
  const auto& j = run.result;
  EXPECT_EQ(num(j, "completed"), 2);
  EXPECT_EQ(num(j, "failed"), 1);
  EXPECT_EQ(num(j, "retries"), 0);
  ASSERT_EQ(run.records.size(), 3u);
  EXPECT_NE(str(run.records[1], "failure"), "none") << boost::json::serialize(run.records[1]);
  EXPECT_EQ(server.exchanges().size(), 3u);
}

// ---- Exit code --------------------------------------------------------------------------------

class DialectExitCode : public ::testing::Test {
 protected:
  TempDir dir;
  // 20 requests; those at the given arrival positions get HTTP 500.
  BenchRun run_with_failures(std::vector<int> failing) {
    const Dialect d = vllm_completions();
    TranscriptServer server([ok_script = immediate(d),
                             failing](const RequestInfo& info) {
      if (std::find(failing.begin(), failing.end(), info.index) != failing.end()) {
        return Script().write(uvicorn_json(
            500, "Internal Server Error",
            R"({"error":{"message":"EngineCore encountered an issue.","type":"InternalServerError","param":null,"code":500}})"));
      }
      return ok_script;
    });
    return run_bench(dir.path(), server.url(), "completions", 2, 20);
  }
};

TEST_F(DialectExitCode, FivePercentFailedIsStillSuccess) {
  auto run = run_with_failures({4});
  ASSERT_RAN(run);
  EXPECT_EQ(num(run.result, "failed"), 1);
  EXPECT_EQ(failures_of(run.result, "http_status"), 1);
  EXPECT_EQ(run.cmd.exit.code, 0) << run.cmd.output;
}

TEST_F(DialectExitCode, MoreThanFivePercentFailedExitsOne) {
  auto run = run_with_failures({4, 11});
  ASSERT_RAN(run);
  EXPECT_EQ(num(run.result, "failed"), 2);
  EXPECT_EQ(failures_of(run.result, "http_status"), 2);
  EXPECT_EQ(run.cmd.exit.code, 1) << run.cmd.output;
}

// ---- The test server itself -------------------------------------------------------------------

TEST(DialectTranscriptServer, ReplaysWritesWithTheirDelaysAndRecordsRequests) {
  // Not through inferbench: a raw socket, so the bytes seen are exactly the bytes scripted.
  TranscriptServer server([](const RequestInfo& info) {
    return Script()
        .write("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n")
        .write(info.on_connection == 0 ? "hello" : "again", Ms{50});
  });
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket sock(io);
  sock.connect({boost::asio::ip::make_address("127.0.0.1"), server.port()});
  const std::string req =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  std::string got;
  for (int i = 0; i < 2; ++i) {
    boost::asio::write(sock, boost::asio::buffer(req));
    std::string resp;
    char buf[256];
    while (resp.find("\r\n\r\n") == std::string::npos ||
           resp.size() < resp.find("\r\n\r\n") + 4 + 5) {
      boost::system::error_code ec;
      size_t n = sock.read_some(boost::asio::buffer(buf), ec);
      ASSERT_FALSE(ec) << ec.message();
      resp.append(buf, n);
    }
    got += resp.substr(resp.size() - 5);
  }
  EXPECT_EQ(got, "helloagain");
  const auto ex = server.exchanges();
  ASSERT_EQ(ex.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ex[i].request.index, i);
    EXPECT_EQ(ex[i].request.connection, 0);
    EXPECT_EQ(ex[i].request.on_connection, i);
    EXPECT_EQ(ex[i].request.method, "POST");
    EXPECT_EQ(ex[i].request.target, "/v1/completions");
    EXPECT_EQ(ex[i].request.body, "{}");
    EXPECT_EQ(ex[i].request.header("content-length"), "2");
    ASSERT_EQ(ex[i].step_ns.size(), 2u);
    EXPECT_GE(ex[i].step_ns[1] - ex[i].step_ns[0], 50'000'000);
    EXPECT_GE(ex[i].step_ns[0], ex[i].request.received_ns);
  }
  EXPECT_EQ(server.connections(), 1);
}

}  // namespace
}  // namespace ib::e2e
