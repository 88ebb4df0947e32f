// The CUDA twins of core/cpu_ops.h (and the embedding lookup of llama_runner.cpp): same
// names with a cuda_ prefix, same argument order, plus a stream. All pointers are device
// pointers; every call is asynchronous on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/cuda_weights.h"

namespace speclab {

// out[t, :] = row tokens[t] of w converted to FP32 (weights_row_to_f32 per token).
//   out: [n_tokens, w.cols]   tokens: [n_tokens] (device, ids in [0, w.rows) — checked by
//   the caller on the host)   w: [vocab, dim]
void cuda_embedding_lookup(float* out, const int32_t* tokens, const CudaWeightView& w,
                           int64_t n_tokens, cudaStream_t stream);

// RMSNorm per row: out = x / sqrt(mean(x^2) + eps) * weight (sum of squares in double).
//   out, x: [n_tokens, dim] (may alias)   weight: [dim]
void cuda_rmsnorm(float* out, const float* x, const float* weight, int64_t n_tokens, int64_t dim,
                  float eps, cudaStream_t stream);

// out = silu(gate) * up.   out, gate, up: [n] (out may alias gate or up)
void cuda_swiglu(float* out, const float* gate, const float* up, int64_t n, cudaStream_t stream);

// out[i, :] = x[rows[i], :] (copies; the batched runner's last row of each slot group).
//   out: [n, dim] (must not alias x)   x: [>= max(rows) + 1, dim]   rows: [n] device int32
void cuda_rows_gather(float* out, const float* x, const int32_t* rows, int64_t n, int64_t dim,
                      cudaStream_t stream);

// x += y.   x, y: [n]
void cuda_add_inplace(float* x, const float* y, int64_t n, cudaStream_t stream);

}  // namespace speclab
