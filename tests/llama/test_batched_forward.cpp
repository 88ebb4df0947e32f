// BatchedLlamaRunner: S sequences in one forward (continuous batching). Each row's logits must
// equal, bit for bit, those of the same tokens run through a LlamaRunner holding that sequence
// alone, and those of the same batched runner fed one sequence per call; over several steps of
// ragged batches (1..5 new rows per slot) with per-slot rollback between them, on every matmul
// path this CPU has and for F32, BF16 and Q8_0 weights. Planted bugs (cross-slot attention, an
// off-by-one rollback) must be detected, and bad input must leave every slot unchanged.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/error.h"
#include "core/threads.h"
#include "models/llama/batched_llama_runner.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/llama/batched_runner_test_util.h"

namespace speclab {
namespace {

using batched_test::batch_config;
using batched_test::kCtx;
using batched_test::kSlots;
using batched_test::Plant;
using batched_test::same_bits;
using PlantedBatchedRunner = batched_test::PlantedRunner<BatchedLlamaRunner>;

// The runner under test beside its two references, fed the same steps:
//   batched  all slots' rows in one forward_batch per step (with `plant`, if any)
//   single   a second BatchedLlamaRunner, one forward_batch per slot (a batch of one sequence)
//   alone    one LlamaRunner per slot
class Harness {
 public:
  explicit Harness(const LlamaModel& m, Plant plant = Plant::kNone)
      : m_(m), batched_(m, kSlots, kCtx, plant), single_(m, kSlots, kCtx) {
    for (int64_t s = 0; s < kSlots; s++) alone_.push_back(std::make_unique<LlamaRunner>(m, kCtx));
  }

  // One step: new_tokens[s] are appended to slot s (none: the slot sits this step out); the
  // batch lists the slots in `order`. Returns the slots whose batched logits differ from the
  // references in any bit (also failing the test if the two references disagree).
  std::set<int64_t> step(const std::vector<std::vector<int32_t>>& new_tokens,
                         const std::vector<int64_t>& order, bool last_only) {
    const int64_t V = m_.config.vocab_size;
    std::vector<BatchRow> rows;
    for (int64_t s : order) {
      for (int32_t t : new_tokens[s]) rows.push_back({static_cast<int32_t>(s), t});
    }
    const float* got = batched_.forward_batch(rows, last_only);
    const std::vector<float> batch_logits(
        got,
        got + (last_only ? static_cast<int64_t>(order.size()) : static_cast<int64_t>(rows.size())) *
                  V);
    std::set<int64_t> differ;
    int64_t row0 = 0, group = 0;
    for (int64_t s : order) {
      const auto& toks = new_tokens[s];
      const int64_t n = static_cast<int64_t>(toks.size());
      const int64_t n_out = last_only ? 1 : n;
      const float* mine = batch_logits.data() + (last_only ? group : row0) * V;
      std::vector<BatchRow> one;
      for (int32_t t : toks) one.push_back({static_cast<int32_t>(s), t});
      const float* l1 = single_.forward_batch(one, last_only);
      const std::vector<float> single_logits(l1, l1 + n_out * V);
      const float* l2 = alone_[s]->forward(toks.data(), n, last_only);
      EXPECT_TRUE(same_bits(single_logits.data(), l2, n_out * V))
          << "slot " << s << ": batch of one sequence differs from LlamaRunner";
      if (!same_bits(mine, l2, n_out * V)) differ.insert(s);
      row0 += n;
      group++;
    }
    return differ;
  }

  // Rolls slot s back to n positions in all three runners.
  void truncate(int64_t s, int64_t n) {
    batched_.truncate(s, n);
    single_.truncate(s, n);
    alone_[s]->truncate(n);
  }

  int64_t n_past(int64_t s) const { return alone_[s]->n_past(); }

