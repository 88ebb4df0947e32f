// CudaLlamaRunner against LlamaRunner (the CPU specification): whole forward passes per
// dtype, KV truncation, and a greedy speculative run whose output must equal the CPU's.
// Skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "core/cuda/cuda_sampling.h"
#include "core/cuda/cuda_verify.h"
#include "core/error.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "models/llama/cuda/cuda_llama_runner.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/cuda/cuda_test_util.h"

namespace speclab {
namespace {

std::vector<float> copy_logits(const float* p, int64_t rows, int64_t vocab) {
  return std::vector<float>(p, p + rows * vocab);
}

TEST(CudaForward, MatchesCpuRunnerPerDtype) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  // Logit tolerances: F32 / Q8_0 / Q4_1 differ only in summation order; BF16 rounds the
  // activations to BF16 before cuBLAS, which compounds over the layers.
  struct Case {
    const char* spec;
    double atol, rtol;
  };
  for (const Case c : {Case{"tiny:F32", 2e-4, 1e-3}, Case{"tiny:Q8_0", 2e-4, 1e-3},
                       Case{"tiny:Q4_1", 2e-4, 1e-3}, Case{"tiny:BF16", 5e-2, 5e-2}}) {
    const auto model = llama_make_synthetic(c.spec, 42);
    LlamaRunner cpu(*model, 64);
    CudaLlamaRunner gpu(*model, 64);
    const int64_t V = cpu.vocab();
    EXPECT_EQ(gpu.vocab(), V);
    EXPECT_EQ(gpu.max_ctx(), 64);
    const std::vector<int32_t> prompt = {1, 5, 9, 2, 7, 3, 11};
    expect_close(copy_logits(gpu.forward(prompt.data(), 7), 7, V),
                 copy_logits(cpu.forward(prompt.data(), 7), 7, V), c.atol, c.rtol,
                 std::string(c.spec) + " prompt");
    const int32_t next[3] = {4, 8, 15};
    expect_close(copy_logits(gpu.forward(next, 3, /*last_only=*/true), 1, V),
                 copy_logits(cpu.forward(next, 3, true), 1, V), c.atol, c.rtol,
                 std::string(c.spec) + " decode last_only");
    // Roll back two tokens and continue differently: positions are reused.
    cpu.truncate(8);
    gpu.truncate(8);
    EXPECT_EQ(gpu.n_past(), 8);
    const int32_t alt[2] = {16, 23};
    expect_close(copy_logits(gpu.forward(alt, 2), 2, V), copy_logits(cpu.forward(alt, 2), 2, V),
                 c.atol, c.rtol, std::string(c.spec) + " after truncate");
  }
}

TEST(CudaForward, BadInputsAreInputErrorsAndLeaveTheRunnerUnchanged) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 1);
  CudaLlamaRunner gpu(*model, 8);
  const int32_t bad = static_cast<int32_t>(gpu.vocab());
  EXPECT_THROW(gpu.forward(&bad, 1), InputError);
  const std::vector<int32_t> many(9, 1);
  EXPECT_THROW(gpu.forward(many.data(), 9), InputError);
  EXPECT_EQ(gpu.n_past(), 0);
}

// One greedy speculative generation: the draft proposes gamma tokens by argmax; `score_and_verify`
// runs the target over [last, d_1..d_gamma] in one pass and verifies; both caches are then
// truncated. Returns the tokens after the prompt.
template <typename Runner>
using ScoreAndVerify = std::function<VerifyOutcome(
    Runner& target, const std::vector<int32_t>& batch, const std::vector<int32_t>& drafts)>;

