// The CUDA runner on a real checkpoint against golden logits made by HF transformers in FP32
// (tests/golden/tiny-llama32.*: a 12 MB Llama-3.2-shaped BF16 checkpoint with GQA, llama3 RoPE
// scaling, tied embeddings). The SmolLM2 GGUF (98 MB) does not travel to the device machine, so
// tiny-llama32 is the golden check there. Skips without a device.
//
// Tolerance: the prompt is fed in two chunks; chunks of more than 8 tokens go through cuBLAS
// with the activations rounded to BF16 (8 mantissa bits), so logits (std 1.5, max 8.5) may move
// by a few hundredths where the CPU path is within 1e-4. Greedy decoding feeds one token per
// call (FP32 activations) and must reproduce transformers' 40 tokens wherever transformers'
// top-2 margin exceeds twice the tolerance (teacher-forced past a near tie).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "models/llama/cuda/cuda_llama_runner.h"
#include "models/llama/llama_model.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/golden_check.h"

namespace speclab {
namespace {

TEST(CudaGolden, TinyLlama32MatchesTransformers) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const testing::Golden g = testing::read_golden("tiny-llama32");
  auto model = llama_load(std::string(SPECLAB_SOURCE_DIR) + "/tests/data/tiny-llama32");
  const TokenRunnerFactory on_device = [](const LlamaModel& m, int64_t max_ctx,
                                          std::vector<bool> skip) -> std::unique_ptr<TokenRunner> {
    return std::make_unique<CudaLlamaRunner>(m, max_ctx, std::move(skip));
  };
  testing::check_against_golden(*model, g, 0.1, testing::Greedy::kWithinTolerance, on_device);
}

}  // namespace
}  // namespace speclab
