// CudaBatchedLlamaRunner: S sequences in one forward on the device (continuous batching).
//
// (a) Batch invariance, bit for bit: every row's logits equal those of the same tokens run one
//     slot per call through a second CudaBatchedLlamaRunner, over ragged batches (prefill
//     groups of up to 37 rows, 1..7 new rows per slot, slots sitting steps out, slot order
//     varied, last_only on some steps, per-slot rollbacks), for F32, BF16 and Q8_0 weights.
//     With BF16 weights and steps of at most 4 rows, one slot's logits also equal
//     CudaLlamaRunner's (the same dot product, RoPE and attention bodies).
// (b) Close to the CPU's BatchedLlamaRunner at CudaForward's tolerances.
// (c) truncate(slot, n) then new rows equals a fresh runner fed the kept prefix and those rows.
// (d) The batched decoders on the device (CUDA target, BatchedModelDrafter on a CUDA runner):
//     each request's tokens, stop and rounds at concurrency 3 and 4 equal its concurrency-1
//     run, at T 0 (and T 0.9 with the same keys).
// (e) Planted bugs (a test-only subclass overriding the runner's seams, as
//     tests/llama/test_batched_forward.cpp does for the CPU): cross-slot attention and an
//     off-by-one rollback must make the planted slot, and only it, differ.
// Bad input: InputError before any device work, every slot unchanged.
// Device tests skip without a device; CudaBatchedRunnerHost.* run everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/decode/batched_decoder.h"
#include "models/drafters/batched_model_drafter.h"
#include "models/llama/batched_llama_runner.h"
#include "models/llama/cuda/cuda_batched_llama_runner.h"
#include "models/llama/cuda/cuda_llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/llama/batched_runner_test_util.h"

