// The speculative decoder on a CUDA target: generate_speculative reaches
// CudaLlamaRunner::verify_on_device (forward_device -> cuda_sampling_standardize ->
// cuda_speculative_verify), and its output must be the CPU target's: greedy token for token,
// sampled with the same Philox keys up to float summation order. Skips without a device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "models/decode/speculative_decoder.h"
#include "models/drafters/model_drafter.h"
#include "models/llama/cuda/cuda_llama_runner.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/cuda/cuda_test_util.h"

namespace speclab {
namespace {

TEST(CudaDeviceRound, GreedySpeculativeDecoderMatchesCpuOnTheDevicePath) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 7);
  std::vector<bool> skip(model->config.n_layers, false);
  skip.back() = true;  // self-speculation: the draft skips the last layer
  ModelDrafter drafter(*model, "self", 128, skip);
  LlamaRunner cpu(*model, 128);
  CudaLlamaRunner gpu(*model, 128);
  SpeculativeConfig cfg;
  cfg.gamma = 4;
  cfg.draft_sampling.temperature = 0;
  const GenerationResult ref = generate_speculative(cpu, drafter, decoder_request(0, 0), cfg);
  const GenerationResult got = generate_speculative(gpu, drafter, decoder_request(0, 0), cfg);
  EXPECT_EQ(got.tokens, ref.tokens);
  ASSERT_EQ(got.rounds.size(), ref.rounds.size());
  for (size_t r = 0; r < got.rounds.size(); r++) {
    EXPECT_EQ(got.rounds[r].n_accepted, ref.rounds[r].n_accepted) << "round " << r;
    EXPECT_EQ(got.rounds[r].sample_s, 0.0) << "round " << r << " sampled on the host";
  }
}

// Sampled rounds: the same keys, distributions equal up to float order, so the emitted
// tokens agree except where a uniform lands within rounding of a CDF boundary.
TEST(CudaDeviceRound, SampledSpeculativeDecoderAgreesWithCpu) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 7);
  const auto other = llama_make_synthetic("tiny:F32", 8);
  ModelDrafter drafter(*other, "other", 128);
  LlamaRunner cpu(*model, 128);
  CudaLlamaRunner gpu(*model, 128);
  SpeculativeConfig cfg;
  cfg.gamma = 4;
  cfg.draft_sampling.temperature = 1;
  int same = 0, total = 0;
  for (uint64_t seed = 0; seed < 16; seed++) {
    const GenerationResult ref = generate_speculative(cpu, drafter, decoder_request(1, seed), cfg);
    const GenerationResult got = generate_speculative(gpu, drafter, decoder_request(1, seed), cfg);
    // Compare up to the first difference: after it the contexts differ.
    size_t i = 0;
    while (i < ref.tokens.size() && i < got.tokens.size() && ref.tokens[i] == got.tokens[i]) i++;
    same += static_cast<int>(i);
    total += static_cast<int>(ref.tokens.size());
    for (const RoundRecord& r : got.rounds) EXPECT_EQ(r.sample_s, 0.0);
  }
  EXPECT_GE(same, total * 95 / 100) << same << " of " << total << " tokens agree";
}

// Bad arguments are refused before any device work: the cache is unchanged.
TEST(CudaDeviceRound, BadArgumentsLeaveTheRunnerUnchanged) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 7);
  CudaLlamaRunner gpu(*model, 128);
  const std::vector<int32_t> batch = {1, 2, 3};
  VerifyOutcome out;
  VerifyConfig bad_lenience;
  bad_lenience.lenience = 0;
  EXPECT_THROW(gpu.verify_on_device(batch.data(), 2, DraftRows{}, SamplingParams{}, bad_lenience,
                                    RngKey{}, &out),
               InputError);
  SamplingParams bad_top_p;
  bad_top_p.top_p = 0;
  EXPECT_THROW(
      gpu.verify_on_device(batch.data(), 2, DraftRows{}, bad_top_p, VerifyConfig{}, RngKey{}, &out),
      InputError);
  EXPECT_EQ(gpu.n_past(), 0);
}

// No tree attention on the device: tree speculation is refused with the one clear line (the
// CLI maps it to exit 2), and the cache is unchanged.
TEST(CudaDeviceRound, TreeSpeculationIsRefused) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 7);
  CudaLlamaRunner gpu(*model, 128);
  const std::vector<int32_t> prompt = {1, 2, 3};
  gpu.forward(prompt.data(), 3);
  const int32_t tok = 1, parent = 2;
  try {
    gpu.forward_tree(&tok, &parent, 1);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no tree attention"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gpu.keep_path(3, &tok, 0), InputError);
  EXPECT_EQ(gpu.n_past(), 3);
}

}  // namespace
}  // namespace speclab
