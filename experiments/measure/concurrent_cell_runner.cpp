#include "experiments/measure/concurrent_cell_runner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/stats.h"
#include "experiments/measure/backend.h"
#include "experiments/measure/cell_law_check.h"
#include "experiments/measure/run_conditions.h"
#include "experiments/measure/run_flags.h"
#include "experiments/predict/cell_prediction.h"
#include "models/decode/batched_decoder.h"
#include "models/decode/law_check_round.h"
#include "models/decode/round_stats.h"
#include "models/drafters/batch_drafter.h"

namespace speclab {

namespace {

// Per-request times of one loop: time per output token (requests of 2+ tokens) and time to
// first token (requests of 1+ tokens).
void request_times(const BatchedGeneration& g, std::vector<double>* tpot,
                   std::vector<double>* ttft) {
  for (size_t i = 0; i < g.results.size(); i++) {
    const size_t n = g.results[i].tokens.size();
    if (n > 1) tpot->push_back(g.timing[i].time_per_output_token_s(n));
    if (n > 0) ttft->push_back(g.timing[i].ttft_s());
  }
}

// Bootstrap over prompts of the throughput ratio: per resample, N x tokens / (sum of the
// requests' times in flight) for each loop (in a closed loop that keeps N slots busy, the
// times in flight add up to N x the loop's wall time), scaled to `point`, the measured ratio.
Interval bootstrap_throughput(const std::vector<std::string>& prompt_of,
                              const BatchedGeneration& base, const BatchedGeneration& spec,
                              double point, int resamples, double confidence, uint64_t seed) {
  std::vector<SpeedupCluster> clusters;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < prompt_of.size(); i++) {
    auto [it, fresh] = index.try_emplace(prompt_of[i], clusters.size());
    if (fresh) clusters.emplace_back();
    SpeedupCluster& c = clusters[it->second];
    c.base_s += base.timing[i].finished_s - base.timing[i].admitted_s;
    c.base_tokens += static_cast<double>(base.results[i].tokens.size());
    c.spec_s += spec.timing[i].finished_s - spec.timing[i].admitted_s;
    c.spec_tokens += static_cast<double>(spec.results[i].tokens.size());
  }
  double whole = 0;
  const Interval ci = speedup_cluster_interval(clusters, resamples, confidence, seed, &whole);
  if (ci.lo == 0 && ci.hi == 0) return ci;
  if (!(whole > 0)) return {0, 0};
  // The statistic (times in flight) is not the loop's wall time, which also holds the tail
  // where fewer than N requests remain: the interval is the statistic's relative spread
  // around the measured throughput ratio, so that it brackets the figure it is quoted with.
  return {point * ci.lo / whole, point * ci.hi / whole};
}

}  // namespace

