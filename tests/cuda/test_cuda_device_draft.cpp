// The draft model sampling on the device (CudaLlamaRunner::draft_on_device: forward_device ->
// cuda_sampling_standardize into a device row -> cuda_draft_sample at the host's uniform):
// the draw against sampling_draw at the same uniforms (agreement and the law, with planted
// wrong draws the check must reject), a CUDA drafter's proposals against the CPU drafter's,
// and whole speculative requests with the draft and the target on the device against the
// all-CPU path: greedy token for token, sampled up to float summation order. The device
// tests skip without a device; the planted-law test runs everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cuda/cuda_draft_sample.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/sampling.h"
#include "models/decode/speculative_decoder.h"
#include "models/drafters/draft_sampling.h"
#include "models/drafters/model_drafter.h"
#include "models/llama/cuda/cuda_llama_runner.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/draft_draw_check.h"

namespace speclab {
namespace {

// A standardized row of random logits (normal, sd 2) under params.   [vocab]
std::vector<float> random_q(int64_t vocab, const SamplingParams& sp, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(vocab)), q(static_cast<size_t>(vocab));
  for (float& f : logits) f = dist(gen);
  sampling_standardize(q.data(), logits.data(), vocab, sp);
  return q;
}

// n uniforms from the drafter's Philox stream (positions 0..n-1).
std::vector<double> draft_uniforms(int n) {
  std::vector<double> u(static_cast<size_t>(n));
  for (int j = 0; j < n; j++) u[static_cast<size_t>(j)] = draft_uniform(RngKey{5, 1, 0, 0, 0}, j);
  return u;
}

// The check accepts the host's own draw and rejects the planted wrong ones: the mirrored
// uniform (same law, other draws: agreement fails) and the next id (the law fails too).
TEST(DraftDrawCheck, RejectsPlantedWrongDraws) {
  const int64_t vocab = 500;
  SamplingParams sp;
  sp.temperature = 1.0f;
  const std::vector<float> q = random_q(vocab, sp, 3);
  const std::vector<double> u = draft_uniforms(4000);
  std::vector<int32_t> right, mirrored, next_id;
  for (double x : u) {
    right.push_back(sampling_draw(q.data(), vocab, x));
    mirrored.push_back(sampling_draw(q.data(), vocab, std::nextafter(1.0 - x, 0.0)));
    next_id.push_back(static_cast<int32_t>((right.back() + 1) % vocab));
  }
  const DrawCheck ok = draft_draw_check(q, u, right);
  EXPECT_TRUE(ok.passes()) << ok.agree << " of " << ok.n << ", p " << ok.gof.p_value;
  const DrawCheck m = draft_draw_check(q, u, mirrored);
  EXPECT_FALSE(m.passes()) << "mirrored u: " << m.agree << " of " << m.n;
  EXPECT_GT(m.gof.p_value, 1e-3) << "the mirrored draw has the right law";  // only agreement fails
  const DrawCheck o = draft_draw_check(q, u, next_id);
  EXPECT_FALSE(o.passes()) << "next id: " << o.agree << " of " << o.n;
  EXPECT_LT(o.gof.p_value, 1e-3) << "the next id's law is wrong";
}

// cuda_draft_sample on host-standardized rows (plain, top-k, top-p, greedy; a small and the
// Llama 3 vocabulary): the ids pass the draw check at the drafter's uniforms, and the
// scalars equal the host's up to summation order.
TEST(CudaDeviceDraft, DrawMatchesTheHostDrawAtTheSameUniforms) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  struct Row {
    int64_t vocab;
    SamplingParams sp;
    int n;
  };
  const Row rows[] = {{1000, {1.0f, 0, 1.0f}, 4000},
                      {1000, {0.7f, 40, 1.0f}, 4000},
                      {1000, {1.0f, 0, 0.9f}, 4000},
                      {1000, {0.0f, 0, 1.0f}, 200},
                      {128256, {1.0f, 0, 1.0f}, 1000}};
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message() << "vocab " << r.vocab << " T " << r.sp.temperature << " top_k "
                                    << r.sp.top_k << " top_p " << r.sp.top_p);
    const std::vector<float> q = random_q(r.vocab, r.sp, 17);
    const CudaBuffer<float> d_q = to_device(q);
    const std::vector<double> u = draft_uniforms(r.n);
    std::vector<int32_t> ids;
    const float top = *std::max_element(q.begin(), q.end());
    const double entropy = sampling_entropy_normalized(q.data(), r.vocab);
    for (double x : u) {
      const CudaDraftSample s = cuda_draft_sample(d_q.data(), r.vocab, x, nullptr);
      ids.push_back(s.token);
      ASSERT_GE(s.token, 0);
      ASSERT_LT(s.token, r.vocab);
      EXPECT_EQ(s.top_prob, top);  // a max: no rounding
      EXPECT_NEAR(s.entropy_norm, entropy, 1e-5);
    }
    if (r.sp.temperature == 0.0f) {  // one-hot: every uniform draws the argmax
      for (int32_t id : ids) EXPECT_EQ(id, sampling_argmax(q.data(), r.vocab));
      continue;
    }
    const DrawCheck c = draft_draw_check(q, u, ids);
    EXPECT_TRUE(c.passes()) << c.agree << " of " << c.n << " agree, chi-square p " << c.gof.p_value;
  }
  EXPECT_THROW(cuda_draft_sample(nullptr, 10, 1.0, nullptr), InputError);
}

