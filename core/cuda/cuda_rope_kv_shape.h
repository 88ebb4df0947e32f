// The shapes of a RoPE + KV-cache write launch (core/cuda/cuda_rope_kv.h, its ragged twin
// core/cuda/cuda_rope_kv_rows.h and their shared body core/cuda/cuda_rope_kv_pair.cuh).
#pragma once

#include <cstdint>

namespace speclab {

// The shapes of one layer's rotation and cache write.
struct CudaRopeKvShape {
  int64_t n_tokens = 0;
  int64_t n_heads = 0;     // query heads
  int64_t n_kv_heads = 0;  // key/value heads
  int64_t head_dim = 0;
  bool interleaved = false;  // pairs (2i, 2i+1), else (i, i + head_dim/2)
};

}  // namespace speclab