namespace speclab {
namespace {

using batched_test::batch_config;
using batched_test::kCtx;
using batched_test::kSlots;
using batched_test::Plant;
using batched_test::same_bits;
using PlantedCudaBatchedRunner = batched_test::PlantedRunner<CudaBatchedLlamaRunner>;

// One step of a schedule: new tokens per slot (none: the slot sits out), the slots' order in
// the batch, last_only, and the rollback applied to each slot afterwards (-1: none).
struct Step {
  std::vector<std::vector<int32_t>> tokens;  // [kSlots]
  std::vector<int64_t> order;
  bool last_only = false;
  std::vector<int64_t> keep;  // [kSlots] positions to keep after the step, -1 = all
};

int32_t token_at(int64_t step, int64_t s, int64_t i, int64_t vocab) {
  return static_cast<int32_t>((step * 131 + s * 37 + i * 17 + 5) % vocab);
}

// The CPU test's schedule: prompts of 20, 6, 13, 1 tokens in one batch, then 1..5 rows per
// slot (slot 0 always the longest, so the cross-slot plant reads written positions), slot
// order varied, last_only on odd steps, rollbacks of 0..2 (slot 2 on every step but the last).
std::vector<Step> fixed_schedule(int64_t vocab) {
  const std::vector<std::vector<int64_t>> orders = {{0, 1, 2, 3}, {3, 1, 0, 2}, {0, 2, 1},
                                                    {2, 0, 1, 3}, {1, 0, 3, 2}, {0, 1, 2, 3}};
  const int64_t prompt[kSlots] = {20, 6, 13, 1};
  std::vector<Step> steps;
  std::vector<int64_t> n_past(kSlots, 0);
  for (int64_t step = 0; step < 6; step++) {
    Step st;
    st.tokens.resize(kSlots);
    st.order = orders[step];
    st.last_only = step % 2 == 1;
    for (int64_t s : st.order) {
      const int64_t n = step == 0 ? prompt[s] : (s == 0 ? 5 : 1 + (step + s) % 4);
      for (int64_t i = 0; i < n; i++) st.tokens[s].push_back(token_at(step, s, i, vocab));
      n_past[s] += n;
    }
    st.keep.assign(kSlots, -1);
    for (int64_t s = 1; s < kSlots; s++) {
      const int64_t back = s == 2 ? 1 + step % 2 : (step + s) % 3;
      if (step < 5) {
        st.keep[s] = std::max<int64_t>(n_past[s] - back, 1);
        n_past[s] = st.keep[s];
      }
    }
    steps.push_back(st);
  }
  return steps;
}

// A pseudo-random schedule of 12 steps: each slot joins a step with probability 3/4 with 1..7
// rows (a prefill group of 9..37 rows one time in six), in a shuffled order, last_only one
// step in three, and a rollback of 0..3 positions one time in three; a slot that would run past
// kCtx is first rolled back to 4 positions. Chunks of 4 rows (the BF16 path) and of 8 (the
// dequantizing kernel) start at every offset of a slot's rows.
std::vector<Step> random_schedule(int64_t vocab, uint64_t seed) {
  uint64_t state = seed;
  auto next = [&state](uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  std::vector<Step> steps;
  std::vector<int64_t> n_past(kSlots, 0);
  for (int64_t step = 0; step < 12; step++) {
    Step st;
    st.tokens.resize(kSlots);
    st.keep.assign(kSlots, -1);
    for (int64_t s = 0; s < kSlots; s++) {
      if (step > 0 && next(4) == 0) continue;
      const int64_t n = next(6) == 0 ? 9 + static_cast<int64_t>(next(29)) : 1 + next(7);
      if (n_past[s] + n > kCtx) {
        // Roll back first (a step of its own in the previous step's keep list).
        SPECLAB_ASSERT(!steps.empty());
        steps.back().keep[s] = 4;
        n_past[s] = 4;
      }
      for (int64_t i = 0; i < n; i++)
        st.tokens[s].push_back(static_cast<int32_t>(next(static_cast<uint64_t>(vocab))));
      st.order.push_back(s);
      n_past[s] += n;
    }
    if (st.order.empty()) {  // every slot sat out: slot 0 takes one row (room permitting)
      if (n_past[0] + 1 > kCtx) {
        steps.back().keep[0] = 4;
        n_past[0] = 4;
      }
      st.tokens[0].push_back(static_cast<int32_t>(next(static_cast<uint64_t>(vocab))));
      st.order.push_back(0);
      n_past[0] += 1;
    }
    for (size_t i = st.order.size(); i > 1; i--) std::swap(st.order[i - 1], st.order[next(i)]);
    st.last_only = next(3) == 0;
    for (int64_t s = 0; s < kSlots; s++) {
      if (next(3) == 0 && n_past[s] > 1) {
        st.keep[s] = n_past[s] - std::min<int64_t>(n_past[s] - 1, next(4));
        n_past[s] = st.keep[s];
      }
    }
    steps.push_back(st);
  }
  return steps;
}

// The runner under test beside its references, fed the same steps:
//   batched  all slots' rows in one forward_batch per step (with `plant`, if any)
//   single   a second CudaBatchedLlamaRunner, one forward_batch per slot
//   cpu      (optional) the CPU's BatchedLlamaRunner, all slots per step, compared within a
//            tolerance
class Harness {
 public:
  Harness(const LlamaModel& m, Plant plant, bool with_cpu)
      : m_(m), batched_(m, kSlots, kCtx, plant), single_(m, kSlots, kCtx) {
    if (with_cpu) cpu_ = std::make_unique<BatchedLlamaRunner>(m, kSlots, kCtx);
  }

  // Runs one step; returns the slots whose batched logits differ from `single` in any bit.
  // With the CPU reference, expects every logit within (atol, rtol) of it.
  std::set<int64_t> step(const Step& st, double atol, double rtol, const std::string& what) {
    const int64_t V = m_.config.vocab_size;
    std::vector<BatchRow> rows;
    for (int64_t s : st.order) {
      for (int32_t t : st.tokens[s]) rows.push_back({static_cast<int32_t>(s), t});
    }
    const int64_t n_out =
        st.last_only ? static_cast<int64_t>(st.order.size()) : static_cast<int64_t>(rows.size());
    const float* got = batched_.forward_batch(rows, st.last_only);
    const std::vector<float> batch_logits(got, got + n_out * V);
    if (cpu_) {
      const float* c = cpu_->forward_batch(rows, st.last_only);
      expect_close(batch_logits, std::vector<float>(c, c + n_out * V), atol, rtol, what);
    }
    std::set<int64_t> differ;
    int64_t row0 = 0, group = 0;
    for (int64_t s : st.order) {
      const int64_t n = static_cast<int64_t>(st.tokens[s].size());
      const int64_t n_slot_out = st.last_only ? 1 : n;
      const float* mine = batch_logits.data() + (st.last_only ? group : row0) * V;
      std::vector<BatchRow> one;
      for (int32_t t : st.tokens[s]) one.push_back({static_cast<int32_t>(s), t});
      const float* ref = single_.forward_batch(one, st.last_only);
      if (!same_bits(mine, ref, n_slot_out * V)) differ.insert(s);
      row0 += n;
      group++;
    }
    for (int64_t s = 0; s < kSlots; s++) {
      if (st.keep[s] < 0) continue;
      batched_.truncate(s, st.keep[s]);
      single_.truncate(s, st.keep[s]);
      if (cpu_) cpu_->truncate(s, st.keep[s]);
    }
    return differ;
  }

 private:
  const LlamaModel& m_;
  PlantedCudaBatchedRunner batched_;
  CudaBatchedLlamaRunner single_;
  std::unique_ptr<BatchedLlamaRunner> cpu_;
};

// Per step, the slots whose logits differed.
std::vector<std::set<int64_t>> run_schedule(Harness& h, const std::vector<Step>& steps,
                                            double atol = 0, double rtol = 0,
                                            const std::string& what = "") {
  std::vector<std::set<int64_t>> differ;
  for (size_t i = 0; i < steps.size(); i++)
    differ.push_back(h.step(steps[i], atol, rtol, what + " step " + std::to_string(i)));
  return differ;
}

struct DtypeCase {
  DType dtype;
  double atol, rtol;  // against the CPU runner: CudaForward.MatchesCpuRunnerPerDtype's
};
const DtypeCase kDtypes[] = {
    {DType::F32, 2e-4, 1e-3}, {DType::BF16, 5e-2, 5e-2}, {DType::Q8_0, 2e-4, 1e-3}};

TEST(CudaBatchedForward, EveryRowBitIdenticalToItsSlotAloneAndCloseToTheCpu) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  for (const DtypeCase& dc : kDtypes) {
    const auto model = llama_make_random(batch_config(), dc.dtype, 11);
    const std::string name = dtype_name(dc.dtype);
    const std::vector<std::vector<Step>> schedules = {fixed_schedule(64), random_schedule(64, 1),
                                                      random_schedule(64, 2)};
    for (size_t k = 0; k < schedules.size(); k++) {
      Harness h(*model, Plant::kNone, /*with_cpu=*/true);
      const std::string what = name + " schedule " + std::to_string(k);
      const auto differ = run_schedule(h, schedules[k], dc.atol, dc.rtol, what);
      for (size_t step = 0; step < differ.size(); step++)
        EXPECT_TRUE(differ[step].empty()) << what << " step " << step << ": " << differ[step].size()
                                          << " slot(s) differ, first " << *differ[step].begin();
    }
  }
}

// One slot, BF16, steps of 1..8 rows: CudaLlamaRunner runs the same dot product (its
// vectorized kernel at 1 to 8 tokens, fused or not, one to four rows a warp), the same RoPE +
// KV write and attention bodies, so the logits agree bit for bit, rollbacks included. (Run
// with SPECLAB_CUDA_VEC_TOKENS=4, steps of 5-8 rows go through GemmEx there and differ.)
TEST(CudaBatchedForward, OneSlotEqualsCudaLlamaRunnerInBf16StepsOfUpToEightRows) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_random(batch_config(), DType::BF16, 21);
  CudaBatchedLlamaRunner batched(*model, 2, kCtx);
  CudaLlamaRunner alone(*model, kCtx);
  const int64_t V = model->config.vocab_size;
  int mismatched = 0;
  for (int64_t step = 0; step < 20; step++) {
    const int64_t n = 1 + step % 8;
    const bool last_only = step % 3 == 2;
    std::vector<int32_t> toks;
    std::vector<BatchRow> rows;
    for (int64_t i = 0; i < n; i++) {
      toks.push_back(token_at(step, 1, i, V));
      rows.push_back({1, toks.back()});
    }
    const float* b = batched.forward_batch(rows, last_only);
    const std::vector<float> got(b, b + (last_only ? 1 : n) * V);
    const float* a = alone.forward(toks.data(), n, last_only);
    if (!same_bits(got.data(), a, (last_only ? 1 : n) * V)) {
      mismatched++;
      ADD_FAILURE() << "step " << step << " (" << n << " rows): logits differ from CudaLlamaRunner";
    }
    if (step % 5 == 4) {
      const int64_t keep = alone.n_past() - 2;
      alone.truncate(keep);
      batched.truncate(1, keep);
    }
  }
  EXPECT_EQ(mismatched, 0);
}

// truncate(slot, n) and new rows: the same logits as a fresh runner fed the kept prefix (one
// prefill group, beside another slot's rows) and the same new rows.
TEST(CudaBatchedForward, TruncateThenRerunEqualsAFreshRun) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  for (const DtypeCase& dc : kDtypes) {
    const auto model = llama_make_random(batch_config(), dc.dtype, 31);
    const int64_t V = model->config.vocab_size;
    std::vector<int32_t> seq0, seq2;
    for (int i = 0; i < 30; i++) seq0.push_back(token_at(1, 0, i, V));
    for (int i = 0; i < 11; i++) seq2.push_back(token_at(2, 2, i, V));
    CudaBatchedLlamaRunner used(*model, 3, kCtx);
    std::vector<BatchRow> rows;
    for (int32_t t : seq0) rows.push_back({0, t});
    for (int32_t t : seq2) rows.push_back({2, t});
    used.forward_batch(rows);
    used.truncate(0, 17);
    used.truncate(2, 5);
    EXPECT_EQ(used.n_past(0), 17);
    EXPECT_EQ(used.n_past(2), 5);
    const std::vector<BatchRow> next = {{2, 9}, {2, 3}, {0, 7}, {0, 1}, {0, 60}, {1, 4}};
    const float* u = used.forward_batch(next);
    const std::vector<float> got(u, u + next.size() * V);

    CudaBatchedLlamaRunner fresh(*model, 3, kCtx);
    std::vector<BatchRow> prefix;
    for (int i = 0; i < 5; i++) prefix.push_back({2, seq2[i]});
    for (int i = 0; i < 17; i++) prefix.push_back({0, seq0[i]});
    fresh.forward_batch(prefix, /*last_only=*/true);
    const float* f = fresh.forward_batch(next);
    EXPECT_TRUE(same_bits(got.data(), f, static_cast<int64_t>(next.size()) * V))
        << dtype_name(dc.dtype);
  }
}