template <typename Runner>
std::vector<int32_t> speculative_greedy(Runner& target, Runner& draft, std::vector<int32_t> tokens,
                                        int n_new, int gamma, const ScoreAndVerify<Runner>& score) {
  const size_t n_prompt = tokens.size();
  target.forward(tokens.data(), tokens.size() - 1);  // the last prompt token stays pending
  while (static_cast<int>(tokens.size() - n_prompt) < n_new) {
    std::vector<int32_t> seq = tokens;  // tokens + drafts so far; the draft caches seq[0, n_past)
    std::vector<int32_t> drafts;
    for (int i = 0; i < gamma; i++) {
      const std::vector<int32_t> feed(seq.begin() + draft.n_past(), seq.end());
      const float* l = draft.forward(feed.data(), feed.size(), /*last_only=*/true);
      drafts.push_back(sampling_argmax(l, draft.vocab()));
      seq.push_back(drafts.back());
    }
    std::vector<int32_t> batch = {tokens.back()};  // [last, d_1..d_gamma]
    batch.insert(batch.end(), drafts.begin(), drafts.end());
    const int64_t pos0 = target.n_past();
    const VerifyOutcome o = score(target, batch, drafts);
    const int64_t n_old = static_cast<int64_t>(tokens.size());
    tokens.insert(tokens.end(), drafts.begin(), drafts.begin() + o.n_accepted);
    tokens.push_back(o.next_token);
    target.truncate(pos0 + 1 + o.n_accepted);
    draft.truncate(std::min<int64_t>(draft.n_past(), n_old + o.n_accepted));
  }
  return std::vector<int32_t>(tokens.begin() + n_prompt, tokens.end());
}

TEST(CudaForward, GreedySpeculativeRunMatchesCpu) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 7);
  const int64_t n_layers = model->config.n_layers;
  std::vector<bool> skip(n_layers, false);
  skip[n_layers - 1] = true;  // self-speculation: the draft skips the last layer
  const std::vector<int32_t> prompt = {1, 17, 4, 99, 23};
  const int gamma = 4, n_new = 24;
  VerifyConfig cfg;
  cfg.greedy = true;
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  const int64_t V = model->config.vocab_size;

  // CPU: host logits -> sampling_standardize -> speculative_verify.
  LlamaRunner cpu_target(*model, 128), cpu_draft(*model, 128, skip);
  const std::vector<int32_t> cpu_out = speculative_greedy<LlamaRunner>(
      cpu_target, cpu_draft, prompt, n_new, gamma,
      [&](LlamaRunner& t, const std::vector<int32_t>& batch, const std::vector<int32_t>& d) {
        const float* logits = t.forward(batch.data(), batch.size());
        std::vector<float> p(batch.size() * V);  // [gamma + 1, vocab]
        for (size_t r = 0; r < batch.size(); r++)
          sampling_standardize(p.data() + r * V, logits + r * V, V, greedy);
        return speculative_verify(
            VerifyRound{static_cast<int>(d.size()), d.data(), nullptr, p.data(), V}, cfg, RngKey{});
      });

  // CUDA: logits, probabilities and the verdict stay on the device; only ids come back.
  CudaLlamaRunner gpu_target(*model, 128), gpu_draft(*model, 128, skip);
  CudaBuffer<float> p(static_cast<size_t>(gamma + 1) * V);
  CudaBuffer<int32_t> d_drafts(gamma);
  const std::vector<int32_t> gpu_out = speculative_greedy<CudaLlamaRunner>(
      gpu_target, gpu_draft, prompt, n_new, gamma,
      [&](CudaLlamaRunner& t, const std::vector<int32_t>& batch, const std::vector<int32_t>& d) {
        const float* logits = t.forward_device(batch.data(), batch.size());
        cuda_sampling_standardize(p.data(), logits, batch.size(), V, greedy, t.stream());
        d_drafts.upload(d.data(), d.size(), t.stream());
        return cuda_speculative_verify(CudaVerifyRound{static_cast<int>(d.size()), d_drafts.data(),
                                                       nullptr, p.data(), V, d.data()},
                                       cfg, RngKey{}, t.stream());
      });
  EXPECT_EQ(gpu_out, cpu_out);

  // Greedy speculative decoding is exactly greedy decoding of the target.
  LlamaRunner plain(*model, 128);
  std::vector<int32_t> ar;
  const float* l = plain.forward(prompt.data(), prompt.size(), true);
  while (ar.size() < cpu_out.size()) {
    ar.push_back(sampling_argmax(l, V));
    l = plain.forward(&ar.back(), 1, true);
  }
  EXPECT_EQ(cpu_out, ar);
}

}  // namespace
}  // namespace speclab
