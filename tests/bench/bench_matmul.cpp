// Kernel benchmarks, both cores (as a forward pass runs them):
//   BM_Matmul/<dtype>/<k>  matmul_weights on [8192, 3072] matrices (the 3B MLP shape), k
//                          activation rows; rotating over enough matrices
//                          (bench_stream_bytes: 4 x the last-level cache, >= 512 MB) that
//                          every call streams its weights from memory, as in decoding.
//                          Counters: bytes/s of weights, FLOP/s, bw_frac (of the measured
//                          read bandwidth: the napkin limit while k is small).
//   BM_MatmulDown/<dtype>/<k>  the same on [3072, 8192] matrices (the 3B MLP's down
//                          projection: rows of 8192 columns, whose FP32 activations, 32 KB,
//                          fill a 32 KB L1 by themselves)
//   BM_OneTokenByRowLength  one-token BF16 products of 2048, 3072, 4096 and 8192-column rows,
//                          each pass paired with a read of the same bytes and split by the
//                          memory state that read found (see the function)
//   BM_OneTokenFromCache    one-token BF16 products on one thread from L2, beside a plain read
//                          of the same bytes (the kernel's arithmetic limit, not memory's)
//   BM_ManyTokensFromCache/k:K  K-token BF16 products on one thread from L2, beside one thread's
//                          FP32 FMA peak (the many-token tiles' arithmetic efficiency)
//   BM_RowPairsPack         the load-time repacking of BF16 rows into pairs (core/row_pairs.h):
//                          bytes/s, beside the read probe's rate
//   BM_MatmulOneCore/<dtype>/<k>  the same on one thread, timed in that thread's CPU time
//                          (robust to other jobs on a shared machine): GB/s of weights one core
//                          streams, against BM_ReadOneCore (a plain AVX-512 read of
//                          bench_stream_bytes).
//                          T(k)/T(1) of a matrix is the ratio of two rows of this table.
// GCC 12's AVX-512 headers build _mm512_reduce_add_epi32 from an "undefined" register, which
// -Wmaybe-uninitialized reports once inlined into BM_ReadOneCore (GCC bug 105593); no value is
// read uninitialized. Silenced for this include only (GCC: clang has no such option).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/large_buffer.h"
#include "core/row_pairs.h"
#include "core/threads.h"
#include "experiments/measure/compute_peak_probe.h"
#include "models/llama/llama_synthetic.h"
#include "tests/bench/bench_common.h"

namespace speclab {
namespace {

constexpr int64_t kRows = 8192, kCols = 3072;

// A model of one [rows, cols] matrix (its tied embedding, no layers): the synthetic generator
// used for benchmark matrices only.
LlamaConfig matrix_only_config(int64_t rows, int64_t cols) {
  LlamaConfig config;
  config.vocab_size = rows;
  config.dim = cols;
  config.n_layers = 0;
  config.tie_embeddings = true;
  config.max_seq_len = 1;
  config.n_heads = config.n_kv_heads = 1;
  config.head_dim = 2;
  return config;
}

// Enough [rows, cols] matrices of `dtype` to exceed every cache level several times
// (bench_stream_bytes). One set at a time: the previous one is freed first.
const std::vector<std::unique_ptr<LlamaModel>>& matrices(DType dtype, int64_t rows = kRows,
                                                         int64_t cols = kCols) {
  static DType current = DType::F32;
  static int64_t current_rows = 0, current_cols = 0;
  static std::vector<std::unique_ptr<LlamaModel>> set;
  if (!set.empty() && (current != dtype || current_rows != rows || current_cols != cols)) {
    set.clear();
  }
  current = dtype;
  current_rows = rows;
  current_cols = cols;
  if (set.empty()) {
    const LlamaConfig config = matrix_only_config(rows, cols);
    const double bytes = static_cast<double>(dtype_row_bytes(dtype, cols)) * rows;
    const double want = static_cast<double>(bench_stream_bytes());
    const int n = std::max(2, static_cast<int>((want + bytes - 1) / bytes));
    for (int i = 0; i < n; i++) set.push_back(llama_make_random(config, dtype, 100 + i));
  }
  return set;
}

// Two threads multiplying k activation rows by [rows, cols] matrices of dtype in turn; counters
// of weight bytes/s, bw_frac and FLOP/s.
void two_thread_matmul(benchmark::State& state, int64_t rows, int64_t cols) {
  threads_set(2);
  const DType dtype = static_cast<DType>(state.range(0));
  const int64_t k = state.range(1);
  const auto& set = matrices(dtype, rows, cols);
  std::vector<float> x(k * cols), out(k * rows);
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  size_t next = 0;
  for (auto _ : state) {
    matmul_weights(out.data(), x.data(), set[next].get()->weights.tok_embeddings, k);
    benchmark::DoNotOptimize(out.data());
    next = (next + 1) % set.size();
  }
  const double bytes = static_cast<double>(set[0]->weights.tok_embeddings.nbytes);
  bench_set_bandwidth_counters(state, bytes, bytes * static_cast<double>(set.size()));
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(rows * cols * k) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dtype)) + " " + matmul_isa());
}

