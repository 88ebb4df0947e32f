#include "core/cuda/cuda_launch_config.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/cuda/cuda_top_set.h"
#include "core/error.h"

namespace speclab {

int64_t cuda_ceil_div(int64_t n, int64_t d) {
  SPECLAB_ASSERT(n >= 0 && d > 0);
  return (n + d - 1) / d;
}

CudaLaunch cuda_launch_elementwise(int64_t n) {
  CudaLaunch l;
  l.block = 256;
  l.grid_x = std::max<int64_t>(1, cuda_ceil_div(n, l.block));
  SPECLAB_ASSERT(l.grid_x <= kCudaMaxGridX);
  return l;
}

CudaLaunch cuda_launch_rowwise(int64_t n_rows, int64_t dim) {
  SPECLAB_ASSERT(n_rows >= 1 && dim >= 1);
  CudaLaunch l;
  l.grid_x = n_rows;
  l.block = static_cast<int>(std::min<int64_t>(1024, cuda_ceil_div(dim, kCudaWarp) * kCudaWarp));
  l.shared_bytes = sizeof(float) * (l.block / kCudaWarp);
  SPECLAB_ASSERT(l.grid_x <= kCudaMaxGridX);
  return l;
}

CudaMatmulPath cuda_matmul_path(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return CudaMatmulPath::kCublasSgemm;
    case DType::F16:
    case DType::BF16:
      return CudaMatmulPath::kCublasGemmEx;
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q4_K:
    case DType::Q6_K:
      return CudaMatmulPath::kDequantKernel;
  }
  SPECLAB_ASSERT(false);
  return CudaMatmulPath::kDequantKernel;
}

const char* cuda_matmul_path_name(CudaMatmulPath path) {
  switch (path) {
    case CudaMatmulPath::kCublasSgemm:
      return "cublasSgemm";
    case CudaMatmulPath::kCublasGemmEx:
      return "cublasGemmEx";
    case CudaMatmulPath::kDequantKernel:
      return "dequant-kernel";
  }
  return "?";
}

size_t cuda_matmul_workspace_bytes(DType dtype, int64_t n_tokens, int64_t n_in) {
  if (cuda_matmul_path(dtype) != CudaMatmulPath::kCublasGemmEx) return 0;
  return sizeof(uint16_t) * static_cast<size_t>(n_tokens) * static_cast<size_t>(n_in);
}

CudaLaunch cuda_launch_matmul_dequant(int64_t n_out, int64_t n_tokens) {
  SPECLAB_ASSERT(n_out >= 1 && n_tokens >= 1);
  CudaLaunch l;
  l.block = kCudaMatmulWarpsPerBlock * kCudaWarp;
  l.grid_x = cuda_ceil_div(n_out, kCudaMatmulWarpsPerBlock);
  l.grid_y = cuda_ceil_div(n_tokens, kCudaMatmulTokensPerWarp);
  SPECLAB_ASSERT(l.grid_x <= kCudaMaxGridX && l.grid_y <= kCudaMaxGridY);
  return l;
}

CudaLaunch cuda_launch_attention(int64_t n_tokens, int64_t n_heads) {
  SPECLAB_ASSERT(n_tokens >= 1 && n_heads >= 1);
  CudaLaunch l;
  l.block = kCudaAttentionBlock;
  l.grid_x = n_tokens * n_heads;
  l.shared_bytes = sizeof(float) * (kCudaAttentionBlock / kCudaWarp);
  SPECLAB_ASSERT(l.grid_x <= kCudaMaxGridX);
  return l;
}

size_t cuda_attention_scratch_bytes(int64_t n_tokens, int64_t n_heads, int64_t n_past) {
  return sizeof(float) * static_cast<size_t>(n_tokens * n_heads) *
         static_cast<size_t>(n_past + n_tokens);
}

int cuda_bf16_vec_tokens_env_value(const char* value) {
  if (value == nullptr || value[0] == '\0') return kCudaBf16VecMaxTokens;
  if (std::strcmp(value, "4") == 0) return 4;
  if (std::strcmp(value, "8") == 0) return 8;
  throw InputError(std::string("SPECLAB_CUDA_VEC_TOKENS must be 4 or 8, got '") + value + "'");
}

int cuda_bf16_vec_token_limit() {
  static const int limit = cuda_bf16_vec_tokens_env_value(std::getenv("SPECLAB_CUDA_VEC_TOKENS"));
  return limit;
}

int64_t cuda_sampling_chunks(int64_t vocab) { return cuda_ceil_div(vocab, kCudaSamplingChunk); }

size_t cuda_top_set_scratch_bytes(int64_t n_rows, int64_t vocab) {
  const size_t rows = static_cast<size_t>(n_rows);
  const size_t parts = rows * static_cast<size_t>(cuda_sampling_chunks(vocab));
  return rows * kCudaTopBuckets * sizeof(uint64_t) + 2 * rows * sizeof(CudaTopSelect) +
         parts * sizeof(double) + parts * sizeof(uint32_t);
}

size_t cuda_verify_scratch_bytes(int64_t vocab) {
  return sizeof(float) * static_cast<size_t>(vocab);
}

}  // namespace speclab