// The planted bugs: the bit comparison must see the planted slot, and only it, differ.
TEST(CudaBatchedForward, DetectsPlantedCrossSlotAttention) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_random(batch_config(), DType::BF16, 11);
  Harness h(*model, Plant::kCrossSlotAttention, /*with_cpu=*/false);
  const auto differ = run_schedule(h, fixed_schedule(64));
  for (size_t step = 0; step < differ.size(); step++)
    EXPECT_EQ(differ[step], std::set<int64_t>{1}) << "step " << step;
}

TEST(CudaBatchedForward, DetectsPlantedRollbackOffByOne) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_random(batch_config(), DType::BF16, 11);
  Harness h(*model, Plant::kRollbackOffByOne, /*with_cpu=*/false);
  const auto differ = run_schedule(h, fixed_schedule(64));
  EXPECT_TRUE(differ[0].empty());  // nothing rolled back yet
  for (size_t step = 1; step < differ.size(); step++)
    EXPECT_EQ(differ[step], std::set<int64_t>{2}) << "step " << step;
}

// (d) The batched decoders on the device: 9 requests (prompts of 1..22 tokens, budgets of
// 3..30, one cut by the context) at concurrency 3 and 4 against concurrency 1.
std::vector<GenerationRequest> decoder_queue(float temperature, int64_t vocab) {
  std::vector<GenerationRequest> q;
  for (int i = 0; i < 9; i++) {
    GenerationRequest r;
    const int n = 1 + (i * 7) % 22;
    for (int j = 0; j < n; j++)
      r.prompt.push_back(static_cast<int32_t>((i * 29 + j * 13 + 3) % vocab));
    r.max_new_tokens = 3 + (i * 11) % 28;
    if (i == 5) {
      r.prompt.resize(80, 5);
      r.max_new_tokens = 40;  // 80 + 40 > kCtx: the context stops it
    }
    r.sampling.temperature = temperature;
    r.seed = 77;
    r.request_id = static_cast<uint64_t>(i);
    q.push_back(r);
  }
  return q;
}

