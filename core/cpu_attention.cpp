#include "core/cpu_attention.h"

// GCC 12's AVX-512 headers build the rounded intrinsics from an "undefined" register, which
// -Wuninitialized / -Wmaybe-uninitialized report once inlined here (GCC bug 105593, as in
// core/matmul_avx512.cpp); the values are never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu_ops.h"
#include "core/error.h"

namespace speclab {
namespace {

// The scalar tail of dot_lanes (n % 8 values). Not inlined: inlined into the AVX-512 kernel
// below, the compiler could contract the multiply and the add into an FMA there.
__attribute__((noinline)) float dot_tail(const float* a, const float* b, int64_t i, int64_t n) {
  float tail = 0.0f;
  for (; i < n; i++) tail += a[i] * b[i];
  return tail;
}

float dot_lanes(const float* a, const float* b, int64_t n) {
  // 8 independent lanes so the compiler vectorizes without reassociation; fixed reduction.
  float lanes[8] = {0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; j++) lanes[j] += a[i + j] * b[i + j];
  }
  const float tail = dot_tail(a, b, i, n);
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
         ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7])) + tail;
}

// One (query token, head): scores over the listed cache positions in the order given,
// softmax, weighted sum of V rows in the same order. Both attention() and attention_tree()
// call it, so a query sees bit-identical results whenever it reads the same positions.
//   slot(i) for i in [0, n_ctx): the cache position of context entry i.
// The plain version: the reference for attend_group_avx512.
template <typename SlotFn>
void attend_one_plain(float* oh, const float* qh, const float* k_cache, const float* v_cache,
                      int64_t n_ctx, SlotFn slot, int64_t kv_stride, int64_t kv_offset,
                      int64_t head_dim, float scale, float* scores) {
  for (int64_t i = 0; i < n_ctx; i++)
    scores[i] = dot_lanes(qh, k_cache + slot(i) * kv_stride + kv_offset, head_dim) * scale;
  softmax(scores, n_ctx);
  for (int64_t d = 0; d < head_dim; d++) oh[d] = 0.0f;
  for (int64_t i = 0; i < n_ctx; i++) {
    const float* vh = v_cache + slot(i) * kv_stride + kv_offset;
    const float a = scores[i];
    for (int64_t d = 0; d < head_dim; d++) oh[d] += a * vh[d];
  }
}

#define SPECLAB_AVX512F __attribute__((target("avx512f")))
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// Eight floats at lo in lanes 0..7 and eight at hi in lanes 8..15.
SPECLAB_AVX512F inline __m512 pair_of(const float* lo, const float* hi) {
  const __m512d l = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(lo)));
  return _mm512_castpd_ps(_mm512_insertf64x4(l, _mm256_castps_pd(_mm256_loadu_ps(hi)), 1));
}

// dot_lanes' reduction of the 8 lanes in each half of v, in registers and in its order:
// ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)); *lo from lanes 0..7, *hi from 8..15.
SPECLAB_AVX512F inline void reduce_pair(__m512 v, float* lo, float* hi) {
  const __m512 s1 =
      _mm512_add_round_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1), kRound);            // l_j + l_j+4
  const __m512 s2 = _mm512_add_round_ps(s1, _mm512_permute_ps(s1, 0xB1), kRound);  // (0+4)+(1+5)
  const __m512 s3 = _mm512_add_round_ps(s2, _mm512_permute_ps(s2, 0x4E), kRound);  // lanes 0, 8
  *lo = _mm512_cvtss_f32(s3);
  *hi = _mm_cvtss_f32(_mm512_extractf32x4_ps(s3, 2));
}

// One position's score, dot_lanes(qh, kh, head_dim) * scale with dot_lanes' lanes and order
// (in the low half of a register).
SPECLAB_AVX512F inline float score_one(const float* qh, const float* kh, int64_t head_dim,
                                       float scale) {
  const int64_t n8 = head_dim / 8 * 8;
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < n8; j += 8) {
    const __m512 a = _mm512_maskz_loadu_ps(0xff, qh + j);
    const __m512 b = _mm512_maskz_loadu_ps(0xff, kh + j);
    acc = _mm512_add_round_ps(acc, _mm512_mul_round_ps(a, b, kRound), kRound);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  const float tail = n8 < head_dim ? dot_tail(qh, kh, n8, head_dim) : 0.0f;
  return (((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
          ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7])) + tail) *
         scale;
}

