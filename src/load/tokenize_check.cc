#include "load/tokenize_check.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "core/json_text.h"

namespace ib::load {

namespace json = boost::json;

std::string TokenizeCheck::summary() const {
  if (samples.empty()) return "tokenize check: no text prompt to check (token ids are exact)";
  std::string out = fmt::format("tokenize check: {} of {} prompts agree with the server's /tokenize",
                                agree, samples.size());
  int shown = 0;
  for (const auto& s : samples) {
    if (s.client == s.server || shown == 3) continue;
    out += fmt::format("{} prompt {}: client {}, server {} ({:+})", shown == 0 ? ";" : ",", s.index,
                       s.client, s.server, s.server - s.client);
    ++shown;
  }
  return out;
}

json::object TokenizeCheck::to_json() const {
  json::object o;
  o["checked"] = samples.size();
  o["agree"] = agree;
  json::array a;
  for (const auto& s : samples) {
    a.push_back(json::object{{"index", s.index}, {"client", s.client}, {"server", s.server}});
  }
  o["samples"] = std::move(a);
  return o;
}

Expected<TokenizeCheck> tokenize_check(const http::Endpoint& endpoint, const std::string& model,
                                       openai::Api api,
                                       std::span<const workload::PromptSpec> prompts,
                                       int max_samples, const http::ClientTimeouts& timeouts) {
  TokenizeCheck check;
  std::vector<size_t> picks;
  const size_t n = prompts.size();
  const size_t want = std::min<size_t>(n, static_cast<size_t>(std::max(0, max_samples)));
  for (size_t k = 0; k < want; ++k) picks.push_back(k * n / want);
  for (size_t i : picks) {
    const auto& p = prompts[i];
    if (p.text.empty()) continue;  // token ids
    json::object body;
    if (!model.empty()) body["model"] = model;
    if (api == openai::Api::kChat) {
      body["messages"] = json::array{json::object{{"role", "user"}, {"content", p.text}}};
      body["add_generation_prompt"] = true;
    } else {
      body["prompt"] = p.text;
      body["add_special_tokens"] = true;
    }
    auto resp = http::http_post(endpoint, "/tokenize", json_text(body), timeouts);
    if (!resp) return Error{"--tokenize-check: " + resp.error().message};
    if (resp->status == 404) {
      return Error{fmt::format("--tokenize-check: {} has no /tokenize (vLLM and SGLang serve it)",
                               endpoint.url())};
    }
    if (resp->status != 200) {
      return Error{fmt::format("--tokenize-check: POST {}/tokenize returned HTTP {}: {}",
                               endpoint.url(), resp->status, resp->body.substr(0, 300))};
    }
    boost::system::error_code ec;
    json::value v = json::parse(resp->body, ec);
    int64_t count = -1;
    if (!ec && v.is_object()) {
      const auto& o = v.get_object();
      if (const auto* c = o.if_contains("count"); c && c->is_int64()) {
        count = c->get_int64();
      } else if (const auto* t = o.if_contains("tokens"); t && t->is_array()) {
        count = static_cast<int64_t>(t->get_array().size());
      }
    }
    if (count < 0) {
      return Error{fmt::format("--tokenize-check: POST {}/tokenize answered without a count: {}",
                               endpoint.url(), resp->body.substr(0, 300))};
    }
    TokenizeCheck::Sample s{static_cast<int>(i), p.input_len, static_cast<int>(count)};
    if (s.client == s.server) ++check.agree;
    check.samples.push_back(s);
  }
  return check;
}

}  // namespace ib::load