TokenRunnerFactory cuda_factory() {
  return [](const LlamaModel& m, int64_t ctx, std::vector<bool> skip) {
    return std::unique_ptr<TokenRunner>(new CudaLlamaRunner(m, ctx, std::move(skip)));
  };
}

// A CUDA drafter's proposals against the CPU drafter's over growing contexts (catch-up and
// rollback): greedy identical tokens and records; sampled, the tokens agree up to float
// order (>= 95% of proposals identical); the fetched q rows are the host's within the F32
// logit tolerance of tests/cuda/test_cuda_forward.cpp carried through the softmax (1e-3
// relative).
TEST(CudaDeviceDraft, CudaDrafterProposesAsTheCpuDrafter) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 8);
  const int64_t vocab = model->config.vocab_size;
  ModelDrafter cpu(*model, "cpu", 128);
  ModelDrafter gpu(*model, "gpu", 128, {}, cuda_factory());
  for (float temperature : {0.0f, 1.0f}) {
    SamplingParams sp;
    sp.temperature = temperature;
    int same = 0, total = 0;
    for (uint64_t seed = 0; seed < 8; seed++) {
      std::vector<int32_t> context = {1, 17, 4, static_cast<int32_t>(seed * 13 % vocab)};
      for (int round = 0; round < 4; round++) {
        const RngKey key{seed, 0, static_cast<uint64_t>(context.size()), 0, 0};
        DraftProposal a, b;
        cpu.propose(context, 5, sp, DraftStopRule{}, key, &a);
        gpu.propose_keeping_q_on_device(context, 5, sp, DraftStopRule{}, key, &b);
        ASSERT_TRUE(b.q.empty());
        ASSERT_NE(b.q_device, nullptr);
        EXPECT_EQ(a.n_forward_calls, b.n_forward_calls);
        total++;
        if (a.tokens == b.tokens) {
          same++;
          gpu.fetch_q(&b);
          expect_close(b.q, a.q, 1e-6, 1e-3, "q rows");
          for (size_t i = 0; i < a.tokens.size(); i++) {
            EXPECT_NEAR(b.top_prob[i], a.top_prob[i], 1e-6 + 1e-3 * a.top_prob[i]);
            EXPECT_NEAR(b.entropy_norm[i], a.entropy_norm[i], 1e-3);
          }
        } else if (temperature == 0.0f) {
          ADD_FAILURE() << "greedy drafts differ at seed " << seed << " round " << round;
        }
        context.insert(context.end(), a.tokens.begin(),
                       a.tokens.begin() + std::min<size_t>(2, a.tokens.size()));
        context.push_back(static_cast<int32_t>((context.back() * 7 + 3) % vocab));
      }
    }
    EXPECT_GE(same, total * 95 / 100)
        << same << " of " << total << " proposals identical, T " << temperature;
  }
}