void expect_same_request(const GenerationResult& got, const GenerationResult& ref,
                         const std::string& what) {
  EXPECT_EQ(got.tokens, ref.tokens) << what;
  EXPECT_EQ(got.stop, ref.stop) << what;
  ASSERT_EQ(got.rounds.size(), ref.rounds.size()) << what;
  for (size_t r = 0; r < ref.rounds.size(); r++) {
    EXPECT_EQ(got.rounds[r].n_draft, ref.rounds[r].n_draft) << what << " round " << r;
    EXPECT_EQ(got.rounds[r].n_accepted, ref.rounds[r].n_accepted) << what << " round " << r;
    EXPECT_EQ(got.rounds[r].drafted, ref.rounds[r].drafted) << what << " round " << r;
  }
}

TEST(CudaBatchedForward, BatchedDecodersGiveEachRequestItsConcurrencyOneTokens) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto target = llama_make_random(batch_config(), DType::BF16, 41);
  LlamaConfig dcfg = batch_config();
  dcfg.n_layers = 1;
  const auto other = llama_make_random(dcfg, DType::BF16, 42);
  struct Case {
    const char* draft;  // "other": a 1-layer random draft (drafts mostly rejected);
                        // "self": the target itself (every draft accepted at T 0)
    float temperature;
    int gamma;
  };
  const Case cases[] = {{"other", 0.0f, 4}, {"self", 0.0f, 3}, {"other", 0.9f, 3}};
  int64_t accepted_self = 0;
  for (const Case& c : cases) {
    const LlamaModel& draft_model = std::string(c.draft) == "self" ? *target : *other;
    const auto queue = decoder_queue(c.temperature, target->config.vocab_size);
    SpeculativeConfig cfg;
    cfg.gamma = c.gamma;
    cfg.draft_sampling = queue[0].sampling;
    std::vector<GenerationResult> ref_spec, ref_plain;
    for (int64_t n : {1, 3, 4}) {
      CudaBatchedLlamaRunner t(*target, n, kCtx);
      CudaBatchedLlamaRunner d(draft_model, n, kCtx);
      BatchedModelDrafter drafter(d, c.draft, &draft_model);
      const BatchedGeneration spec = generate_batched_speculative(t, drafter, queue, cfg);
      const BatchedGeneration plain = generate_batched_autoregressive(t, queue);
      ASSERT_EQ(spec.results.size(), queue.size());
      ASSERT_EQ(plain.results.size(), queue.size());
      if (n == 1) {
        ref_spec = spec.results;
        ref_plain = plain.results;
        continue;
      }
      for (size_t i = 0; i < queue.size(); i++) {
        const std::string what = std::string(c.draft) + " T " + std::to_string(c.temperature) +
                                 " concurrency " + std::to_string(n) + " request " +
                                 std::to_string(i);
        expect_same_request(spec.results[i], ref_spec[i], what + " speculative");
        EXPECT_EQ(plain.results[i].tokens, ref_plain[i].tokens) << what << " plain";
      }
    }
    // Greedy speculative decoding is greedy decoding of the target.
    if (c.temperature == 0.0f) {
      for (size_t i = 0; i < queue.size(); i++)
        EXPECT_EQ(ref_spec[i].tokens, ref_plain[i].tokens) << c.draft << " request " << i;
    }
    if (std::string(c.draft) == "self") {
      for (const auto& r : ref_spec)
        for (const auto& round : r.rounds) accepted_self += round.n_accepted;
    }
    EXPECT_EQ(ref_spec[5].stop, StopReason::kContext) << c.draft;
  }
  EXPECT_GT(accepted_self, 0);  // the self-draft's rounds accept, so slots advance unevenly
}