void BM_Matmul(benchmark::State& state) { two_thread_matmul(state, kRows, kCols); }
BENCHMARK(BM_Matmul)
    ->ArgNames({"dtype", "k"})
    ->ArgsProduct({{static_cast<int>(DType::F32), static_cast<int>(DType::F16),
                    static_cast<int>(DType::BF16), static_cast<int>(DType::Q8_0),
                    static_cast<int>(DType::Q4_1), static_cast<int>(DType::Q4_K),
                    static_cast<int>(DType::Q6_K)},
                   {1, 2, 4, 8, 16, 32}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MinTime(0.3);

void BM_MatmulDown(benchmark::State& state) { two_thread_matmul(state, kCols, kRows); }
BENCHMARK(BM_MatmulDown)
    ->ArgNames({"dtype", "k"})
    ->ArgsProduct({{static_cast<int>(DType::BF16), static_cast<int>(DType::Q8_0)}, {1, 4, 8}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MinTime(0.3);

// One-token BF16 products by row length, each pass over a set of matrices paired with a plain
// read of the same bytes (bench_read_tensors_seconds), the row lengths in turn within every
// iteration so that a machine whose memory speed flips meets all of them alike. A pass counts as
// the run's fast memory state when its read ran at >= bench_fast_state_threshold of the run's
// reads (as BM_DecodeByMemoryState). Why: on the Zen 4 guest the 3B decode (3072-column rows) kept
// up with its paired read less well than the 1B's (2048), and the row length is the difference: a
// one-token product reads its row's FP32 activations (4 bytes a column: 8, 12, 16 KB) from L1
// beside the streaming weights, while the BF16 weights are 2 bytes a column.
// Counters per row length C: frac_fast_C, frac_rest_C (reads over products, summed; 0 when no
// pass was in that state), gbps_fast_C (the products' rate in the fast state), n_fast_C.
constexpr int64_t kRowLengths[] = {2048, 3072, 4096, 8192};
constexpr int64_t kRowLengthMatrixBytes = 48 << 20;  // each matrix; 12 per set (576 MB)
constexpr int kRowLengthSetMatrices = 12;

void BM_OneTokenByRowLength(benchmark::State& state) {
  threads_set(2);
  constexpr int kShapes = static_cast<int>(std::size(kRowLengths));
  std::vector<std::vector<std::unique_ptr<LlamaModel>>> sets(kShapes);
  std::vector<std::vector<const TensorView*>> tensors(kShapes);
  for (int s = 0; s < kShapes; s++) {
    const int64_t cols = kRowLengths[s];
    const LlamaConfig config =
        matrix_only_config(kRowLengthMatrixBytes / dtype_row_bytes(DType::BF16, cols), cols);
    for (int i = 0; i < kRowLengthSetMatrices; i++) {
      sets[s].push_back(llama_make_random(config, DType::BF16, 300 + 20 * s + i));
      tensors[s].push_back(&sets[s].back()->weights.tok_embeddings);
    }
  }
  std::vector<float> x(kRowLengths[kShapes - 1]), out(kRowLengthMatrixBytes / 2 / kRowLengths[0]);
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  struct Pass {
    int shape;
    double product, read;
  };
  std::vector<Pass> passes;
  int64_t iteration = 0;
  for (auto _ : state) {
    for (int j = 0; j < kShapes; j++) {
      const int s = static_cast<int>((j + iteration) % kShapes);
      const auto a = std::chrono::steady_clock::now();
      for (const TensorView* w : tensors[s]) matmul_weights(out.data(), x.data(), *w, 1);
      benchmark::DoNotOptimize(out.data());
      const double product =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
      passes.push_back({s, product, bench_read_tensors_seconds(tensors[s])});
    }
    iteration++;
  }
  double set_bytes[kShapes], fastest = 0.0;
  for (int s = 0; s < kShapes; s++) {
    set_bytes[s] = 0.0;
    for (const TensorView* w : tensors[s]) set_bytes[s] += static_cast<double>(w->nbytes);
  }
  std::vector<double> rates;
  for (const Pass& p : passes) {
    rates.push_back(set_bytes[p.shape] / p.read);
    fastest = std::max(fastest, rates.back());
  }
  const double threshold = bench_fast_state_threshold(rates);
  for (int s = 0; s < kShapes; s++) {
    double fast_product = 0.0, fast_read = 0.0, rest_product = 0.0, rest_read = 0.0;
    int n_fast = 0;
    for (const Pass& p : passes) {
      if (p.shape != s) continue;
      if (set_bytes[s] / p.read >= threshold) {
        fast_product += p.product;
        fast_read += p.read;
        n_fast++;
      } else {
        rest_product += p.product;
        rest_read += p.read;
      }
    }
    const std::string c = std::to_string(kRowLengths[s]);
    state.counters["frac_fast_" + c] = fast_product > 0 ? fast_read / fast_product : 0.0;
    state.counters["frac_rest_" + c] = rest_product > 0 ? rest_read / rest_product : 0.0;
    state.counters["gbps_fast_" + c] =
        fast_product > 0 ? set_bytes[s] * n_fast / fast_product / 1e9 : 0.0;
    state.counters["n_fast_" + c] = n_fast;
  }
  state.counters["fastest_read_GBps"] = fastest / 1e9;
  state.counters["fast_state_from_GBps"] = threshold / 1e9;
  state.SetLabel(matmul_isa());
}
BENCHMARK(BM_OneTokenByRowLength)->Iterations(60)->Unit(benchmark::kMillisecond)->UseRealTime();

// One token through each matrix shape of the Llama-3.2-1B forward (q/o [2048, 2048], k/v [512,
// 2048], gate/up [8192, 2048], down [2048, 8192], head [128256, 2048]): short rows and small
// matrices cost per row and per call what the 3B MLP shape above hides.
void BM_MatmulShape1B(benchmark::State& state) {
  two_thread_matmul(state, state.range(2), state.range(3));
}
// The dtypes of a Q4_K_M file's layers (Q4_K, Q6_K) and of BF16 / Q8_0 files.
const std::vector<int64_t> kShapeDtypes = {
    static_cast<int>(DType::BF16), static_cast<int>(DType::Q8_0), static_cast<int>(DType::Q4_K),
    static_cast<int>(DType::Q6_K)};
BENCHMARK(BM_MatmulShape1B)
    ->ArgNames({"dtype", "k", "rows", "cols"})
    ->ArgsProduct({kShapeDtypes, {1}, {512, 2048, 8192}, {2048}})  // k/v, q/o, gate/up
    ->ArgsProduct({kShapeDtypes, {1}, {2048}, {8192}})             // down
    ->ArgsProduct({{static_cast<int>(DType::BF16), static_cast<int>(DType::Q8_0),
                    static_cast<int>(DType::Q6_K)},
                   {1},
                   {128256},
                   {2048}})  // the head (Q6_K in a Q4_K_M file)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MinTime(0.3);

void BM_MatmulOneCore(benchmark::State& state) {
  threads_set(1);
  const DType dtype = static_cast<DType>(state.range(0));
  const int64_t k = state.range(1);
  const auto& set = matrices(dtype);
  std::vector<float> x(k * kCols), out(k * kRows);
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  size_t next = 0;
  for (auto _ : state) {
    matmul_weights(out.data(), x.data(), set[next].get()->weights.tok_embeddings, k);
    benchmark::DoNotOptimize(out.data());
    next = (next + 1) % set.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(
      static_cast<double>(set[0]->weights.tok_embeddings.nbytes) * state.iterations()));
  state.SetLabel(std::string(dtype_name(dtype)) + " " + matmul_isa());
  threads_set(0);
}
BENCHMARK(BM_MatmulOneCore)
    ->ArgNames({"dtype", "k"})
    ->ArgsProduct({{static_cast<int>(DType::BF16), static_cast<int>(DType::Q8_0),
                    static_cast<int>(DType::Q4_1), static_cast<int>(DType::Q4_K),
                    static_cast<int>(DType::Q6_K)},
                   {1, 4, 8}})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.3);

// The read rate of one core (CPU time): AVX-512 loads summed, over bench_stream_bytes. The AVX-512
// loop is its own non-inlined function: the benchmark loop (Google Benchmark's inline helpers)
// stays in code built for the baseline target, which GCC 13 requires (it refuses to inline those
// helpers into a function with a different target attribute).
__attribute__((target("avx512f"), noinline)) int64_t sum_avx512(const int32_t* p, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 64) {
    a0 = _mm512_add_epi32(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_add_epi32(a1, _mm512_loadu_si512(p + i + 16));
    a2 = _mm512_add_epi32(a2, _mm512_loadu_si512(p + i + 32));
    a3 = _mm512_add_epi32(a3, _mm512_loadu_si512(p + i + 48));
  }
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, _mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)));
  int64_t sum = 0;
  for (int32_t x : lanes) sum += x;
  return sum;
}

