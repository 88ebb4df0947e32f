// CUDA kernel families and the device forward pass, timed with CUDA events (manual time).
// Compiled only with the CUDA backend (SPECLAB_HAVE_CUDA); every case skips without a device.
//   build-cuda/bin/speclab_bench --benchmark_filter=BM_Cuda
// Napkin math printed next to each case: the bytes a memory-bound kernel must move, as
// GB/s achieved, against BM_CudaCopy's device-to-device copy in the same run (the
// bandwidth ceiling: bytes read + written per second).
#if defined(SPECLAB_HAVE_CUDA)

#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "core/cuda/cuda_attention.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_matmul.h"
#include "core/cuda/cuda_sampling.h"
#include "models/llama/cuda/cuda_llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/bench/cuda_event_timer.h"

namespace speclab {
namespace {

bool skip_without_device(benchmark::State& state) {
  std::string why;
  if (cuda_device_count(&why) > 0) return false;
  state.SkipWithError(("no CUDA device: " + why).c_str());
  return true;
}

// The ceiling for memory-bound kernels: a 1 GiB device-to-device copy, counting the bytes
// read and the bytes written (METHOD.md's convention).
void BM_CudaCopy(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const size_t bytes = size_t{1} << 30;
  CudaBuffer<uint8_t> src(bytes), dst(bytes);
  SPECLAB_CUDA_CHECK(cudaMemset(src.data(), 1, bytes), "memset");
  CudaEventTimer timer;
  for (auto _ : state) {
    timer.start();
    SPECLAB_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice),
                       "copy");
    state.SetIterationTime(timer.stop_ms() / 1e3);
  }
  state.counters["copy_GB/s"] = benchmark::Counter(
      2.0 * bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_CudaCopy)->UseManualTime();

// out [n_tokens, n_out] = x · Wᵀ, W [n_out, n_in] in the dtype of range(3).
void BM_CudaMatmul(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t n_out = state.range(0), n_in = state.range(1), n_tokens = state.range(2);
  const DType dtype = static_cast<DType>(state.range(3));
  std::vector<float> wf(n_out * n_in, 0.01f);
  std::vector<uint8_t> bytes(n_out * dtype_row_bytes(dtype, n_in));
  dtype_from_f32(dtype, wf.data(), bytes.data(), wf.size());
  TensorView view;
  view.name = "bench";
  view.dtype = dtype;
  view.shape = {n_out, n_in};
  view.data = bytes.data();
  const CudaWeight w = cuda_weight_upload(view);
  CudaBuffer<float> x(n_tokens * n_in), out(n_tokens * n_out);
  SPECLAB_CUDA_CHECK(cudaMemset(x.data(), 0, sizeof(float) * n_tokens * n_in), "memset");
  CudaEventTimer timer;
  for (auto _ : state) {
    timer.start();
    cuda_matmul_weights(out.data(), x.data(), w.view(), n_tokens, nullptr);
    state.SetIterationTime(timer.stop_ms() / 1e3);
  }
  state.counters["weight_GB/s"] = benchmark::Counter(static_cast<double>(bytes.size()),
                                                     benchmark::Counter::kIsIterationInvariantRate,
                                                     benchmark::Counter::kIs1000);
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * n_out * n_in * n_tokens,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(dtype_name(dtype));
}
BENCHMARK(BM_CudaMatmul)
    ->ArgNames({"n_out", "n_in", "n_tokens", "dtype"})
    ->ArgsProduct({{2048, 8192},
                   {2048},
                   {1, 5, 9},
                   {int(DType::F32), int(DType::BF16), int(DType::Q8_0), int(DType::Q4_1)}})
    ->UseManualTime();

// Attention of n_tokens queries (32 heads, 8 kv heads, head_dim 64) over n_past positions.
void BM_CudaAttention(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t n_past = state.range(0), n_tokens = state.range(1), heads = 32, kv = 8, hd = 64;
  CudaBuffer<float> q(n_tokens * heads * hd), k((n_past + n_tokens) * kv * hd),
      v((n_past + n_tokens) * kv * hd), out(n_tokens * heads * hd);
  SPECLAB_CUDA_CHECK(cudaMemset(q.data(), 0, q.size() * 4), "memset");
  SPECLAB_CUDA_CHECK(cudaMemset(k.data(), 0, k.size() * 4), "memset");
  SPECLAB_CUDA_CHECK(cudaMemset(v.data(), 0, v.size() * 4), "memset");
  CudaEventTimer timer;
  for (auto _ : state) {
    timer.start();
    cuda_attention(out.data(), q.data(), k.data(), v.data(), n_tokens, n_past, heads, kv, hd,
                   nullptr);
    state.SetIterationTime(timer.stop_ms() / 1e3);
  }
  state.counters["kv_GB/s"] = benchmark::Counter(2.0 * 4 * (n_past + n_tokens) * kv * hd,
                                                 benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_CudaAttention)
    ->ArgNames({"n_past", "n_tokens"})
    ->ArgsProduct({{128, 1024, 4096}, {1, 5}})
    ->UseManualTime();

// Standardization of gamma + 1 = 5 rows of a 128256-token vocabulary.
void BM_CudaStandardize(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t vocab = 128256, rows = 5;
  std::vector<float> host(rows * vocab);
  std::mt19937 gen(1);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (float& f : host) f = dist(gen);
  CudaBuffer<float> logits, probs(rows * vocab);
  logits.upload(host.data(), host.size());
  SamplingParams sp;
  sp.temperature = 0.8f;
  sp.top_k = static_cast<int>(state.range(0));
  sp.top_p = state.range(1) / 100.0f;
  CudaEventTimer timer;
  for (auto _ : state) {
    timer.start();
    cuda_sampling_standardize(probs.data(), logits.data(), rows, vocab, sp, nullptr);
    state.SetIterationTime(timer.stop_ms() / 1e3);
  }
}
BENCHMARK(BM_CudaStandardize)
    ->ArgNames({"top_k", "top_p_pct"})
    ->Args({0, 100})
    ->Args({50, 100})
    ->Args({0, 90})
    ->UseManualTime();

// Whole forward pass of a synthetic model: n_tokens new tokens after 128 cached ones.
// T(k)/T(1) is BM_CudaForward/model:M/n_tokens:k over n_tokens:1 of the same model. The
// model and its runner are kept between cases (building the 3B weights takes seconds).
void BM_CudaForward(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const char* specs[] = {"synthetic:llama-3.2-1b", "synthetic:llama-3.2-3b"};
  static int64_t held = -1;
  static std::unique_ptr<LlamaModel> model;
  static std::unique_ptr<CudaLlamaRunner> runner;
  if (held != state.range(0)) {
    runner.reset();
    model.reset();
    model = llama_make_synthetic(std::string(specs[state.range(0)]).substr(10) + ":BF16");
    runner = std::make_unique<CudaLlamaRunner>(*model, 512);
    held = state.range(0);
  }
  std::vector<int32_t> ctx(128, 1), batch(state.range(1), 2);
  runner->truncate(0);
  runner->forward_device(ctx.data(), ctx.size(), true);
  CudaEventTimer timer;
  for (auto _ : state) {
    runner->truncate(128);
    timer.start(runner->stream());
    runner->forward_device(batch.data(), batch.size(), true);
    state.SetIterationTime(timer.stop_ms(runner->stream()) / 1e3);
  }
  state.counters["weight_GB/s"] = benchmark::Counter(
      static_cast<double>(model->weight_bytes_per_token()),
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(specs[state.range(0)]);
}
BENCHMARK(BM_CudaForward)
    ->ArgNames({"model", "n_tokens"})
    ->ArgsProduct({{0, 1}, benchmark::CreateDenseRange(1, 17, 1)})
    ->UseManualTime();

}  // namespace
}  // namespace speclab

#endif  // SPECLAB_HAVE_CUDA
