#include "core/cpu_rope.h"

#include <cmath>
#include <vector>

namespace speclab {

void rope_inv_freq(float* inv_freq, int64_t head_dim, float theta) {
  for (int64_t i = 0; i < head_dim / 2; i++) {
    inv_freq[i] = static_cast<float>(
        1.0 / std::pow(static_cast<double>(theta), static_cast<double>(2 * i) / head_dim));
  }
}

void rope_scale_llama3(float* inv_freq, int64_t n, float factor, float low_freq_factor,
                       float high_freq_factor, int64_t original_max_position) {
  const double orig = static_cast<double>(original_max_position);
  const double low_freq_wavelen = orig / low_freq_factor;
  const double high_freq_wavelen = orig / high_freq_factor;
  for (int64_t i = 0; i < n; i++) {
    const double f = inv_freq[i];
    const double wavelen = 2.0 * M_PI / f;
    double scaled;
    if (wavelen < high_freq_wavelen) {
      scaled = f;
    } else if (wavelen > low_freq_wavelen) {
      scaled = f / factor;
    } else {
      const double smooth =
          (orig / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      scaled = (1.0 - smooth) * f / factor + smooth * f;
    }
    inv_freq[i] = static_cast<float>(scaled);
  }
}

void rope_angles(float* cos_t, float* sin_t, int64_t pos, const float* inv_freq, int64_t head_dim) {
  // Angles in double: positions reach 1e5 and pos * inv_freq must keep its fraction.
  for (int64_t i = 0; i < head_dim / 2; i++) {
    const double angle = static_cast<double>(pos) * inv_freq[i];
    cos_t[i] = static_cast<float>(std::cos(angle));
    sin_t[i] = static_cast<float>(std::sin(angle));
  }
}

void rope_rotate(float* v, int64_t head_dim, const float* cos_t, const float* sin_t,
                 bool interleaved) {
  const int64_t half = head_dim / 2;
  // Element index of the two members of pair i.
  const int64_t stride_a = interleaved ? 2 : 1;
  const int64_t offset_b = interleaved ? 1 : half;
  for (int64_t i = 0; i < half; i++) {
    float* a = v + i * stride_a;
    float* b = a + offset_b;
    const float va = *a, vb = *b;
    *a = va * cos_t[i] - vb * sin_t[i];
    *b = va * sin_t[i] + vb * cos_t[i];
  }
}

namespace {
// Rotates the n_heads head vectors of one token at position pos.   x: [n_heads, head_dim]
// cos_t, sin_t: scratch [head_dim/2].
void rope_apply_token(float* x, int64_t n_heads, int64_t head_dim, int64_t pos,
                      const float* inv_freq, bool interleaved, float* cos_t, float* sin_t) {
  rope_angles(cos_t, sin_t, pos, inv_freq, head_dim);
  for (int64_t h = 0; h < n_heads; h++)
    rope_rotate(x + h * head_dim, head_dim, cos_t, sin_t, interleaved);
}
}  // namespace

void rope_apply(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0,
                const float* inv_freq, bool interleaved) {
  std::vector<float> cos_t(head_dim / 2), sin_t(head_dim / 2);  // [head_dim/2]
  for (int64_t t = 0; t < n_tokens; t++)
    rope_apply_token(x + t * n_heads * head_dim, n_heads, head_dim, pos0 + t, inv_freq, interleaved,
                     cos_t.data(), sin_t.data());
}

void rope_apply_positions(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                          const int64_t* positions, const float* inv_freq, bool interleaved) {
  std::vector<float> cos_t(head_dim / 2), sin_t(head_dim / 2);  // [head_dim/2]
  for (int64_t t = 0; t < n_tokens; t++)
    rope_apply_token(x + t * n_heads * head_dim, n_heads, head_dim, positions[t], inv_freq,
                     interleaved, cos_t.data(), sin_t.data());
}

}  // namespace speclab
