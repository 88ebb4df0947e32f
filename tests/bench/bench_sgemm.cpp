// BM_Sgemm/<m>: Eigen's FP32 matrix product [m, 2048] x [2048, 2048]ᵀ on both cores, in the
// same binary as the model benchmarks: the machine's FP32 matmul rate, the napkin limit of
// prefill. The rest of the build targets baseline x86-64, where Eigen would use SSE2 only and
// understate the machine; this file alone is compiled for AVX-512 (the machine's own ISA) so
// the limit is the real one. Only BM_Sgemm runs that code, and only on a CPU that has it.
// GCC 12 only: clang has no `#pragma GCC target` (it would warn and then refuse the AVX-512
// intrinsics), and GCC 13's libstdc++ refuses to inline its always_inline members (std::string's
// allocator, reached through benchmark.h) into code under a different target; so clang and
// GCC >= 13 builds measure Eigen on the baseline ISA and understate the limit.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c")
// The pragma lets the intrinsics compile but does not define the ISA macros that Eigen reads
// to pick its kernels (it would say "SSE, SSE2"); define them for this file only.
#define __SSE3__ 1
#define __SSSE3__ 1
#define __SSE4_1__ 1
#define __SSE4_2__ 1
#define __AVX__ 1
#define __AVX2__ 1
#define __FMA__ 1
#define __F16C__ 1
#define __AVX512F__ 1
#define __AVX512DQ__ 1
#endif
// GCC 12's AVX-512 headers build some intrinsics from an "undefined" register (x = x), which
// -Wmaybe-uninitialized reports once Eigen's AVX-512 kernels are inlined here (GCC bug
// 105593, about 110 reports in avx512fintrin.h); no value is read uninitialized. Silenced for
// the headers included here only (the pragma state at the header's lines is what counts).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <string>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "core/threads.h"

namespace speclab {
namespace {

void BM_Sgemm(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("needs AVX-512");
    return;
  }
  threads_set(2);
  Eigen::setNbThreads(2);
  const int64_t m = state.range(0), n = 2048;
  Eigen::MatrixXf x = Eigen::MatrixXf::Random(m, n), w = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf out(m, n);
  for (auto _ : state) {
    out.noalias() = x * w.transpose();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * m * n * n * state.iterations(), benchmark::Counter::kIsRate);
  state.SetLabel(std::string("eigen ") + Eigen::SimdInstructionSetsInUse() + ", " +
                 std::to_string(Eigen::nbThreads()) + " threads");
}
BENCHMARK(BM_Sgemm)
    ->ArgName("m")
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);

}  // namespace
}  // namespace speclab