void BM_ReadOneCore(benchmark::State& state) {
  static std::vector<int32_t> buf(bench_stream_bytes() / sizeof(int32_t), 1);
  const size_t n = buf.size();
  for (auto _ : state) benchmark::DoNotOptimize(sum_avx512(buf.data(), n));
  state.SetBytesProcessed(static_cast<int64_t>(n * sizeof(int32_t) * state.iterations()));
}

// One-token products on one thread over one [128, 3072] BF16 matrix held in L2 (768 KB, called
// again and again): what the kernel's arithmetic allows once memory is out of the way (on the
// AVX-512 path a chain of two dependent FMAs per 64 bytes of weights, docs/findings.md), beside
// cache_read_GBps, a plain AVX-512 read of the same bytes in the same run (where the CPU has
// AVX-512).
void BM_OneTokenFromCache(benchmark::State& state) {
  threads_set(1);
  static const std::unique_ptr<LlamaModel> m =
      llama_make_random(matrix_only_config(128, kCols), DType::BF16, 7);
  const TensorView& w = m->weights.tok_embeddings;
  std::vector<float> x(kCols), out(128);
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  for (int i = 0; i < 20; i++) matmul_weights(out.data(), x.data(), w, 1);  // into L2
  for (auto _ : state) {
    matmul_weights(out.data(), x.data(), w, 1);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(static_cast<double>(w.nbytes) * state.iterations()));
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && w.nbytes % 256 == 0) {
    const int32_t* p = static_cast<const int32_t*>(w.data);
    const size_t n = w.nbytes / sizeof(int32_t);
    const int reads = 2000;
    const auto a = std::chrono::steady_clock::now();
    for (int i = 0; i < reads; i++) {
      benchmark::DoNotOptimize(sum_avx512(p, n));
      benchmark::ClobberMemory();  // each read a fresh call, not one hoisted out of the loop
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    state.counters["cache_read_GBps"] = static_cast<double>(w.nbytes) * reads / s / 1e9;
  }
  state.SetLabel(std::string("BF16 ") + matmul_isa());
  threads_set(0);
}
BENCHMARK(BM_OneTokenFromCache)->Unit(benchmark::kMicrosecond)->MinTime(0.3);

