// Host-side launch arithmetic of the CUDA backend (no GPU needed).
#include <gtest/gtest.h>

#include <string>

#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_sampling.h"
#include "core/error.h"

namespace speclab {
namespace {

TEST(CudaLaunchConfig, CeilDiv) {
  EXPECT_EQ(cuda_ceil_div(0, 4), 0);
  EXPECT_EQ(cuda_ceil_div(1, 4), 1);
  EXPECT_EQ(cuda_ceil_div(8, 4), 2);
  EXPECT_EQ(cuda_ceil_div(9, 4), 3);
}

TEST(CudaLaunchConfig, ElementwiseCoversEveryValue) {
  for (int64_t n : {1, 255, 256, 257, 1000000}) {
    const CudaLaunch l = cuda_launch_elementwise(n);
    EXPECT_EQ(l.block, 256);
    EXPECT_GE(l.grid_x * l.block, n);
    EXPECT_LT((l.grid_x - 1) * l.block, n);
  }
  EXPECT_EQ(cuda_launch_elementwise(0).grid_x, 1);  // never an empty grid
}

TEST(CudaLaunchConfig, RowwiseBlockIsAWarpMultipleUpTo1024) {
  struct Case {
    int64_t dim;
    int block;
  };
  for (const Case c : {Case{1, 32}, Case{32, 32}, Case{33, 64}, Case{576, 576}, Case{2048, 1024},
                       Case{3072, 1024}}) {
    const CudaLaunch l = cuda_launch_rowwise(7, c.dim);
    EXPECT_EQ(l.block, c.block) << c.dim;
    EXPECT_EQ(l.grid_x, 7);
    EXPECT_EQ(l.shared_bytes, sizeof(float) * (c.block / 32));
  }
}

TEST(CudaLaunchConfig, MatmulPathByDtype) {
  EXPECT_EQ(cuda_matmul_path(DType::F32), CudaMatmulPath::kCublasSgemm);
  EXPECT_EQ(cuda_matmul_path(DType::F16), CudaMatmulPath::kCublasGemmEx);
  EXPECT_EQ(cuda_matmul_path(DType::BF16), CudaMatmulPath::kCublasGemmEx);
  EXPECT_EQ(cuda_matmul_path(DType::Q8_0), CudaMatmulPath::kDequantKernel);
  EXPECT_EQ(cuda_matmul_path(DType::Q4_0), CudaMatmulPath::kDequantKernel);
  EXPECT_EQ(cuda_matmul_path(DType::Q4_1), CudaMatmulPath::kDequantKernel);
  EXPECT_STREQ(cuda_matmul_path_name(CudaMatmulPath::kCublasGemmEx), "cublasGemmEx");
}

TEST(CudaLaunchConfig, MatmulWorkspaceOnlyForGemmEx) {
  EXPECT_EQ(cuda_matmul_workspace_bytes(DType::BF16, 5, 2048), 2u * 5 * 2048);
  EXPECT_EQ(cuda_matmul_workspace_bytes(DType::F16, 1, 64), 2u * 64);
  EXPECT_EQ(cuda_matmul_workspace_bytes(DType::F32, 5, 2048), 0u);
  EXPECT_EQ(cuda_matmul_workspace_bytes(DType::Q4_1, 5, 2048), 0u);
}

TEST(CudaLaunchConfig, MatmulDequantGridCoversRowsAndTokens) {
  // Llama-3.2-1B lm_head, a verification batch of gamma + 1 = 9 tokens.
  const CudaLaunch l = cuda_launch_matmul_dequant(128256, 9);
  EXPECT_EQ(l.block, kCudaMatmulWarpsPerBlock * 32);
  EXPECT_EQ(l.grid_x, 128256 / kCudaMatmulWarpsPerBlock);
  EXPECT_EQ(l.grid_y, 2);  // 8 + 1 tokens
  const CudaLaunch one = cuda_launch_matmul_dequant(5, 1);
  EXPECT_EQ(one.grid_x, 2);
  EXPECT_EQ(one.grid_y, 1);
}

TEST(CudaLaunchConfig, AttentionOneBlockPerTokenHead) {
  const CudaLaunch l = cuda_launch_attention(5, 32);
  EXPECT_EQ(l.grid_x, 160);
  EXPECT_EQ(l.block, kCudaAttentionBlock);
  EXPECT_EQ(cuda_attention_scratch_bytes(5, 32, 100), sizeof(float) * 160 * 105);
}

TEST(CudaLaunchConfig, SamplingAndVerifyWorkspaces) {
  // 5 rows of the Llama 3 vocabulary: 32 chunks of 4,096 logits a row.
  EXPECT_EQ(cuda_sampling_chunks(128256), 32);
  EXPECT_EQ(cuda_sampling_chunks(4096), 1);
  EXPECT_EQ(cuda_top_set_scratch_bytes(5, 128256), 5u * 256 * 8 + 2 * 5 * 32 + 5 * 32 * (8 + 4));
  EXPECT_EQ(cuda_verify_scratch_bytes(128256), 4u * 128256);
  EXPECT_EQ(kCudaVerifyBlock % 32, 0);
}

// SPECLAB_CUDA_VEC_TOKENS: the vectorized BF16 kernel's cut-over, 8 unless set to 4; any other
// value is one InputError naming the variable and the value.
TEST(CudaLaunchConfig, VecTokenLimitFromTheEnvironment) {
  EXPECT_EQ(cuda_bf16_vec_tokens_env_value(nullptr), 8);
  EXPECT_EQ(cuda_bf16_vec_tokens_env_value(""), 8);
  EXPECT_EQ(cuda_bf16_vec_tokens_env_value("8"), 8);
  EXPECT_EQ(cuda_bf16_vec_tokens_env_value("4"), 4);
  EXPECT_EQ(kCudaBf16VecMaxTokens, 8);
  for (const char* bad : {"5", "16", "four", " 4", "4 "}) {
    try {
      cuda_bf16_vec_tokens_env_value(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("SPECLAB_CUDA_VEC_TOKENS must be 4 or 8, got '") + bad + "'");
    }
  }
}

// More rows than the row-parallel kernels' grid holds (grid y: 65,535) is one InputError,
// raised on the host before any device work (so it holds without a device too).
TEST(CudaLaunchConfig, StandardizeRefusesRowsPastTheGrid) {
  SamplingParams sp;
  sp.temperature = 1.0f;
  try {
    cuda_sampling_standardize(nullptr, nullptr, 65536, 1000, sp, nullptr);
    FAIL() << "65,536 rows accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cuda_sampling_standardize: 65536 rows of 1000 logits exceed the kernels' grid");
  }
}

}  // namespace
}  // namespace speclab
