// Forward-pass speed on synthetic models in real shapes.
//   BM_Decode:  one token per call (plain decoding); tokens/s and weight bytes/s.
//   BM_Verify:  n_tokens per call (a speculative verification of n_tokens - 1 drafts); since
//               matmul_weights reads every weight row once per call, the time should grow
//               far slower than n_tokens while decoding is memory-bound.
// Napkin limit: decode tokens/s <= memory bandwidth / weight bytes per token; compare the
// bytes_per_second counter with the machine's bandwidth.
//   OMP_WAIT_POLICY=passive speclab_bench --benchmark_filter='BM_(Decode|Verify)'
// (passive: on a machine shared with other jobs, spinning OpenMP threads steal the cores
// from the threads doing the work and a forward pass gets 10x slower.)
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/threads.h"
#include "models/llama/llama_forward.h"
#include "models/llama/llama_synthetic.h"

namespace speclab {
namespace {

// Models are built once per process (seconds for the 1B shape), outside any timing.
const LlamaModel& cached_model(const std::string& spec) {
  static std::map<std::string, std::unique_ptr<LlamaModel>> models;
  auto& slot = models[spec];
  if (!slot) slot = llama_make_synthetic(spec);
  return *slot;
}

// Bytes of weights one forward call reads: every layer matrix and the output head (the
// norms are negligible, the embedding lookup reads one row per token).
double weight_bytes_per_call(const LlamaModel& m) {
  double bytes = static_cast<double>(m.weights.output.nbytes);
  for (const LlamaLayerWeights& lw : m.weights.layers) {
    for (const TensorView* w : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down}) {
      bytes += static_cast<double>(w->nbytes);
    }
  }
  return bytes;
}

constexpr int64_t kContext = 256;  // cache positions used; wraps by truncation
constexpr int64_t kPrompt = 32;    // attention spans at least this many positions

void BM_Decode(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  const LlamaModel& model = cached_model(spec);
  LlamaRunner runner(model, kContext);
  std::vector<int32_t> prompt(kPrompt);
  for (int64_t i = 0; i < kPrompt; i++)
    prompt[i] = static_cast<int32_t>((i * 7919) % runner.vocab());
  runner.forward(prompt.data(), kPrompt, true);
  int32_t token = 1;
  for (auto _ : state) {
    if (runner.n_past() + 1 > kContext) runner.truncate(kPrompt);
    const float* logits = runner.forward(&token, 1, /*last_only=*/true);
    benchmark::DoNotOptimize(logits);
    token = (token + 101) % static_cast<int32_t>(runner.vocab());
  }
  state.SetItemsProcessed(state.iterations());  // items/s = decode tokens/s
  state.SetBytesProcessed(static_cast<int64_t>(weight_bytes_per_call(model) * state.iterations()));
  state.counters["weight_MB"] = weight_bytes_per_call(model) / 1e6;
}

void BM_Verify(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  const int64_t n_tokens = state.range(0);
  const LlamaModel& model = cached_model(spec);
  LlamaRunner runner(model, kContext);
  std::vector<int32_t> prompt(kPrompt);
  for (int64_t i = 0; i < kPrompt; i++)
    prompt[i] = static_cast<int32_t>((i * 7919) % runner.vocab());
  runner.forward(prompt.data(), kPrompt, true);
  std::vector<int32_t> drafts(n_tokens, 17);
  for (auto _ : state) {
    // All n_tokens rows of logits, as verification needs them; then roll the cache back.
    const float* logits = runner.forward(drafts.data(), n_tokens);
    benchmark::DoNotOptimize(logits);
    runner.truncate(kPrompt);
  }
  state.SetItemsProcessed(state.iterations() * n_tokens);
  state.SetBytesProcessed(static_cast<int64_t>(weight_bytes_per_call(model) * state.iterations()));
}

// One thread, one [2048, 2048] matrix per dtype, one token: the kernel's per-core
// throughput in weight bytes/s (CPU time), independent of the model code.
void BM_Matmul(benchmark::State& state) {
  threads_set(1);
  const DType dtype = static_cast<DType>(state.range(0));
  const int64_t n_tokens = state.range(1);
  const int64_t n = 2048;
  LlamaConfig config;  // reuse the synthetic generator for one matrix
  config.vocab_size = n;
  config.dim = n;
  config.tie_embeddings = true;
  config.max_seq_len = 1;
  config.n_heads = config.n_kv_heads = 1;
  config.head_dim = 2;
  auto m = llama_make_random(config, dtype, 1);
  const TensorView& w = m->weights.tok_embeddings;
  std::vector<float> x(n_tokens * n, 0.5f), out(n_tokens * n);
  for (auto _ : state) {
    matmul_weights(out.data(), x.data(), w, n_tokens);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(w.nbytes) * state.iterations());
  state.SetLabel(dtype_name(dtype));
  threads_set(0);
}
BENCHMARK(BM_Matmul)
    ->ArgNames({"dtype", "n_tokens"})
    ->ArgsProduct({{static_cast<int>(DType::F32), static_cast<int>(DType::F16),
                    static_cast<int>(DType::BF16), static_cast<int>(DType::Q8_0),
                    static_cast<int>(DType::Q4_0), static_cast<int>(DType::Q4_1)},
                   {1, 8}})
    ->Unit(benchmark::kMicrosecond);

// Building a synthetic model (counter-hash RNG + conversion to the dtype, both threads).
void BM_SyntheticBuild(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  double bytes = 0.0;
  for (auto _ : state) {
    auto m = llama_make_synthetic(spec);
    bytes = weight_bytes_per_call(*m);
    benchmark::DoNotOptimize(m.get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes * state.iterations()));
}
BENCHMARK_CAPTURE(BM_SyntheticBuild, llama_3_2_1b_bf16, std::string("llama-3.2-1b:bf16"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

BENCHMARK_CAPTURE(BM_Decode, smollm2_135m_q4_1, std::string("smollm2-135m:q4_1"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);
BENCHMARK_CAPTURE(BM_Decode, llama_3_2_1b_bf16, std::string("llama-3.2-1b:bf16"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(10);
BENCHMARK_CAPTURE(BM_Verify, llama_3_2_1b_bf16, std::string("llama-3.2-1b:bf16"))
    ->ArgName("n_tokens")
    ->Arg(1)
    ->Arg(4)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(6);

}  // namespace
}  // namespace speclab

BENCHMARK_MAIN();