// Greedy, both models on the device (draft sampling there, the target verifying there):
// the all-CPU path's tokens and per-round acceptances, for self-speculation and for another
// model, with no host sampling in any round.
TEST(CudaDeviceDraft, GreedyDecoderWithDeviceDraftMatchesCpu) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 7);
  const auto other = llama_make_synthetic("tiny:F32", 8);
  std::vector<bool> skip(model->config.n_layers, false);
  skip.back() = true;
  LlamaRunner cpu(*model, 128);
  CudaLlamaRunner gpu(*model, 128);
  for (int self = 0; self < 2; self++) {
    const LlamaModel& draft = self ? *model : *other;
    const std::vector<bool> s = self ? skip : std::vector<bool>{};
    ModelDrafter cpu_drafter(draft, "draft", 128, s);
    ModelDrafter gpu_drafter(draft, "draft", 128, s, cuda_factory());
    SpeculativeConfig cfg;
    cfg.gamma = 4;
    cfg.draft_sampling.temperature = 0;
    const GenerationResult ref = generate_speculative(cpu, cpu_drafter, decoder_request(0, 0), cfg);
    const GenerationResult got = generate_speculative(gpu, gpu_drafter, decoder_request(0, 0), cfg);
    SCOPED_TRACE(self ? "self" : "other");
    EXPECT_EQ(got.tokens, ref.tokens);
    EXPECT_EQ(got.n_draft_calls, ref.n_draft_calls);
    ASSERT_EQ(got.rounds.size(), ref.rounds.size());
    for (size_t r = 0; r < got.rounds.size(); r++) {
      EXPECT_EQ(got.rounds[r].drafted, ref.rounds[r].drafted) << "round " << r;
      EXPECT_EQ(got.rounds[r].n_accepted, ref.rounds[r].n_accepted) << "round " << r;
      EXPECT_EQ(got.rounds[r].sample_s, 0.0) << "round " << r << " sampled on the host";
    }
  }
}

// A draft runner whose device draw uses the mirrored uniform 1 - u: a planted wrong draw.
class MirroredDraftRunner : public CudaLlamaRunner {
 public:
  using CudaLlamaRunner::CudaLlamaRunner;
  bool draft_on_device(const int32_t* tokens, int64_t n_tokens, int row,
                       const SamplingParams& sampling, double u, DraftStep* out) override {
    return CudaLlamaRunner::draft_on_device(tokens, n_tokens, row, sampling,
                                            std::nextafter(1.0 - u, 0.0), out);
  }
  bool draft_chain_on_device(const int32_t* tokens, int64_t n_tokens, int k,
                             const SamplingParams& sampling, const double* u,
                             DraftStep* out) override {
    std::vector<double> mirrored(u, u + k);
    for (double& x : mirrored) x = std::nextafter(1.0 - x, 0.0);
    return CudaLlamaRunner::draft_chain_on_device(tokens, n_tokens, k, sampling, mirrored.data(),
                                                  out);
  }
};