 private:
  const LlamaModel& m_;
  PlantedBatchedRunner batched_;
  BatchedLlamaRunner single_;
  std::vector<std::unique_ptr<LlamaRunner>> alone_;
};

int32_t token_at(int64_t step, int64_t s, int64_t i, int64_t vocab) {
  return static_cast<int32_t>((step * 131 + s * 37 + i * 17 + 5) % vocab);
}

// Six steps of ragged batches: a first step of prompts (20, 6, 13, 1 tokens: 40 rows, past the
// 16-token chunks of matmul_weights' packed activations; LlamaRunner runs 20 tokens through its
// per-call kernels and 13 as a step team), then 1..5 new rows
// per slot (slot 0 always the longest, so the cross-slot plant reads written positions), some
// slots sitting a step out, slot order varied, last_only on odd steps, and after each step a
// per-slot rollback of 0..2 positions (slot 2 rolls back on every step but the last).
// Returns, per step, the slots whose logits differed.
std::vector<std::set<int64_t>> run_steps(Harness& h, int64_t vocab) {
  std::vector<std::set<int64_t>> differ;
  const std::vector<std::vector<int64_t>> orders = {{0, 1, 2, 3}, {3, 1, 0, 2}, {0, 2, 1},
                                                    {2, 0, 1, 3}, {1, 0, 3, 2}, {0, 1, 2, 3}};
  const int64_t prompt[kSlots] = {20, 6, 13, 1};
  for (int64_t step = 0; step < 6; step++) {
    std::vector<std::vector<int32_t>> toks(kSlots);
    for (int64_t s : orders[step]) {
      const int64_t n = step == 0 ? prompt[s] : (s == 0 ? 5 : 1 + (step + s) % 4);
      for (int64_t i = 0; i < n; i++) toks[s].push_back(token_at(step, s, i, vocab));
    }
    differ.push_back(h.step(toks, orders[step], step % 2 == 1));
    for (int64_t s = 1; s < kSlots; s++) {
      const int64_t back = s == 2 ? 1 + step % 2 : (step + s) % 3;
      if (step < 5) h.truncate(s, std::max<int64_t>(h.n_past(s) - back, 1));
    }
  }
  return differ;
}

std::string isa_name(MatmulIsa isa) {
  switch (isa) {
    case MatmulIsa::kGeneric:
      return "generic";
    case MatmulIsa::kAvx2:
      return "avx2";
    case MatmulIsa::kAvx512:
      return "avx512";
    case MatmulIsa::kAvx512Bf16:
      return "avx512bf16";
    case MatmulIsa::kAvx512Vnni:
      return "avx512vnni";
    case MatmulIsa::kAmxBf16:
      return "amxbf16";
    case MatmulIsa::kBest:
      return "best";
  }
  return "?";
}

// Every matmul path (skipped where the CPU lacks it) x the dtypes real models use x 1 and 2
// threads (the references run on the same count).
class BatchedForward : public ::testing::TestWithParam<std::tuple<MatmulIsa, DType, int>> {
 protected:
  void SetUp() override {
    saved_threads_ = threads_get();
    if (!matmul_force_isa(std::get<0>(GetParam())))
      GTEST_SKIP() << "this CPU lacks the instructions";
    threads_set(std::get<2>(GetParam()));
    model_ = llama_make_random(batch_config(), std::get<1>(GetParam()), 11);
  }
  void TearDown() override {
    matmul_force_isa(MatmulIsa::kBest);
    threads_set(saved_threads_);
  }
  int saved_threads_ = 1;
  std::unique_ptr<LlamaModel> model_;
};

TEST_P(BatchedForward, EveryRowBitIdenticalToItsSequenceAlone) {
  Harness h(*model_);
  const auto differ = run_steps(h, model_->config.vocab_size);
  for (size_t step = 0; step < differ.size(); step++)
    EXPECT_TRUE(differ[step].empty()) << "step " << step << ": " << differ[step].size()
                                      << " slot(s) differ, first " << *differ[step].begin();
}

// The plants: the same comparison must see the planted slot, and only it, differ.
TEST_P(BatchedForward, DetectsPlantedCrossSlotAttention) {
  Harness h(*model_, Plant::kCrossSlotAttention);
  const auto differ = run_steps(h, model_->config.vocab_size);
  for (size_t step = 0; step < differ.size(); step++)
    EXPECT_EQ(differ[step], std::set<int64_t>{1}) << "step " << step;
}

TEST_P(BatchedForward, DetectsPlantedRollbackOffByOne) {
  Harness h(*model_, Plant::kRollbackOffByOne);
  const auto differ = run_steps(h, model_->config.vocab_size);
  EXPECT_TRUE(differ[0].empty());  // nothing rolled back yet
  for (size_t step = 1; step < differ.size(); step++)
    EXPECT_EQ(differ[step], std::set<int64_t>{2}) << "step " << step;
}

INSTANTIATE_TEST_SUITE_P(
    IsaDtype, BatchedForward,
    ::testing::Combine(::testing::Values(MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512,
                                         MatmulIsa::kAvx512Bf16, MatmulIsa::kAvx512Vnni,
                                         MatmulIsa::kAmxBf16),
                       ::testing::Values(DType::F32, DType::BF16, DType::Q8_0),
                       ::testing::Values(1, 2)),
    [](const ::testing::TestParamInfo<std::tuple<MatmulIsa, DType, int>>& info) {
      return isa_name(std::get<0>(info.param)) + "_" + dtype_name(std::get<1>(info.param)) +
             "_threads" + std::to_string(std::get<2>(info.param));
    });

// Bad input: each error throws InputError and changes no slot.
class BatchedForwardErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = llama_make_random(batch_config(), DType::F32, 12);
    runner_ = std::make_unique<BatchedLlamaRunner>(*model_, 3, 8);
    runner_->forward_batch({{0, 1}, {0, 2}, {1, 3}, {2, 4}, {2, 5}, {2, 6}});
  }
  // n_past per slot, and slot 0's next logits, equal those of an untouched runner.
  void expect_unchanged() {
    EXPECT_EQ(runner_->n_past(0), 2);
    EXPECT_EQ(runner_->n_past(1), 1);
    EXPECT_EQ(runner_->n_past(2), 3);
    BatchedLlamaRunner fresh(*model_, 3, 8);
    fresh.forward_batch({{0, 1}, {0, 2}, {1, 3}, {2, 4}, {2, 5}, {2, 6}});
    const std::vector<BatchRow> next = {{1, 7}, {0, 8}, {2, 9}};
    const float* want = fresh.forward_batch(next);
    const std::vector<float> w(want, want + 3 * model_->config.vocab_size);
    EXPECT_TRUE(same_bits(runner_->forward_batch(next), w.data(), 3 * model_->config.vocab_size));
  }
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<BatchedLlamaRunner> runner_;
};

