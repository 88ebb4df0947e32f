// Forward-pass speed on synthetic models in real shapes, both cores.
//   BM_Decode/<model>          one token per call (plain decoding): tokens/s (items/s), weight
//                              bytes/s, bw_frac = weight bytes/s over the measured read
//                              bandwidth (the napkin limit: tokens/s <= bandwidth / bytes).
//   BM_DecodeByMemoryState/<model>  BM_Decode's paired reads over 60 tokens, split by the
//                              memory state each token's read found (the run's fast state,
//                              bench_fast_state_threshold, or not): read_frac_fast,
//                              read_frac_rest, fast_read_GBps.
//   BM_DecodeStreamingPairs/<model>  the decode with each one-token streaming forced (rows,
//                              rows_ahead, segments) against the default, token by token in
//                              one process: S_over_default and its quartiles S_q1, S_q3.
//   BM_DecodeLayoutPairs/<model>  the decode with the BF16 matrices in plain rows and in row
//                              pairs (two copies of the model), token by token in one process:
//                              pairs_over_rows and its quartiles, logits_differ (must be 0).
//   BM_Verify/<model>/<k>      k tokens per call (verifying k - 1 drafts plus one), all k rows
//                              of logits; counter T_k/T_1 against 1-token calls interleaved
//                              with them.
//   BM_Prefill/<model>/<n>     an n-token prompt in one call; FLOP/s of the weight matrices
//                              (2 * params * n) against BM_Sgemm's FP32 rate.
//   BM_SyntheticBuild/<model>  building the synthetic model (hash RNG, both threads).
//   BM_Int8LogitError/<gguf>   not a speed: the same decode steps on the FP32-activation path
//                              (avx512) and on the int8 path (avx512vnni); counters: the
//                              largest and the RMS logit difference, and the largest over the
//                              logits' standard deviation (SPECLAB_BENCH_GGUF files only).
// tests/bench/figures.sh runs them all and prints the table of figures with their limits.
// OMP_WAIT_POLICY=passive: on a machine shared with other jobs, spinning OpenMP threads steal
// the cores from the threads doing the work.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/stats.h"
#include "core/threads.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "models/llama/weights_layout.h"
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

// The kPrompt-token prompt through a fresh runner: the cache the timed tokens attend to.
void fill_prompt(LlamaRunner& runner) {
  const std::vector<int32_t> prompt = prompt_tokens(kPrompt, runner.vocab());
  runner.forward(prompt.data(), kPrompt, true);
}

// One decoded token and the plain read of the same weights right after it, in seconds.
struct DecodeAndRead {
  double decode = 0.0;
  double read = 0.0;
};

// Decodes one token (timed in the benchmark's clock) at positions 32..256, then (untimed) reads
// the model's weights with the best read probe. Pairing each decode with a read of its own
// bytes moments later: on a machine whose memory speed shifts within seconds (a Zen 4 guest's
// read probe flipped between 33 and 61 GB/s), the probe taken once at start-up is not the
// limit the decode met; the paired read is.
DecodeAndRead decode_one_and_read(benchmark::State& state, LlamaRunner& runner,
                                  const LlamaModel& model, int32_t* token) {
  DecodeAndRead t;
  const auto a = std::chrono::steady_clock::now();
  if (runner.n_past() + 1 > 256) runner.truncate(kPrompt);
  const float* logits = runner.forward(token, 1, /*last_only=*/true);
  benchmark::DoNotOptimize(logits);
  *token = (*token + 101) % static_cast<int32_t>(runner.vocab());
  t.decode = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  state.PauseTiming();
  t.read = bench_read_weights_seconds(model);
  state.ResumeTiming();
  return t;
}

void BM_Decode(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  const LlamaModel& model = bench_model(spec);
  LlamaRunner runner(model, kContext);
  fill_prompt(runner);
  int32_t token = 1;
  // read_frac = the paired reads' time over the decodes', summed over the iterations.
  double t_decode = 0.0, t_read = 0.0;
  for (auto _ : state) {
    const DecodeAndRead t = decode_one_and_read(state, runner, model, &token);
    t_decode += t.decode;
    t_read += t.read;
  }
  state.SetItemsProcessed(state.iterations());  // items/s = decode tokens/s
  bench_set_bandwidth_counters(state, bench_weight_bytes(model));
  state.counters["read_frac"] = t_decode > 0 ? t_read / t_decode : 0.0;
  state.counters["weight_MB"] = bench_weight_bytes(model) / 1e6;
  state.SetLabel(matmul_isa());
}