// Sampled requests, both models on the device, against the all-CPU path with the same keys:
// tokens agree up to the first difference on >= 95% of the tokens (float order only); the
// same statistic on a drafter that draws at the mirrored uniform falls below it (the check
// would catch a device draw that is not the host's).
TEST(CudaDeviceDraft, SampledDecoderWithDeviceDraftAgreesWithCpu) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 7);
  const auto other = llama_make_synthetic("tiny:F32", 8);
  LlamaRunner cpu(*model, 128);
  CudaLlamaRunner gpu(*model, 128);
  ModelDrafter cpu_drafter(*other, "other", 128);
  ModelDrafter gpu_drafter(*other, "other", 128, {}, cuda_factory());
  ModelDrafter mirrored_drafter(
      *other, "other", 128, {}, [](const LlamaModel& m, int64_t ctx, std::vector<bool> skip) {
        return std::unique_ptr<TokenRunner>(new MirroredDraftRunner(m, ctx, std::move(skip)));
      });
  SpeculativeConfig cfg;
  cfg.gamma = 4;
  cfg.draft_sampling.temperature = 1;
  const auto agreement = [&](ModelDrafter& drafter) {
    int same = 0, total = 0;
    for (uint64_t seed = 0; seed < 16; seed++) {
      const GenerationResult ref =
          generate_speculative(cpu, cpu_drafter, decoder_request(1, seed), cfg);
      const GenerationResult got =
          generate_speculative(gpu, drafter, decoder_request(1, seed), cfg);
      size_t i = 0;  // up to the first difference: after it the contexts differ
      while (i < ref.tokens.size() && i < got.tokens.size() && ref.tokens[i] == got.tokens[i]) i++;
      same += static_cast<int>(i);
      total += static_cast<int>(ref.tokens.size());
      for (const RoundRecord& r : got.rounds) EXPECT_EQ(r.sample_s, 0.0);
    }
    return static_cast<double>(same) / total;
  };
  const double honest = agreement(gpu_drafter);
  EXPECT_GE(honest, 0.95) << "device drafting agrees with the CPU on " << honest;
  const double mirrored = agreement(mirrored_drafter);
  EXPECT_LT(mirrored, 0.95) << "planted mirrored draw agrees on " << mirrored;
}

// The chain (draft_chain_on_device: each draw feeds the next pass on the device, one
// synchronization) against the same steps made one by one with draft_on_device on a second
// runner: the same ids, scalars and q rows, bit for bit (the same kernels on the same inputs),
// with graphs off and on, after a catch-up of several tokens and after a rollback; and the
// cache ends at the same position.
TEST(CudaDeviceDraft, ChainEqualsTheStepsOneByOne) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 8);
  const int64_t vocab = model->config.vocab_size;
  for (bool graphs : {false, true}) {
    CudaLlamaRunner steps(*model, 128), chain(*model, 128);
    steps.set_cuda_graphs(graphs);
    chain.set_cuda_graphs(graphs);
    SamplingParams sp;
    sp.temperature = 1.0f;
    const std::vector<int32_t> context = {1, 17, 4, 9, 33};
    for (int round = 0; round < 4; round++) {
      SCOPED_TRACE(testing::Message() << "graphs " << graphs << " round " << round);
      const int k = 3 + round % 3;
      const int64_t rewind = round == 0 ? 0 : 3;  // later rounds: a rollback, 2 tokens re-fed
      steps.truncate(rewind);
      chain.truncate(rewind);
      std::vector<double> u(static_cast<size_t>(k));
      for (int i = 0; i < k; i++)
        u[static_cast<size_t>(i)] = draft_uniform(RngKey{3, 0, 7, 0, 0}, i + round);
      const int32_t* fed = context.data() + rewind;
      const int64_t n_fed = static_cast<int64_t>(context.size()) - rewind;
      std::vector<DraftStep> a(static_cast<size_t>(k)), b(static_cast<size_t>(k));
      ASSERT_TRUE(steps.draft_on_device(fed, n_fed, 0, sp, u[0], &a[0]));
      for (int i = 1; i < k; i++) {
        const int32_t tok = a[static_cast<size_t>(i - 1)].token;
        ASSERT_TRUE(steps.draft_on_device(&tok, 1, i, sp, u[static_cast<size_t>(i)],
                                          &a[static_cast<size_t>(i)]));
      }
      ASSERT_TRUE(chain.draft_chain_on_device(fed, n_fed, k, sp, u.data(), b.data()));
      EXPECT_EQ(chain.n_past(), steps.n_past());
      for (int i = 0; i < k; i++) {
        EXPECT_EQ(b[static_cast<size_t>(i)].token, a[static_cast<size_t>(i)].token) << "step " << i;
        EXPECT_EQ(b[static_cast<size_t>(i)].top_prob, a[static_cast<size_t>(i)].top_prob)
            << "step " << i;
        EXPECT_EQ(b[static_cast<size_t>(i)].entropy_norm, a[static_cast<size_t>(i)].entropy_norm)
            << "step " << i;
      }
      std::vector<float> qa(static_cast<size_t>(k * vocab)), qb(qa.size());
      steps.download_draft_rows(k, qa.data());
      chain.download_draft_rows(k, qb.data());
      EXPECT_EQ(qa, qb);
    }
    if (graphs) {
      EXPECT_GT(chain.cuda_graph_stats().replays, 0) << "the chain never replayed a graph";
    }
  }
}

