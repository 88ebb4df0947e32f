#include "core/cpu_matmul.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace speclab {
namespace {

// ---------------------------------------------------------------------------------------
// Generic path (x86-64 baseline / any compiler target): dequantize with the reference
// conversion, dot with 16 independent lanes so the compiler can vectorize without
// reassociating (-ffast-math is not used), then reduce the lanes in a fixed tree order.

float dot_generic(const float* a, const float* b, int64_t n) {
  float lanes[16] = {0};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; j++) lanes[j] += a[i + j] * b[i + j];
  }
  float tail = 0.0f;
  for (; i < n; i++) tail += a[i] * b[i];
  for (int width = 8; width >= 1; width /= 2) {
    for (int j = 0; j < width; j++) lanes[j] += lanes[j + width];
  }
  return lanes[0] + tail;
}

// rows: n_rows pointers to FP32 weight rows [n_in]; x: [n_tokens, n_in];
// out: columns [0, n_rows) of [n_tokens, n_out].
void block_generic(float* out, int64_t n_out, const float* const* rows, int n_rows, const float* x,
                   int64_t n_in, int64_t n_tokens) {
  for (int r = 0; r < n_rows; r++) {
    for (int64_t t = 0; t < n_tokens; t++) {
      out[t * n_out + r] = dot_generic(rows[r], x + t * n_in, n_in);
    }
  }
}

void row_to_f32_generic(float* dst, DType dtype, const void* src, int64_t n) {
  dtype_to_f32(dtype, src, dst, n);
}

// ---------------------------------------------------------------------------------------
// AVX2 + FMA + F16C path, chosen at run time. Dequantization produces exactly the values
// dtype_to_f32 produces (same operations, same rounding); only the dot's summation order
// differs from the reference.

#define SPECLAB_AVX2 __attribute__((target("avx2,fma,f16c")))

SPECLAB_AVX2 inline float hsum_avx2(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);                     // 4 lanes
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));  // 2 lanes
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));    // 1 lane
  return _mm_cvtss_f32(lo);
}