// k-token products (a batch of requests, a verification) on one thread over one [96, 3072] BF16
// matrix held in L2 (576 KB), the best of 40 blocks of 20 calls in the thread's CPU time (a
// descheduled moment or another job's cycles would only lengthen a block), beside the FP32 FMA
// peak of one thread measured in the same run: how close the many-token tiles come to the
// arithmetic limit once memory is out of the way. Counters: GFLOPs (2 x 96 x 3072 x k per
// call), peak_GFLOPs, peak_frac.
void BM_ManyTokensFromCache(benchmark::State& state) {
  const int64_t k = state.range(0);
  constexpr int64_t kRowsInCache = 96;
  threads_set(1);
  static const std::unique_ptr<LlamaModel> m =
      llama_make_random(matrix_only_config(kRowsInCache, kCols), DType::BF16, 8);
  const TensorView& w = m->weights.tok_embeddings;
  std::vector<float> x(k * kCols), out(k * kRowsInCache);
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  for (int i = 0; i < 5; i++) matmul_weights(out.data(), x.data(), w, k);  // into L2
  constexpr int kBlocks = 40, kCallsPerBlock = 20;
  double best = 1e30;
  for (auto _ : state) {
    for (int b = 0; b < kBlocks; b++) {
      const double t0 = thread_cpu_seconds();
      for (int c = 0; c < kCallsPerBlock; c++) {
        matmul_weights(out.data(), x.data(), w, k);
        benchmark::DoNotOptimize(out.data());
      }
      best = std::min(best, (thread_cpu_seconds() - t0) / kCallsPerBlock);
    }
  }
  const double flops = 2.0 * static_cast<double>(kRowsInCache * kCols * k);
  const double peak = bench_fma_peak_flops(1);
  state.counters["best_call_us"] = 1e6 * best;
  state.counters["GFLOPs"] = flops / best / 1e9;
  state.counters["peak_GFLOPs"] = peak / 1e9;
  state.counters["peak_frac"] = peak > 0 ? flops / best / peak : 0.0;
  state.SetLabel(std::string("BF16 ") + matmul_isa());
  threads_set(0);
}
BENCHMARK(BM_ManyTokensFromCache)
    ->ArgName("k")
    ->Arg(8)
    ->Arg(12)
    ->Arg(16)
    ->Arg(32)
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(1);

