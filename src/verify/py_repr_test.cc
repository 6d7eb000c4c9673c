#include "verify/py_repr.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace ib::verify {
namespace {

namespace json = boost::json;

struct ReprCase {
  std::string repr;
  std::string json;  // expected value, as JSON text
};

class PyReprValues : public testing::TestWithParam<ReprCase> {};

TEST_P(PyReprValues, ParsesToJson) {
  const ReprCase& c = GetParam();
  auto v = parse_py_repr(c.repr);
  ASSERT_TRUE(v.ok()) << c.repr << ": " << v.error().message;
  EXPECT_EQ(*v, json::parse(c.json)) << c.repr << " gave " << json::serialize(*v);
}

INSTANTIATE_TEST_SUITE_P(
    Scalars, PyReprValues,
    testing::Values(
        ReprCase{"None", "null"}, ReprCase{"True", "true"}, ReprCase{"False", "false"},
        ReprCase{"4", "4"}, ReprCase{"-17", "-17"}, ReprCase{"+3", "3"}, ReprCase{"0.85", "0.85"},
        ReprCase{"1e-05", "1e-05"}, ReprCase{"-2.5E+3", "-2500.0"}, ReprCase{".5", "0.5"},
        ReprCase{"inf", "\"inf\""}, ReprCase{"-inf", "\"-inf\""}, ReprCase{"nan", "\"nan\""},
        ReprCase{"18446744073709551615", "18446744073709551615"},
        ReprCase{"123456789012345678901234567890", "\"123456789012345678901234567890\""},
        ReprCase{"1j", "\"1j\""}, ReprCase{"  7  ", "7"}, ReprCase{"...", "\"...\""}));

INSTANTIATE_TEST_SUITE_P(
    Strings, PyReprValues,
    testing::Values(ReprCase{"'x'", "\"x\""}, ReprCase{"''", "\"\""},
                    ReprCase{"\"it's\"", "\"it's\""}, ReprCase{R"('it\'s "q"')", R"("it's \"q\"")"},
                    ReprCase{R"('a\nb\tc\\d')", R"("a\nb\tc\\d")"},
                    ReprCase{R"('\x41\u00e9\U0001F600')", "\"A\xC3\xA9\xF0\x9F\x98\x80\""},
                    ReprCase{R"('\0\101')", R"("\u0000A")"}, ReprCase{R"('\q')", R"("\\q")"},
                    ReprCase{"'caf\xC3\xA9'", "\"caf\xC3\xA9\""},
                    ReprCase{R"(b'\x00ab')", R"("b'\\x00ab'")"}));

INSTANTIATE_TEST_SUITE_P(
    Containers, PyReprValues,
    testing::Values(ReprCase{"[]", "[]"}, ReprCase{"['a', 'b']", R"(["a","b"])"},
                    ReprCase{"[1, [2, [3]],]", "[1,[2,[3]]]"}, ReprCase{"(1, 2)", "[1,2]"},
                    ReprCase{"(1,)", "[1]"}, ReprCase{"()", "[]"}, ReprCase{"{}", "{}"},
                    ReprCase{"{'k': 1}", R"({"k":1})"},
                    ReprCase{"{'model': 'x', 'tensor_parallel_size': 8}",
                             R"({"model":"x","tensor_parallel_size":8})"},
                    ReprCase{"{1: 'a', None: 2, True: 3}", R"({"1":"a","None":2,"True":3})"},
                    ReprCase{"{'a', 'b'}", R"(["a","b"])"}, ReprCase{"{'x'}", R"(["x"])"},
                    ReprCase{"{'d': {'e': [1.5, None]}}", R"({"d":{"e":[1.5,null]}})"}));

INSTANTIATE_TEST_SUITE_P(
    CallsAndNames, PyReprValues,
    testing::Values(
        ReprCase{"SomeClass(a=1)", R"({"a":1})"}, ReprCase{"Empty()", "{}"},
        ReprCase{"vllm.config.CacheConfig(block_size=16)", R"({"block_size":16})"},
        ReprCase{"Outer(inner=Inner(x='y', z=[1]), n=None)",
                 R"({"inner":{"x":"y","z":[1]},"n":null})"},
        ReprCase{"device(type='cuda')", R"j("device(type='cuda')")j"},
        ReprCase{"PosixPath('/models/x')", R"j("PosixPath('/models/x')")j"},
        ReprCase{"Mixed(1, a=2)", R"j("Mixed(1, a=2)")j"},
        ReprCase{"<Enum.X: 'x'>", R"("<Enum.X: 'x'>")"},
        ReprCase{"<CapacitySchedulerPolicy.GUARANTEED_NO_EVICT: 'GUARANTEED_NO_EVICT'>",
                 R"("<CapacitySchedulerPolicy.GUARANTEED_NO_EVICT: 'GUARANTEED_NO_EVICT'>")"},
        ReprCase{"<function f at 0x7f3a>", R"("<function f at 0x7f3a>")"},
        ReprCase{"torch.bfloat16", R"("torch.bfloat16")"}, ReprCase{"auto", R"("auto")"},
        ReprCase{"LoadFormat.AUTO", R"("LoadFormat.AUTO")"}));

TEST(PyRepr, ServerArgsLikeSglangPrintsIt) {
  const std::string repr =
      "ServerArgs(model_path='x', tp_size=4, mem_fraction_static=0.85, enable_x=True, y=None, "
      "z=['a', 'b'], d={'k': 1}, t=(1, 2), s=\"it's\", nested=SomeClass(a=1), e=<Enum.X: 'x'>, "
      "dev=device(type='cuda'), eps=1e-05, big=inf)";
  auto v = parse_py_repr(repr);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, json::parse(R"j({"model_path":"x","tp_size":4,"mem_fraction_static":0.85,
      "enable_x":true,"y":null,"z":["a","b"],"d":{"k":1},"t":[1,2],"s":"it's",
      "nested":{"a":1},"e":"<Enum.X: 'x'>","dev":"device(type='cuda')","eps":1e-05,
      "big":"inf"})j"));
}

struct BadCase {
  std::string repr;
  size_t offset;
  std::string message;  // a part of the error message
};

class PyReprGarbage : public testing::TestWithParam<BadCase> {};

TEST_P(PyReprGarbage, ErrorNamesTheOffset) {
  const BadCase& c = GetParam();
  size_t offset = 12345;
  auto v = parse_py_repr(c.repr, &offset);
  ASSERT_FALSE(v.ok()) << c.repr << " parsed as " << json::serialize(*v);
  EXPECT_EQ(offset, c.offset) << v.error().message;
  EXPECT_NE(v.error().message.find("offset " + std::to_string(c.offset)), std::string::npos)
      << v.error().message;
  EXPECT_NE(v.error().message.find(c.message), std::string::npos) << v.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PyReprGarbage,
    testing::Values(BadCase{"", 0, "end of the text"}, BadCase{"   ", 3, "end of the text"},
                    BadCase{"'abc", 0, "unterminated string"}, BadCase{"[1, 2", 0, "unclosed '['"},
                    BadCase{"[1 2]", 3, "expected ','"},
                    BadCase{"{'a' 1}", 5, "expected ',', ':' or '}'"},
                    BadCase{"{'a': 1, 'b'}", 12, "expected ':'"},
                    BadCase{"Foo(a=1", 3, "unclosed '('"}, BadCase{"<Enum.X", 0, "unclosed '<'"},
                    BadCase{"1 2", 2, "unexpected text after the value"},
                    BadCase{"12abc", 2, "after a number"}, BadCase{"1e", 0, "bad exponent"},
                    BadCase{"'\\x4'", 4, "bad \\x escape"}, BadCase{"@", 0, "unexpected character"},
                    BadCase{"-", 0, "expected a number"}, BadCase{"/models/x", 0, "unexpected"}));

TEST(PyRepr, DeepNestingIsAnErrorNotACrash) {
  const std::string deep(100000, '[');
  auto v = parse_py_repr(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("nested too deeply"), std::string::npos);
}

TEST(PyRepr, EveryTruncationOfAReprFailsCleanly) {
  const std::string repr =
      "ServerArgs(model_path='m', tp=8, frac=0.85, l=[1, (2, 3)], d={'k': {'j': None}}, "
      "e=<E.X: 'x'>, s='a\\'b', c=Cfg(x=1))";
  ASSERT_TRUE(parse_py_repr(repr).ok());
  // "S" .. "ServerArgs" are bare names; from the '(' on, every cut is an error.
  for (size_t n = repr.find('(') + 1; n < repr.size(); ++n) {
    EXPECT_FALSE(parse_py_repr(repr.substr(0, n)).ok()) << "prefix of length " << n;
  }
}

TEST(PyRepr, RandomBytesNeverCrash) {
  std::mt19937 rng(42);
  const std::string alphabet = "[](){}<>'\",:=.-+_ aZ09eE\\xnu\n";
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s(rng() % 40, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    size_t offset = 0;
    auto v = parse_py_repr(s, &offset);
    if (v.ok()) {
      ++parsed;
    } else {
      EXPECT_LE(offset, s.size());
    }
    (void)parse_py_kwargs(s);
  }
  EXPECT_GT(parsed, 0);
}

TEST(PyRepr, PrefixStopsAfterTheValue) {
  size_t used = 0;
  auto v = parse_py_repr_prefix("ServerArgs(a=1) and then some text", &used);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(used, 15u);
  EXPECT_EQ(*v, json::parse(R"({"a":1})"));
}

struct KwargsCase {
  std::string text;
  std::string json;
};

class PyKwargs : public testing::TestWithParam<KwargsCase> {};

TEST_P(PyKwargs, ParsesToObject) {
  const KwargsCase& c = GetParam();
  auto v = parse_py_kwargs(c.text);
  ASSERT_TRUE(v.ok()) << c.text << ": " << v.error().message;
  EXPECT_EQ(json::value(*v), json::parse(c.json)) << json::serialize(*v);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PyKwargs,
    testing::Values(
        // vLLM's engine config: reprs mixed with bare text.
        KwargsCase{
            "model='/m', speculative_config=None, tokenizer_mode=auto, dtype=torch.bfloat16, "
            "max_seq_len=32768, device_config=cuda:1, served_model_name=/models/x-7b, seed=0",
            R"({"model":"/m","speculative_config":null,"tokenizer_mode":"auto",
                       "dtype":"torch.bfloat16","max_seq_len":32768,"device_config":"cuda:1",
                       "served_model_name":"/models/x-7b","seed":0})"},
        KwargsCase{"kv_cache_dtype=auto,  device_config=cuda, "
                   "decoding_config=DecodingConfig(backend='xgrammar', disable_fallback=False)",
                   R"({"kv_cache_dtype":"auto","device_config":"cuda",
                       "decoding_config":{"backend":"xgrammar","disable_fallback":false}})"},
        KwargsCase{R"(compilation_config={"level":3,"sizes":[4,2,1],"x":null}, pooler_config=None)",
                   R"({"compilation_config":{"level":3,"sizes":[4,2,1],"x":null},
                       "pooler_config":null})"},
        KwargsCase{"a={\"broken\":, b=1", R"({"a":"{\"broken\":","b":1})"},
        // A pydantic model's str: space separated.
        KwargsCase{"model='x' tokenizer=None tp=8 kv=KvCacheConfig(dtype='fp8', f=0.9) "
                   "p=<P.G: 'G'> cp={}",
                   R"({"model":"x","tokenizer":null,"tp":8,"kv":{"dtype":"fp8","f":0.9},
                       "p":"<P.G: 'G'>","cp":{}})"},
        // sglang's memory pool line and serve-sim's setting sources.
        KwargsCase{"max_total_num_tokens=2315187, context_len=2304, available_gpu_mem=38.41 GB",
                   R"({"max_total_num_tokens":2315187,"context_len":2304,
                       "available_gpu_mem":"38.41 GB"})"},
        KwargsCase{" hardware=cli model_preset=preset kv_cache_dtype=env",
                   R"({"hardware":"cli","model_preset":"preset","kv_cache_dtype":"env"})"},
        KwargsCase{"a=x==y, b=2", R"({"a":"x==y","b":2})"}));

TEST(PyKwargs, TextWithoutNameEqualsIsAnError) {
  size_t offset = 99;
  auto v = parse_py_kwargs("not a list", &offset);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(offset, 0u);
  EXPECT_FALSE(parse_py_kwargs("").ok());
  EXPECT_FALSE(parse_py_kwargs(", ,").ok());
}

}  // namespace
}  // namespace ib::verify
