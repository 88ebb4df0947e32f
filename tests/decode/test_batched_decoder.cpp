// The batched decoders (continuous batching, models/decode/batched_decoder.h):
//
// 1. Batch invariance, token for token: every request served at concurrency N (1, 3, 4, 16)
//    emits exactly the tokens, stop reason and rounds (drafted and accepted counts) of its
//    batch-1 run through generate_speculative on a LlamaRunner (generate_autoregressive for
//    the plain loop), at temperature 0 and at temperature 0.9, for a draft model (batched
//    draft forwards), prompt lookup (per slot) and self-speculation (per slot), with requests
//    of different prompt lengths, budgets, stop ids and a context limit, on every matmul path
//    this CPU has. With the same random keys, identical tokens at T > 0 mean each request's
//    law is its batch-1 law, which the single-sequence exactness tests check.
// 2. Exactness at concurrency 4, per position: the law of every emitted token of 250,000
//    requests through the batched loop (requests finishing at different times, slots reused)
//    against the exact law of a second-order Markov target, as in test_exactness_positions.cpp;
//    and two planted bugs that must be rejected: a request verified against another
//    request's draft distribution, and a rollback off by one for one slot.
// 3. Bad input: one InputError before any work.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/error.h"
#include "core/gamma_policy.h"
#include "core/threads.h"
#include "models/decode/autoregressive.h"
#include "models/decode/batched_decoder.h"
#include "models/decode/speculative_decoder.h"
#include "models/drafters/batch_drafter.h"
#include "models/drafters/batched_model_drafter.h"
#include "models/drafters/model_drafter.h"
#include "models/drafters/prompt_lookup_drafter.h"
#include "models/llama/batched_llama_runner.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/decode/decode_test_models.h"
#include "tests/decode/markov_test_models.h"
#include "tests/exactness/exactness_position_check.h"
#include "tests/exactness/verify_exactness.h"

