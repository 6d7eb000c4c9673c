#include "verdict/sources.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/temp_dir.h"
#include "metrics/result.h"

namespace ib::verdict {
namespace {

namespace fs = std::filesystem;

TEST(VerdictSources, RecordsRoundTripThroughTheirJsonLines) {
  TempDir dir("verdict-test");
  metrics::RequestRecord r;
  r.index = 3;
  r.input_len = 32;
  r.output_len = 4;
  r.sched_ns = r.send_ns = 1'000'000'000;
  r.content_ns = {1'020'000'000, 1'025'000'000, 1'031'000'000};
  r.done_ns = 1'032'000'000;
  r.prompt_tokens = 32;
  r.completion_tokens = 3;
  metrics::RequestRecord bad = r;
  bad.failure = metrics::FailureCause::kHttpStatus;
  const fs::path file = dir.path() / "records_conc_1.jsonl";
  std::ofstream(file) << boost::json::serialize(metrics::record_to_json(r, 999'000'000)) << "\n"
                      << boost::json::serialize(metrics::record_to_json(bad, 999'000'000)) << "\n";
  auto rs = read_records(file);
  ASSERT_TRUE(rs.ok()) << rs.error().message;
  ASSERT_EQ(rs->size(), 2u);
  EXPECT_TRUE((*rs)[0].ok());
  EXPECT_FALSE((*rs)[1].ok());
  // Differences survive (times are ms from the origin in the file).
  EXPECT_EQ((*rs)[0].content_ns[0] - (*rs)[0].send_ns, 20'000'000);
  EXPECT_EQ((*rs)[0].content_ns[2] - (*rs)[0].content_ns[1], 6'000'000);
  EXPECT_EQ((*rs)[0].completion_tokens, 3);
}

TEST(VerdictSources, ABadRecordsLineIsNamed) {
  TempDir dir("verdict-test");
  const fs::path file = dir.path() / "records_conc_1.jsonl";
  std::ofstream(file) << "{\"ok\": true, \"content_ms\": []}\n{not json\n";
  auto rs = read_records(file);
  ASSERT_FALSE(rs.ok());
  EXPECT_NE(rs.error().message.find(file.string() + ":2:"), std::string::npos)
      << rs.error().message;
}

TEST(VerdictSources, VllmResultKeysGiveTheIdentity) {
  boost::json::object r = {{"model_id", "meta-llama/Llama-3.1-8B"},
                           {"backend", "vllm"},
                           {"max_concurrency", 16},
                           {"request_throughput", 3.5},
                           {"median_tpot_ms", 20.0},
                           {"random_input_len", 1024},
                           {"random_output_len", 128}};
  const SidePoint p = point_from_result(r, "x.json");
  EXPECT_EQ(p.concurrency, 16);
  EXPECT_EQ(p.identity.get(metrics::IdentityField::kModel), "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(p.identity.get(metrics::IdentityField::kEngine), "vllm");
  EXPECT_EQ(p.workload_label, "isl 1024 / osl 128");
  EXPECT_DOUBLE_EQ(p.headline.get("median_intvty"), 50.0);  // 1000 / median TPOT
  EXPECT_TRUE(p.usable());
}

TEST(VerdictSources, InferenceXAggregateKeysGiveTheIdentity) {
  boost::json::object r = {{"hw", "h200"},       {"image", "vllm/vllm-openai:v0.11"},
                           {"model", "m"},       {"framework", "vllm"},
                           {"precision", "fp8"}, {"tp", 4},
                           {"conc", 8},          {"isl", 1024},
                           {"osl", 1024},        {"tput_per_gpu", 1500.0},
                           {"median_intvty", 40.0}};
  const SidePoint p = point_from_result(r, "agg.json");
  EXPECT_EQ(p.concurrency, 8);
  EXPECT_EQ(p.identity.get(metrics::IdentityField::kHardware), "h200");
  EXPECT_EQ(p.config_key, "m/vllm/fp8/h200/tp4");
  EXPECT_DOUBLE_EQ(p.headline.get("tput_per_gpu"), 1500.0);
}

TEST(VerdictSources, AnEmptyFolderIsAnErrorNamingIt) {
  TempDir dir("verdict-test");
  auto s = side_from_folder(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(dir.path().string() + ": no result files"), std::string::npos);
}

}  // namespace
}  // namespace ib::verdict