// A register tile of R weight rows x T tokens. Each 8-float slice of x is loaded once for
// R rows and each slice of a row once for T tokens, so the activations are re-read from
// cache once per R rows instead of once per row (they reach 64 KB and more when verifying
// 8 tokens against 2048-wide rows, beyond L1).
//
// Every (row, token) sum runs in the same order in every tile shape: one 8-lane
// accumulator over the slices in order, a fixed horizontal sum, then the scalar tail.
// So an output does not depend on the tile it was computed in, hence not on n_tokens or
// n_out (batch invariance): feeding a sequence token by token or all at once gives
// bit-identical logits, and greedy speculative decoding reproduces plain decoding exactly.
template <int R, int T>
SPECLAB_AVX2 inline void tile_avx2(float* out, int64_t n_out, const float* const* rows,
                                   const float* x, int64_t n_in) {
  __m256 acc[R][T];
  for (int r = 0; r < R; r++) {
    for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
  }
  const int64_t n_vec = n_in / 8 * 8;
  for (int64_t i = 0; i < n_vec; i += 8) {
    __m256 xv[T];
    for (int t = 0; t < T; t++) xv[t] = _mm256_loadu_ps(x + t * n_in + i);
    for (int r = 0; r < R; r++) {
      const __m256 w = _mm256_loadu_ps(rows[r] + i);
      for (int t = 0; t < T; t++) acc[r][t] = _mm256_fmadd_ps(w, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; r++) {
    for (int t = 0; t < T; t++) {
      float tail = 0.0f;
      for (int64_t i = n_vec; i < n_in; i++)
        tail = __builtin_fmaf(rows[r][i], x[t * n_in + i], tail);
      out[t * n_out + r] = hsum_avx2(acc[r][t]) + tail;
    }
  }
}

SPECLAB_AVX2 void block_avx2(float* out, int64_t n_out, const float* const* rows, int n_rows,
                             const float* x, int64_t n_in, int64_t n_tokens) {
  if (n_rows == 4) {
    int64_t t = 0;
    for (; t + 2 <= n_tokens; t += 2)
      tile_avx2<4, 2>(out + t * n_out, n_out, rows, x + t * n_in, n_in);
    if (t < n_tokens) tile_avx2<4, 1>(out + t * n_out, n_out, rows, x + t * n_in, n_in);
    return;
  }
  for (int r = 0; r < n_rows; r++) {  // the last, partial block of rows
    for (int64_t t = 0; t < n_tokens; t++) {
      tile_avx2<1, 1>(out + t * n_out + r, n_out, rows + r, x + t * n_in, n_in);
    }
  }
}

SPECLAB_AVX2 inline float fp16_scalar_avx2(uint16_t h) { return _cvtsh_ss(h); }

// 8 unsigned bytes -> 8 floats.
SPECLAB_AVX2 inline __m256 u8x8_to_ps(__m128i bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
}

SPECLAB_AVX2 void row_to_f32_avx2(float* dst, DType dtype, const void* src, int64_t n) {
  switch (dtype) {
    case DType::F32:
      dtype_to_f32(dtype, src, dst, n);
      return;
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
      }
      for (; i < n; i++) dst[i] = fp16_scalar_avx2(s[i]);
      return;
    }
    case DType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
      }
      for (; i < n; i++) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::Q8_0: {
      const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
      for (int64_t blk = 0; blk < n / kQuantBlock; blk++) {
        const __m256 d = _mm256_set1_ps(fp16_scalar_avx2(b[blk].d));
        float* o = dst + blk * kQuantBlock;
        for (int j = 0; j < 4; j++) {
          __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[blk].qs + 8 * j));
          __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
          _mm256_storeu_ps(o + 8 * j, _mm256_mul_ps(d, v));
        }
      }
      return;
    }
    case DType::Q4_0:
    case DType::Q4_1: {
      // Element j < 16 is the low nibble of qs[j], element j + 16 the high nibble.
      const bool has_min = dtype == DType::Q4_1;
      const size_t block_bytes = dtype_block_bytes(dtype);
      const uint8_t* base = static_cast<const uint8_t*>(src);
      const __m128i mask = _mm_set1_epi8(0x0f);
      const __m256 eight = _mm256_set1_ps(8.0f);
      for (int64_t blk = 0; blk < n / kQuantBlock; blk++) {
        const uint8_t* block = base + blk * block_bytes;
        uint16_t d_bits, m_bits = 0;
        std::memcpy(&d_bits, block, 2);
        if (has_min) std::memcpy(&m_bits, block + 2, 2);
        const uint8_t* qs = block + (has_min ? 4 : 2);
        const __m256 d = _mm256_set1_ps(fp16_scalar_avx2(d_bits));
        const __m256 m = _mm256_set1_ps(has_min ? fp16_scalar_avx2(m_bits) : 0.0f);
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
        const __m128i lo = _mm_and_si128(packed, mask);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), mask);
        const __m256 q[4] = {u8x8_to_ps(lo), u8x8_to_ps(_mm_srli_si128(lo, 8)), u8x8_to_ps(hi),
                             u8x8_to_ps(_mm_srli_si128(hi, 8))};
        float* o = dst + blk * kQuantBlock;
        for (int j = 0; j < 4; j++) {
          // Q4_0: d * (q - 8); Q4_1: d * q + m (multiply, then add: as the reference rounds).
          __m256 v = has_min ? _mm256_add_ps(_mm256_mul_ps(d, q[j]), m)
                             : _mm256_mul_ps(d, _mm256_sub_ps(q[j], eight));
          _mm256_storeu_ps(o + 8 * j, v);
        }
      }
      return;
    }
  }
}

// ---------------------------------------------------------------------------------------