// Bad input: InputError before any device work, every slot unchanged (n_past, and the next
// batch's logits equal an untouched runner's).
class CudaBatchedForwardErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    SPECLAB_REQUIRE_CUDA_DEVICE();
    model_ = llama_make_random(batch_config(), DType::F32, 12);
    runner_ = std::make_unique<CudaBatchedLlamaRunner>(*model_, 3, 8);
    runner_->forward_batch({{0, 1}, {0, 2}, {1, 3}, {2, 4}, {2, 5}, {2, 6}});
  }
  void expect_unchanged() {
    EXPECT_EQ(runner_->n_past(0), 2);
    EXPECT_EQ(runner_->n_past(1), 1);
    EXPECT_EQ(runner_->n_past(2), 3);
    CudaBatchedLlamaRunner fresh(*model_, 3, 8);
    fresh.forward_batch({{0, 1}, {0, 2}, {1, 3}, {2, 4}, {2, 5}, {2, 6}});
    const std::vector<BatchRow> next = {{1, 7}, {0, 8}, {2, 9}};
    const float* want = fresh.forward_batch(next);
    const std::vector<float> w(want, want + 3 * model_->config.vocab_size);
    EXPECT_TRUE(same_bits(runner_->forward_batch(next), w.data(), 3 * model_->config.vocab_size));
  }
  // The message the CPU runner gives for the same call (the checks are shared: batch_rows.h).
  static std::string message_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no InputError)";
  }
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<CudaBatchedLlamaRunner> runner_;
};

