#include "load/eval_run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/clock.h"
#include "core/interrupt.h"
#include "core/json_text.h"
#include "core/progress.h"
#include "core/strings.h"
#include "http/client.h"
#include "load/bench.h"
#include "openai/request.h"

namespace ib::load {

namespace json = boost::json;
namespace asio = boost::asio;
namespace gsm8k = workload::gsm8k;

namespace {

// A response body, kept whole up to a bound (a 16k-token answer is about 100 KB).
class BodySink : public http::ResponseSink {
 public:
  static constexpr size_t kMaxBody = size_t{16} << 20;
  void on_headers(int status, int64_t) override { status_ = status; }
  void on_body(std::string_view bytes, int64_t) override {
    if (body_.size() + bytes.size() > kMaxBody) {
      too_long_ = true;
      return;
    }
    body_.append(bytes);
  }
  void reset() {
    status_ = 0;
    body_.clear();
    too_long_ = false;
  }
  int status() const { return status_; }
  const std::string& body() const { return body_; }
  bool too_long() const { return too_long_; }

 private:
  int status_ = 0;
  std::string body_;
  bool too_long_ = false;
};

bool retryable(const http::HttpOutcome& o, int status) {
  if (!o.complete || o.ec) return true;  // transport error or timeout
  return status == 429 || status >= 500;
}

std::string outcome_error(const http::HttpOutcome& o) {
  if (o.timed_out()) {
    return fmt::format("no complete response within {} s", o.timeout_limit.count() / 1000.0);
  }
  if (o.connect_failed) return "cannot connect: " + o.ec.message();
  return o.ec ? o.ec.message() : "incomplete response";
}

struct EvalShared {
  const EvalSpec& spec;
  const gsm8k::Dataset& dataset;
  http::Endpoint endpoint;
  asio::ip::tcp::resolver::results_type addresses;
  std::string model;
  std::string path;
  std::vector<EvalRecord>& records;
  size_t next = 0;
  size_t done = 0;
  int running = 0;
  bool stop = false;
  std::vector<http::HttpConnection*> connections = {};
};

asio::awaitable<void> worker(EvalShared& s) {
  auto executor = co_await asio::this_coro::executor;
  http::ClientTimeouts timeouts;
  timeouts.total = std::chrono::duration_cast<std::chrono::milliseconds>(s.spec.request_timeout);
  timeouts.first_byte = timeouts.total;
  timeouts.idle = timeouts.total;
  auto conn = std::make_unique<http::HttpConnection>(executor, s.endpoint, s.addresses, timeouts);
  s.connections.push_back(conn.get());
  BodySink sink;
  EvalSpec spec = s.spec;
  spec.model = s.model;
  const bool chat = spec.prompt.style != gsm8k::PromptStyle::kCompletions;
  while (!s.stop && s.next < s.records.size()) {
    EvalRecord& r = s.records[s.next++];
    const std::string body =
        eval_request_body(spec, gsm8k::build_prompt(s.dataset, r.index, spec.prompt));
    for (int attempt = 0; attempt <= spec.max_retries && !s.stop; ++attempt) {
      if (attempt > 0) {
        // Back off 0.5, 1, 2, 4, 8 s (lm-eval retries with a growing wait too).
        asio::steady_timer t(executor, std::chrono::milliseconds(
                                           500 * (1 << std::min(attempt - 1, 4))));
        co_await t.async_wait(asio::use_awaitable);
        if (s.stop) break;
      }
      r.attempts = attempt + 1;
      sink.reset();
      const int64_t t0 = mono_ns();
      const http::HttpOutcome o = co_await conn->request(boost::beast::http::verb::post, s.path,
                                                         body, sink);
      r.latency_s = static_cast<double>(mono_ns() - t0) / 1e9;
      r.http_status = sink.status();
      if (o.complete && !o.ec && sink.status() == 200 && !sink.too_long()) {
        auto parsed = parse_answer(sink.body(), chat);
        if (!parsed) {
          r.error = parsed.error().message;
          break;  // the server answered, but not in the API's shape: a retry would repeat it
        }
        r.answered = true;
        r.error.clear();
        r.response = std::move(parsed->text);
        r.finish_reason = std::move(parsed->finish_reason);
        r.prompt_tokens = parsed->prompt_tokens;
        r.completion_tokens = parsed->completion_tokens;
        break;
      }
      if (sink.too_long()) {
        r.error = fmt::format("response larger than {} MiB", BodySink::kMaxBody >> 20);
        break;
      }
      r.error = o.complete && !o.ec
                    ? fmt::format("HTTP {}: {}", sink.status(), printable(sink.body(), 300))
                    : outcome_error(o);
      if (!retryable(o, sink.status())) break;
      if (!conn->is_open()) continue;  // reconnects on the next request
    }
    if (!r.answered && s.stop) r.cut = true;
    if (r.answered) {
      r.scored = gsm8k::score(r.response, s.dataset.test[r.index].answer,
                              /*strict_last=*/spec.prompt.inferencex);
    }
    ++s.done;
  }
  std::erase(s.connections, conn.get());
  --s.running;
}

asio::awaitable<void> watcher(EvalShared& s, ProgressMode mode, int64_t start_ns) {
  ProgressLine progress(mode);
  asio::steady_timer t(co_await asio::this_coro::executor);
  while (s.running > 0) {
    t.expires_after(std::chrono::milliseconds(100));
    co_await t.async_wait(asio::use_awaitable);
    if (interrupt_requested() && !s.stop) {
      s.stop = true;
      // In-flight requests end now (as errors); their problems stay unanswered.
      for (auto* c : s.connections) c->close();
    }
    progress.show(fmt::format("  gsm8k: {} / {} problems, {:.1f} s", s.done, s.records.size(),
                              static_cast<double>(mono_ns() - start_ns) / 1e9));
  }
  progress.done();
}

json::value stderr_json(const gsm8k::Accuracy& a) {
  auto se = a.stderr_value();
  return se ? json::value(*se) : json::value("N/A");
}

json::value number_or_null(double v) { return std::isnan(v) ? json::value(nullptr) : json::value(v); }

}  // namespace

std::string eval_request_body(const EvalSpec& spec, const gsm8k::Prompt& prompt) {
  json::object o;
  o["model"] = spec.model;
  if (spec.prompt.style == gsm8k::PromptStyle::kCompletions) {
    o["prompt"] = prompt.text;
  } else {
    json::array messages;
    for (const auto& m : prompt.messages) {
      messages.push_back(json::object{{"role", m.role}, {"content", m.content}});
    }
    o["messages"] = std::move(messages);
  }
  o["max_tokens"] = spec.max_tokens;
  o["temperature"] = 0.0;
  o["top_p"] = 1.0;
  o["seed"] = 1234;
  json::array stop;
  // lm-eval cuts the stop list to its first four.
  for (size_t i = 0; i < prompt.stop.size() && i < 4; ++i) stop.emplace_back(prompt.stop[i]);
  o["stop"] = std::move(stop);
  o["stream"] = false;
  return json_text(o);
}

Expected<ParsedAnswer> parse_answer(std::string_view body, bool chat) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) {
    return Error{fmt::format("response is not a JSON object: {}", printable(body, 200))};
  }
  const json::object& o = v.get_object();
  const json::value* choices = o.if_contains("choices");
  if (choices == nullptr || !choices->is_array() || choices->get_array().empty() ||
      !choices->get_array()[0].is_object()) {
    return Error{fmt::format("response has no choices[0]: {}", printable(body, 200))};
  }
  const json::object& c = choices->get_array()[0].get_object();
  ParsedAnswer a;
  auto text_of = [](const json::object& obj, std::string_view key) -> std::string {
    const json::value* t = obj.if_contains(key);
    return t && t->is_string() ? std::string(t->get_string()) : std::string();
  };
  if (chat) {
    const json::value* m = c.if_contains("message");
    if (m == nullptr || !m->is_object()) {
      return Error{fmt::format("response has no choices[0].message: {}", printable(body, 200))};
    }
    a.text = text_of(m->get_object(), "content");
    if (a.text.empty()) a.text = text_of(m->get_object(), "reasoning_content");
    if (a.text.empty()) a.text = text_of(m->get_object(), "reasoning");
  } else {
    a.text = text_of(c, "text");
  }
  a.finish_reason = text_of(c, "finish_reason");
  if (const json::value* u = o.if_contains("usage"); u && u->is_object()) {
    const json::object& uo = u->get_object();
    if (const auto* p = uo.if_contains("prompt_tokens"); p && p->is_int64()) {
      a.prompt_tokens = p->get_int64();
    }
    if (const auto* p = uo.if_contains("completion_tokens"); p && p->is_int64()) {
      a.completion_tokens = p->get_int64();
    }
  }
  return a;
}

