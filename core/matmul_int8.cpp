#include "core/matmul_int8.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace speclab {
namespace {

// Integer weights and scales of 32-value block b of a row: w[32], dw[2] (for values 0..15 and
// 16..31), *m (0 unless Q4_1 / Q4_K), as the header specifies.
void weight_block(DType dtype, const uint8_t* row, int64_t b, int32_t* w, float* dw, float* m) {
  *m = 0.0f;
  uint16_t h;
  if (dtype == DType::Q4_K || dtype == DType::Q6_K) {
    const int64_t sb = b / (kSuperBlock / kQuantBlock);
    const int j = static_cast<int>(b % (kSuperBlock / kQuantBlock));  // sub-block
    const uint8_t* p = row + static_cast<size_t>(sb) * dtype_block_bytes(dtype);
    if (dtype == DType::Q4_K) {
      const BlockQ4_K* k = reinterpret_cast<const BlockQ4_K*>(p);
      int sc, mn;
      dtype_q4_k_scale_min(k->scales, j, &sc, &mn);
      dw[0] = dw[1] = fp16_to_f32(k->d) * static_cast<float>(sc);
      *m = -(fp16_to_f32(k->dmin) * static_cast<float>(mn));
      const uint8_t* q = k->qs + 32 * (j / 2);
      for (int l = 0; l < kQuantBlock; l++) w[l] = j % 2 == 0 ? (q[l] & 0x0f) : (q[l] >> 4);
      return;
    }
    const BlockQ6_K* k = reinterpret_cast<const BlockQ6_K*>(p);
    const float d = fp16_to_f32(k->d);
    for (int l = 0; l < kQuantBlock; l++) w[l] = dtype_q6_k_code(*k, 32 * j + l) - 32;
    dw[0] = d * static_cast<float>(k->scales[2 * j]);
    dw[1] = d * static_cast<float>(k->scales[2 * j + 1]);
    return;
  }
  const uint8_t* p = row + static_cast<size_t>(b) * dtype_block_bytes(dtype);
  std::memcpy(&h, p, 2);
  dw[0] = dw[1] = fp16_to_f32(h);
  switch (dtype) {
    case DType::Q8_0:  // {fp16 d; int8 qs[32]}
      for (int j = 0; j < kQuantBlock; j++) w[j] = static_cast<int8_t>(p[2 + j]);
      return;
    case DType::Q4_0:  // {fp16 d; uint8 qs[16]}: low nibbles are elements 0..15
      for (int j = 0; j < 16; j++) {
        w[j] = (p[2 + j] & 0x0f) - 8;
        w[j + 16] = (p[2 + j] >> 4) - 8;
      }
      return;
    case DType::Q4_1:  // {fp16 d; fp16 m; uint8 qs[16]}
      std::memcpy(&h, p + 2, 2);
      *m = fp16_to_f32(h);
      for (int j = 0; j < 16; j++) {
        w[j] = p[4 + j] & 0x0f;
        w[j + 16] = p[4 + j] >> 4;
      }
      return;
    default:
      SPECLAB_ASSERT(false);
  }
}

void check_int8_shapes(const TensorView& w) {
  SPECLAB_ASSERT(dtype_has_int8_dot(w.dtype));
  SPECLAB_ASSERT(w.shape.size() == 2 && w.data != nullptr);
  SPECLAB_ASSERT(w.cols() % dtype_block_size(w.dtype) == 0);
}

}  // namespace

bool dtype_has_int8_dot(DType dtype) {
  return dtype == DType::Q8_0 || dtype == DType::Q4_0 || dtype == DType::Q4_1 ||
         dtype == DType::Q4_K || dtype == DType::Q6_K;
}

// The weights' own block: 32 values, or the 256-value super-block of the k-quants.
int act_block_values(DType weights) { return dtype_block_size(weights); }