TEST_F(CudaBatchedForwardErrors, BadRowsAreInputErrorsWithTheCpuRunnersMessages) {
  BatchedLlamaRunner cpu(*model_, 3, 8);
  cpu.forward_batch({{0, 1}, {0, 2}, {1, 3}, {2, 4}, {2, 5}, {2, 6}});
  const std::vector<std::vector<BatchRow>> bad = {
      {{0, 1}, {3, 1}},                                                  // unknown slot
      {{-1, 1}},                                                         // unknown slot
      {{0, 1}, {1, 64}},                                                 // token past vocab
      {{1, -1}},                                                         // negative token
      {{0, 1}, {1, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}},  // slot 2 overflows
      {{0, 1}, {1, 1}, {0, 1}},                                          // not consecutive
      {},                                                                // empty
  };
  for (const auto& rows : bad) {
    const std::string got = message_of([&] { runner_->forward_batch(rows); });
    EXPECT_NE(got, "(no InputError)");
    EXPECT_EQ(got, message_of([&] { cpu.forward_batch(rows); }));
  }
  expect_unchanged();
}

TEST_F(CudaBatchedForwardErrors, BadTruncate) {
  EXPECT_THROW(runner_->truncate(3, 0), InputError);
  EXPECT_THROW(runner_->truncate(1, 2), InputError);  // slot 1 holds 1 position
  EXPECT_THROW(runner_->truncate(0, -1), InputError);
  EXPECT_THROW(runner_->n_past(3), InputError);
  expect_unchanged();
}

TEST(CudaBatchedForwardSetup, NeedsAtLeastOneSlot) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  auto model = llama_make_random(batch_config(), DType::F32, 13);
  EXPECT_THROW(CudaBatchedLlamaRunner(*model, 0, 8), InputError);
}

// Host: the device cache is sized as the CPU runner's (the memory checks before allocation use
// either).
TEST(CudaBatchedRunnerHost, CacheBytesEqualTheCpuRunners) {
  const LlamaConfig c = batch_config();
  for (int64_t slots : {1, 3, 32})
    for (int64_t ctx : {8, 4096})
      EXPECT_EQ(CudaBatchedLlamaRunner::kv_cache_bytes_for(c, slots, ctx),
                BatchedLlamaRunner::kv_cache_bytes_for(c, slots, ctx));
  // slots x positions x layers x (K and V) x kv_dim x 4 bytes
  EXPECT_EQ(CudaBatchedLlamaRunner::kv_cache_bytes_for(c, 3, 8), size_t{3} * 8 * 2 * 2 * 32 * 4);
}

}  // namespace
}  // namespace speclab