// The chain refuses bad arguments before any device work: k < 2, a uniform outside [0, 1) at
// any step, a bad token, no room for all k positions; the cache is unchanged.
TEST(CudaDeviceDraft, ChainBadArgumentsLeaveTheRunnerUnchanged) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 7);
  CudaLlamaRunner gpu(*model, 8);
  const int32_t tok = 3, bad_tok = 100000;
  std::vector<DraftStep> out(10);
  const std::vector<double> u = {0.5, 0.25, 0.75, 0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8};
  std::vector<double> late_bad = u;
  late_bad[3] = 1.0;
  EXPECT_THROW(gpu.draft_chain_on_device(&tok, 1, 1, SamplingParams{}, u.data(), out.data()),
               InputError);
  EXPECT_THROW(gpu.draft_chain_on_device(&tok, 1, 5, SamplingParams{}, late_bad.data(), out.data()),
               InputError);
  EXPECT_THROW(gpu.draft_chain_on_device(&bad_tok, 1, 3, SamplingParams{}, u.data(), out.data()),
               InputError);
  EXPECT_THROW(gpu.draft_chain_on_device(&tok, 1, 9, SamplingParams{}, u.data(), out.data()),
               InputError);  // 1 + 8 positions > max_ctx 8
  EXPECT_EQ(gpu.n_past(), 0);
  EXPECT_TRUE(gpu.draft_chain_on_device(&tok, 1, 8, SamplingParams{}, u.data(), out.data()));
  EXPECT_EQ(gpu.n_past(), 8);
}

// Bad arguments are refused before any device work: the cache is unchanged.
TEST(CudaDeviceDraft, BadArgumentsLeaveTheRunnerUnchanged) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 7);
  CudaLlamaRunner gpu(*model, 128);
  const int32_t tok = 3, bad_tok = 100000;
  DraftStep step;
  SamplingParams bad_top_p;
  bad_top_p.top_p = 0;
  EXPECT_THROW(gpu.draft_on_device(&tok, 1, 0, bad_top_p, 0.5, &step), InputError);
  EXPECT_THROW(gpu.draft_on_device(&tok, 1, 0, SamplingParams{}, 1.0, &step), InputError);
  EXPECT_THROW(gpu.draft_on_device(&tok, 1, -1, SamplingParams{}, 0.5, &step), InputError);
  EXPECT_THROW(gpu.draft_on_device(&bad_tok, 1, 0, SamplingParams{}, 0.5, &step), InputError);
  EXPECT_EQ(gpu.n_past(), 0);
  std::vector<float> host(static_cast<size_t>(model->config.vocab_size) * 2);
  EXPECT_THROW(gpu.download_draft_rows(2, host.data()), InputError);  // nothing drafted yet
}

}  // namespace
}  // namespace speclab