// The decode's fraction of a paired read within each memory state: on a machine whose memory
// flips between a slow and a fast state (the Zen 4 guest, docs/findings.md), read_frac over
// all tokens averages a decode that keeps up with the slow state and one that may not keep up
// with the fast one. Every token is paired with its read as in BM_Decode; the tokens whose
// read ran at >= bench_fast_state_threshold are the fast state, the rest the others.
void BM_DecodeByMemoryState(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  const LlamaModel& model = bench_model(spec);
  LlamaRunner runner(model, kContext);
  fill_prompt(runner);
  int32_t token = 1;
  std::vector<DecodeAndRead> tokens;
  for (auto _ : state) tokens.push_back(decode_one_and_read(state, runner, model, &token));
  const double bytes = bench_weight_bytes(model);
  std::vector<double> rates;
  for (const DecodeAndRead& t : tokens) rates.push_back(bytes / t.read);
  const double threshold = bench_fast_state_threshold(rates);
  const double fastest = *std::max_element(rates.begin(), rates.end());
  const double slowest = *std::min_element(rates.begin(), rates.end());
  double fast_decode = 0.0, fast_read = 0.0, rest_decode = 0.0, rest_read = 0.0;
  std::vector<double> fast_rates;
  for (const DecodeAndRead& t : tokens) {
    if (bytes / t.read >= threshold) {
      fast_decode += t.decode;
      fast_read += t.read;
      fast_rates.push_back(bytes / t.read);
    } else {
      rest_decode += t.decode;
      rest_read += t.read;
    }
  }
  std::sort(fast_rates.begin(), fast_rates.end());
  state.counters["tokens"] = static_cast<double>(tokens.size());
  state.counters["fast_tokens"] = static_cast<double>(fast_rates.size());
  state.counters["fast_read_GBps"] =
      fast_rates.empty() ? 0.0 : fast_rates[fast_rates.size() / 2] / 1e9;
  state.counters["fast_decode_GBps"] =
      fast_decode > 0 ? bytes * fast_rates.size() / fast_decode / 1e9 : 0.0;
  state.counters["read_frac_fast"] = fast_decode > 0 ? fast_read / fast_decode : 0.0;
  // 0 when every token read in the fast state (a steady machine).
  state.counters["read_frac_rest"] = rest_decode > 0 ? rest_read / rest_decode : 0.0;
  state.counters["read_rate_spread"] = slowest > 0 ? fastest / slowest : 0.0;
  state.counters["weight_MB"] = bytes / 1e6;
  state.SetLabel(matmul_isa());
}

// The one-token streamings BM_DecodeStreamingPairs compares with the default, and their counter
// names.
constexpr std::pair<MatmulStreaming, const char*> kForcedStreamings[] = {
    {MatmulStreaming::kWholeRows, "rows"},
    {MatmulStreaming::kWholeRowsAhead, "rows_ahead"},
    {MatmulStreaming::kSegments, "segments"}};

// Decode tokens with the default streaming of one-token products and with each streaming forced
// for every product (matmul_force_streaming), one token each in turn, the order reversed every
// round, in one process: a token's time is compared with the default's token of the same round,
// a fraction of a second apart. On a machine whose memory speed flips within seconds, whole runs
// in turn (tests/bench/alternate.sh) resolve about 5% on the 3B decode (quartiles of an A/A run
// 1.00-1.10); adjacent tokens resolve differences of 1-2% in a few hundred. Each iteration is one
// round (four tokens). Counters per forced streaming S: S_over_default (the median of the rounds'
// ratios S / default), S_q1 and S_q3 (their quartiles); default_ms (the default's median token).
void BM_DecodeStreamingPairs(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  const LlamaModel& model = bench_model(spec);
  LlamaRunner runner(model, kContext);
  fill_prompt(runner);
  constexpr size_t kForced = std::size(kForcedStreamings);
  // arm 0: the default; arm 1 + i: kForcedStreamings[i].
  std::vector<std::vector<double>> seconds(kForced + 1);
  int32_t token = 1;
  int64_t round = 0;
  for (auto _ : state) {
    for (size_t j = 0; j <= kForced; j++) {
      const size_t arm = round % 2 == 0 ? j : kForced - j;
      matmul_force_streaming(arm == 0 ? MatmulStreaming::kDefault
                                      : kForcedStreamings[arm - 1].first);
      if (runner.n_past() + 1 > 256) runner.truncate(kPrompt);
      const auto a = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(runner.forward(&token, 1, /*last_only=*/true));
      seconds[arm].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
      token = (token + 101) % static_cast<int32_t>(runner.vocab());
    }
    round++;
  }
  matmul_force_streaming(MatmulStreaming::kDefault);
  if (round == 0) return;
  for (size_t i = 0; i < kForced; i++) {
    std::vector<double> ratios;
    for (int64_t r = 0; r < round; r++) ratios.push_back(seconds[1 + i][r] / seconds[0][r]);
    const std::string name = kForcedStreamings[i].second;
    state.counters[name + "_over_default"] = stats_quantile(ratios, 0.5);
    state.counters[name + "_q1"] = stats_quantile(ratios, 0.25);
    state.counters[name + "_q3"] = stats_quantile(ratios, 0.75);
  }
  state.counters["default_ms"] = 1e3 * stats_quantile(seconds[0], 0.5);
  state.SetLabel(matmul_isa());
}