// attend_one_plain with AVX-512 registers, for G query heads that share one KV head, with
// each head's arithmetic the plain code's, bit for bit: the dot keeps dot_lanes' 8 lanes (lane
// j sums the products of the elements j mod 8 in order), its reduction tree and its tail; every
// V sum is oh[d] + a * v[d] per column in position order. Products and sums use the explicitly
// rounded intrinsics, which the compiler never contracts into FMAs (an FMA rounds once and
// would change the bits).
// The scores go eight positions at a time, two per register (one position's 8 lanes in each
// half), so four sums per head are in flight where one position's eight dependent adds left
// the core waiting on their latency, and the reduction runs in registers. G heads at once
// (linear attention: a KV group's query heads, up to kMaxGroupCall) load each K and V slice
// once for all of them: one head at a time re-read the group's slices once per head, and once
// the cache outgrew L2 they came from L3 each time (BM_Attention times one layer beside the
// plain code; docs/cpu-kernels.md has the figures). Tree attention runs one head at a time
// (G = 1).
//   slot(i), i < n_ctx: the cache position of context entry i
//   oh[g], qh[g]: head g's output and query   scores: [G, n_ctx]
template <int G, typename SlotFn>
SPECLAB_AVX512F void attend_group_avx512(float* const* oh, const float* const* qh,
                                         const float* k_cache, const float* v_cache, int64_t n_ctx,
                                         SlotFn slot, int64_t kv_stride, int64_t kv_offset,
                                         int64_t head_dim, float scale, float* scores) {
  const int64_t n8 = head_dim / 8 * 8;
  int64_t i = 0;
  for (; i + 8 <= n_ctx; i += 8) {  // eight positions, two per register, G heads
    const float* kh[8];
    for (int p = 0; p < 8; p++) kh[p] = k_cache + slot(i + p) * kv_stride + kv_offset;
    __m512 acc[G][4];
    for (int g = 0; g < G; g++) {
      for (int r = 0; r < 4; r++) acc[g][r] = _mm512_setzero_ps();
    }
    for (int64_t j = 0; j < n8; j += 8) {
      __m512 b[4];
      for (int r = 0; r < 4; r++) b[r] = pair_of(kh[2 * r] + j, kh[2 * r + 1] + j);
      for (int g = 0; g < G; g++) {
        const __m512 qj = pair_of(qh[g] + j, qh[g] + j);
        for (int r = 0; r < 4; r++) {
          acc[g][r] = _mm512_add_round_ps(acc[g][r], _mm512_mul_round_ps(qj, b[r], kRound), kRound);
        }
      }
    }
    for (int g = 0; g < G; g++) {
      for (int r = 0; r < 4; r++) {
        float lo, hi;
        reduce_pair(acc[g][r], &lo, &hi);
        const float tail_lo = n8 < head_dim ? dot_tail(qh[g], kh[2 * r], n8, head_dim) : 0.0f;
        const float tail_hi = n8 < head_dim ? dot_tail(qh[g], kh[2 * r + 1], n8, head_dim) : 0.0f;
        scores[g * n_ctx + i + 2 * r] = (lo + tail_lo) * scale;
        scores[g * n_ctx + i + 2 * r + 1] = (hi + tail_hi) * scale;
      }
    }
  }
  for (; i < n_ctx; i++) {
    const float* kh = k_cache + slot(i) * kv_stride + kv_offset;
    for (int g = 0; g < G; g++) scores[g * n_ctx + i] = score_one(qh[g], kh, head_dim, scale);
  }
  for (int g = 0; g < G; g++) softmax(scores + g * n_ctx, n_ctx);
  // V: 64 columns per pass, four registers per head (G x 4 sums in flight).
  for (int64_t d0 = 0; d0 < head_dim; d0 += 64) {
    const int64_t width = std::min<int64_t>(64, head_dim - d0);
    __mmask16 mask[4];
    __m512 acc[G][4];
    for (int r = 0; r < 4; r++) {
      const int64_t left = std::min<int64_t>(16, std::max<int64_t>(0, width - 16 * r));
      mask[r] = static_cast<__mmask16>((1u << left) - 1u);
      for (int g = 0; g < G; g++) acc[g][r] = _mm512_setzero_ps();
    }
    for (int64_t p = 0; p < n_ctx; p++) {
      const float* vh = v_cache + slot(p) * kv_stride + kv_offset + d0;
      __m512 v[4];
      for (int r = 0; r < 4; r++) v[r] = _mm512_maskz_loadu_ps(mask[r], vh + 16 * r);
      for (int g = 0; g < G; g++) {
        const __m512 a = _mm512_set1_ps(scores[g * n_ctx + p]);
        for (int r = 0; r < 4; r++) {
          acc[g][r] = _mm512_add_round_ps(acc[g][r], _mm512_mul_round_ps(a, v[r], kRound), kRound);
        }
      }
    }
    for (int g = 0; g < G; g++) {
      for (int r = 0; r < 4; r++) _mm512_mask_storeu_ps(oh[g] + d0 + 16 * r, mask[r], acc[g][r]);
    }
  }
}

