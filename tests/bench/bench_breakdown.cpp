// Where a decode step's wall time goes, kernel by kernel.
//   BM_DecodeBreakdown/<model>/threads:N  one token per step through the per-call kernels
//       (each opens its own OpenMP region, as LlamaRunner::run did before the step team),
//       the same sequence of calls as the forward pass, with a clock read around each call.
//       Counters, ms per token: mm_layers (the seven layer matrices), mm_head (the output
//       head), attention, rope, norms (the RMSNorms), elementwise (residual adds, SwiGLU,
//       embedding row); regions = OpenMP parallel regions opened per token. Context: as
//       BM_Decode, positions 32..256 (the cache holds arbitrary values: the time does not
//       depend on them).
//   BM_ForwardBreakdown/<model>/rows:R  the same for one step of R rows at consecutive positions
//       (a verification of R - 1 drafts, or the rows of a batch), 2 threads, ms per step; also
//       mm_GFLOPs (the weight products' rate: 2 x weight parameters x R over the layers' and
//       head's time), step_GFLOPs (over the whole step), peak_GFLOPs (the FP32 FMA peak of the
//       same threads, measured after the steps) and mm_peak_frac: where a many-row forward's
//       shortfall against the peak lies, in the products or around them.
//   BM_DecodeTeam/<model>  the step team against the per-call kernels, interleaved token by
//       token (see the function).
//   BM_ParallelRegion/threads:N  an empty `#pragma omp parallel` region (fork + join): the
//       fixed cost each per-call kernel pays; with OMP_WAIT_POLICY=passive (figures.sh, the
//       CLI) the workers sleep in the kernel between regions and are woken by a futex.
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "core/cpu_attention.h"
#include "core/cpu_matmul.h"
#include "core/cpu_ops.h"
#include "core/cpu_rope.h"
#include "core/threads.h"
#include "models/llama/llama_rope.h"
#include "models/llama/llama_runner.h"
#include "tests/bench/bench_common.h"

