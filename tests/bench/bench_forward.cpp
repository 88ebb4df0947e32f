// Forward-pass speed on synthetic models in real shapes, both cores.
//   BM_Decode/<model>          one token per call (plain decoding): tokens/s (items/s), weight
//                              bytes/s, bw_frac = weight bytes/s over the measured read
//                              bandwidth (the napkin limit: tokens/s <= bandwidth / bytes).
//   BM_Verify/<model>/<k>      k tokens per call (verifying k - 1 drafts plus one), all k rows
//                              of logits; T(k)/T(1) = its time over BM_Verify/<model>/1.
//   BM_Prefill/<model>/<n>     an n-token prompt in one call; FLOP/s of the weight matrices
//                              (2 * params * n) against BM_Sgemm's FP32 rate.
//   BM_SyntheticBuild/<model>  building the synthetic model (hash RNG, both threads).
// tests/bench/figures.sh runs them all and prints the table of figures with their limits.
// OMP_WAIT_POLICY=passive: on a machine shared with other jobs, spinning OpenMP threads steal
// the cores from the threads doing the work.
#include <string>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/threads.h"
#include "models/llama/llama_forward.h"
#include "models/llama/llama_synthetic.h"
#include "tests/bench/bench_common.h"

namespace speclab {
namespace {

constexpr int64_t kContext = 1024;  // cache positions; decode wraps by truncation
constexpr int64_t kPrompt = 32;     // attention spans at least this many positions

std::vector<int32_t> prompt_tokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> p(n);
  for (int64_t i = 0; i < n; i++) p[i] = static_cast<int32_t>((i * 7919 + 13) % vocab);
  return p;
}

void BM_Decode(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  const LlamaModel& model = bench_model(spec);
  LlamaRunner runner(model, kContext);
  const std::vector<int32_t> prompt = prompt_tokens(kPrompt, runner.vocab());
  runner.forward(prompt.data(), kPrompt, true);
  int32_t token = 1;
  for (auto _ : state) {
    if (runner.n_past() + 1 > 256) runner.truncate(kPrompt);
    const float* logits = runner.forward(&token, 1, /*last_only=*/true);
    benchmark::DoNotOptimize(logits);
    token = (token + 101) % static_cast<int32_t>(runner.vocab());
  }
  state.SetItemsProcessed(state.iterations());  // items/s = decode tokens/s
  bench_set_bandwidth_counters(state, bench_weight_bytes(model));
  state.counters["weight_MB"] = bench_weight_bytes(model) / 1e6;
  state.SetLabel(matmul_isa());
}

void BM_Verify(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  const int64_t k = state.range(0);
  const LlamaModel& model = bench_model(spec);
  LlamaRunner runner(model, kContext);
  const std::vector<int32_t> prompt = prompt_tokens(kPrompt, runner.vocab());
  runner.forward(prompt.data(), kPrompt, true);
  const std::vector<int32_t> drafts = prompt_tokens(k, runner.vocab());
  for (auto _ : state) {
    // All k rows of logits, as verification needs them; then roll the cache back.
    const float* logits = runner.forward(drafts.data(), k);
    benchmark::DoNotOptimize(logits);
    runner.truncate(kPrompt);
  }
  state.SetItemsProcessed(state.iterations() * k);
  bench_set_bandwidth_counters(state, bench_weight_bytes(model));
  state.SetLabel(matmul_isa());
}

void BM_Prefill(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  const int64_t n = state.range(0);
  const LlamaModel& model = bench_model(spec);
  LlamaRunner runner(model, kContext);
  const std::vector<int32_t> prompt = prompt_tokens(n, runner.vocab());
  for (auto _ : state) {
    runner.truncate(0);
    const float* logits = runner.forward(prompt.data(), n, /*last_only=*/true);
    benchmark::DoNotOptimize(logits);
  }
  state.SetItemsProcessed(state.iterations() * n);
  // The head runs on the last token only: its FLOPs count once.
  const double head = 2.0 * static_cast<double>(model.weights.output.numel());
  const double flops = (bench_weight_flops_per_token(model) - head) * n + head;
  state.counters["FLOP/s"] =
      benchmark::Counter(flops * state.iterations(), benchmark::Counter::kIsRate);
  state.SetLabel(matmul_isa());
}

void BM_SyntheticBuild(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  double bytes = 0.0;
  for (auto _ : state) {
    auto m = llama_make_synthetic(spec);
    bytes = bench_weight_bytes(*m);
    benchmark::DoNotOptimize(m.get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes * state.iterations()));
}

// Registration order = run order; bench_model keeps one model at a time, so each model's
// benchmarks are grouped.
void register_model(const char* tag, const std::string& spec, bool verify, bool prefill,
                    int decode_iters) {
  benchmark::RegisterBenchmark((std::string("BM_Decode/") + tag).c_str(), BM_Decode, spec)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(decode_iters)
      ->Repetitions(3)
      ->ReportAggregatesOnly(false);
  if (verify) {
    benchmark::RegisterBenchmark((std::string("BM_Verify/") + tag).c_str(), BM_Verify, spec)
        ->ArgName("k")
        ->Arg(1)
        ->Arg(2)
        ->Arg(4)
        ->Arg(8)
        ->Arg(16)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(decode_iters)
        ->Repetitions(3);
  }
  if (prefill) {
    benchmark::RegisterBenchmark((std::string("BM_Prefill/") + tag).c_str(), BM_Prefill, spec)
        ->ArgName("n")
        ->Arg(512)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1)
        ->Repetitions(2);
  }
}

const int kRegistered = [] {
  benchmark::RegisterBenchmark("BM_SyntheticBuild/llama-3.2-3b:bf16", BM_SyntheticBuild,
                               std::string("llama-3.2-3b:bf16"))
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1);
  register_model("smollm2-135m:bf16", "smollm2-135m:bf16", false, false, 40);
  register_model("llama-3.2-1b:bf16", "llama-3.2-1b:bf16", true, true, 10);
  register_model("llama-3.2-1b:q8_0", "llama-3.2-1b:q8_0", false, false, 10);
  register_model("llama-3.2-1b:q4_1", "llama-3.2-1b:q4_1", false, false, 10);
  register_model("llama-3.2-3b:bf16", "llama-3.2-3b:bf16", true, false, 6);
  register_model("llama-3.2-3b:q8_0", "llama-3.2-3b:q8_0", false, false, 6);
  register_model("llama-3.2-3b:q4_1", "llama-3.2-3b:q4_1", true, false, 6);
  return 0;
}();

}  // namespace
}  // namespace speclab
