// speclab_bench: Google Benchmark main that measures the machine's read bandwidth first and
// records it in the run's context (JSON "context.read_bandwidth_GBps"), so every figure is
// printed next to its napkin limit from the same run. See tests/bench/README.md.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>

#include "core/cpu_matmul.h"
#include "core/threads.h"
#include "experiments/machine_info.h"
#include "models/llama/llama_synthetic.h"
#include "tests/bench/bench_common.h"

namespace speclab {

double bench_read_bandwidth() {
  static const double bw = machine_measure_read_bandwidth(size_t{512} << 20, 1.0, 2) * 1e9;
  return bw;
}

const LlamaModel& bench_model(const std::string& spec) {
  static std::string current;
  static std::unique_ptr<LlamaModel> model;
  if (!model || current != spec) {
    model.reset();  // free the previous model first: two 3B models do not fit
    threads_set(2);
    model = llama_make_synthetic(spec);
    current = spec;
  }
  return *model;
}

double bench_weight_bytes(const LlamaModel& m) {
  double bytes = static_cast<double>(m.weights.output.nbytes);
  for (const LlamaLayerWeights& lw : m.weights.layers) {
    for (const TensorView* w : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down})
      bytes += static_cast<double>(w->nbytes);
  }
  return bytes;
}

double bench_weight_flops_per_token(const LlamaModel& m) {
  double params = static_cast<double>(m.weights.output.numel());
  for (const LlamaLayerWeights& lw : m.weights.layers) {
    for (const TensorView* w : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down})
      params += static_cast<double>(w->numel());
  }
  return 2.0 * params;
}

void bench_set_bandwidth_counters(benchmark::State& state, double bytes_per_iteration) {
  state.SetBytesProcessed(static_cast<int64_t>(bytes_per_iteration * state.iterations()));
  state.counters["bw_frac"] =
      benchmark::Counter(bytes_per_iteration * state.iterations() / bench_read_bandwidth(),
                         benchmark::Counter::kIsRate);
}

}  // namespace speclab

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const double bw = speclab::bench_read_bandwidth();
  std::fprintf(stderr, "measured read bandwidth (2 threads): %.2f GB/s\n", bw / 1e9);
  benchmark::AddCustomContext("read_bandwidth_GBps", std::to_string(bw / 1e9));
  benchmark::AddCustomContext("matmul_isa", speclab::matmul_isa());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
