// Rotary position embedding (RoPE): frequencies and their application to Q/K rows.
//
// Head vector x of size head_dim is split into head_dim/2 pairs; pair i is rotated by the
// angle pos * inv_freq[i]:
//   (a, b) -> (a cos - b sin, a sin + b cos)
// The pairs are (i, i + head_dim/2) in HF's rotate_half layout, (2i, 2i+1) interleaved
// (GGUF's layout after HF-to-GGUF conversion permuted the Q/K rows).
#pragma once

#include <cstdint>

namespace speclab {

// inv_freq[i] = theta^(-2i / head_dim), i in [0, head_dim/2).   inv_freq: [head_dim/2]
void rope_inv_freq(float* inv_freq, int64_t head_dim, float theta);

// Llama 3 frequency scaling (HF _compute_llama3_parameters), in place over inv_freq: [n].
// wavelen = 2π / inv_freq; wavelen < orig/high_freq_factor: kept (high frequencies);
// wavelen > orig/low_freq_factor: divided by factor; between: smooth interpolation with
// smooth = (orig/wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor),
// inv_freq = (1 - smooth) * inv_freq / factor + smooth * inv_freq.
void rope_scale_llama3(float* inv_freq, int64_t n, float factor, float low_freq_factor,
                       float high_freq_factor, int64_t original_max_position);

// The pieces rope_apply is made of (the step team rotates heads one at a time):
// cos_t[i] = cos(pos * inv_freq[i]), sin_t[i] likewise, i < head_dim/2 (angles in double).
void rope_angles(float* cos_t, float* sin_t, int64_t pos, const float* inv_freq, int64_t head_dim);
// Rotates one head vector v: [head_dim] in place by the angles of rope_angles.
void rope_rotate(float* v, int64_t head_dim, const float* cos_t, const float* sin_t,
                 bool interleaved);

// Rotates every head of every token in place.
//   x: [n_tokens, n_heads, head_dim]; token t is at position pos0 + t. inv_freq: [head_dim/2]
void rope_apply(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0,
                const float* inv_freq, bool interleaved);

// The same with an explicit position per token (tree attention: a token's position is its
// depth in the token tree, not its batch index), bit-identical to rope_apply at equal
// positions.   x: [n_tokens, n_heads, head_dim], positions: [n_tokens]
void rope_apply_positions(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                          const int64_t* positions, const float* inv_freq, bool interleaved);

}  // namespace speclab
