// CUDA kernel families and the device forward pass, timed with CUDA events (manual time).
// Compiled only with the CUDA backend (SPECLAB_HAVE_CUDA); every case skips without a device.
//   build-cuda/bin/speclab_bench --benchmark_filter=BM_Cuda
// Napkin math printed next to each case: the bytes a memory-bound kernel must move, as
// GB/s achieved, against BM_CudaCopy's device-to-device copy in the same run (the
// bandwidth ceiling: bytes read + written per second).
#if defined(SPECLAB_HAVE_CUDA)

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cuda/cuda_attention.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_kernel_timeline.h"
#include "core/cuda/cuda_matmul.h"
#include "core/cuda/cuda_sampling.h"
#include "models/decode/speculative_decoder.h"
#include "models/drafters/draft_sampling.h"
#include "models/drafters/model_drafter.h"
#include "models/llama/cuda/cuda_batched_llama_runner.h"
#include "models/llama/cuda/cuda_llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/bench/cuda_event_timer.h"

namespace speclab {
namespace {

// Also keeps the pool's freed memory (cuda_keep_stream_ordered_memory), as the runners do, so
// that the kernels that take stream-ordered scratch per call (attention, standardization) are
// timed as a decode step runs them, not with the driver mapping memory afresh each call.
bool skip_without_device(benchmark::State& state) {
  std::string why;
  if (cuda_device_count(&why) > 0) {
    cuda_keep_stream_ordered_memory();
    return false;
  }
  state.SkipWithError(("no CUDA device: " + why).c_str());
  return true;
}

// BM_CudaCopy's rate in this run (bytes read + written per second), for the cases that
// report their weight rate as a fraction of it (0 until BM_CudaCopy ran: it is registered
// first, so a run of the whole BM_Cuda filter has it).
double g_copy_bytes_per_s = 0;

// The ceiling for memory-bound kernels: a 1 GiB device-to-device copy, counting the bytes
// read and the bytes written (METHOD.md's convention).
void BM_CudaCopy(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const size_t bytes = size_t{1} << 30;
  CudaBuffer<uint8_t> src(bytes), dst(bytes);
  SPECLAB_CUDA_CHECK(cudaMemset(src.data(), 1, bytes), "memset");
  CudaEventTimer timer;
  double total_s = 0;
  int64_t n = 0;
  for (auto _ : state) {
    timer.start();
    SPECLAB_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice),
                       "copy");
    const double s = timer.stop_ms() / 1e3;
    state.SetIterationTime(s);
    total_s += s;
    n++;
  }
  if (total_s > 0) g_copy_bytes_per_s = 2.0 * bytes * n / total_s;
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
// model and its runner are kept between cases (building the 3B weights takes seconds). CUDA
// graphs off (the series of the device records; BM_CudaStepGraphs compares both).
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
  runner->set_cuda_graphs(false);  // plain launches: the series of the device records
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

// The 1B (which 0) or 3B (1) BF16 synthetic model and a CudaLlamaRunner of 512 positions on
// it, kept between cases (the 3B's weights take seconds to build) and rebuilt when `which`
// changes: the step benchmarks below share it, their cases ordered model outermost.
const char* const kStepSpecs[] = {"llama-3.2-1b:BF16", "llama-3.2-3b:BF16"};
CudaLlamaRunner& step_runner(int64_t which, const LlamaModel** model_out) {
  static int64_t held = -1;
  static std::unique_ptr<LlamaModel> model;
  static std::unique_ptr<CudaLlamaRunner> runner;
  if (held != which) {
    runner.reset();
    model.reset();
    model = llama_make_synthetic(kStepSpecs[which]);
    runner = std::make_unique<CudaLlamaRunner>(*model, 512);
    held = which;
  }
  *model_out = model.get();
  return *runner;
}

// One decode or verification step (n_tokens after 128 cached, last row's logits) of the 1B
// and 3B shapes in BF16 with CUDA graphs off (graphs:0, every kernel launched from the host)
// and on (graphs:1, one graph launch per step, captured before the timing), k = 1..8.
// Manual time = CUDA event time of the step on the runner's stream, which includes the gaps
// in which the device waits for the host's launches (what the graph removes); wall_s = host
// wall time of the call (the launches' host cost; with graphs on the host returns before the
// device is done, so wall_s < time there). weight_GB/s = the weights a token reads over the
// step's time (one read per step whatever k); of_copy = that over BM_CudaCopy's rate of the
// same run (the >= 80% aim of docs/device.md, at n_tokens 1); T_over_T1 = this step over the
// n_tokens:1 step of the same model and graphs setting (the <= 1.1 aim up to k = 8).
void BM_CudaStepGraphs(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t which = state.range(0);
  const bool graphs = state.range(1) == 1;
  const int64_t n_tokens = state.range(2);
  static double t1_s[2][2] = {{0, 0}, {0, 0}};  // [model][graphs] the n_tokens:1 step
  const LlamaModel* model = nullptr;
  CudaLlamaRunner* runner = &step_runner(which, &model);
  runner->set_cuda_graphs(graphs);
  std::vector<int32_t> ctx(128, 1), batch(static_cast<size_t>(n_tokens), 2);
  runner->truncate(0);
  runner->forward_device(ctx.data(), ctx.size(), true);
  for (int warm = 0; warm < 3; warm++) {  // plain, capture, replay: the timing sees replays
    runner->truncate(128);
    runner->forward_device(batch.data(), n_tokens, true);
  }
  SPECLAB_CUDA_CHECK(cudaStreamSynchronize(runner->stream()), "warm-up failed");
  CudaEventTimer timer;
  double total_s = 0, wall_total = 0;
  int64_t n = 0;
  for (auto _ : state) {
    runner->truncate(128);
    timer.start(runner->stream());
    const auto t0 = std::chrono::steady_clock::now();
    runner->forward_device(batch.data(), n_tokens, true);
    wall_total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double s = timer.stop_ms(runner->stream()) / 1e3;
    state.SetIterationTime(s);
    total_s += s;
    n++;
  }
  const double step_s = n ? total_s / n : 0.0;
  if (n_tokens == 1) t1_s[which][graphs] = step_s;
  const double rate =
      step_s > 0 ? static_cast<double>(model->weight_bytes_per_token()) / step_s : 0;
  state.counters["step_s"] = step_s;
  state.counters["wall_s"] = n ? wall_total / n : 0.0;
  state.counters["weight_GB/s"] = rate / 1e9;
  state.counters["copy_GB/s"] = g_copy_bytes_per_s / 1e9;
  state.counters["of_copy"] = g_copy_bytes_per_s > 0 ? rate / g_copy_bytes_per_s : 0.0;
  state.counters["T_over_T1"] = t1_s[which][graphs] > 0 ? step_s / t1_s[which][graphs] : 0.0;
  const CudaGraphStats& g = runner->cuda_graph_stats();
  state.counters["graph_failures"] = static_cast<double>(g.failures);
  state.SetLabel(std::string(kStepSpecs[which]) + (graphs ? " graphs on" : " graphs off"));
}
// Model outermost (one model build each), n_tokens innermost (T(1) before T(k)).
void step_graphs_args(benchmark::internal::Benchmark* b) {
  for (int64_t model = 0; model < 2; model++)
    for (int64_t graphs = 0; graphs < 2; graphs++)
      for (int64_t n = 1; n <= 8; n++) b->Args({model, graphs, n});
}
BENCHMARK(BM_CudaStepGraphs)
    ->ArgNames({"model", "graphs", "n_tokens"})
    ->Apply(step_graphs_args)
    ->UseManualTime();

// Where a step's device time goes: the 1B and 3B BF16 steps of BM_CudaStepGraphs (n_tokens
// after 128 cached, last row), each kernel class timed by events between the launches
// (CudaKernelTimeline; plain launches). Counters per label L: L_us = device microseconds per
// step, L_share = of the timed sum; for the products (qkv, wo_add, gate_up, down_add, head)
// L_GBps = the weight bytes they read over that time and L_of_copy = that over BM_CudaCopy's
// rate of the same run. sum_us = the labels' sum, plain_us = the same step timed as a whole
// without events (graphs off, measured before), sum_over_plain = what the events and the
// gaps between launches add (near 1: the breakdown is the step's).
void BM_CudaStepKernels(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t which = state.range(0);
  const int64_t n_tokens = state.range(1);
  const LlamaModel* model = nullptr;
  CudaLlamaRunner* runner = &step_runner(which, &model);
  runner->set_cuda_graphs(false);
  runner->set_kernel_timeline(nullptr);
  std::vector<int32_t> ctx(128, 1), batch(static_cast<size_t>(n_tokens), 2);
  runner->truncate(0);
  runner->forward_device(ctx.data(), ctx.size(), true);
  CudaEventTimer timer;
  double plain_s = 0;
  const int kPlainSteps = 10;
  for (int i = 0; i < kPlainSteps + 2; i++) {  // 2 warm-up steps, then timed whole
    runner->truncate(128);
    timer.start(runner->stream());
    runner->forward_device(batch.data(), n_tokens, true);
    const double s = timer.stop_ms(runner->stream()) / 1e3;
    if (i >= 2) plain_s += s / kPlainSteps;
  }
  CudaKernelTimeline timeline;
  runner->set_kernel_timeline(&timeline);
  for (auto _ : state) {
    runner->truncate(128);
    timer.start(runner->stream());
    runner->forward_device(batch.data(), n_tokens, true);
    state.SetIterationTime(timer.stop_ms(runner->stream()) / 1e3);
  }
  runner->set_kernel_timeline(nullptr);
  const LlamaConfig& c = model->config;
  const double b = 2.0;  // BF16 weights
  const double layers = static_cast<double>(c.n_layers);
  const double q = static_cast<double>(c.n_heads * c.head_dim),
               kv = static_cast<double>(c.n_kv_heads * c.head_dim),
               dim = static_cast<double>(c.dim), hid = static_cast<double>(c.hidden_dim);
  const std::map<std::string, double> weight_bytes = {
      {"qkv", layers * (q + 2 * kv) * dim * b},
      {"wo_add", layers * dim * q * b},
      {"gate_up", layers * 2 * hid * dim * b},
      {"down_add", layers * dim * hid * b},
      {"head", static_cast<double>(c.vocab_size) * dim * b}};
  const double passes = static_cast<double>(std::max<int64_t>(1, timeline.passes()));
  double sum_ms = 0;
  for (const auto& [label, ms] : timeline.totals_ms()) sum_ms += ms / passes;
  for (const std::string& label : timeline.order()) {
    const double ms = timeline.totals_ms().at(label) / passes;
    state.counters[label + "_us"] = ms * 1e3;
    state.counters[label + "_share"] = sum_ms > 0 ? ms / sum_ms : 0.0;
    const auto wb = weight_bytes.find(label);
    if (wb != weight_bytes.end() && ms > 0) {
      const double rate = wb->second / (ms / 1e3);
      state.counters[label + "_GBps"] = rate / 1e9;
      state.counters[label + "_of_copy"] = g_copy_bytes_per_s > 0 ? rate / g_copy_bytes_per_s : 0;
    }
  }
  state.counters["sum_us"] = sum_ms * 1e3;
  state.counters["plain_us"] = plain_s * 1e6;
  state.counters["sum_over_plain"] = plain_s > 0 ? sum_ms / 1e3 / plain_s : 0.0;
  state.SetLabel(kStepSpecs[which]);
}
BENCHMARK(BM_CudaStepKernels)
    ->ArgNames({"model", "n_tokens"})
    ->ArgsProduct({{0, 1}, {1, 4, 5}})
    ->UseManualTime();

// A CudaLlamaRunner with its device hooks (verify_on_device, draft_on_device) switched on
// or off: off, the decoder runs its host path over the same device forward passes.
class PathRunner : public CudaLlamaRunner {
 public:
  PathRunner(const LlamaModel& model, int64_t max_ctx, std::vector<bool> skip, bool device_hooks,
             bool graphs = false, bool chain = false)
      : CudaLlamaRunner(model, max_ctx, std::move(skip)),
        device_hooks_(device_hooks),
        chain_(chain) {
    set_cuda_graphs(graphs);
  }
  bool draft_chain_on_device(const int32_t* tokens, int64_t n_tokens, int k,
                             const SamplingParams& sampling, const double* u,
                             DraftStep* out) override {
    return device_hooks_ && chain_ &&
           CudaLlamaRunner::draft_chain_on_device(tokens, n_tokens, k, sampling, u, out);
  }
  bool verify_on_device(const int32_t* batch, int n_draft, const DraftRows& q,
                        const SamplingParams& sampling, const VerifyConfig& config, RngKey base,
                        VerifyOutcome* out) override {
    return device_hooks_ &&
           CudaLlamaRunner::verify_on_device(batch, n_draft, q, sampling, config, base, out);
  }
  bool draft_on_device(const int32_t* tokens, int64_t n_tokens, int row,
                       const SamplingParams& sampling, double u, DraftStep* out) override {
    return device_hooks_ &&
           CudaLlamaRunner::draft_on_device(tokens, n_tokens, row, sampling, u, out);
  }