// Registered only where the CPU has AVX-512 (BM_ReadOneCore is compiled for it).
const int kReadOneCore = [] {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    benchmark::RegisterBenchmark("BM_ReadOneCore", BM_ReadOneCore)
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(0.5);
  }
  return 0;
}();

// What storing BF16 matrices in row pairs costs a load (models/llama/weights_layout.h): the
// in-place repacking of bench_stream_bytes of [rows, 3072] BF16 rows (each pair through a
// two-row scratch, both threads), packed then unpacked in turn (each pass the same work),
// beside a plain read of the same bytes with the best start-up probe.
void BM_RowPairsPack(benchmark::State& state) {
  threads_set(2);
  const int64_t cols = 3072;
  const size_t row_bytes = dtype_row_bytes(DType::BF16, cols);
  const int64_t rows = static_cast<int64_t>(bench_stream_bytes() / row_bytes) / 2 * 2;
  LargeBuffer buf = large_buffer_alloc(static_cast<size_t>(rows) * row_bytes, PageSize::kHuge);
  std::memset(buf.get(), 1, static_cast<size_t>(rows) * row_bytes);  // touched: no page faults
  bool packed = false;
  for (auto _ : state) {
    if (packed) {
      row_pairs_unpack(buf.get(), rows, cols);
    } else {
      row_pairs_pack(buf.get(), rows, cols);
    }
    packed = !packed;
  }
  const double bytes = static_cast<double>(rows) * row_bytes;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["GB"] = bytes / 1e9;
  state.counters["read_GBps"] = bench_read_bandwidth() / 1e9;
}
BENCHMARK(BM_RowPairsPack)->Iterations(6)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace speclab