struct Kernels {
  void (*row_to_f32)(float*, DType, const void*, int64_t);
  // out[t, r] for the rows of one block: (out, n_out, rows, n_rows, x, n_in, n_tokens)
  void (*block)(float*, int64_t, const float* const*, int, const float*, int64_t, int64_t);
  const char* isa;
};

constexpr int kRowBlock = 4;  // weight rows per work item and per register tile

const Kernels kGenericKernels{row_to_f32_generic, block_generic, "generic"};

const Kernels& best_kernels() {
  static const Kernels k = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c")) {
      return Kernels{row_to_f32_avx2, block_avx2, "avx2"};
    }
    return kGenericKernels;
  }();
  return k;
}

bool g_force_generic = false;

const Kernels& kernels() { return g_force_generic ? kGenericKernels : best_kernels(); }

void check_shapes(const TensorView& w) {
  SPECLAB_ASSERT(w.shape.size() == 2);
  SPECLAB_ASSERT(w.data != nullptr);
  SPECLAB_ASSERT(w.cols() % dtype_block_size(w.dtype) == 0);
}

}  // namespace

const char* matmul_isa() { return kernels().isa; }

void matmul_force_generic(bool force) { g_force_generic = force; }

void weights_row_to_f32(float* dst, const TensorView& w, int64_t r) {
  kernels().row_to_f32(dst, w.dtype, w.row_ptr(r), w.cols());
}

void matmul_weights(float* out, const float* x, const TensorView& w, int64_t n_tokens) {
  check_shapes(w);
  const Kernels& k = kernels();
  const int64_t n_out = w.rows();
  const int64_t n_in = w.cols();
  const size_t row_bytes = dtype_row_bytes(w.dtype, n_in);
  const uint8_t* base = static_cast<const uint8_t*>(w.data);
  const int64_t n_blocks = (n_out + kRowBlock - 1) / kRowBlock;
  // Small products (tiny drafts, test models) stay on one thread: a parallel region costs a
  // few microseconds, and far more when the machine is oversubscribed and a thread waits at
  // the barrier. Each output is computed the same way either way (no result depends on it).
  const bool parallel = n_out * n_in * n_tokens >= (int64_t{1} << 18);
#pragma omp parallel if (parallel)
  {
    // FP32 copies of the current block's weight rows, per thread: [kRowBlock, n_in].
    // F32 rows are used in place.
    thread_local std::vector<float> block_buf;
    if (static_cast<int64_t>(block_buf.size()) < kRowBlock * n_in)
      block_buf.resize(kRowBlock * n_in);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < n_blocks; b++) {
      const int64_t r0 = b * kRowBlock;
      const int n_rows = static_cast<int>(std::min<int64_t>(kRowBlock, n_out - r0));
      const float* rows[kRowBlock];
      for (int j = 0; j < n_rows; j++) {
        const void* src = base + static_cast<size_t>(r0 + j) * row_bytes;
        if (w.dtype == DType::F32) {
          rows[j] = static_cast<const float*>(src);
        } else {
          float* dst = block_buf.data() + j * n_in;
          k.row_to_f32(dst, w.dtype, src, n_in);
          rows[j] = dst;
        }
      }
      k.block(out + r0, n_out, rows, n_rows, x, n_in, n_tokens);
    }
  }
}

void matmul_weights_ref(float* out, const float* x, const TensorView& w, int64_t n_tokens) {
  check_shapes(w);
  const int64_t n_out = w.rows();
  const int64_t n_in = w.cols();
  std::vector<float> row(n_in);
  for (int64_t r = 0; r < n_out; r++) {
    dtype_to_f32(w.dtype, w.row_ptr(r), row.data(), n_in);
    for (int64_t t = 0; t < n_tokens; t++) {
      double sum = 0.0;
      for (int64_t i = 0; i < n_in; i++) sum += static_cast<double>(row[i]) * x[t * n_in + i];
      out[t * n_out + r] = static_cast<float>(sum);
    }
  }
}

}  // namespace speclab