// The decode with the model's BF16 matrices in plain rows and in row pairs (core/row_pairs.h;
// the layout a load chooses, matmul_force_layout), two copies of the model in one process, one
// token each in turn, the order reversed every round, as BM_DecodeStreamingPairs does for the
// streamings. Each round also compares the two tokens' logits bit for bit (the layout must change
// none). Counters: pairs_over_rows (the median of the rounds' ratios pairs / rows), pairs_q1,
// pairs_q3 (their quartiles), rows_ms and pairs_ms (median tokens), logits_differ (rounds whose
// logits differed: 0, or the layout is wrong). Skipped where no matrix pairs (a model of other
// dtypes, a GGUF mapped rather than copied).
void BM_DecodeLayoutPairs(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  bench_model_release();  // two copies of a 3B model, and no third
  std::unique_ptr<LlamaModel> models[2];
  const MatmulLayout layouts[2] = {MatmulLayout::kRows, MatmulLayout::kRowPairs};
  for (int i = 0; i < 2; i++) {
    matmul_force_layout(layouts[i]);
    models[i] = bench_model_load(spec);
  }
  matmul_force_layout(MatmulLayout::kDefault);
  if (llama_weights_layout(*models[1]) == "rows") {
    state.SkipWithError("no BF16 matrix of this model is stored in pairs");
    return;
  }
  LlamaRunner rows(*models[0], kContext), pairs(*models[1], kContext);
  fill_prompt(rows);
  fill_prompt(pairs);
  LlamaRunner* arms[2] = {&rows, &pairs};
  std::vector<double> seconds[2];
  std::vector<float> logits;
  int32_t token = 1;
  int64_t round = 0, differ = 0;
  for (auto _ : state) {
    for (int j = 0; j < 2; j++) {
      const int arm = round % 2 == 0 ? j : 1 - j;
      LlamaRunner& r = *arms[arm];
      if (r.n_past() + 1 > 256) r.truncate(kPrompt);
      const auto a = std::chrono::steady_clock::now();
      const float* l = r.forward(&token, 1, /*last_only=*/true);
      seconds[arm].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
      if (j == 0) {
        logits.assign(l, l + r.vocab());
      } else if (std::memcmp(logits.data(), l, logits.size() * sizeof(float)) != 0) {
        differ++;
      }
    }
    token = (token + 101) % static_cast<int32_t>(rows.vocab());
    round++;
  }
  if (round == 0) return;
  std::vector<double> ratios;
  for (int64_t r = 0; r < round; r++) ratios.push_back(seconds[1][r] / seconds[0][r]);
  state.counters["pairs_over_rows"] = stats_quantile(ratios, 0.5);
  state.counters["pairs_q1"] = stats_quantile(ratios, 0.25);
  state.counters["pairs_q3"] = stats_quantile(ratios, 0.75);
  state.counters["rows_ms"] = 1e3 * stats_quantile(seconds[0], 0.5);
  state.counters["pairs_ms"] = 1e3 * stats_quantile(seconds[1], 0.5);
  state.counters["logits_differ"] = static_cast<double>(differ);
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
  // Each iteration times a 1-token call and then the k-token call back to back: on a machine
  // shared with other jobs the load drifts within seconds, and a ratio of times measured
  // minutes apart would mostly measure the drift. The iteration time is the k-token call's.
  double t_one = 0.0, t_k = 0.0;
  for (auto _ : state) {
    const auto a = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(runner.forward(drafts.data(), 1));
    runner.truncate(kPrompt);
    const auto b = std::chrono::steady_clock::now();
    // All k rows of logits, as verification needs them; then roll the cache back.
    benchmark::DoNotOptimize(runner.forward(drafts.data(), k));
    runner.truncate(kPrompt);
    const auto c = std::chrono::steady_clock::now();
    t_one += std::chrono::duration<double>(b - a).count();
    t_k += std::chrono::duration<double>(c - b).count();
    state.SetIterationTime(std::chrono::duration<double>(c - b).count());
  }
  state.SetItemsProcessed(state.iterations() * k);
  bench_set_bandwidth_counters(state, bench_weight_bytes(model));
  state.counters["T_k/T_1"] = t_k / t_one;  // interleaved, see above
  state.SetLabel(matmul_isa());
}

