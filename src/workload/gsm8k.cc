#include "workload/gsm8k.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cmath>
#include <numeric>

#include "core/files.h"
#include "core/json_strict.h"
#include "core/strings.h"

// data/gsm8k, embedded by the assembler (gsm8k_data.S): NUL-terminated.
extern "C" const char ib_gsm8k_test_jsonl[];
extern "C" const char ib_gsm8k_train_jsonl[];

namespace ib::workload::gsm8k {

namespace json = boost::json;

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
// [0-9\.\,]
bool is_strict_char(char c) { return is_digit(c) || c == '.' || c == ','; }
// [$0-9.,]
bool is_flex_char(char c) { return is_strict_char(c) || c == '$'; }

size_t run_of(std::string_view s, size_t i, bool (*pred)(char)) {
  size_t j = i;
  while (j < s.size() && pred(s[j])) ++j;
  return j - i;
}

std::string strip(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// splitmix64: a small, well-mixed generator whose sequence is the same on every platform.
uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

Expected<std::vector<Problem>> parse_jsonl(std::string_view text, const std::string& name) {
  std::vector<Problem> out;
  LineReader lines(text);
  std::string_view line;
  while (lines.next(line)) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const std::string where = fmt::format("{}:{}", name, lines.number());
    auto parsed = parse_json_strict(line, name, static_cast<int>(lines.number()));
    if (!parsed) return parsed.error();
    const json::value v = std::move(*parsed);
    if (!v.is_object()) return Error{fmt::format("{}: not a JSON object", where)};
    const json::object& o = v.get_object();
    Problem p;
    for (auto [field, into] : {std::pair<const char*, std::string*>{"question", &p.question},
                               std::pair<const char*, std::string*>{"answer", &p.answer}}) {
      const json::value* f = o.if_contains(field);
      if (f == nullptr || !f->is_string()) {
        return Error{fmt::format("{}: field \"{}\" {}", where, field,
                                 f == nullptr ? "is missing" : "must be a string")};
      }
      *into = std::string(f->get_string());
      if (into->empty()) return Error{fmt::format("{}: field \"{}\" is empty", where, field)};
    }
    if (p.answer.find("#### ") == std::string::npos) {
      return Error{fmt::format("{}: field \"answer\" has no final \"#### N\" line", where)};
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) return Error{fmt::format("{}: no problems in the file", name)};
  return out;
}

Expected<std::vector<Problem>> load_jsonl(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > (size_t{256} << 20)) {
    return Error{fmt::format("{}: {} bytes is more than a dataset may hold (256 MiB)",
                             path.string(), size)};
  }
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_jsonl(*text, path.string());
}

const Dataset& builtin() {
  static const Dataset d = [] {
    Dataset out;
    auto test = parse_jsonl(ib_gsm8k_test_jsonl, "data/gsm8k/test.jsonl");
    auto train = parse_jsonl(ib_gsm8k_train_jsonl, "data/gsm8k/train-fewshot.jsonl");
    // The embedded files are checked by the tests; a broken build is a bug, not an input error.
    if (!test || !train) std::abort();
    out.test = std::move(*test);
    out.train = std::move(*train);
    out.source = fmt::format(
        "built-in: openai/grade-school-math test split ({} problems) and the first {} train "
        "problems for few-shot examples",
        out.test.size(), out.train.size());
    return out;
  }();
  return d;
}

std::string_view style_name(PromptStyle s) {
  switch (s) {
    case PromptStyle::kChatMultiturn:
      return "chat";
    case PromptStyle::kChatSingleTurn:
      return "chat-single-turn";
    case PromptStyle::kCompletions:
      return "completions";
  }
  return "chat";
}

std::optional<PromptStyle> parse_style(std::string_view name) {
  for (auto s : {PromptStyle::kChatMultiturn, PromptStyle::kChatSingleTurn,
                 PromptStyle::kCompletions}) {
    if (name == style_name(s)) return s;
  }
  return std::nullopt;
}

std::string doc_to_text(std::string_view question, bool inferencex) {
  if (inferencex) {
    return fmt::format(
        "Question: {}\nEnd your response with the answer on the last line, formatted as: #### "
        "[number]\nAnswer:",
        question);
  }
  return fmt::format("Question: {}\nAnswer:", question);
}

std::vector<size_t> fewshot_indices(size_t pool, int n, uint64_t seed, size_t index) {
  // A partial Fisher-Yates shuffle of 0..pool-1: the first n are the sample, in drawn order.
  std::vector<size_t> all(pool);
  std::iota(all.begin(), all.end(), size_t{0});
  uint64_t state = seed * 0x100000001B3ULL ^ (index + 1) * 0x9E3779B97F4A7C15ULL;
  const size_t k = std::min(pool, static_cast<size_t>(std::max(n, 0)));
  for (size_t i = 0; i < k; ++i) {
    const size_t j = i + static_cast<size_t>(splitmix(state) % (pool - i));
    std::swap(all[i], all[j]);
  }
  all.resize(k);
  return all;
}

Prompt build_prompt(const Dataset& dataset, size_t index, const PromptOptions& options) {
  Prompt p;
  const Problem& doc = dataset.test.at(index);
  const auto shots =
      fewshot_indices(dataset.train.size(), options.num_fewshot, options.fewshot_seed, index);
  const std::string query = doc_to_text(doc.question, options.inferencex);
  if (options.style == PromptStyle::kChatMultiturn) {
    for (size_t s : shots) {
      p.messages.push_back({"user", doc_to_text(dataset.train[s].question, options.inferencex)});
      p.messages.push_back({"assistant", dataset.train[s].answer});
    }
    p.messages.push_back({"user", query});
  } else {
    // lm-eval's plain-text context: target delimiter " ", few-shot delimiter "\n\n".
    std::string text;
    for (size_t s : shots) {
      text += doc_to_text(dataset.train[s].question, options.inferencex);
      text += ' ';
      text += dataset.train[s].answer;
      text += "\n\n";
    }
    text += query;
    if (options.style == PromptStyle::kChatSingleTurn) {
      p.messages.push_back({"user", std::move(text)});
    } else {
      p.text = std::move(text);
    }
  }
  if (!options.inferencex) p.stop.push_back("Question:");
  p.stop.push_back("</s>");
  p.stop.push_back("<|im_end|>");
  return p;
}

std::string extract_strict(std::string_view s, bool last) {
  constexpr std::string_view kMark = "#### ";
  std::optional<std::string_view> found;
  size_t i = 0;
  while ((i = s.find(kMark, i)) != std::string_view::npos) {
    const size_t start = i + kMark.size();
    // \-? then [0-9\.\,]+ (greedy; with a '-' that no number follows, the match fails).
    size_t len = 0;
    if (start < s.size() && s[start] == '-') {
      const size_t run = run_of(s, start + 1, is_strict_char);
      if (run > 0) len = 1 + run;
    } else {
      len = run_of(s, start, is_strict_char);
    }
    if (len == 0) {
      ++i;
      continue;
    }
    found = s.substr(start, len);
    if (!last) break;
    i = start + len;
  }
  return found ? strip(*found) : std::string(kInvalid);
}

std::string extract_flexible(std::string_view s) {
  std::optional<std::string_view> found;
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 0;
    // Alternative 1: -?[$0-9.,]{2,}; alternative 2: -?[0-9]+ (Python tries -? greedily first).
    if (s[i] == '-') {
      if (run_of(s, i + 1, is_flex_char) >= 2) {
        len = 1 + run_of(s, i + 1, is_flex_char);
      } else if (run_of(s, i + 1, is_digit) >= 1) {
        len = 1 + run_of(s, i + 1, is_digit);
      }
    } else if (run_of(s, i, is_flex_char) >= 2) {
      len = run_of(s, i, is_flex_char);
    } else if (is_digit(s[i])) {
      len = run_of(s, i, is_digit);
    }
    if (len == 0) {
      ++i;
      continue;
    }
    found = s.substr(i, len);
    i += len;
  }
  return found ? strip(*found) : std::string(kInvalid);
}