TEST_F(BatchedForwardErrors, UnknownSlot) {
  EXPECT_THROW(runner_->forward_batch({{0, 1}, {3, 1}}), InputError);
  EXPECT_THROW(runner_->forward_batch({{-1, 1}}), InputError);
  expect_unchanged();
}

TEST_F(BatchedForwardErrors, TokenOutsideVocabulary) {
  EXPECT_THROW(runner_->forward_batch({{0, 1}, {1, 64}}), InputError);
  EXPECT_THROW(runner_->forward_batch({{1, -1}}), InputError);
  expect_unchanged();
}

TEST_F(BatchedForwardErrors, SlotContextOverflow) {  // slot 2: 3 + 6 > 8, after valid rows
  EXPECT_THROW(
      runner_->forward_batch({{0, 1}, {1, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}}),
      InputError);
  expect_unchanged();
}

TEST_F(BatchedForwardErrors, SlotRowsNotConsecutive) {
  EXPECT_THROW(runner_->forward_batch({{0, 1}, {1, 1}, {0, 1}}), InputError);
  expect_unchanged();
}

TEST_F(BatchedForwardErrors, EmptyBatch) {
  EXPECT_THROW(runner_->forward_batch(std::vector<BatchRow>{}), InputError);
  expect_unchanged();
}

TEST_F(BatchedForwardErrors, BadTruncate) {
  EXPECT_THROW(runner_->truncate(3, 0), InputError);
  EXPECT_THROW(runner_->truncate(1, 2), InputError);  // slot 1 holds 1 position
  EXPECT_THROW(runner_->truncate(0, -1), InputError);
  expect_unchanged();
}

TEST(BatchedForwardSetup, NeedsAtLeastOneSlot) {
  auto model = llama_make_random(batch_config(), DType::F32, 13);
  EXPECT_THROW(BatchedLlamaRunner(*model, 0, 8), InputError);
}

TEST(BatchedForwardSetup, CacheBytesAsDocumented) {
  auto model = llama_make_random(batch_config(), DType::F32, 13);
  const BatchedLlamaRunner r(*model, 3, 8);
  // slots x positions x layers x (K and V) x kv_dim x 4 bytes
  EXPECT_EQ(r.kv_cache_bytes(), size_t{3} * 8 * 2 * 2 * (2 * 16) * 4);
}

}  // namespace
}  // namespace speclab