 private:
  bool device_hooks_;
  bool chain_;  // drafts a round's steps in one call (draft_chain_on_device)
};

// The Llama-3.2 1B (draft) and 3B (target) shapes in BF16, built once (seconds each).
struct RoundModels {
  std::unique_ptr<LlamaModel> draft, target;
};
RoundModels& round_models() {
  static RoundModels m = [] {
    RoundModels r;
    r.draft = llama_make_synthetic("llama-3.2-1b:BF16");
    r.target = llama_make_synthetic("llama-3.2-3b:BF16");
    return r;
  }();
  return m;
}

// Device time of one forward pass of n_tokens after n_ctx cached tokens (CUDA events,
// median of 5), leaving the runner's cache at n_ctx. With the runner's graphs on, rep 0 runs
// plain and rep 1 captures: the median is a replay's.
double forward_device_s(CudaLlamaRunner& runner, int64_t n_ctx, int64_t n_tokens) {
  std::vector<int32_t> ctx(static_cast<size_t>(n_ctx), 1), batch(static_cast<size_t>(n_tokens), 2);
  runner.truncate(0);
  runner.forward_device(ctx.data(), n_ctx, true);
  CudaEventTimer timer;
  std::vector<double> s;
  for (int rep = 0; rep < 6; rep++) {
    runner.truncate(n_ctx);
    timer.start(runner.stream());
    runner.forward_device(batch.data(), n_tokens, true);
    const double t = timer.stop_ms(runner.stream()) / 1e3;
    if (rep > 0) s.push_back(t);  // rep 0 warms up
  }
  runner.truncate(n_ctx);
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

// One draft token on the 1B shape, 64 tokens in: path 0 = forward (the logit row, 128,256
// floats, to the host) + draft_sample_step on the host (the reference drafter), path 1 =
// draft_on_device (standardize and draw on the device, the id to the host). Manual time =
// wall time of the step; over_forward_s = that minus the pass's device time (events, same
// run): the host's and the sampling's share of a draft step.
void BM_CudaDraftStep(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const bool device = state.range(0) == 1;
  SamplingParams sp;
  sp.temperature = state.range(1) / 100.0f;
  CudaLlamaRunner runner(*round_models().draft, 512);
  runner.set_cuda_graphs(false);  // plain launches: the series of the device records
  const int64_t n_ctx = 64;
  const double fwd_s = forward_device_s(runner, n_ctx, 1);
  const int32_t tok = 2;
  const RngKey key{1, 0, static_cast<uint64_t>(n_ctx), 0, 0};
  DraftProposal prop;  // the host path's records
  DraftStep step;
  double total = 0;
  int64_t n = 0;
  for (auto _ : state) {
    runner.truncate(n_ctx);
    prop = DraftProposal();
    const auto t0 = std::chrono::steady_clock::now();
    if (device) {
      runner.draft_on_device(&tok, 1, 0, sp, draft_uniform(key, 0), &step);
    } else {
      const float* logits = runner.forward(&tok, 1, /*last_only=*/true);
      draft_sample_step(logits, runner.vocab(), 0, sp, DraftStopRule{}, key, &prop);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    total += s;
    n++;
  }
  state.counters["forward_device_s"] = fwd_s;
  state.counters["over_forward_s"] = n ? total / n - fwd_s : 0.0;
  state.SetLabel(device ? "draft on the device" : "draft on the host");
}
BENCHMARK(BM_CudaDraftStep)
    ->ArgNames({"device", "T_pct"})
    ->ArgsProduct({{0, 1}, {0, 100}})
    ->UseManualTime();

// Host time per speculative round, the 1B shape drafting for the 3B shape (BF16, both on the
// device), through generate_speculative. Random weights: the drafts are all but never
// accepted, so a round drafts gamma tokens and emits one. path 0 = draft sampled and target
// verified on the host (logits copied), path 1 = target verified on the device, draft
// sampled on the host (the path measured on 2026-11-24), path 2 = both on the device
// (draft_on_device step by step, q rows read in place), path 3 = path 2 with the round's draft
// steps in one chain (draft_chain_on_device: one host synchronization per round's drafting). Manual
// time = wall time per round (decode_s / rounds). device_s = what the round's forward passes take
// on the device (CUDA events, this case: n_draft one-token 1B passes + one 3B pass of n_draft + 1
// tokens, per round); overhead_s = round - device_s: the host's work and waits, the copies, and the
// sampling and verification kernels (an upper bound on host time); overhead_over_T1 = overhead_s /
// T(1) of the 3B shape, the figure the 5% aim concerns. sample_s: the decoder's host sampling and
// verification time per round (RoundRecord::sample_s; 0 when the target verifies on the device).
// graphs:1 (path 2 only): both runners replay CUDA graphs of their steps, and device_s comes from
// probe runners with graphs on too.
void BM_CudaSpeculativeRound(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int path = static_cast<int>(state.range(0));
  const int gamma = static_cast<int>(state.range(1));
  const float temperature = state.range(2) / 100.0f;
  const bool graphs = state.range(3) == 1;
  RoundModels& m = round_models();
  const int64_t n_prompt = 64, ctx = 512;
  PathRunner target(*m.target, ctx, {}, path >= 1, graphs);
  const TokenRunnerFactory factory = [path, graphs](const LlamaModel& model, int64_t max_ctx,
                                                    std::vector<bool> skip) {
    return std::unique_ptr<TokenRunner>(
        new PathRunner(model, max_ctx, std::move(skip), path >= 2, graphs, path == 3));
  };
  ModelDrafter drafter(*m.draft, "llama-3.2-1b", ctx, {}, factory);
  // Device times of the passes a round makes, measured on runners of the same shapes.
  std::vector<double> target_s(static_cast<size_t>(gamma + 2), 0.0);
  double draft_fwd_s = 0;
  {
    CudaLlamaRunner probe_target(*m.target, ctx);
    probe_target.set_cuda_graphs(graphs);
    for (int k = 1; k <= gamma + 1; k++)
      target_s[static_cast<size_t>(k)] = forward_device_s(probe_target, n_prompt, k);
  }
  {
    CudaLlamaRunner probe_draft(*m.draft, ctx);
    probe_draft.set_cuda_graphs(graphs);
    draft_fwd_s = forward_device_s(probe_draft, n_prompt, 1);
  }
  GenerationRequest req;
  for (int64_t i = 0; i < n_prompt; i++) req.prompt.push_back(static_cast<int32_t>(1 + i * 7));
  req.max_new_tokens = 17;
  req.sampling.temperature = temperature;
  SpeculativeConfig cfg;
  cfg.gamma = gamma;
  cfg.draft_sampling.temperature = temperature;
  generate_speculative(target, drafter, req, cfg);  // warm-up: allocations, cuBLAS handles
  double round_total = 0, device_total = 0, sample_total = 0;
  int64_t n_rounds = 0;
  for (auto _ : state) {
    req.seed++;
    const GenerationResult r = generate_speculative(target, drafter, req, cfg);
    double device = 0;
    for (const RoundRecord& rec : r.rounds) {
      device += rec.n_draft * draft_fwd_s + target_s[static_cast<size_t>(rec.n_draft + 1)];
      sample_total += rec.sample_s;
    }
    const double rounds = static_cast<double>(std::max<size_t>(r.rounds.size(), 1));
    state.SetIterationTime(r.decode_s / rounds);
    round_total += r.decode_s;
    device_total += device;
    n_rounds += static_cast<int64_t>(r.rounds.size());
  }
  const double round_s = n_rounds ? round_total / n_rounds : 0.0;
  const double device_s = n_rounds ? device_total / n_rounds : 0.0;
  state.counters["round_s"] = round_s;
  state.counters["device_s"] = device_s;
  state.counters["overhead_s"] = round_s - device_s;
  state.counters["sample_s"] = n_rounds ? sample_total / n_rounds : 0.0;
  state.counters["T1_s"] = target_s[1];
  state.counters["overhead_over_T1"] = target_s[1] > 0 ? (round_s - device_s) / target_s[1] : 0.0;
  const char* names[] = {"host draft, host verify", "host draft, device verify",
                         "device draft, device verify", "device draft chain, device verify"};
  state.counters["graph_failures"] = static_cast<double>(target.cuda_graph_stats().failures);
  state.SetLabel(std::string(names[path]) + (graphs ? ", graphs on" : ""));
}
BENCHMARK(BM_CudaSpeculativeRound)
    ->ArgNames({"path", "gamma", "T_pct", "graphs"})
    ->ArgsProduct({{0, 1, 2}, {1, 4}, {0, 100}, {0}})
    ->ArgsProduct({{2}, {1, 4}, {0, 100}, {1}})
    ->ArgsProduct({{3}, {4}, {0, 100}, {0, 1}})
    ->Iterations(3)
    ->UseManualTime();

// Continuous batching on the device: one CudaBatchedLlamaRunner forward of b slots x k new
// tokens (every row's logits, as a verify) against b forwards of one slot's k tokens each, on
// the Llama-3.2 3B shape in BF16 (b = 1, 2, 4, 8, 16, 32; k = 1 and 5), every slot holding
// 64 positions. Both are the runner's batch-invariant kernels (cuda_matmul_rows); the b
// single-slot forwards are what the same requests cost served one at a time. Host wall time of
// the synchronized calls (the logits come back to the host, as the batched loop needs them).
// Counters: T_batch_ms (the b x k forward), T_singles_ms (the b forwards), ratio = T_batch /
// T_singles (< 1: batching pays), rows = b k, T_over_T1 = T_batch over the b:1/k:1 forward of
// the same run (the CPU's aim, docs/batching.md: 32 rows < 8x one row), rows_per_s.
void BM_CudaBatchedForward(benchmark::State& state) {
  if (skip_without_device(state)) return;
  constexpr int64_t kSlotsHeld = 32, kContext = 64, kMaxCtx = 256;
  const int64_t b = state.range(0), k = state.range(1);
  static std::unique_ptr<LlamaModel> model;
  static std::unique_ptr<CudaBatchedLlamaRunner> runner;
  static double t1_s = 0;  // the b:1, k:1 forward of this run
  if (!runner) {
    model = llama_make_synthetic("llama-3.2-3b:BF16");
    runner = std::make_unique<CudaBatchedLlamaRunner>(*model, kSlotsHeld, kMaxCtx);
    std::vector<BatchRow> prompt;  // every slot's context, one prefill forward
    for (int32_t s = 0; s < kSlotsHeld; s++)
      for (int64_t i = 0; i < kContext; i++)
        prompt.push_back({s, static_cast<int32_t>((s * 7919 + i * 104729 + 13) % 128000)});
    runner->forward_batch(prompt, /*last_only=*/true);
  }
  std::vector<BatchRow> batch;                 // [b * k] rows, slot by slot
  std::vector<std::vector<BatchRow>> singles;  // [b] one slot's k rows each
  for (int32_t s = 0; s < b; s++) {
    singles.emplace_back();
    for (int64_t i = 0; i < k; i++) {
      const BatchRow row{s, static_cast<int32_t>((s * 31 + i * 7 + 1) % 128000)};
      batch.push_back(row);
      singles.back().push_back(row);
    }
  }
  auto rewind = [&] {
    for (int64_t s = 0; s < b; s++) runner->truncate(s, kContext);
  };
  runner->forward_batch(batch);  // warm-up (the stream-ordered pool, the first launches)
  rewind();
  double t_batch = 0, t_singles = 0;
  int64_t n = 0;
  for (auto _ : state) {
    const auto a = std::chrono::steady_clock::now();
    for (const auto& one : singles) benchmark::DoNotOptimize(runner->forward_batch(one));
    rewind();
    const auto m = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(runner->forward_batch(batch));
    rewind();
    const auto e = std::chrono::steady_clock::now();
    t_singles += std::chrono::duration<double>(m - a).count();
    t_batch += std::chrono::duration<double>(e - m).count();
    state.SetIterationTime(std::chrono::duration<double>(e - m).count());
    n++;
  }
  const double batch_s = n ? t_batch / n : 0.0;
  if (b == 1 && k == 1) t1_s = batch_s;
  state.counters["T_batch_ms"] = 1e3 * batch_s;
  state.counters["T_singles_ms"] = n ? 1e3 * t_singles / n : 0.0;
  state.counters["ratio"] = t_singles > 0 ? t_batch / t_singles : 0.0;
  state.counters["rows"] = static_cast<double>(b * k);
  state.counters["T_over_T1"] = t1_s > 0 ? batch_s / t1_s : 0.0;
  state.counters["rows_per_s"] = batch_s > 0 ? static_cast<double>(b * k) / batch_s : 0.0;
  state.SetLabel("llama-3.2-3b:BF16 batched");
}
// b outermost, k innermost: the b:1/k:1 case (T1) runs first.
BENCHMARK(BM_CudaBatchedForward)
    ->ArgNames({"b", "k"})
    ->ArgsProduct({{1, 2, 4, 8, 16, 32}, {1, 5}})
    ->Iterations(3)
    ->UseManualTime();

}  // namespace
}  // namespace speclab

#endif  // SPECLAB_HAVE_CUDA
