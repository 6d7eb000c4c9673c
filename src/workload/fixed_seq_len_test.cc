#include "workload/fixed_seq_len.h"

#include <gtest/gtest.h>

namespace ib::workload {
namespace {

TEST(FixedSeqLen, DefaultsFollowInferenceX) {
  FixedSeqLenParams p;
  p.isl = 128;
  p.osl = 16;
  FixedSeqLenWorkload w(p);
  EXPECT_EQ(w.prompts_at(4), 40);  // 10 x conc
  EXPECT_EQ(w.warmups_at(4), 8);   // 2 x conc
  auto plan = w.plan(4);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const RequestPlan* requests = plan->requests();
  ASSERT_NE(requests, nullptr) << "a fixed-seq-len point is a plan of independent requests";
  EXPECT_EQ(requests->measured.size(), 40u);
  EXPECT_EQ(requests->warmup.size(), 8u);
  EXPECT_EQ(plan->shape.concurrency, 4);
  for (const auto& r : requests->measured) {
    EXPECT_GE(r.input_len, 102);  // floor(0.8 x 128)
    EXPECT_LE(r.input_len, 128);
    EXPECT_GE(r.output_len, 12);
    EXPECT_LE(r.output_len, 16);
  }
  EXPECT_EQ(plan->describe.at("random_range_ratio").as_double(), 0.8);
  EXPECT_EQ(plan->describe.at("num_prompts").as_int64(), 40);
  // Warmups never share the measured prompts (a prefix cache must not be primed).
  EXPECT_NE(requests->warmup.front().token_ids, requests->measured.front().token_ids);
  EXPECT_EQ(w.label(), "isl 128 / osl 16");
}

TEST(FixedSeqLen, KeyIsTheCanonicalJsonAndChangesWithWhatIsSent) {
  FixedSeqLenParams p;
  p.isl = 32;
  p.osl = 8;
  FixedSeqLenWorkload w(p);
  EXPECT_EQ(w.key(2),
            "fixed-seq-len:{\"api\":\"completions\",\"isl\":32,\"osl\":8,\"prompts\":20,"
            "\"range_ratio\":0.8,\"seed\":0,\"warmups\":4}");
  EXPECT_NE(w.key(2), w.key(4));
  FixedSeqLenParams q = p;
  q.seed = 1;
  EXPECT_NE(FixedSeqLenWorkload(q).key(2), w.key(2));
  q = p;
  q.api = "chat";
  EXPECT_NE(FixedSeqLenWorkload(q).key(2), w.key(2));
  // Same parameters, same key and the same prompts, on every call.
  EXPECT_EQ(FixedSeqLenWorkload(p).key(2), w.key(2));
  EXPECT_EQ(w.plan(2)->requests()->measured.front().token_ids,
            FixedSeqLenWorkload(p).plan(2)->requests()->measured.front().token_ids);
}

TEST(FixedSeqLen, MinimumPromptsAndBadParametersNamed) {
  FixedSeqLenParams p;
  p.prompts_per_conc = 1;
  p.min_prompts = 8;
  p.warmups_per_conc = 0;
  FixedSeqLenWorkload w(p);
  EXPECT_EQ(w.prompts_at(2), 8);
  EXPECT_TRUE(w.plan(2)->requests()->warmup.empty());
  EXPECT_FALSE(w.plan(0).ok());
  p.range_ratio = 1.5;
  auto s = p.validate("r.yaml: key.workload");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "r.yaml: key.workload.range-ratio must be in (0, 1] (got 1.5)");
}

TEST(SortedJson, ObjectKeysSortedRecursively) {
  boost::json::value v =
      boost::json::parse(R"({"b":1,"a":{"d":[{"z":1.5,"y":2.0}],"c":null},"r":0.8})");
  EXPECT_EQ(sorted_json(v), R"({"a":{"c":null,"d":[{"y":2.0,"z":1.5}]},"b":1,"r":0.8})");
}

}  // namespace
}  // namespace ib::workload