ResultRow cell_run_concurrent(RunContext& ctx, const Cell& cell, PreparedDrafter& prepared) {
  const ExperimentConfig& cfg = *ctx.config;
  SPECLAB_ASSERT(cell.concurrency > 1 && !ctx.prompts.empty());
  SPECLAB_INPUT_CHECK(
      cell.tree.depth() == 0, cfg.where("sweep.concurrency"), ": concurrency ", cell.concurrency,
      " with tree ", cell.tree.to_string(),
      ": trees serve one request at a time (expected concurrency 1 for tree cells)");
  const int64_t max_ctx = ctx.target->max_ctx();
  const int n = cell.concurrency;

  // The queue: every prompt x repeat, request id = the prompt's index. The in-run law check
  // reads the first repeats (later ones emit the same tokens).
  const CellExactnessPlan exactness = cell_exactness_plan(cell, cfg.measure.baseline);
  std::vector<GenerationRequest> queue;
  std::vector<std::string> prompt_of;
  std::vector<int> repeat_of;
  for (int rep = 0; rep < cfg.generation.repeats; rep++) {
    for (size_t pi = 0; pi < ctx.prompts.size(); pi++) {
      GenerationRequest r;
      r.prompt = ctx.prompts[pi].ids;
      r.max_new_tokens = cfg.generation.max_new_tokens;
      r.sampling = cell.target_sampling();
      r.stop_ids = cfg.generation.ignore_eos ? std::vector<int64_t>{} : ctx.stop_ids;
      r.seed = static_cast<uint64_t>(cfg.generation.seed);
      r.request_id = pi;
      r.law_check = exactness.law_check && rep == 0;
      queue.push_back(std::move(r));
      prompt_of.push_back(ctx.prompts[pi].id);
      repeat_of.push_back(rep);
    }
  }
  // The out-of-sample prediction first (profiles only; its batched runners are freed before
  // the cell's are built).
  std::optional<CellPrediction> prediction;
  if (ctx.predictor) prediction = ctx.predictor->predict(cell, prepared.drafter.get());

  SpeculativeConfig spec;
  spec.gamma = cell.gamma;
  spec.draft_sampling = cell.draft_sampling();
  spec.lenience = cell.lenience;
  spec.stop_rule.p_min = static_cast<float>(cell.p_min);
  spec.synthetic_accept = cell.synthetic_acceptance;
  // gamma_policy predicted: the gamma of the number of requests in flight, from the profiles.
  std::string policy = cell.gamma_policy;
  if (cell.gamma_policy == "predicted") {
    SPECLAB_INPUT_CHECK(prediction && prediction->gamma_by_load.size() > 1,
                        cfg.where("sweep.gamma_policy"),
                        ": predicted needs the pair's profiles (measure.cost_only has none)");
    spec.gamma_by_load = prediction->gamma_by_load;
    policy = "fixed";
  }

  const std::string& backend = cfg.generation.backend;
  const std::string where = cfg.where("generation.backend");
  backend_check_batched_drafter(backend, cell.drafter_ref.path, cfg.where("sweep.concurrency"));
  std::unique_ptr<BatchTokenRunner> target_runner =
      backend_create_batched_runner(backend, *ctx.target_model, n, max_ctx, where);
  BatchTokenRunner& target = *target_runner;
  std::unique_ptr<BatchDrafter> drafter =
      batch_drafter_create(cell.drafter_ref.path, *ctx.target_model, n, max_ctx,
                           backend_batched_runner_factory(backend, where));

  // Warmup: both loops on a short queue.
  if (cfg.generation.warmup > 0) {
    std::vector<GenerationRequest> warm(queue.begin(),
                                        queue.begin() + std::min<size_t>(queue.size(), n));
    for (auto& r : warm) r.max_new_tokens = std::min<int64_t>(r.max_new_tokens, 8);
    generate_batched_autoregressive(target, warm);
    generate_batched_speculative(target, *drafter, warm, spec, policy);
  }
  if (ctx.interrupted && ctx.interrupted->load()) throw CellInterrupted{};

  const LoadSample load_before = run_conditions_sample();
  const std::string started = run_conditions_utc_now();
  BatchedGeneration base;
  if (cfg.measure.baseline) base = generate_batched_autoregressive(target, queue);
  if (ctx.interrupted && ctx.interrupted->load()) throw CellInterrupted{};
  const BatchedGeneration out = generate_batched_speculative(target, *drafter, queue, spec, policy);
  if (ctx.interrupted && ctx.interrupted->load()) throw CellInterrupted{};
  const LoadSample load_after = run_conditions_sample();

  ResultRow row = cell_row_header(ctx, cell, prepared);
  row.row_kind = "measured";
  row.run_utc = started;
  row.run_load_before = load_before.load1;
  row.run_load_after = load_after.load1;
  row.run_mem_free_gb = load_before.mem_free_gb;

  // Per request: the samples (the per-request speedup and the category tables read them).
  AcceptanceStats acc;
  ResultSamples samples;
  double base_s = 0, spec_s = 0, draft_s = 0, verify_s = 0, sample_s = 0;
  int64_t base_tok = 0, spec_tok = 0, draft_calls = 0, calls_spec = 0, calls_base = 0;
  bool outputs_match = true;
  std::vector<double> tokens_per_round;
  LawCheckTally law;
  for (size_t i = 0; i < queue.size(); i++) {
    const GenerationResult& o = out.results[i];
    ResultSample s;
    s.prompt_id = prompt_of[i];
    s.category = ctx.prompts[queue[i].request_id].category;
    s.repeat = repeat_of[i];
    s.spec_s = o.decode_s;
    s.spec_tokens = static_cast<int64_t>(o.tokens.size());
    s.baseline_s = cfg.measure.baseline ? base.results[i].decode_s : 0.0;
    s.baseline_tokens =
        cfg.measure.baseline ? static_cast<int64_t>(base.results[i].tokens.size()) : 0;
    s.rounds = static_cast<int64_t>(o.rounds.size());
    AcceptanceStats one;
    one.add(o.rounds);
    acc.add(o.rounds);
    if (queue[i].law_check) law_check_tally_add(o, &law);
    s.drafted = one.n_drafted;
    s.accepted = one.n_accepted;
    s.tested = one.n_tested;
    s.emitted = one.n_emitted;
    samples.push_back(s);
    base_s += *s.baseline_s;
    spec_s += *s.spec_s;
    base_tok += *s.baseline_tokens;
    spec_tok += *s.spec_tokens;
    draft_calls += o.n_draft_calls;
    calls_spec += o.n_target_calls;
    if (cfg.measure.baseline) {
      calls_base += base.results[i].n_target_calls;
      outputs_match = outputs_match && base.results[i].tokens == o.tokens;
    }
    for (const RoundRecord& r : o.rounds) tokens_per_round.push_back(r.n_emitted);
  }
  // The batched phases' times, once per step (RoundRecords share them between requests).
  double active = 0;
  for (const BatchStep& st : out.steps) {
    draft_s += st.draft_s;
    verify_s += st.verify_s;
    sample_s += st.accept_s;
    active += st.n_active;
  }

  row.samples = samples;
  row.tokens_baseline = base_tok;
  row.tokens_spec = spec_tok;
  row.wall_baseline_s = base_s;
  row.wall_spec_s = spec_s;
  row.target_calls_baseline = calls_base;
  row.target_calls_spec = calls_spec;
  row.draft_calls = draft_calls;
  cell_put_acceptance(acc, tokens_per_round, /*chain=*/true, &row);
  const bool greedy_checked = exactness.check == "greedy_tokens";
  if (greedy_checked) row.greedy_outputs_match = outputs_match;
  row.draft_s = draft_s;
  row.verify_s = verify_s;
  row.sample_s = sample_s;
  row.batch_steps_spec = static_cast<int64_t>(out.steps.size());
  row.mean_active_requests_spec = out.steps.empty() ? 0.0 : active / out.steps.size();

  std::vector<double> tpot_spec, ttft_spec;
  request_times(out, &tpot_spec, &ttft_spec);
  row.tpot_spec_median_s = stats_quantile(tpot_spec, 0.5);
  row.tpot_spec_p90_s = stats_quantile(tpot_spec, 0.9);
  row.ttft_spec_median_s = stats_quantile(ttft_spec, 0.5);
  row.throughput_spec_tokens_per_s = out.total_s > 0 ? out.total_tokens() / out.total_s : 0.0;

  double speedup = 0;
  if (cfg.measure.baseline && base_tok > 0 && spec_tok > 0 && spec_s > 0 && base.total_s > 0) {
    const uint64_t seed = static_cast<uint64_t>(cfg.generation.seed);
    std::vector<double> tpot_base, ttft_base;
    request_times(base, &tpot_base, &ttft_base);
    row.tpot_baseline_median_s = stats_quantile(tpot_base, 0.5);
    row.tpot_baseline_p90_s = stats_quantile(tpot_base, 0.9);
    row.ttft_baseline_median_s = stats_quantile(ttft_base, 0.5);
    row.batch_steps_baseline = static_cast<int64_t>(base.steps.size());
    const double base_tput = base.total_tokens() / base.total_s;
    row.throughput_baseline_tokens_per_s = base_tput;
    row.throughput_speedup = *row.throughput_spec_tokens_per_s / base_tput;
    speedup = (base_s / base_tok) / (spec_s / spec_tok);
    row.speedup = speedup;
    // With every request of the queue in flight at once, the requests share the loop's whole
    // time: resampling prompts moves nothing, and an interval of zero width would read as
    // certainty. Both intervals are then left out (the tables say "not estimated").
    if (queue.size() > static_cast<size_t>(n)) {
      const Interval tci = bootstrap_throughput(prompt_of, base, out, *row.throughput_speedup,
                                                cfg.measure.bootstrap_resamples,
                                                cfg.measure.confidence, seed ^ 0x7407ULL);
      row.throughput_speedup_ci_lo = tci.lo;
      row.throughput_speedup_ci_hi = tci.hi;
      const Interval ci = cell_bootstrap_speedup(samples, cfg.measure.bootstrap_resamples,
                                                 cfg.measure.confidence, seed ^ 0x5eedULL);
      row.speedup_ci_lo = ci.lo;
      row.speedup_ci_hi = ci.hi;
    }
    row.baseline_s_per_token = base_s / base_tok;
    row.spec_s_per_token = spec_s / spec_tok;
  }

  // The prediction beside the measurement: per request, and in throughput.
  if (prediction) {
    prediction->put_into(&row);
    if (speedup > 0) row.prediction_error = prediction->prediction.speedup / speedup - 1;
    if (prediction->batched && row.throughput_speedup && *row.throughput_speedup > 0)
      row.throughput_prediction_error =
          prediction->batched_prediction.throughput_speedup / *row.throughput_speedup - 1;
  }

  RunFlagInputs f;
  f.predicted = prediction.has_value();
  if (prediction && prediction->batched && row.throughput_baseline_tokens_per_s &&
      prediction->batched_prediction.base_tokens_per_s > 0) {
    // The plain batched loop's seconds per token of throughput, seen and profiled.
    f.baseline_s_per_token = 1.0 / *row.throughput_baseline_tokens_per_s;
    f.profile_baseline_s_per_token = 1.0 / prediction->batched_prediction.base_tokens_per_s;
  }
  if (prediction) f.profile_load = prediction->profile_load;
  f.speedup = speedup;
  f.tokens_per_round = acc.tau();
  f.n_prompts = static_cast<int64_t>(ctx.prompts.size());
  f.cores = ctx.machine.cores;
  f.load_before = load_before.load1;
  f.load_after = load_after.load1;
  f.greedy_checked = greedy_checked;
  f.greedy_match = outputs_match;
  f.rounds = acc.n_rounds;
  cell_put_law_check(exactness, law, /*rounds_on_device=*/0, &row, &f);
  row.flags = run_flags_evaluate(f);
  return row;
}

}  // namespace speclab