// Heads per call of attend_group_avx512: its G x 4 score sums and G x 4 V sums fit the 32
// registers up to 4 (and a KV group of 8 heads runs as two calls of 4).
constexpr int64_t kMaxGroupCall = 4;

bool g_attention_plain = false;  // attention_force_plain

bool use_avx512() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return has && !g_attention_plain;
}

template <typename SlotFn>
void attend_one(float* oh, const float* qh, const float* k_cache, const float* v_cache,
                int64_t n_ctx, SlotFn slot, int64_t kv_stride, int64_t kv_offset, int64_t head_dim,
                float scale, float* scores) {
  if (use_avx512()) {
    attend_group_avx512<1>(&oh, &qh, k_cache, v_cache, n_ctx, slot, kv_stride, kv_offset, head_dim,
                           scale, scores);
  } else {
    attend_one_plain(oh, qh, k_cache, v_cache, n_ctx, slot, kv_stride, kv_offset, head_dim, scale,
                     scores);
  }
}

}  // namespace

void attention_force_plain(bool plain) { g_attention_plain = plain; }

void attention_one(float* out, const float* q, const float* k_cache, const float* v_cache,
                   int64_t t, int64_t h, int64_t n_past, int64_t n_heads, int64_t n_kv_heads,
                   int64_t head_dim, float* scores) {
  const int64_t group = n_heads / n_kv_heads;
  const int64_t kv_stride = n_kv_heads * head_dim;  // floats per cache position
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const int64_t n_ctx = n_past + t + 1;  // causal: positions [0, n_past + t]
  attend_one(
      out + (t * n_heads + h) * head_dim, q + (t * n_heads + h) * head_dim, k_cache, v_cache, n_ctx,
      [](int64_t i) { return i; }, kv_stride, (h / group) * head_dim, head_dim, scale, scores);
}

namespace {

// Query heads [h0, h0 + g) of token t (one KV group's, g <= kMaxGroupCall) on the AVX-512 path.
void attention_group(float* out, const float* q, const float* k_cache, const float* v_cache,
                     int64_t t, int64_t h0, int64_t g, int64_t n_past, int64_t n_heads,
                     int64_t n_kv_heads, int64_t head_dim, float* scores) {
  const int64_t group = n_heads / n_kv_heads;
  const int64_t kv_stride = n_kv_heads * head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const int64_t n_ctx = n_past + t + 1;
  float* oh[kMaxGroupCall];
  const float* qh[kMaxGroupCall];
  for (int64_t j = 0; j < g; j++) {
    oh[j] = out + (t * n_heads + h0 + j) * head_dim;
    qh[j] = q + (t * n_heads + h0 + j) * head_dim;
  }
  const int64_t kv_offset = (h0 / group) * head_dim;
  const auto linear = [](int64_t i) { return i; };
  switch (g) {
    case 1:
      return attend_group_avx512<1>(oh, qh, k_cache, v_cache, n_ctx, linear, kv_stride, kv_offset,
                                    head_dim, scale, scores);
    case 2:
      return attend_group_avx512<2>(oh, qh, k_cache, v_cache, n_ctx, linear, kv_stride, kv_offset,
                                    head_dim, scale, scores);
    case 3:
      return attend_group_avx512<3>(oh, qh, k_cache, v_cache, n_ctx, linear, kv_stride, kv_offset,
                                    head_dim, scale, scores);
    default:
      SPECLAB_ASSERT(g == 4);
      return attend_group_avx512<4>(oh, qh, k_cache, v_cache, n_ctx, linear, kv_stride, kv_offset,
                                    head_dim, scale, scores);
  }
}

}  // namespace

void attention_tree_one(float* out, const float* q, const float* k_cache, const float* v_cache,
                        int64_t t, int64_t h, const int64_t* prefix_len,
                        const int64_t* extra_offset, const int64_t* extra_slots, int64_t n_heads,
                        int64_t n_kv_heads, int64_t head_dim, float* scores) {
  const int64_t group = n_heads / n_kv_heads;
  const int64_t kv_stride = n_kv_heads * head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const int64_t prefix = prefix_len[t];
  const int64_t* extra = extra_slots + extra_offset[t];
  const int64_t n_ctx = prefix + (extra_offset[t + 1] - extra_offset[t]);
  attend_one(
      out + (t * n_heads + h) * head_dim, q + (t * n_heads + h) * head_dim, k_cache, v_cache, n_ctx,
      [prefix, extra](int64_t i) { return i < prefix ? i : extra[i - prefix]; }, kv_stride,
      (h / group) * head_dim, head_dim, scale, scores);
}