float act_quantize_block(const float* x, int n, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < n; j++) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; j++) {
    // nearbyint rounds to nearest even in the default rounding mode, as vcvtps2dq does.
    const float v = std::nearbyint(x[j] * id);
    q[j] = static_cast<int8_t>(std::fmin(127.0f, std::fmax(-127.0f, v)));
  }
  return d;
}

// The activations x [n_tokens, n_in] quantized as specified: qx [n_tokens, n_in] and one dx per
// token and activation block, dx [n_tokens, n_in / act_block_values(weights)].
static void quantize_activations(const float* x, int64_t n_tokens, int64_t n_in, DType weights,
                                 std::vector<int8_t>* qx, std::vector<float>* dx) {
  const int n = act_block_values(weights);
  const int64_t n_act = n_in / n;
  qx->assign(n_tokens * n_in, 0);
  dx->assign(n_tokens * n_act, 0.0f);
  for (int64_t t = 0; t < n_tokens; t++) {
    for (int64_t b = 0; b < n_act; b++) {
      const int64_t i = t * n_in + b * n;
      (*dx)[t * n_act + b] = act_quantize_block(x + i, n, qx->data() + i);
    }
  }
}

void matmul_weights_ref_int8(float* out, const float* x, const TensorView& w, int64_t n_tokens) {
  check_int8_shapes(w);
  const int64_t n_out = w.rows(), n_in = w.cols(), n_blocks = n_in / kQuantBlock;
  const int64_t per_act = act_block_values(w.dtype) / kQuantBlock;  // weight blocks per dx
  std::vector<int8_t> qx;
  std::vector<float> dx;
  quantize_activations(x, n_tokens, n_in, w.dtype, &qx, &dx);
  const int64_t n_act = n_blocks / per_act;
  int32_t wq[kQuantBlock];
  for (int64_t r = 0; r < n_out; r++) {
    for (int64_t t = 0; t < n_tokens; t++) {
      double sum = 0.0;
      for (int64_t b = 0; b < n_blocks; b++) {
        float dw[2], m;
        weight_block(w.dtype, w.row_ptr(r), b, wq, dw, &m);
        const int8_t* q = qx.data() + t * n_in + b * kQuantBlock;
        int64_t dot[2] = {0, 0}, qsum = 0;
        for (int j = 0; j < kQuantBlock; j++) {
          dot[j / 16] += static_cast<int64_t>(wq[j]) * q[j];
          qsum += q[j];
        }
        const double d = dx[t * n_act + b / per_act];
        sum += d * (static_cast<double>(dw[0]) * static_cast<double>(dot[0]) +
                    static_cast<double>(dw[1]) * static_cast<double>(dot[1]) +
                    static_cast<double>(m) * static_cast<double>(qsum));
      }
      out[t * n_out + r] = static_cast<float>(sum);
    }
  }
}

void matmul_int8_error_bound(float* bound, const float* x, const TensorView& w, int64_t n_tokens) {
  check_int8_shapes(w);
  const int64_t n_out = w.rows(), n_in = w.cols();
  const int n = act_block_values(w.dtype);
  const int64_t n_act = n_in / n;
  std::vector<int8_t> qx;
  std::vector<float> dx;
  quantize_activations(x, n_tokens, n_in, w.dtype, &qx, &dx);
  std::vector<float> row(n_in);
  for (int64_t r = 0; r < n_out; r++) {
    dtype_to_f32(w.dtype, w.row_ptr(r), row.data(), n_in);
    for (int64_t t = 0; t < n_tokens; t++) {
      double sum = 0.0;
      for (int64_t b = 0; b < n_act; b++) {
        double abs_w = 0.0;
        for (int j = 0; j < n; j++) abs_w += std::fabs(row[b * n + j]);
        sum += 0.5 * static_cast<double>(dx[t * n_act + b]) * abs_w;
      }
      bound[t * n_out + r] = static_cast<float>(sum);
    }
  }
}

}  // namespace speclab