namespace speclab {
namespace {

constexpr int64_t kModelVocab = 64;
constexpr int64_t kCtx = 96;  // positions per slot (one request is cut by it)

// 11 requests: prompts of 1..24 tokens (some repeating themselves, for prompt lookup),
// budgets of 1..40 tokens, two with a stop id, one whose prompt + budget overflows kCtx.
std::vector<GenerationRequest> queue_of(const SamplingParams& sp) {
  std::vector<GenerationRequest> q;
  for (int i = 0; i < 11; i++) {
    GenerationRequest r;
    const int n = 1 + (i * 7) % 24;
    for (int j = 0; j < n; j++)
      r.prompt.push_back(static_cast<int32_t>((i * 29 + j * 13 + 3) % kModelVocab));
    if (i % 3 == 1) r.prompt.insert(r.prompt.end(), r.prompt.begin(), r.prompt.end());
    r.max_new_tokens = 1 + (i * 11) % 40;
    if (i == 4 || i == 9) r.stop_ids = {static_cast<int64_t>((i * 5) % kModelVocab), 17};
    if (i == 7) {
      r.prompt.resize(70, 5);
      r.max_new_tokens = 60;  // 70 + 60 > kCtx: the context stops it
    }
    r.sampling = sp;
    r.seed = 1000 + static_cast<uint64_t>(i % 2);
    r.request_id = static_cast<uint64_t>(i);
    q.push_back(r);
  }
  return q;
}

std::string isa_label(MatmulIsa isa) {
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

// Compares one request's batched result with its batch-1 reference.
void expect_same_request(const GenerationResult& batched, const GenerationResult& alone,
                         const std::string& what) {
  EXPECT_EQ(batched.tokens, alone.tokens) << what;
  EXPECT_EQ(batched.stop, alone.stop) << what;
  ASSERT_EQ(batched.rounds.size(), alone.rounds.size()) << what;
  for (size_t r = 0; r < alone.rounds.size(); r++) {
    EXPECT_EQ(batched.rounds[r].n_draft, alone.rounds[r].n_draft) << what << " round " << r;
    EXPECT_EQ(batched.rounds[r].n_accepted, alone.rounds[r].n_accepted) << what << " round " << r;
    EXPECT_EQ(batched.rounds[r].drafted, alone.rounds[r].drafted) << what << " round " << r;
  }
  EXPECT_EQ(batched.n_target_calls, alone.n_target_calls) << what;
  EXPECT_EQ(batched.n_draft_calls, alone.n_draft_calls) << what;
}

// Every matmul path (skipped where the CPU lacks it) x F32 and BF16 weights.
class BatchedDecoder : public ::testing::TestWithParam<std::tuple<MatmulIsa, DType>> {
 protected:
  void SetUp() override {
    saved_threads_ = threads_get();
    if (!matmul_force_isa(std::get<0>(GetParam())))
      GTEST_SKIP() << "this CPU lacks the instructions";
    threads_set(1);  // the batched forward's thread invariance is test_batched_forward.cpp's
    const DType dtype = std::get<1>(GetParam());
    target_ = llama_make_random(decode_test::small_config(kModelVocab), dtype, 11);
    LlamaConfig dc = decode_test::small_config(kModelVocab);
    dc.n_layers = 1;
    draft_ = llama_make_random(dc, dtype, 12);
  }
  void TearDown() override {
    matmul_force_isa(MatmulIsa::kBest);
    threads_set(saved_threads_);
  }

  // Batch-1 references: one LlamaRunner and one Drafter, request after request.
  std::vector<GenerationResult> alone(const std::string& drafter_kind,
                                      const std::vector<GenerationRequest>& queue,
                                      const SpeculativeConfig& cfg,
                                      const std::string& policy_name) {
    LlamaRunner target(*target_, kCtx);
    std::unique_ptr<Drafter> drafter = make_single_drafter(drafter_kind);
    std::vector<GenerationResult> out;
    for (const GenerationRequest& r : queue) {
      std::unique_ptr<GammaPolicy> policy = gamma_policy_create(policy_name, cfg.gamma);
      SpeculativeConfig c = cfg;
      c.policy = policy.get();
      out.push_back(generate_speculative(target, *drafter, r, c));
    }
    return out;
  }
  std::unique_ptr<Drafter> make_single_drafter(const std::string& kind) {
    if (kind == "model") return std::make_unique<ModelDrafter>(*draft_, "draft", kCtx);
    if (kind == "self")
      return std::make_unique<ModelDrafter>(*target_, "self", kCtx,
                                            std::vector<bool>{false, true, false});
    return std::make_unique<PromptLookupDrafter>(kModelVocab, 3, 1);
  }
  // The batched drafter of a kind for n slots (its runner kept in draft_runner_).
  std::unique_ptr<BatchDrafter> make_batch_drafter(const std::string& kind, int64_t n) {
    if (kind == "model") {
      draft_runner_ = std::make_unique<BatchedLlamaRunner>(*draft_, n, kCtx);
      return std::make_unique<BatchedModelDrafter>(*draft_runner_, "draft", draft_.get());
    }
    std::vector<std::unique_ptr<Drafter>> per_slot;
    for (int64_t s = 0; s < n; s++) per_slot.push_back(make_single_drafter(kind));
    return std::make_unique<PerSlotDrafters>(std::move(per_slot));
  }

  int saved_threads_ = 1;
  std::unique_ptr<LlamaModel> target_, draft_;
  std::unique_ptr<BatchedLlamaRunner> draft_runner_;
};

TEST_P(BatchedDecoder, EveryRequestEqualsItsBatchOneRun) {
  struct Case {
    const char* drafter;
    float temperature;
    int gamma;
    const char* policy;
  };
  const Case cases[] = {
      {"model", 0.0f, 4, "fixed"},  {"model", 0.9f, 3, "fixed"},  {"model", 0.9f, 5, "heuristic"},
      {"lookup", 0.0f, 4, "fixed"}, {"lookup", 0.9f, 2, "fixed"}, {"self", 0.9f, 3, "fixed"},
  };
  for (const Case& c : cases) {
    const SamplingParams sp{c.temperature, 0, 1.0f};
    const auto queue = queue_of(sp);
    SpeculativeConfig cfg;
    cfg.gamma = c.gamma;
    cfg.draft_sampling = sp;
    const auto reference = alone(c.drafter, queue, cfg, c.policy);
    for (int64_t n : {1, 3, 4, 16}) {
      BatchedLlamaRunner target(*target_, n, kCtx);
      auto drafter = make_batch_drafter(c.drafter, n);
      const BatchedGeneration got =
          generate_batched_speculative(target, *drafter, queue, cfg, c.policy);
      ASSERT_EQ(got.results.size(), queue.size());
      EXPECT_EQ(got.concurrency, n);
      // The steps account for every token, and no step held more requests than slots.
      int64_t emitted = 0;
      for (const BatchStep& s : got.steps) {
        EXPECT_LE(s.n_active, n);
        emitted += s.n_emitted;
      }
      EXPECT_EQ(emitted, got.total_tokens());
      for (size_t i = 0; i < queue.size(); i++)
        expect_same_request(got.results[i], reference[i],
                            std::string(c.drafter) + " T " + std::to_string(c.temperature) +
                                " gamma " + std::to_string(c.gamma) + " " + c.policy +
                                " concurrency " + std::to_string(n) + " request " +
                                std::to_string(i));
    }
  }
  // Request 7 met the context, request 4 or 9 a stop id (else the cases test less).
  const auto queue = queue_of(SamplingParams{0.9f, 0, 1.0f});
  SpeculativeConfig cfg;
  cfg.gamma = 3;
  cfg.draft_sampling = queue[0].sampling;
  const auto reference = alone("model", queue, cfg, "fixed");
  EXPECT_EQ(reference[7].stop, StopReason::kContext);
  int max_accepted = 0;
  for (const auto& r : reference)
    for (const auto& round : r.rounds) max_accepted = std::max(max_accepted, round.n_accepted);
  EXPECT_GE(max_accepted, 1);  // some rounds accept drafts, so slots advance unevenly
}

// gamma_by_load (the load-following policy): every request of a round with b requests in flight
// drafts gamma_by_load[b] (0: none, a plain step), whatever its gamma policy; at temperature 0
// the tokens are still the plain loop's.
TEST_P(BatchedDecoder, GammaByLoadSetsEveryRoundsDraftLength) {
  SamplingParams greedy;
  greedy.temperature = 0;
  std::vector<GenerationRequest> queue = queue_of(greedy);
  for (GenerationRequest& r : queue) {
    r.stop_ids.clear();
    r.max_new_tokens = 24;
    r.prompt.resize(std::min<size_t>(r.prompt.size(), 12));
  }
  const int n = 4;
  BatchedLlamaRunner target(*target_, n, kCtx);
  auto drafter = make_batch_drafter("model", n);
  SpeculativeConfig cfg;
  cfg.gamma = 3;
  cfg.gamma_by_load = {0, 3, 2, 1, 0};  // 4 in flight: no drafting; fewer: more
  const BatchedGeneration spec = generate_batched_speculative(target, *drafter, queue, cfg);
  const BatchedGeneration plain = generate_batched_autoregressive(target, queue);
  for (size_t i = 0; i < queue.size(); i++)
    EXPECT_EQ(spec.results[i].tokens, plain.results[i].tokens) << "request " << i;
  int steps_at[5] = {0, 0, 0, 0, 0};
  for (const BatchStep& st : spec.steps) {
    ASSERT_GE(st.n_active, 1);
    ASSERT_LE(st.n_active, 4);
    steps_at[st.n_active]++;
    // Each request drafts the table's k, less only near its budget's end.
    EXPECT_LE(st.n_draft_rows, static_cast<int64_t>(cfg.gamma_by_load[st.n_active]) * st.n_active)
        << "step with " << st.n_active << " active";
    if (st.n_active == 4) {
      EXPECT_EQ(st.n_draft_rows, 0);
    }
  }
  EXPECT_GT(steps_at[4], 0);  // the queue kept all slots busy for a while
  EXPECT_GT(steps_at[1] + steps_at[2] + steps_at[3], 0);
  int64_t drafted_when_fewer = 0;
  for (const BatchStep& st : spec.steps)
    if (st.n_active < 4) drafted_when_fewer += st.n_draft_rows;
  EXPECT_GT(drafted_when_fewer, 0);
}

TEST_P(BatchedDecoder, PlainLoopEqualsAutoregressive) {
  for (float t : {0.0f, 0.9f}) {
    const auto queue = queue_of(SamplingParams{t, 0, 1.0f});
    LlamaRunner single(*target_, kCtx);
    std::vector<GenerationResult> reference;
    for (const auto& r : queue) reference.push_back(generate_autoregressive(single, r));
    for (int64_t n : {1, 4, 16}) {
      BatchedLlamaRunner target(*target_, n, kCtx);
      const BatchedGeneration got = generate_batched_autoregressive(target, queue);
      for (size_t i = 0; i < queue.size(); i++) {
        const std::string what = "T " + std::to_string(t) + " concurrency " + std::to_string(n) +
                                 " request " + std::to_string(i);
        EXPECT_EQ(got.results[i].tokens, reference[i].tokens) << what;
        EXPECT_EQ(got.results[i].stop, reference[i].stop) << what;
        EXPECT_EQ(got.results[i].n_target_calls, reference[i].n_target_calls) << what;
        const RequestTiming& tm = got.timing[i];
        EXPECT_LE(tm.admitted_s, tm.first_token_s) << what;
        EXPECT_LE(tm.first_token_s, tm.finished_s) << what;
        EXPECT_GE(tm.slot, 0) << what;
        EXPECT_LT(tm.slot, n) << what;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    IsaDtype, BatchedDecoder,
    ::testing::Combine(::testing::Values(MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512,
                                         MatmulIsa::kAvx512Bf16, MatmulIsa::kAvx512Vnni,
                                         MatmulIsa::kAmxBf16),
                       ::testing::Values(DType::F32, DType::BF16)),
    [](const ::testing::TestParamInfo<std::tuple<MatmulIsa, DType>>& info) {
      return isa_label(std::get<0>(info.param)) + "_" + dtype_name(std::get<1>(info.param));
    });

// ---------------------------------------------------------------------------------------
// Exactness per position at concurrency 4 (Markov laws).

using decode_test::markov_standardized_target;
using decode_test::MarkovBatchRunner;
using decode_test::MarkovDrafter;
using namespace testing::position_check;  // NOLINT(build/namespaces)

const MarkovPair& far_pair() {
  static const MarkovPair m =
      exactness_random_markov_pair(testing::position_check::kVocab, 6, 2.0, 2.0, 4.0);
  return m;
}

// Wraps a BatchDrafter and reports the first two proposals' q rows swapped (each request is
// verified against the other's draft distribution): a planted bug (test only).
class SwappedQDrafter : public BatchDrafter {
 public:
  explicit SwappedQDrafter(BatchDrafter& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  int64_t vocab_size() const override { return inner_.vocab_size(); }
  int64_t n_slots() const override { return inner_.n_slots(); }
  void propose_batch(const std::vector<SlotDraftRequest>& requests, const SamplingParams& params,
                     const DraftStopRule& stop, std::vector<DraftProposal>* out) override {
    inner_.propose_batch(requests, params, stop, out);
    if (out->size() < 2) return;
    DraftProposal& a = (*out)[0];
    DraftProposal& b = (*out)[1];
    const size_t n = std::min(a.q.size(), b.q.size());
    std::swap_ranges(a.q.begin(), a.q.begin() + static_cast<std::ptrdiff_t>(n), b.q.begin());
  }
  void reset_slot(int64_t slot) override { inner_.reset_slot(slot); }

 private:
  BatchDrafter& inner_;
};

// kTrials requests of max_new_tokens gamma + 2 through the batched loop at concurrency 4;
// counts positions 1..gamma+1 of every request.
PositionCounts batched_chain_counts(const MarkovPair& m, int gamma, const SamplingParams& sp,
                                    const SamplingParams& draft_sp, uint64_t seed,
                                    int64_t off_by_one_slot, bool swap_q) {
  constexpr int64_t kSlots = 4;
  MarkovBatchRunner target(m, kSlots, 64, off_by_one_slot);
  std::vector<std::unique_ptr<Drafter>> per_slot;
  for (int64_t s = 0; s < kSlots; s++)
    per_slot.push_back(std::make_unique<MarkovDrafter>(m, false));
  PerSlotDrafters drafters(std::move(per_slot));
  SwappedQDrafter swapped(drafters);
  BatchDrafter& drafter = swap_q ? static_cast<BatchDrafter&>(swapped) : drafters;
  SpeculativeConfig cfg;
  cfg.gamma = gamma;
  cfg.draft_sampling = draft_sp;
  std::vector<GenerationRequest> queue(static_cast<size_t>(kTrials));
  for (int64_t t = 0; t < kTrials; t++) {
    GenerationRequest& r = queue[static_cast<size_t>(t)];
    r.prompt = {0, m.a0, m.b0};
    r.max_new_tokens = gamma + 2;
    r.sampling = sp;
    r.seed = seed;
    r.request_id = static_cast<uint64_t>(t);
  }
  const BatchedGeneration got = generate_batched_speculative(target, drafter, queue, cfg);
  PositionCounts counts;
  counts.triples.assign(gamma + 1, std::vector<int64_t>(4 * 4 * 4, 0));
  int64_t multi_round = 0;
  for (int64_t t = 0; t < kTrials; t++) {
    const GenerationResult& out = got.results[static_cast<size_t>(t)];
    if (out.rounds.empty() || out.rounds[0].n_draft != gamma ||
        out.tokens.size() != static_cast<size_t>(gamma + 2)) {
      ADD_FAILURE() << "request " << t << ": first round drafted "
                    << (out.rounds.empty() ? -1 : out.rounds[0].n_draft) << " of gamma " << gamma;
      return counts;
    }
    multi_round += out.rounds.size() > 2 ? 1 : 0;
    exactness_count_sequence(m, out.tokens, &counts);
  }
  // Requests finished after different numbers of rounds, so slots were reused out of step.
  EXPECT_GT(multi_round, kTrials / 10);
  EXPECT_LT(multi_round, kTrials);
  return counts;
}

TEST(BatchedDecoderExactness, EveryPositionAtConcurrency4) {
  const SamplingParams t1{1.0f, 0, 1.0f};
  expect_exact("batched chain gamma 2, concurrency 4", far_pair(),
               batched_chain_counts(far_pair(), 2, t1, t1, 500, -1, false));
  const SamplingParams t08{0.8f, 0, 1.0f};
  const SamplingParams t13{1.3f, 0, 1.0f};
  expect_exact("batched chain gamma 4, T 0.8, draft T 1.3, concurrency 4",
               markov_standardized_target(far_pair(), t08),
               batched_chain_counts(far_pair(), 4, t08, t13, 501, -1, false));
}

TEST(BatchedDecoderExactness, PlantOtherRequestsDraftDistributionIsRejected) {
  const SamplingParams t1{1.0f, 0, 1.0f};
  expect_rejected_at("plant: requests 0 and 1 of every step verified against each other's q",
                     far_pair(), batched_chain_counts(far_pair(), 2, t1, t1, 510, -1, true), 1);
}

TEST(BatchedDecoderExactness, PlantRollbackOffByOneForOneSlotIsRejected) {
  const SamplingParams t1{1.0f, 0, 1.0f};
  expect_rejected_at("plant: slot 2 keeps one rejected position", far_pair(),
                     batched_chain_counts(far_pair(), 2, t1, t1, 511, 2, false), 2);
}

// ---------------------------------------------------------------------------------------

TEST(BatchedDecoderInput, BadInputThrowsBeforeAnyWork) {
  auto target_model = llama_make_random(decode_test::small_config(kModelVocab), DType::F32, 11);
  BatchedLlamaRunner target(*target_model, 2, 32);
  auto make_lookup = [](int64_t n, int64_t vocab) {
    std::vector<std::unique_ptr<Drafter>> d;
    for (int64_t s = 0; s < n; s++) d.push_back(std::make_unique<PromptLookupDrafter>(vocab, 3, 1));
    return std::make_unique<PerSlotDrafters>(std::move(d));
  };
  SpeculativeConfig cfg;
  GenerationRequest ok;
  ok.prompt = {1, 2, 3};
  ok.max_new_tokens = 4;
  const auto throws = [&](BatchDrafter& d, const std::vector<GenerationRequest>& q,
                          const SpeculativeConfig& c, const std::string& policy,
                          const std::string& expected) {
    try {
      generate_batched_speculative(target, d, q, c, policy);
      ADD_FAILURE() << "no error, expected: " << expected;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
    for (int64_t s = 0; s < target.n_slots(); s++) EXPECT_EQ(target.n_past(s), 0);
  };
  auto lookup2 = make_lookup(2, kModelVocab);
  throws(*lookup2, {}, cfg, "fixed", "no request");
  GenerationRequest too_long = ok;
  too_long.prompt.assign(32, 1);
  throws(*lookup2, {ok, too_long}, cfg, "fixed", "request 1: prompt: 32 tokens do not fit");
  GenerationRequest empty = ok;
  empty.prompt.clear();
  throws(*lookup2, {empty}, cfg, "fixed", "request 0: prompt: empty");
  auto lookup3 = make_lookup(3, kModelVocab);
  throws(*lookup3, {ok}, cfg, "fixed", "3 slots, the target has 2");
  auto other_vocab = make_lookup(2, kModelVocab + 1);
  throws(*other_vocab, {ok}, cfg, "fixed", "vocabulary of 65 tokens, the target has 64");
  throws(*lookup2, {ok}, cfg, "sometimes", "sometimes");
  SpeculativeConfig bad = cfg;
  bad.synthetic_accept = {0.5, 1.5};
  throws(*lookup2, {ok}, bad, "fixed", "synthetic acceptance: 1.5");
  bad = cfg;
  bad.gamma = 0;
  throws(*lookup2, {ok}, bad, "fixed", "gamma: 0");
  bad = cfg;
  bad.gamma = 3;
  bad.gamma_by_load = {0, 2, 4};
  throws(*lookup2, {ok}, bad, "fixed", "gamma by load: 4 (expected 0..3)");
  try {
    generate_batched_autoregressive(target, {too_long});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("request 0: prompt: 32 tokens"), std::string::npos);
  }
}

// batch_drafter_create refuses a draft model that cannot serve the target, before allocating
// its slots: another vocabulary (synthetic:tiny has 256 ids), a context beyond the draft's.
TEST(BatchedDecoderInput, DrafterFactoryRefusesADraftThatCannotServe) {
  auto target = llama_make_random(decode_test::small_config(kModelVocab), DType::F32, 11);
  const auto message = [&](const std::string& spec, int64_t max_ctx) {
    try {
      batch_drafter_create(spec, *target, 2, max_ctx);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("synthetic:tiny:f32", 64)
                .find("draft 'synthetic:tiny:f32': vocabulary of 256 "
                      "tokens, the target has 64"),
            std::string::npos);
  EXPECT_NE(message("synthetic:tiny:f32", 4096)
                .find("a context of 4096 tokens (generation.ctx) "
                      "exceeds the draft model's context length 2048"),
            std::string::npos);
  EXPECT_NE(message("lookup:n=x", 64).find("'x' is not an integer"), std::string::npos);
  // A model-free drafter gets one instance per slot.
  auto lookup = batch_drafter_create("lookup", *target, 3, 64);
  EXPECT_EQ(lookup->n_slots(), 3);
  EXPECT_EQ(lookup->model(), nullptr);
}

}  // namespace
}  // namespace speclab
