#include "experiments/measure/compute_peak_probe.h"

#include <immintrin.h>
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <cstdint>

#include "core/amx_tiles.h"

namespace speclab {
namespace {

// Each loop returns the sum of its lanes, so that no chain is optimized away.

__attribute__((target("avx2,fma"), noinline)) float fma_loop_avx2(int64_t iters, float seed) {
  __m256 acc[kPeakChains];
  for (int c = 0; c < kPeakChains; c++) acc[c] = _mm256_set1_ps(seed + static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; i++) {
    for (int c = 0; c < kPeakChains; c++) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  alignas(32) float lanes[8];
  __m256 sum = acc[0];
  for (int c = 1; c < kPeakChains; c++) sum = _mm256_add_ps(sum, acc[c]);
  _mm256_store_ps(lanes, sum);
  float total = 0.0f;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx512f"), noinline)) float fma_loop_avx512(int64_t iters, float seed) {
  __m512 acc[kPeakChains];
  for (int c = 0; c < kPeakChains; c++) acc[c] = _mm512_set1_ps(seed + static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; i++) {
    for (int c = 0; c < kPeakChains; c++) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  alignas(64) float lanes[16];
  __m512 sum = acc[0];
  for (int c = 1; c < kPeakChains; c++) sum = _mm512_add_ps(sum, acc[c]);
  _mm512_store_ps(lanes, sum);
  float total = 0.0f;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx512f,avx512bf16"), noinline)) float bf16_dot_loop(int64_t iters,
                                                                            float seed) {
  __m512 acc[kPeakChains];
  for (int c = 0; c < kPeakChains; c++) acc[c] = _mm512_set1_ps(seed + static_cast<float>(c));
  // Pairs of small BF16 values (0x3380 ~ 6e-8): the sums stay finite for any iteration count.
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3380), b = (__m512bh)_mm512_set1_epi16(0x3380);
  for (int64_t i = 0; i < iters; i++) {
    for (int c = 0; c < kPeakChains; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  }
  alignas(64) float lanes[16];
  __m512 sum = acc[0];
  for (int c = 1; c < kPeakChains; c++) sum = _mm512_add_ps(sum, acc[c]);
  _mm512_store_ps(lanes, sum);
  float total = 0.0f;
  for (float v : lanes) total += v;
  return total;
}

// tdpbf16ps on tiles that never leave the registers: four 16 x 16 FP32 accumulators (C0-C3,
// as the matmul kernel keeps in flight), one A and one B tile of 16 x 32 BF16 zeros.
constexpr double kAmxFlopPerIteration = 4.0 * 16 * 16 * 32 * 2;
__attribute__((noinline)) float amx_bf16_loop(int64_t iters, float seed) {
  AmxTileConfig c;
  for (int t : {0, 1, 2, 3, 4, 6}) {
    c.rows[t] = 16;
    c.colsb[t] = 64;
  }
  amx_configure(c);  // (zeroes every tile)
  for (int64_t i = 0; i < iters; i++) {
    SPECLAB_TILE_DP(0, 4, 6);
    SPECLAB_TILE_DP(1, 4, 6);
    SPECLAB_TILE_DP(2, 4, 6);
    SPECLAB_TILE_DP(3, 4, 6);
  }
  alignas(64) float row[16][16];
  SPECLAB_TILE_STORE(0, &row[0][0], 64);
  amx_release();
  return row[0][0] + seed;
}

// The best of three passes of `loop` on `threads` threads: the sum of the threads' FLOP/s, each
// over its own CPU time. flop_per_iter: FLOP of one iteration of the loop (all chains).
template <typename Loop>
double peak_of(Loop loop, double flop_per_iter, int threads, double seconds) {
  // Calibrate the iteration count on one short pass so each pass lasts about `seconds`.
  int64_t iters = 100'000;
  {
    const double t0 = thread_cpu_seconds();
    volatile float sink = loop(iters, 1.0f);
    (void)sink;
    const double dt = std::max(thread_cpu_seconds() - t0, 1e-6);
    iters = std::max<int64_t>(iters, static_cast<int64_t>(iters * seconds / dt));
  }
  double best = 0.0;
  for (int pass = 0; pass < 3; pass++) {
    double rate = 0.0;
    float sink = 0.0f;
#pragma omp parallel num_threads(threads) reduction(+ : rate, sink)
    {
      const double t0 = thread_cpu_seconds();
      sink += loop(iters, 1.0f);
      const double dt = std::max(thread_cpu_seconds() - t0, 1e-9);
      rate += flop_per_iter * static_cast<double>(iters) / dt;
    }
    volatile float keep = sink;
    (void)keep;
    best = std::max(best, rate);
  }
  return best;
}

}  // namespace

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

int fp32_fma_widest_lanes() {
  if (__builtin_cpu_supports("avx512f")) return 16;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 8;
  return 0;
}

double fp32_fma_peak_flops(int threads, int lanes, double seconds) {
  threads = threads > 0 ? threads : omp_get_num_procs();
  if (lanes == 16 && __builtin_cpu_supports("avx512f"))
    return peak_of(fma_loop_avx512, 2.0 * 16 * kPeakChains, threads, seconds);
  if (lanes == 8 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return peak_of(fma_loop_avx2, 2.0 * 8 * kPeakChains, threads, seconds);
  return 0.0;
}

double bf16_dot_peak_flops(int threads, double seconds) {
  threads = threads > 0 ? threads : omp_get_num_procs();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) return 0.0;
  // 16 lanes, each 2 products and their 2 adds.
  return peak_of(bf16_dot_loop, 4.0 * 16 * kPeakChains, threads, seconds);
}

double amx_bf16_peak_flops(int threads, double seconds) {
  threads = threads > 0 ? threads : omp_get_num_procs();
  if (!amx_bf16_available()) return 0.0;
  return peak_of(amx_bf16_loop, kAmxFlopPerIteration, threads, seconds);
}

}  // namespace speclab