// The int8 path's logits against the FP32-activation path's over kErrorSteps decode steps of the
// same tokens: what int8 activation blocks cost a model (core/matmul_int8.h).
constexpr int kErrorSteps = 24;
void BM_Int8LogitError(benchmark::State& state, const std::string& spec) {
  if (!matmul_force_isa(MatmulIsa::kAvx512Vnni)) {
    state.SkipWithError("this CPU lacks AVX-512 VNNI");
    return;
  }
  threads_set(2);
  const LlamaModel& model = bench_model(spec);
  double max_abs = 0.0, sum_sq = 0.0, max_over_sd = 0.0, count = 0.0;
  for (auto _ : state) {
    std::vector<std::vector<float>> fp32;
    for (MatmulIsa isa : {MatmulIsa::kAvx512, MatmulIsa::kAvx512Vnni}) {
      matmul_force_isa(isa);
      LlamaRunner runner(model, kContext);
      const std::vector<int32_t> tokens = prompt_tokens(kErrorSteps, runner.vocab());
      for (int i = 0; i < kErrorSteps; i++) {
        const float* l = runner.forward(&tokens[i], 1, /*last_only=*/true);
        const int64_t v = runner.vocab();
        if (isa == MatmulIsa::kAvx512) {
          fp32.emplace_back(l, l + v);
          continue;
        }
        const std::vector<float>& ref = fp32[i];
        double mean = 0.0, var = 0.0;
        for (float r : ref) mean += r / static_cast<double>(v);
        for (float r : ref) var += (r - mean) * (r - mean) / static_cast<double>(v);
        const double sd = std::sqrt(var);
        for (int64_t j = 0; j < v; j++) {
          const double d = std::fabs(static_cast<double>(l[j]) - ref[j]);
          max_abs = std::max(max_abs, d);
          sum_sq += d * d;
          count += 1.0;
          if (sd > 0.0) max_over_sd = std::max(max_over_sd, d / sd);
        }
      }
    }
  }
  matmul_force_isa(MatmulIsa::kBest);
  state.counters["max_abs"] = max_abs;
  state.counters["rms"] = count > 0.0 ? std::sqrt(sum_sq / count) : 0.0;
  state.counters["max_over_sd"] = max_over_sd;
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

// c = T_draft / T_target for one decode step, the two models' steps interleaved (as
// BM_Verify's ratio: robust to load drift). Both models are held at once (1B + 3B BF16:
// 8.9 GB). Counters: c, and bytes_ratio = draft weight bytes / target weight bytes.
void BM_CostRatio(benchmark::State& state, const std::string& draft_spec,
                  const std::string& target_spec) {
  threads_set(2);
  static std::unique_ptr<LlamaModel> draft_model;
  draft_model.reset();
  bench_model("tiny");  // frees bench_model's cached model first
  draft_model = llama_make_synthetic(draft_spec);
  const LlamaModel& target_model = bench_model(target_spec);
  LlamaRunner draft(*draft_model, kContext), target(target_model, kContext);
  const std::vector<int32_t> prompt = prompt_tokens(kPrompt, draft.vocab());
  draft.forward(prompt.data(), kPrompt, true);
  target.forward(prompt.data(), kPrompt, true);
  double t_draft = 0.0, t_target = 0.0;
  int32_t token = 1;
  for (auto _ : state) {
    const auto a = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(draft.forward(&token, 1, true));
    const auto b = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(target.forward(&token, 1, true));
    const auto c = std::chrono::steady_clock::now();
    draft.truncate(kPrompt);
    target.truncate(kPrompt);
    t_draft += std::chrono::duration<double>(b - a).count();
    t_target += std::chrono::duration<double>(c - b).count();
    token = (token + 101) % static_cast<int32_t>(draft.vocab());
  }
  state.counters["c"] = t_draft / t_target;
  state.counters["bytes_ratio"] =
      bench_weight_bytes(*draft_model) / bench_weight_bytes(target_model);
  state.counters["T_draft_ms"] = 1e3 * t_draft / state.iterations();
  state.counters["T_target_ms"] = 1e3 * t_target / state.iterations();
  state.SetLabel(matmul_isa());
  draft_model.reset();
}

// Tokens of BM_DecodeByMemoryState: enough that each state of a flipping machine gets some
// (on the Zen 4 guest about a third of the tokens read in the fast state).
constexpr int kMemoryStateTokens = 60;
// Rounds of BM_DecodeStreamingPairs (four tokens each): 150 rounds put the quartiles of the 3B
// decode's ratios 5-7% from their median (the 1B's 2-3%) on the Zen 4 guest.
constexpr int kStreamingPairRounds = 150;

// Registration order = run order; bench_model keeps one model at a time, so each model's
// benchmarks are grouped.
// by_memory_state: also BM_DecodeByMemoryState (the BF16 Llama shapes and users' GGUF files,
// the shapes whose read-limit targets it checks) and BM_DecodeStreamingPairs (how their
// one-token products stream).
void register_model(const char* tag, const std::string& spec, bool verify, bool prefill,
                    int decode_iters, bool every_k = false, bool by_memory_state = false) {
  benchmark::RegisterBenchmark((std::string("BM_Decode/") + tag).c_str(), BM_Decode, spec)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(decode_iters)
      ->Repetitions(3)
      ->ReportAggregatesOnly(false);
  if (by_memory_state) {
    benchmark::RegisterBenchmark((std::string("BM_DecodeByMemoryState/") + tag).c_str(),
                                 BM_DecodeByMemoryState, spec)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(kMemoryStateTokens);
    benchmark::RegisterBenchmark((std::string("BM_DecodeStreamingPairs/") + tag).c_str(),
                                 BM_DecodeStreamingPairs, spec)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(kStreamingPairRounds);
    benchmark::RegisterBenchmark((std::string("BM_DecodeLayoutPairs/") + tag).c_str(),
                                 BM_DecodeLayoutPairs, spec)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(kStreamingPairRounds);
  }
  if (verify) {
    auto* b =
        benchmark::RegisterBenchmark((std::string("BM_Verify/") + tag).c_str(), BM_Verify, spec)
            ->ArgName("k");
    if (every_k) {
      b->DenseRange(1, 16);  // T(k)/T(1) for every k = 1..16
    } else {
      for (int k : {1, 2, 4, 8, 16}) b->Arg(k);
    }
    b->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(decode_iters)->Repetitions(3);
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
  // The real SmolLM2-135M-Instruct in the Q4_1 file users download (installed by .ci/install).
  if (const std::string gguf = bench_smollm2_gguf(); !gguf.empty()) {
    register_model("smollm2-135m-instruct:q4_1-gguf", "file:" + gguf, false, false, 60);
  }
  register_model("llama-3.2-1b:bf16", "llama-3.2-1b:bf16", true, true, 10, false,
                 /*by_memory_state=*/true);
  register_model("llama-3.2-1b:q8_0", "llama-3.2-1b:q8_0", false, false, 10);
  register_model("llama-3.2-1b:q4_1", "llama-3.2-1b:q4_1", false, false, 10);
  register_model("llama-3.2-3b:bf16", "llama-3.2-3b:bf16", true, false, 6, /*every_k=*/true,
                 /*by_memory_state=*/true);
  benchmark::RegisterBenchmark("BM_CostRatio/llama-3.2-1b:bf16/llama-3.2-3b:bf16", BM_CostRatio,
                               std::string("llama-3.2-1b:bf16"), std::string("llama-3.2-3b:bf16"))
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(8)
      ->Repetitions(2);
  register_model("llama-3.2-3b:q8_0", "llama-3.2-3b:q8_0", false, false, 6);
  register_model("llama-3.2-3b:q4_1", "llama-3.2-3b:q4_1", true, false, 6);
  // Any GGUF files the user names (SPECLAB_BENCH_GGUF=a.gguf,b.gguf): the decode of the very
  // file another engine is timed on, same bytes, same mapped pages, and its T(k)/T(1) (a
  // verification of k tokens against one). Tag: gguf:<file name>.
  for (const auto& [tag, spec] : bench_user_ggufs()) {
    register_model(tag.c_str(), spec, true, false, 6, false, /*by_memory_state=*/true);
    benchmark::RegisterBenchmark((std::string("BM_Int8LogitError/") + tag).c_str(),
                                 BM_Int8LogitError, spec)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  return 0;
}();

}  // namespace
}  // namespace speclab
