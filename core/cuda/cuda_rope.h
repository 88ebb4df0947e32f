// The CUDA twin of rope_apply (core/cpu_rope.h). The frequencies are computed on the host
// (llama_rope_inv_freq: theta, llama3 scaling or GGUF factors) and uploaded once, so both
// backends rotate by the same float inv_freq values.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace speclab {

// Rotates every head of every token in place; angles pos * inv_freq[i] in double, as on
// the CPU. Pairs (i, i + head_dim/2), or (2i, 2i+1) when interleaved.
//   x: [n_tokens, n_heads, head_dim] (device); token t at position pos0 + t.
//   inv_freq: [head_dim/2] (device)
void cuda_rope_apply(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0,
                     const float* inv_freq, bool interleaved, cudaStream_t stream);

}  // namespace speclab
