#include "sim/perf_model.h"

#include <gtest/gtest.h>

namespace ib::sim {
namespace {

PerfSettings settings(Precision p, int tp = 1) {
  PerfSettings s;
  s.tp = tp;
  s.weights = p;
  return s;
}

// `batch` decoding sequences, each with `context` cached tokens.
StepBatch decode_batch(int batch, int context, int window = 0) {
  StepBatch b;
  for (int i = 0; i < batch; ++i) b.add(1, context, true, window);
  return b;
}

StepBatch prefill_batch(int tokens, int window = 0) {
  StepBatch b;
  b.add(tokens, 0, true, window);
  return b;
}

TEST(StepBatch, CountsTokensPairsAndContext) {
  StepBatch b;
  b.add(4, 10, true, 0);  // positions 11..14 attend to 11..14 keys
  b.add(1, 99, true, 0);
  EXPECT_EQ(b.tokens, 5);
  EXPECT_EQ(b.seqs, 2);
  EXPECT_EQ(b.sampled, 2);
  EXPECT_EQ(b.decode_seqs, 1);
  EXPECT_EQ(b.pairs_full_prefill, 11 + 12 + 13 + 14);
  EXPECT_EQ(b.pairs_full_decode, 100);
  EXPECT_EQ(b.kv_read_full, 14 + 100);
  // A sliding window caps the keys each query sees.
  StepBatch w;
  w.add(4, 126, true, 128);  // positions 127..130 see min(p, 128) keys
  EXPECT_EQ(w.pairs_window, 127 + 128 + 128 + 128);
}

TEST(PerfModel, DecodeStepTimeGrowsWithBatchUntilComputeBound) {
  const PerfModel m(*find_model("llama-3.1-8b"), *find_hardware("H100"),
                    settings(Precision::kBf16));
  double last = 0;
  bool memory_bound_seen = false;
  bool compute_bound_seen = false;
  for (int batch = 1; batch <= 4096; batch *= 2) {
    const StepCost c = m.step_cost(decode_batch(batch, 256));
    EXPECT_GE(c.total_s(), last) << batch;
    last = c.total_s();
    if (batch == 1) {
      EXPECT_FALSE(c.compute_bound()) << "a lone decode is memory-bound";
    }
    memory_bound_seen |= !c.compute_bound();
    compute_bound_seen |= c.compute_bound();
  }
  EXPECT_TRUE(memory_bound_seen);
  EXPECT_TRUE(compute_bound_seen);
  // While memory-bound, adding sequences is cheap (weights are read once per step): the per-token
  // cost falls steeply.
  const double one = m.step_cost(decode_batch(1, 256)).total_s();
  const double thirty_two = m.step_cost(decode_batch(32, 256)).total_s();
  EXPECT_LT(thirty_two, 2 * one);
  // Once compute-bound, time grows about linearly with the batch.
  const double big = m.step_cost(decode_batch(2048, 256)).total_s();
  const double bigger = m.step_cost(decode_batch(4096, 256)).total_s();
  EXPECT_GT(bigger, 1.7 * big);
}

TEST(PerfModel, LongerContextCostsMoreKvTraffic) {
  const PerfModel m(*find_model("llama-3.1-8b"), *find_hardware("H200"),
                    settings(Precision::kBf16));
  const StepCost short_ctx = m.step_cost(decode_batch(64, 128));
  const StepCost long_ctx = m.step_cost(decode_batch(64, 8192));
  EXPECT_GT(long_ctx.kv_bytes, 10 * short_ctx.kv_bytes);
  EXPECT_GT(long_ctx.total_s(), short_ctx.total_s());
  EXPECT_EQ(long_ctx.weight_bytes, short_ctx.weight_bytes);
}

TEST(PerfModel, MoreTensorParallelismLowersWeightTimeButAddsCommunication) {
  const ModelSpec& model = *find_model("llama-3.3-70b");
  const HardwareSpec& hw = *find_hardware("H100");
  const StepBatch b = decode_batch(32, 1024);
  double last_weight = 1e9;
  double last_comm = -1;
  for (int tp : {1, 2, 4, 8}) {
    const StepCost c = PerfModel(model, hw, settings(Precision::kBf16, tp)).step_cost(b);
    EXPECT_LT(c.weight_memory_s, last_weight) << tp;
    EXPECT_GT(c.comm_s, last_comm) << tp;
    last_weight = c.weight_memory_s;
    last_comm = c.comm_s;
    if (tp == 1) {
      EXPECT_EQ(c.comm_s, 0);
    }
    if (tp > 1) {
      EXPECT_EQ(c.collectives, 2 * model.layers) << tp;
    }
  }
}

TEST(PerfModel, CustomAllReduceBeatsRingForDecode) {
  const ModelSpec& model = *find_model("llama-3.3-70b");
  const HardwareSpec& hw = *find_hardware("H200");
  PerfSettings custom = settings(Precision::kBf16, 8);
  PerfSettings ring = custom;
  ring.all_reduce.custom_enabled = false;
  const StepBatch b = decode_batch(8, 1024);  // 128 KiB per all-reduce
  const StepCost a = PerfModel(model, hw, custom).step_cost(b);
  const StepCost r = PerfModel(model, hw, ring).step_cost(b);
  EXPECT_EQ(a.all_reduce, AllReduceImpl::kOneShot);
  EXPECT_EQ(r.all_reduce, AllReduceImpl::kRing);
  EXPECT_LT(a.comm_s, r.comm_s);
}

TEST(PerfModel, QuantizedAllReduceLowersCommunicationTime) {
  const ModelSpec& model = *find_model("minimax-m2");
  const HardwareSpec& hw = *find_hardware("MI355X");
  const StepBatch prefill = prefill_batch(8192);  // 48 MiB of activations per all-reduce
  double last = 1e9;
  for (QuickReduceLevel level :
       {QuickReduceLevel::kNone, QuickReduceLevel::kInt8, QuickReduceLevel::kInt4}) {
    PerfSettings s = settings(Precision::kFp8, 4);
    s.all_reduce.quick_reduce = level;
    const StepCost c = PerfModel(model, hw, s).step_cost(prefill);
    EXPECT_LT(c.comm_s, last) << to_string(level);
    last = c.comm_s;
  }
}

TEST(PerfModel, LowerPrecisionReadsFewerWeightBytes) {
  const ModelSpec& model = *find_model("llama-3.1-8b");
  const HardwareSpec& hw = *find_hardware("B200");
  const StepBatch b = decode_batch(1, 512);
  const StepCost bf16 = PerfModel(model, hw, settings(Precision::kBf16)).step_cost(b);
  const StepCost fp8 = PerfModel(model, hw, settings(Precision::kFp8)).step_cost(b);
  const StepCost fp4 = PerfModel(model, hw, settings(Precision::kFp4)).step_cost(b);
  EXPECT_LT(fp8.weight_bytes, bf16.weight_bytes);
  EXPECT_LT(fp4.weight_bytes, fp8.weight_bytes);
  EXPECT_LT(fp4.total_s(), bf16.total_s());
  // Compute-bound prefill also gains from the faster FP8 tensor cores.
  const StepBatch p = prefill_batch(8192);
  EXPECT_LT(PerfModel(model, hw, settings(Precision::kFp8)).step_cost(p).compute_s,
            PerfModel(model, hw, settings(Precision::kBf16)).step_cost(p).compute_s);
}

TEST(PerfModel, MoeReadsOnlyTheExpertsItsTokensChoose) {
  const PerfModel m(*find_model("gpt-oss-120b"), *find_hardware("H200"), settings(Precision::kFp4));
  EXPECT_NEAR(m.touched_experts(1), 4, 1e-9);
  EXPECT_LT(m.touched_experts(16), m.touched_experts(64));
  EXPECT_LT(m.touched_experts(4096), 128.0 + 1e-9);
  EXPECT_GT(m.touched_experts(4096), 127.0);
  // So an MoE decode step gets much more expensive with batch while experts are still being
  // pulled in, and the weights read approach the whole model.
  const StepCost one = m.step_cost(decode_batch(1, 512));
  const StepCost many = m.step_cost(decode_batch(256, 512));
  EXPECT_GT(many.weight_bytes, 5 * one.weight_bytes);
  EXPECT_LE(many.weight_bytes, m.weight_bytes_per_gpu());
}

TEST(PerfModel, ExpertParallelismAddsDispatchAndCombine) {
  const ModelSpec& model = *find_model("deepseek-r1");
  const HardwareSpec& hw = *find_hardware("H200");
  PerfSettings tp = settings(Precision::kFp8, 8);
  PerfSettings ep = tp;
  ep.expert_parallel = true;
  const StepBatch b = decode_batch(64, 2048);
  const StepCost a = PerfModel(model, hw, tp).step_cost(b);
  const StepCost e = PerfModel(model, hw, ep).step_cost(b);
  EXPECT_EQ(a.collectives, 2 * model.layers);
  EXPECT_EQ(e.collectives, model.layers + model.dense_layers + 2 * model.moe_layers());
  EXPECT_GT(e.comm_s, 0);
  // Dispatch/combine traffic grows with the tokens in the step.
  EXPECT_GT(PerfModel(model, hw, ep).step_cost(prefill_batch(4096)).comm_s, e.comm_s);
  // Weights on each GPU are the same either way (experts split instead of sliced).
  EXPECT_EQ(PerfModel(model, hw, tp).weight_bytes_per_gpu(),
            PerfModel(model, hw, ep).weight_bytes_per_gpu());
}

TEST(PerfModel, FullPromptPrefillIsComputeBoundAndCostsMoreThanADecode) {
  const PerfModel m(*find_model("llama-3.1-8b"), *find_hardware("H200"),
                    settings(Precision::kBf16));
  const StepCost p = m.step_cost(prefill_batch(4096));
  EXPECT_TRUE(p.compute_bound());
  EXPECT_GT(p.total_s(), m.step_cost(decode_batch(1, 4096)).total_s());
  // Attention grows quadratically with the prompt: doubling it more than doubles its FLOPs.
  const double f1 = m.step_cost(prefill_batch(8192)).flops - 2 * p.flops;
  EXPECT_GT(f1, 0);
}

TEST(PerfModel, SlidingWindowLayersCapAttentionCost) {
  const ModelSpec& model = *find_model("gpt-oss-120b");
  const PerfModel m(model, *find_hardware("H200"), settings(Precision::kFp4));
  const int w = m.sliding_window();
  ASSERT_GT(w, 0);
  // Past the window only the full-attention layers read more KV as the context grows.
  const StepCost short_ctx = m.step_cost(decode_batch(8, 1000, w));
  const StepCost long_ctx = m.step_cost(decode_batch(8, 9000, w));
  const double per_token_layer = m.kv_bytes_per_token() / model.layers;
  EXPECT_NEAR(long_ctx.kv_bytes - short_ctx.kv_bytes,
              8 * 8000 * per_token_layer * model.full_attention_layers(), 1.0);
  EXPECT_LT(model.full_attention_layers(), model.layers);
}

TEST(PerfModel, OverheadIsPaidOncePerStep) {
  PerfSettings s = settings(Precision::kBf16);
  s.step_overhead_s = 0.002;
  const PerfModel m(*find_model("llama-3.1-8b"), *find_hardware("H200"), s);
  const StepCost c = m.step_cost(decode_batch(8, 100));
  EXPECT_DOUBLE_EQ(c.overhead_s, 0.002);
  EXPECT_DOUBLE_EQ(c.total_s(), std::max(c.compute_s, c.memory_s) + c.comm_s + 0.002);
}

}  // namespace
}  // namespace ib::sim
