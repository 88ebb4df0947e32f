#include "core/cpu_ops.h"

#include <algorithm>
#include <cmath>

#include "core/threads.h"

namespace speclab {

namespace {

// Elements per work item of a split call (split_over_threads): whole cache lines.
constexpr int64_t kSplitBlock = 4096;

// f(i0, i1) over [0, n) in blocks of kSplitBlock, split over the threads when the call is large
// (split_over_threads), else in one piece. Only SwiGLU splits: its exp costs a few ns an element
// (the 3B shape's 32-row step, BM_ForwardBreakdown on the Zen 5 guest: elementwise time 27.5-32.2
// ms whole, 17.2-19.4 ms split over two threads, docs/findings.md). The residual adds, RMSNorm
// and RoPE of 32 rows cost about what waking the second thread does: split the same way they
// were slower (norms 8.7-10.3 ms against 6.7-8.6, RoPE 5.0-6.5 against 3.1-3.5).
template <class F>
void for_blocks(int64_t n, const F& f) {
  if (!split_over_threads(n)) {
    f(int64_t{0}, n);
    return;
  }
  const int64_t n_blocks = (n + kSplitBlock - 1) / kSplitBlock;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n_blocks; b++) f(b * kSplitBlock, std::min(n, (b + 1) * kSplitBlock));
}

}  // namespace

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
  for_blocks(n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) {
      const float g = gate[i];
      out[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
  });
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
