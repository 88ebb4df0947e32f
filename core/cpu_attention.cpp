#include "core/cpu_attention.h"

#include <cmath>
#include <vector>

#include "core/cpu_ops.h"
#include "core/error.h"

namespace speclab {
namespace {

float dot_lanes(const float* a, const float* b, int64_t n) {
  // 8 independent lanes so the compiler vectorizes without reassociation; fixed reduction.
  float lanes[8] = {0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; j++) lanes[j] += a[i + j] * b[i + j];
  }
  float tail = 0.0f;
  for (; i < n; i++) tail += a[i] * b[i];
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
         ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7])) + tail;
}

}  // namespace

void attention(float* out, const float* q, const float* k_cache, const float* v_cache,
               int64_t n_tokens, int64_t n_past, int64_t n_heads, int64_t n_kv_heads,
               int64_t head_dim) {
  SPECLAB_ASSERT(n_kv_heads > 0 && n_heads % n_kv_heads == 0);
  const int64_t group = n_heads / n_kv_heads;
  const int64_t kv_stride = n_kv_heads * head_dim;  // floats per cache position
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const int64_t n_work = n_tokens * n_heads;
  // As in matmul_weights: short contexts are not worth a parallel region.
  const bool parallel = n_work * (n_past + n_tokens) * head_dim >= (int64_t{1} << 16);
#pragma omp parallel if (parallel)
  {
    std::vector<float> scores(n_past + n_tokens);  // [n_ctx] for one (token, head)
#pragma omp for schedule(static)
    for (int64_t w = 0; w < n_work; w++) {
      const int64_t t = w / n_heads;
      const int64_t h = w % n_heads;
      const int64_t kv_h = h / group;
      const int64_t n_ctx = n_past + t + 1;  // causal: positions [0, n_past + t]
      const float* qh = q + (t * n_heads + h) * head_dim;
      for (int64_t p = 0; p < n_ctx; p++) {
        scores[p] = dot_lanes(qh, k_cache + p * kv_stride + kv_h * head_dim, head_dim) * scale;
      }
      softmax(scores.data(), n_ctx);
      float* oh = out + (t * n_heads + h) * head_dim;
      for (int64_t d = 0; d < head_dim; d++) oh[d] = 0.0f;
      for (int64_t p = 0; p < n_ctx; p++) {
        const float* vh = v_cache + p * kv_stride + kv_h * head_dim;
        const float a = scores[p];
        for (int64_t d = 0; d < head_dim; d++) oh[d] += a * vh[d];
      }
    }
  }
}

}  // namespace speclab
