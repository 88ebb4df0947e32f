// Launch configurations and workspace sizes of the CUDA kernels, as plain C++.
//
// Everything here is host arithmetic with no CUDA dependency, so it is unit-tested on
// machines without a GPU (tests/cuda/test_cuda_launch_config.cpp). The kernels in
// core/cuda/*.cu take their grid, block and scratch sizes from these functions only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace speclab {

constexpr int kCudaWarp = 32;
constexpr int64_t kCudaMaxGridX = 2147483647;  // 2^31 - 1
constexpr int64_t kCudaMaxGridY = 65535;

struct CudaLaunch {
  int64_t grid_x = 1;
  int64_t grid_y = 1;
  int block = 1;            // threads per block, a multiple of 32
  size_t shared_bytes = 0;  // dynamic shared memory per block
};

// ceil(n / d) for n >= 0, d > 0.
int64_t cuda_ceil_div(int64_t n, int64_t d);

// Elementwise kernels over n values: block 256, one value per thread.
CudaLaunch cuda_launch_elementwise(int64_t n);

// One block per row (rmsnorm, embedding rows): block = dim rounded up to a warp, at most 1024;
// shared memory: one float per warp for the block reduction.
CudaLaunch cuda_launch_rowwise(int64_t n_rows, int64_t dim);

// How cuda_matmul_weights computes out = x · Wᵀ for a weight dtype.
enum class CudaMatmulPath {
  kCublasSgemm,    // F32 weights
  kCublasGemmEx,   // F16 / BF16 weights: x converted to the same 16-bit type, FP32 compute
  kDequantKernel,  // Q8_0 / Q4_0 / Q4_1: our kernel dequantizes each weight on the fly
};
CudaMatmulPath cuda_matmul_path(DType dtype);
const char* cuda_matmul_path_name(CudaMatmulPath path);

// Bytes of the 16-bit copy of x [n_tokens, n_in] that the GemmEx path needs (0 otherwise).
size_t cuda_matmul_workspace_bytes(DType dtype, int64_t n_tokens, int64_t n_in);

// The dequantizing kernel: one warp per output row and per chunk of kCudaMatmulTokensPerWarp
// tokens (their partial sums live in registers); 4 warps per block.
//   grid_x: output rows / 4,  grid_y: token chunks.
constexpr int kCudaMatmulTokensPerWarp = 8;
constexpr int kCudaMatmulWarpsPerBlock = 4;
CudaLaunch cuda_launch_matmul_dequant(int64_t n_out, int64_t n_tokens);

// Attention: one block of 512 threads per (token, head): 16 warps share the positions' scores
// and 512 / head_dim groups the positions of the weighted sum of V (cuda_attention_head); the
// scores of a block live in a global scratch buffer [n_tokens * n_heads, n_ctx_max] (n_ctx_max
// = n_past + n_tokens), so the context length is bounded by device memory, not by shared
// memory. Every attention kernel takes this block size, so all sum in the same order.
constexpr int kCudaAttentionBlock = 512;
CudaLaunch cuda_launch_attention(int64_t n_tokens, int64_t n_heads);
size_t cuda_attention_scratch_bytes(int64_t n_tokens, int64_t n_heads, int64_t n_past);

// The vectorized BF16 kernel (core/cuda/cuda_matmul.cu) serves calls of 1 to
// cuda_bf16_vec_token_limit() tokens (kCudaBf16VecMaxTokens at most); more go to cuBLAS GemmEx,
// which rounds the activations to BF16. SPECLAB_CUDA_VEC_TOKENS: unset or empty -> 8, "4" or
// "8"; anything else is an InputError naming the variable and the value. 8 since the kernel
// computes four rows a warp from 5 tokens on (the activations loaded once for the four); the
// H200 record of 2026-12-04 had 4 (GemmEx flat at 5-8 tokens: 4.62-4.65 ms for the 3B step,
// the vectorized kernel 4.27 ms at 1 token), SPECLAB_CUDA_VEC_TOKENS=4 restores it.
constexpr int kCudaBf16VecMaxTokens = 8;
int cuda_bf16_vec_tokens_env_value(const char* value);
int cuda_bf16_vec_token_limit();  // the environment's, read once

// Logits standardization (cuda_sampling_standardize): each row in chunks of
// kCudaSamplingChunk logits, one block of kCudaSamplingBlock threads per (chunk, row), so a
// call's rows and a row's 128,256 logits spread over the whole chip.
constexpr int kCudaSamplingBlock = 256;
constexpr int64_t kCudaSamplingChunk = 4096;
int64_t cuda_sampling_chunks(int64_t vocab);

// Scratch of the sort-free top-k / top-p selection (core/cuda/cuda_sampling_top_set.cu) for
// n_rows rows: histograms uint64[n_rows, 256], two selection states a row (CudaTopSelect),
// tie counts uint32[n_rows, chunks] and kept-mass partial sums double[n_rows,
// chunks]; 8-byte members first.
size_t cuda_top_set_scratch_bytes(int64_t n_rows, int64_t vocab);

// Verification: one block of kCudaVerifyBlock threads; scratch float[vocab] for the residual.
constexpr int kCudaVerifyBlock = 1024;
size_t cuda_verify_scratch_bytes(int64_t vocab);

}  // namespace speclab