json::object EvalRecord::to_json() const {
  json::object o;
  o["doc_id"] = static_cast<int64_t>(index);
  o["answered"] = answered;
  o["attempts"] = attempts;
  o["http_status"] = http_status;
  if (!error.empty()) o["error"] = error;
  o["response"] = response;
  o["finish_reason"] = finish_reason;
  o["prompt_tokens"] = prompt_tokens;
  o["completion_tokens"] = completion_tokens;
  o["latency_s"] = latency_s;
  o["strict_match"] = scored.strict;
  o["flexible_extract"] = scored.flexible;
  o["strict_correct"] = scored.strict_correct;
  o["flexible_correct"] = scored.flexible_correct;
  return o;
}

json::object EvalReport::to_json() const {
  json::object o;
  o["task"] = task;
  o["model_id"] = model;
  o["dataset"] = dataset;
  o["prompt_style"] = gsm8k::style_name(prompt.style);
  o["num_fewshot"] = prompt.num_fewshot;
  o["fewshot_seed"] = prompt.fewshot_seed;
  o["task_variant"] = prompt.inferencex ? "inferencex" : "lm-eval";
  o["concurrency"] = concurrency;
  o["max_tokens"] = max_tokens;
  o["problems"] = static_cast<int64_t>(problems);
  o["n_eff"] = n_eff();
  o["failed"] = failed;
  o["not_run"] = not_run;
  o["truncated"] = truncated;
  o["interrupted"] = interrupted;
  o["duration_s"] = duration_s;
  // lm-eval's result keys ...
  o["exact_match,strict-match"] = number_or_null(strict.value());
  o["exact_match_stderr,strict-match"] = stderr_json(strict);
  o["exact_match,flexible-extract"] = number_or_null(flexible.value());
  o["exact_match_stderr,flexible-extract"] = stderr_json(flexible);
  // ... and InferenceX's collected names.
  o["em_strict"] = number_or_null(strict.value());
  o["em_strict_se"] = stderr_json(strict);
  o["em_flexible"] = number_or_null(flexible.value());
  o["em_flexible_se"] = stderr_json(flexible);
  o["correct_strict"] = strict.correct;
  o["correct_flexible"] = flexible.correct;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  for (const auto& r : records) {
    prompt_tokens += std::max<int64_t>(r.prompt_tokens, 0);
    completion_tokens += std::max<int64_t>(r.completion_tokens, 0);
  }
  o["total_prompt_tokens"] = prompt_tokens;
  o["total_output_tokens"] = completion_tokens;
  return o;
}

