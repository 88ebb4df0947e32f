// The CUDA twin of attention (core/cpu_attention.h): causal GQA attention of n_tokens new
// query tokens over a device KV cache.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace speclab {

// Query token t sits at position n_past + t and attends to cache positions [0, n_past + t].
// The cache already holds the new tokens' K/V. All pointers are device pointers.
//   out:     [n_tokens, n_heads, head_dim]
//   q:       [n_tokens, n_heads, head_dim]   (RoPE applied)
//   k_cache: [>= n_past + n_tokens, n_kv_heads, head_dim]   (RoPE applied)
//   v_cache: [>= n_past + n_tokens, n_kv_heads, head_dim]
// Query head h reads kv head h / (n_heads / n_kv_heads); scores scaled by 1/sqrt(head_dim).
// Scores go to a stream-ordered scratch buffer (cuda_attention_scratch_bytes).
void cuda_attention(float* out, const float* q, const float* k_cache, const float* v_cache,
                    int64_t n_tokens, int64_t n_past, int64_t n_heads, int64_t n_kv_heads,
                    int64_t head_dim, cudaStream_t stream);

// The same attention (the same kernel, so the same floats) with n_past read from device
// memory and the scores in a caller's buffer: nothing in the launch depends on the position,
// so a CUDA graph that captured it replays at any n_past (CudaLlamaRunner's graphs).
//   n_past: [1] device int32, with *n_past + n_tokens <= n_ctx_max
//   scores: [n_tokens * n_heads, n_ctx_max] device scratch
void cuda_attention_at(float* out, const float* q, const float* k_cache, const float* v_cache,
                       int64_t n_tokens, const int32_t* n_past, int64_t n_heads, int64_t n_kv_heads,
                       int64_t head_dim, float* scores, int64_t n_ctx_max, cudaStream_t stream);

}  // namespace speclab
