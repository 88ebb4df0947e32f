#include "core/cpu_ops.h"

#include <cmath>

namespace speclab {

void rmsnorm(float* out, const float* x, const float* weight, int64_t n_tokens, int64_t dim,
             float eps) {
  for (int64_t t = 0; t < n_tokens; t++) {
    const float* xr = x + t * dim;
    float* orow = out + t * dim;
    // The sum of squares in double: dim is up to ~8k and activations can be large in
    // late layers; this costs nothing next to the matmuls.
    double ss = 0.0;
    for (int64_t i = 0; i < dim; i++) ss += static_cast<double>(xr[i]) * xr[i];
    const float scale = static_cast<float>(1.0 / std::sqrt(ss / dim + eps));
    for (int64_t i = 0; i < dim; i++) orow[i] = xr[i] * scale * weight[i];
  }
}

void swiglu(float* out, const float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float max_val = x[0];
  for (int64_t i = 1; i < n; i++) max_val = x[i] > max_val ? x[i] : max_val;
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++) {
    x[i] = std::exp(x[i] - max_val);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

void add_inplace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

}  // namespace speclab