json::object EvalGate::to_json() const {
  json::object o;
  o["threshold"] = threshold;
  o["threshold_source"] = source;
  o["passed"] = passed();
  json::array rs;
  for (const auto& r : reasons) rs.emplace_back(r);
  o["reasons"] = std::move(rs);
  return o;
}

EvalGate gate_eval(const EvalReport& report, double threshold, std::string source) {
  EvalGate g;
  g.threshold = threshold;
  g.source = std::move(source);
  if (report.n_eff() == 0) {
    g.reasons.push_back(fmt::format("no exact_match metric: none of the {} problems was answered",
                                    report.problems));
    return g;
  }
  for (const auto& [name, acc] : {std::pair<const char*, const workload::gsm8k::Accuracy*>{
                                      "strict-match", &report.strict},
                                  {"flexible-extract", &report.flexible}}) {
    if (acc->value() < threshold) {
      g.reasons.push_back(fmt::format("exact_match,{} {:.4f} is below the threshold {:.4f} ({})",
                                      name, acc->value(), threshold, g.source));
    }
  }
  if (report.failed > 0) {
    g.reasons.push_back(fmt::format("{} of {} problems got no answer", report.failed,
                                    report.problems));
  }
  if (report.interrupted) {
    g.reasons.push_back(fmt::format("interrupted: {} of {} problems got no answer",
                                    report.not_run, report.problems));
  }
  return g;
}

Expected<EvalReport> run_eval(const EvalSpec& spec, const gsm8k::Dataset& dataset) {
  if (spec.concurrency < 1) return Error{"eval concurrency must be at least 1"};
  if (spec.max_tokens < 1) return Error{"eval max_tokens must be at least 1"};
  if (dataset.test.empty()) return Error{"the eval's dataset has no problems"};
  auto endpoint = http::parse_endpoint(spec.endpoint_url);
  if (!endpoint) return endpoint.error();
  endpoint->bearer = spec.api_key;
  auto addresses = http::resolve(*endpoint);
  if (!addresses) return addresses.error();
  std::string model = spec.model;
  if (model.empty()) {
    auto m = discover_model(*endpoint, http::ClientTimeouts{});
    if (!m) return m.error();
    model = *m;
  }
  const size_t n = spec.limit == 0 ? dataset.test.size() : std::min(spec.limit, dataset.test.size());
  EvalReport report;
  report.model = model;
  report.prompt = spec.prompt;
  report.concurrency = spec.concurrency;
  report.max_tokens = spec.max_tokens;
  report.problems = n;
  report.dataset = dataset.source;
  report.records.resize(n);
  for (size_t i = 0; i < n; ++i) report.records[i].index = i;

  asio::io_context io(1);
  EvalShared shared{spec,   dataset, *endpoint, *addresses, model,
                std::string(openai::api_path(spec.prompt.style == gsm8k::PromptStyle::kCompletions
                                                 ? openai::Api::kCompletions
                                                 : openai::Api::kChat)),
                report.records};
  const int workers = static_cast<int>(std::min<size_t>(static_cast<size_t>(spec.concurrency), n));
  shared.running = workers;
  const int64_t start_ns = mono_ns();
  for (int i = 0; i < workers; ++i) asio::co_spawn(io, worker(shared), asio::detached);
  asio::co_spawn(io, watcher(shared, progress_mode(spec.show_progress), start_ns), asio::detached);
  io.run();
  report.duration_s = static_cast<double>(mono_ns() - start_ns) / 1e9;
  report.interrupted = shared.stop;
  for (const auto& r : report.records) {
    if (!r.answered) {
      ++(r.attempts == 0 || r.cut ? report.not_run : report.failed);
      continue;
    }
    ++report.strict.n;
    ++report.flexible.n;
    report.truncated += r.finish_reason == "length";
    report.strict.correct += r.scored.strict_correct;
    report.flexible.correct += r.scored.flexible_correct;
  }
  return report;
}

}  // namespace ib::load