namespace speclab {
namespace {

using Clock = std::chrono::steady_clock;

// The per-call matmul opens a region when out * in * tokens >= 2^18 (core/cpu_matmul.cpp);
// attention when heads * context * head_dim >= 2^16 (core/cpu_attention.cpp).
bool matmul_parallel(const TensorView& w, int64_t rows) {
  return w.rows() * w.cols() * rows >= (int64_t{1} << 18);
}

// One step of `rows` tokens (rows = 1: a decode step; more: a verification or a batch's rows,
// all at consecutive positions of one cache) through the per-call kernels, timed call by call.
void breakdown(benchmark::State& state, const std::string& spec, int n_threads, int64_t rows) {
  const LlamaModel& model = bench_model(spec);
  threads_set(n_threads);
  const LlamaConfig& c = model.config;
  const LlamaWeights& w = model.weights;
  const int64_t dim = c.dim, q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  constexpr int64_t kFirst = 32;
  const int64_t last = 256 + rows;  // cache positions: the step's rows start in [32, 256)
  std::vector<float> x(rows * dim), xb(rows * dim), xb2(rows * dim), q(rows * q_dim),
      att(rows * q_dim), hb(rows * c.hidden_dim), hb2(rows * c.hidden_dim),
      logits(rows * c.vocab_size);
  std::vector<std::vector<float>> key(c.n_layers), value(c.n_layers), attn_norm(c.n_layers),
      ffn_norm(c.n_layers);
  for (int64_t l = 0; l < c.n_layers; l++) {
    key[l].assign(last * kv_dim, 0.01f);
    value[l].assign(last * kv_dim, 0.01f);
    attn_norm[l].resize(dim);
    ffn_norm[l].resize(dim);
    dtype_to_f32(w.layers[l].attn_norm.dtype, w.layers[l].attn_norm.data, attn_norm[l].data(), dim);
    dtype_to_f32(w.layers[l].ffn_norm.dtype, w.layers[l].ffn_norm.data, ffn_norm[l].data(), dim);
  }
  std::vector<float> final_norm(dim);
  dtype_to_f32(w.final_norm.dtype, w.final_norm.data, final_norm.data(), dim);
  const std::vector<float> inv_freq = llama_rope_inv_freq(c);
  const bool interleaved = c.rope_pairing == RopePairing::kInterleaved;

  enum { kLayers, kHead, kAttention, kRope, kNorms, kElementwise, kCount };
  double sec[kCount] = {0};
  int64_t regions = 0;
  int64_t n_past = kFirst;
  int32_t token = 1;
  Clock::time_point t0 = Clock::now();
  // Adds the time since the last mark to category k.
  auto mark = [&](int k) {
    const Clock::time_point now = Clock::now();
    sec[k] += std::chrono::duration<double>(now - t0).count();
    t0 = now;
  };
  for (auto _ : state) {
    if (n_past + rows > last) n_past = kFirst;
    regions = 0;
    t0 = Clock::now();
    for (int64_t r = 0; r < rows; r++) {
      weights_row_to_f32(
          x.data() + r * dim, w.tok_embeddings,
          (token + 7 * static_cast<int32_t>(r)) % static_cast<int32_t>(c.vocab_size));
    }
    mark(kElementwise);
    for (int64_t l = 0; l < c.n_layers; l++) {
      const LlamaLayerWeights& lw = w.layers[l];
      float* k_new = key[l].data() + n_past * kv_dim;
      float* v_new = value[l].data() + n_past * kv_dim;
      rmsnorm(xb.data(), x.data(), attn_norm[l].data(), rows, dim, c.rms_norm_eps);
      mark(kNorms);
      matmul_weights(q.data(), xb.data(), lw.wq, rows);
      matmul_weights(k_new, xb.data(), lw.wk, rows);
      matmul_weights(v_new, xb.data(), lw.wv, rows);
      mark(kLayers);
      rope_apply(q.data(), rows, c.n_heads, c.head_dim, n_past, inv_freq.data(), interleaved);
      rope_apply(k_new, rows, c.n_kv_heads, c.head_dim, n_past, inv_freq.data(), interleaved);
      mark(kRope);
      attention(att.data(), q.data(), key[l].data(), value[l].data(), rows, n_past, c.n_heads,
                c.n_kv_heads, c.head_dim);
      mark(kAttention);
      matmul_weights(xb2.data(), att.data(), lw.wo, rows);
      mark(kLayers);
      add_inplace(x.data(), xb2.data(), rows * dim);
      mark(kElementwise);
      rmsnorm(xb.data(), x.data(), ffn_norm[l].data(), rows, dim, c.rms_norm_eps);
      mark(kNorms);
      matmul_weights(hb.data(), xb.data(), lw.w_gate, rows);
      matmul_weights(hb2.data(), xb.data(), lw.w_up, rows);
      mark(kLayers);
      swiglu(hb.data(), hb.data(), hb2.data(), rows * c.hidden_dim);
      mark(kElementwise);
      matmul_weights(xb2.data(), hb.data(), lw.w_down, rows);
      mark(kLayers);
      add_inplace(x.data(), xb2.data(), rows * dim);
      mark(kElementwise);
      for (const TensorView* m : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down})
        regions += matmul_parallel(*m, rows) ? 1 : 0;
      regions += rows * c.n_heads * (n_past + rows) * c.head_dim >= (int64_t{1} << 16) ? 1 : 0;
    }
    rmsnorm(xb.data(), x.data(), final_norm.data(), rows, dim, c.rms_norm_eps);
    mark(kNorms);
    matmul_weights(logits.data(), xb.data(), w.output, rows);
    mark(kHead);
    regions += matmul_parallel(w.output, rows) ? 1 : 0;
    benchmark::DoNotOptimize(logits.data());
    n_past++;
    token = (token + 101) % static_cast<int32_t>(c.vocab_size);
  }
  const double n = static_cast<double>(state.iterations());
  const char* names[kCount] = {"mm_layers_ms", "mm_head_ms", "attention_ms",
                               "rope_ms",      "norms_ms",   "elementwise_ms"};
  for (int k = 0; k < kCount; k++) state.counters[names[k]] = 1e3 * sec[k] / n;
  state.counters["regions"] = static_cast<double>(regions);
  if (rows > 1) {
    // The weight products' rate against the FMA peak of the same threads, measured after the
    // steps: what the matrices reach beside what the whole step does.
    const double mm_s = (sec[kLayers] + sec[kHead]) / n;
    const double mm_flops = bench_weight_flops_per_token(model) * static_cast<double>(rows);
    const double peak = bench_fma_peak_flops(n_threads);
    double step_s = 0.0;
    for (int k = 0; k < kCount; k++) step_s += sec[k] / n;
    state.counters["mm_GFLOPs"] = mm_flops / mm_s / 1e9;
    state.counters["step_GFLOPs"] = mm_flops / step_s / 1e9;
    state.counters["peak_GFLOPs"] = peak / 1e9;
    state.counters["mm_peak_frac"] = peak > 0 ? mm_flops / mm_s / peak : 0.0;
  }
  state.SetItemsProcessed(state.iterations() * rows);
  state.SetLabel(matmul_isa());
  threads_set(2);
}

void BM_DecodeBreakdown(benchmark::State& state, const std::string& spec) {
  breakdown(state, spec, static_cast<int>(state.range(0)), 1);
}

void BM_ForwardBreakdown(benchmark::State& state, const std::string& spec) {
  breakdown(state, spec, 2, state.range(0));
}

// The step team against the per-call kernels on the same model, one token each in turn (the
// load drifts within seconds on a shared machine: a ratio of interleaved times is robust to
// it). The iteration time is the team's; counters: team_ms, per_call_ms, speedup
// (per_call / team), and bw_frac of the team's step against the read probe of this run.
void BM_DecodeTeam(benchmark::State& state, const std::string& spec) {
  const LlamaModel& model = bench_model(spec);
  threads_set(static_cast<int>(state.range(0)));
  LlamaRunner team(model, 1024), per_call(model, 1024);
  per_call.set_step_team(false);
  std::vector<int32_t> prompt(32);
  for (int64_t i = 0; i < 32; i++) prompt[i] = static_cast<int32_t>((i * 7919 + 13) % team.vocab());
  team.forward(prompt.data(), 32, true);
  per_call.forward(prompt.data(), 32, true);
  double t_team = 0.0, t_call = 0.0;
  int32_t token = 1;
  for (auto _ : state) {
    if (team.n_past() + 1 > 256) {
      team.truncate(32);
      per_call.truncate(32);
    }
    const Clock::time_point a = Clock::now();
    benchmark::DoNotOptimize(team.forward(&token, 1, true));
    const Clock::time_point b = Clock::now();
    benchmark::DoNotOptimize(per_call.forward(&token, 1, true));
    const Clock::time_point c = Clock::now();
    t_team += std::chrono::duration<double>(b - a).count();
    t_call += std::chrono::duration<double>(c - b).count();
    state.SetIterationTime(std::chrono::duration<double>(b - a).count());
    token = (token + 101) % static_cast<int32_t>(team.vocab());
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["team_ms"] = 1e3 * t_team / n;
  state.counters["per_call_ms"] = 1e3 * t_call / n;
  state.counters["speedup"] = t_call / t_team;
  state.SetItemsProcessed(state.iterations());
  bench_set_bandwidth_counters(state, bench_weight_bytes(model));
  state.SetLabel(matmul_isa());
  threads_set(2);
}

void BM_ParallelRegion(benchmark::State& state) {
  threads_set(static_cast<int>(state.range(0)));
  for (auto _ : state) {
#pragma omp parallel
    { benchmark::ClobberMemory(); }
  }
  threads_set(2);
}

const int kRegistered = [] {
  benchmark::RegisterBenchmark("BM_ParallelRegion", BM_ParallelRegion)
      ->ArgName("threads")
      ->Arg(2)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  auto add = [](const std::string& tag, const std::string& spec, int iters) {
    benchmark::RegisterBenchmark(("BM_DecodeBreakdown/" + tag).c_str(), BM_DecodeBreakdown, spec)
        ->ArgName("threads")
        ->Arg(1)
        ->Arg(2)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(iters)
        ->Repetitions(3);
  };
  auto ab = [](const std::string& tag, const std::string& spec, int iters) {
    benchmark::RegisterBenchmark(("BM_DecodeTeam/" + tag).c_str(), BM_DecodeTeam, spec)
        ->ArgName("threads")
        ->Arg(2)
        ->Arg(1)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(iters)
        ->Repetitions(3);
  };
  if (const std::string gguf = bench_smollm2_gguf(); !gguf.empty()) {
    add("smollm2-135m-instruct:q4_1-gguf", "file:" + gguf, 100);
    ab("smollm2-135m-instruct:q4_1-gguf", "file:" + gguf, 100);
  }
  ab("smollm2-135m:bf16", "smollm2-135m:bf16", 40);
  add("llama-3.2-1b:q4_1", "llama-3.2-1b:q4_1", 10);
  add("llama-3.2-1b:bf16", "llama-3.2-1b:bf16", 10);  // the decode the BF16 targets are about
  add("llama-3.2-3b:bf16", "llama-3.2-3b:bf16", 6);
  for (const auto& [tag, spec] : bench_user_ggufs()) add(tag, spec, 6);  // SPECLAB_BENCH_GGUF
  for (const char* spec : {"llama-3.2-1b:bf16", "llama-3.2-3b:bf16"}) {
    benchmark::RegisterBenchmark((std::string("BM_ForwardBreakdown/") + spec).c_str(),
                                 BM_ForwardBreakdown, std::string(spec))
        ->ArgName("rows")
        ->Arg(32)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(3);
  }
  ab("llama-3.2-1b:q4_1", "llama-3.2-1b:q4_1", 10);
  ab("llama-3.2-1b:q8_0", "llama-3.2-1b:q8_0", 10);
  ab("llama-3.2-1b:bf16", "llama-3.2-1b:bf16", 10);
  ab("llama-3.2-3b:bf16", "llama-3.2-3b:bf16", 6);
  ab("llama-3.2-3b:q4_1", "llama-3.2-3b:q4_1", 6);
  return 0;
}();

}  // namespace
}  // namespace speclab