int64_t attention_items_per_token(int64_t n_heads, int64_t n_kv_heads) {
  SPECLAB_ASSERT(n_kv_heads > 0 && n_heads % n_kv_heads == 0);
  if (!use_avx512()) return n_heads;
  const int64_t group = n_heads / n_kv_heads;
  return n_kv_heads * ((group + kMaxGroupCall - 1) / kMaxGroupCall);
}

size_t attention_item_scores(int64_t n_ctx) {
  return static_cast<size_t>(kMaxGroupCall * std::max<int64_t>(n_ctx, 1));
}

void attention_item(float* out, const float* q, const float* k_cache, const float* v_cache,
                    int64_t t, int64_t item, int64_t n_past, int64_t n_heads, int64_t n_kv_heads,
                    int64_t head_dim, float* scores) {
  if (!use_avx512()) {
    attention_one(out, q, k_cache, v_cache, t, item, n_past, n_heads, n_kv_heads, head_dim, scores);
    return;
  }
  // Item = (KV head, a call's share of its query heads): calls of at most kMaxGroupCall heads,
  // as equal as the group allows (a group of 6 runs as 3 + 3).
  const int64_t group = n_heads / n_kv_heads;
  const int64_t calls = (group + kMaxGroupCall - 1) / kMaxGroupCall;
  const int64_t kvh = item / calls, c = item % calls;
  const int64_t h0 = kvh * group + c * group / calls;
  const int64_t h1 = kvh * group + (c + 1) * group / calls;
  attention_group(out, q, k_cache, v_cache, t, h0, h1 - h0, n_past, n_heads, n_kv_heads, head_dim,
                  scores);
}

void attention(float* out, const float* q, const float* k_cache, const float* v_cache,
               int64_t n_tokens, int64_t n_past, int64_t n_heads, int64_t n_kv_heads,
               int64_t head_dim) {
  SPECLAB_ASSERT(n_kv_heads > 0 && n_heads % n_kv_heads == 0);
  // As in matmul_weights: short contexts are not worth a parallel region.
  const bool parallel = n_tokens * n_heads * (n_past + n_tokens) * head_dim >= (int64_t{1} << 16);
  // Work items: per token, the KV groups' query heads (attention_item).
  const int64_t per_token = attention_items_per_token(n_heads, n_kv_heads);
  const int64_t n_items = n_tokens * per_token;
#pragma omp parallel if (parallel)
  {
    std::vector<float> scores(attention_item_scores(n_past + n_tokens));
#pragma omp for schedule(static)
    for (int64_t w = 0; w < n_items; w++) {
      attention_item(out, q, k_cache, v_cache, w / per_token, w % per_token, n_past, n_heads,
                     n_kv_heads, head_dim, scores.data());
    }
  }
}

void attention_tree(float* out, const float* q, const float* k_cache, const float* v_cache,
                    int64_t n_tokens, const int64_t* prefix_len, const int64_t* extra_offset,
                    const int64_t* extra_slots, int64_t n_heads, int64_t n_kv_heads,
                    int64_t head_dim) {
  SPECLAB_ASSERT(n_kv_heads > 0 && n_heads % n_kv_heads == 0);
  const int64_t n_work = n_tokens * n_heads;
  int64_t max_ctx = 0, total_ctx = 0;
  for (int64_t t = 0; t < n_tokens; t++) {
    const int64_t n_ctx = prefix_len[t] + (extra_offset[t + 1] - extra_offset[t]);
    max_ctx = std::max(max_ctx, n_ctx);
    total_ctx += n_ctx;
  }
  const bool parallel = n_heads * total_ctx * head_dim >= (int64_t{1} << 16);
#pragma omp parallel if (parallel)
  {
    std::vector<float> scores(max_ctx);  // [n_ctx] for one (token, head)
#pragma omp for schedule(static)
    for (int64_t w = 0; w < n_work; w++) {
      attention_tree_one(out, q, k_cache, v_cache, w / n_heads, w % n_heads, prefix_len,
                         extra_offset, extra_slots, n_heads, n_kv_heads, head_dim, scores.data());
    }
  }
}

}  // namespace speclab
