// GSM8K evals' parsers of outside input: a server's answer text through both answer filters
// (checked against std::regex running lm-eval's patterns, on inputs short enough for it), the
// exact-match normalisation, a response body through parse_answer, a dataset as JSON Lines, and a
// thresholds file. The first byte picks what the rest is.
#include <regex>
#include <string>

#include "fuzz_util.h"
#include "load/eval_run.h"
#include "recipe/eval_thresholds.h"
#include "workload/gsm8k.h"

namespace {

namespace gsm8k = ib::workload::gsm8k;

// Python's re.findall semantics for these patterns, through ECMAScript std::regex: the last match
// (or the first), the first non-empty group, stripped.
std::string oracle(const std::string& text, const std::regex& re, bool last) {
  std::string found = std::string(gsm8k::kInvalid);
  bool any = false;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    std::string m;
    for (size_t g = 1; g < it->size(); ++g) {
      if ((*it)[g].matched && (*it)[g].length() > 0) {
        m = (*it)[g].str();
        break;
      }
    }
    if (!any || last) found = m;
    any = true;
    if (!last) break;
  }
  const size_t b = found.find_first_not_of(" \t\n\r\f\v");
  if (b == std::string::npos) return any ? "" : found;
  return found.substr(b, found.find_last_not_of(" \t\n\r\f\v") - b + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ib::fuzz::Input in(data, size);
  const uint8_t choice = in.byte();
  const std::string text(in.rest());
  switch (choice % 4) {
    case 0: {
      const std::string strict = gsm8k::extract_strict(text);
      const std::string first = gsm8k::extract_strict(text, /*last=*/false);
      const std::string flexible = gsm8k::extract_flexible(text);
      (void)gsm8k::score(text, text);
      (void)gsm8k::normalize(text);
      if (text.size() <= 256) {
        static const std::regex kStrict(R"(#### (\-?[0-9\.\,]+))");
        static const std::regex kFlexible(R"((-?[$0-9.,]{2,})|(-?[0-9]+))");
        if (strict != oracle(text, kStrict, true) || first != oracle(text, kStrict, false) ||
            flexible != oracle(text, kFlexible, true)) {
          __builtin_trap();
        }
      }
      break;
    }
    case 1:
      (void)ib::load::parse_answer(text, choice & 4);
      break;
    case 2:
      (void)gsm8k::parse_jsonl(text, "fuzz.jsonl");
      break;
    default:
      (void)ib::recipe::parse_eval_thresholds(text, "thresholds.yaml");
      break;
  }
  return 0;
}
