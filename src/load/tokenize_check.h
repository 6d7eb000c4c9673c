// `--tokenize-check`: asks the server's /tokenize (vLLM, SGLang) to count a sample of the prompts
// before the point runs, and compares with the client's count (docs/tokenizer.md). A server that
// counts differently would make every ISL in the result wrong; this says so before hours are
// spent measuring.
#pragma once

#include <boost/json/object.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/expected.h"
#include "http/client.h"
#include "openai/request.h"
#include "workload/random_prompts.h"

namespace ib::load {

struct TokenizeCheck {
  struct Sample {
    int index = 0;   // position in the prompt list
    int client = 0;  // the client's count (PromptSpec::input_len)
    int server = 0;  // /tokenize's count
  };
  std::vector<Sample> samples;
  int agree = 0;
  /// One line for the terminal: "tokenize check: 8 of 8 prompts agree with the server's /tokenize".
  std::string summary() const;
  boost::json::object to_json() const;
};

/// Sends up to `max_samples` prompts (spread over the list) to POST /tokenize: completions
/// prompts as {"prompt", "add_special_tokens": true}, chat ones as {"messages",
/// "add_generation_prompt": true}. Error when the server has no /tokenize or answers without a
/// count; token-id prompts need no check and are skipped.
Expected<TokenizeCheck> tokenize_check(const http::Endpoint& endpoint, const std::string& model,
                                       openai::Api api,
                                       std::span<const workload::PromptSpec> prompts,
                                       int max_samples, const http::ClientTimeouts& timeouts);

}  // namespace ib::load