std::string normalize(std::string_view in) {
  std::string s;
  s.reserve(in.size());
  // re.sub(",", ""), then re.sub("\$", "").
  for (char c : in) {
    if (c != ',' && c != '$') s += c;
  }
  // re.sub("(?s).*#### ", ""): the greedy .* reaches the last "#### ".
  if (size_t k = s.rfind("#### "); k != std::string::npos) s.erase(0, k + 5);
  // re.sub("\.$", ""): '$' matches at the end and before a final newline.
  if (!s.empty() && s.back() == '.') {
    s.pop_back();
  } else if (s.size() >= 2 && s.back() == '\n' && s[s.size() - 2] == '.') {
    s.erase(s.size() - 2, 1);
  }
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string reference_answer(std::string_view answer) { return normalize(answer); }

Scored score(std::string_view response, std::string_view reference, bool strict_last) {
  Scored out;
  out.strict = extract_strict(response, strict_last);
  out.flexible = extract_flexible(response);
  const std::string ref = normalize(reference);
  out.strict_correct = normalize(out.strict) == ref;
  out.flexible_correct = normalize(out.flexible) == ref;
  return out;
}

double Accuracy::value() const {
  return n == 0 ? std::nan("") : static_cast<double>(correct) / static_cast<double>(n);
}

std::optional<double> Accuracy::stderr_value() const {
  if (n <= 1) return std::nullopt;
  const double p = value();
  const double nn = static_cast<double>(n);
  // Sample variance of n values, `correct` of them 1: n p (1 - p) / (n - 1).
  const double var = nn * p * (1 - p) / (nn - 1);
  return std::sqrt(var / nn);
}

std::string Gsm8kWorkload::label() const {
  return fmt::format("gsm8k {}-shot {}", p_.prompt.num_fewshot, style_name(p_.prompt.style));
}

json::object Gsm8kWorkload::canonical(int64_t concurrency) const {
  json::object o;
  o["task"] = p_.prompt.inferencex ? "gsm8k-inferencex" : "gsm8k";
  o["prompt_style"] = style_name(p_.prompt.style);
  o["num_fewshot"] = p_.prompt.num_fewshot;
  o["fewshot_seed"] = p_.prompt.fewshot_seed;
  o["limit"] = static_cast<int64_t>(p_.limit);
  o["max_tokens"] = p_.max_tokens;
  o["dataset"] = p_.dataset;
  o["concurrency"] = concurrency;
  return o;
}

Expected<PointPlan> Gsm8kWorkload::plan(int64_t concurrency) const {
  if (concurrency < 1) {
    return Error{fmt::format("an eval needs at least one request in flight (concurrency {})",
                             concurrency)};
  }
  PointPlan plan;
  plan.shape.concurrency = static_cast<int>(concurrency);
  plan.describe = canonical(concurrency);
  plan.body = EvalPlan{std::make_shared<const EvalParams>(p_)};
  return plan;
}

int max_tokens_for_context(int64_t ctx) {
  const int64_t out = ctx > 4096 ? ctx - 4096 : ctx / 2;
  return static_cast<int>(std::clamp<int64_t>(out, 1, 16384));
}

}  // namespace ib::workload::gsm8k
