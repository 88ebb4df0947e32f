// Kernel benchmarks, both cores (as a forward pass runs them):
//   BM_Matmul/<dtype>/<k>  matmul_weights on [8192, 3072] matrices (the 3B MLP shape), k
//                          activation rows; rotating over enough matrices (>= 256 MB) that
//                          every call streams its weights from memory, as in decoding.
//                          Counters: bytes/s of weights, FLOP/s, bw_frac (of the measured
//                          read bandwidth: the napkin limit while k is small).
#include <map>
#include <memory>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/threads.h"
#include "models/llama/llama_synthetic.h"
#include "tests/bench/bench_common.h"

namespace speclab {
namespace {

constexpr int64_t kRows = 8192, kCols = 3072;

// Enough [kRows, kCols] matrices of `dtype` to exceed every cache level several times.
const std::vector<std::unique_ptr<LlamaModel>>& matrices(DType dtype) {
  static std::map<DType, std::vector<std::unique_ptr<LlamaModel>>> cache;
  auto& set = cache[dtype];
  if (set.empty()) {
    LlamaConfig config;  // the synthetic generator, for embedding-sized matrices only
    config.vocab_size = kRows;
    config.dim = kCols;
    config.n_layers = 0;
    config.tie_embeddings = true;
    config.max_seq_len = 1;
    config.n_heads = config.n_kv_heads = 1;
    config.head_dim = 2;
    const double bytes = static_cast<double>(dtype_row_bytes(dtype, kCols)) * kRows;
    const int n = std::max(2, static_cast<int>((256e6 + bytes - 1) / bytes));
    for (int i = 0; i < n; i++) set.push_back(llama_make_random(config, dtype, 100 + i));
  }
  return set;
}

void BM_Matmul(benchmark::State& state) {
  threads_set(2);
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
  const double bytes = static_cast<double>(set[0]->weights.tok_embeddings.nbytes);
  bench_set_bandwidth_counters(state, bytes);
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * kRows * kCols * k * state.iterations(), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dtype)) + " " + matmul_isa());
}
BENCHMARK(BM_Matmul)
    ->ArgNames({"dtype", "k"})
    ->ArgsProduct({{static_cast<int>(DType::F32), static_cast<int>(DType::F16),
                    static_cast<int>(DType::BF16), static_cast<int>(DType::Q8_0),
                    static_cast<int>(DType::Q4_1)},
                   {1, 2, 4, 8, 16}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MinTime(0.3);

}  // namespace
}  // namespace speclab
