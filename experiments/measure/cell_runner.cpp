#include "experiments/measure/cell_runner.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/gamma_policy.h"
#include "core/rng.h"
#include "core/speculative_verify.h"
#include "core/speedup_theory.h"
#include "core/stats.h"
#include "experiments/measure/backend.h"
#include "experiments/measure/cell_law_check.h"
#include "experiments/measure/model_identity.h"
#include "experiments/measure/round_trace.h"
#include "experiments/measure/run_conditions.h"
#include "experiments/measure/run_flags.h"
#include "experiments/measure/time_parts.h"
#include "models/decode/autoregressive.h"
#include "models/decode/law_check_round.h"
#include "models/decode/round_stats.h"
#include "models/decode/speculative_decoder.h"
#include "models/decode/tree_decoder.h"
#include "models/llama/weights_layout.h"

namespace speclab {

namespace {

// Everything a cell's timed runs produced, before it is put into the row.
struct CellMeasurement {
  ResultSamples samples;      // [prompts x repeats] every field set
  bool outputs_match = true;  // every speculative output equals its baseline's
  AcceptanceStats acc;
  double draft_s = 0, verify_s = 0, sample_s = 0;  // time breakdown of the speculative runs
  int64_t rounds_on_device = 0;                    // rounds the target verified on its device
  int64_t draft_calls = 0, target_calls_spec = 0, target_calls_base = 0;
  std::vector<double> tokens_per_round;  // [rounds] tokens each round emitted
  std::vector<double> repeat_share;      // [requests] repeated 4-gram share of each output
  LawCheckTally law;                     // the in-run law check of each prompt's first repeat
  TimePartsTally parts;                  // where the plain steps and the rounds went
  LoadSample load_before, load_after;
  std::string started;  // UTC
};

}  // namespace

Interval speedup_cluster_interval(const std::vector<SpeedupCluster>& clusters, int resamples,
                                  double confidence, uint64_t seed, double* whole) {
  const auto ratio = [&](const std::vector<size_t>& picks) {
    SpeedupCluster sum;
    for (size_t i : picks) {
      sum.base_s += clusters[i].base_s;
      sum.base_tokens += clusters[i].base_tokens;
      sum.spec_s += clusters[i].spec_s;
      sum.spec_tokens += clusters[i].spec_tokens;
    }
    return sum.base_tokens > 0 && sum.spec_tokens > 0 && sum.spec_s > 0
               ? (sum.base_s / sum.base_tokens) / (sum.spec_s / sum.spec_tokens)
               : NAN;
  };
  if (whole) {
    std::vector<size_t> all(clusters.size());
    for (size_t i = 0; i < all.size(); i++) all[i] = i;
    *whole = ratio(all);
  }
  if (clusters.empty() || resamples < 2) return {0, 0};
  const Interval ci =
      stats_cluster_bootstrap_interval(clusters.size(), ratio, resamples, 1 - confidence, seed);
  return std::isfinite(ci.lo) ? ci : Interval{0, 0};
}

// Prompts resampled as clusters: a prompt's repeats share its text, so they are not
// independent draws.
Interval cell_bootstrap_speedup(const ResultSamples& s, int resamples, double confidence,
                                uint64_t seed) {
  std::vector<SpeedupCluster> clusters;
  std::map<std::string, size_t> index;
  for (const auto& x : s) {
    auto [it, fresh] = index.try_emplace(*x.prompt_id, clusters.size());
    if (fresh) clusters.emplace_back();
    SpeedupCluster& c = clusters[it->second];
    c.base_s += *x.baseline_s;
    c.base_tokens += static_cast<double>(*x.baseline_tokens);
    c.spec_s += *x.spec_s;
    c.spec_tokens += static_cast<double>(*x.spec_tokens);
  }
  return speedup_cluster_interval(clusters, resamples, confidence, seed);
}

namespace {

// Share of the 4-grams of a text that already occurred earlier in it: a greedy loop repeats
// itself and makes drafting look easier than on real text.
double repeated_4gram_share(const std::vector<int32_t>& t) {
  if (t.size() < 5) return 0.0;
  std::set<std::array<int32_t, 4>> seen;
  int64_t repeated = 0, total = 0;
  for (size_t i = 0; i + 4 <= t.size(); i++) {
    const std::array<int32_t, 4> g{t[i], t[i + 1], t[i + 2], t[i + 3]};
    repeated += seen.count(g) ? 1 : 0;
    seen.insert(g);
    total++;
  }
  return total ? static_cast<double>(repeated) / static_cast<double>(total) : 0.0;
}

}  // namespace

ResultRow cell_row_header(RunContext& ctx, const Cell& cell, const PreparedDrafter& d) {
  const ExperimentConfig& cfg = *ctx.config;
  ResultRow r;
  r.cell = cell;
  r.experiment = cfg.name;
  r.config_file = cfg.file;
  r.config_hash = cfg.config_hash();
  r.git_commit = ctx.git_commit;
  r.max_new_tokens = cfg.generation.max_new_tokens;
  r.seed = cfg.generation.seed;
  r.repeats = cfg.generation.repeats;
  r.n_prompts = static_cast<int64_t>(ctx.prompts.size());

  const MachineInfo& m = ctx.machine;
  r.machine_cpu_model = m.cpu_model;
  r.machine_cores = m.cores;
  r.machine_threads = m.threads;
  r.machine_memory_gb = static_cast<double>(m.memory_bytes) / 1e9;
  r.machine_mem_read_gbps = m.mem_read_gbps;
  r.machine_hostname = m.hostname;
  r.machine_git_commit = m.git_commit;
  r.machine_gpu = m.gpu;

  const RunConditions& rc = ctx.run_static;
  r.run_git_describe = rc.git_describe;
  r.run_cpu_model_name = rc.cpu_model_name;
  r.run_cpu_family = rc.cpu_family;
  r.run_cpu_model = rc.cpu_model;
  r.run_build_type = rc.build_type;
  r.run_matmul_isa = rc.matmul_isa;
  if (ctx.target_model != nullptr) r.run_weights_layout = llama_weights_layout(*ctx.target_model);
  r.run_cuda_graphs = backend_cuda_graphs(cfg.generation.backend, cell.concurrency > 1);

  const ModelIdentity& t = ctx.target_identity;
  r.target_spec = t.spec;
  r.target_format = t.format;
  r.target_sha256 = t.sha256;
  r.target_parameters = t.parameters;
  r.target_weight_bytes_per_token = t.weight_bytes_per_token;
  r.target_dtypes = t.dtypes;
  r.target_layers = t.layers;
  r.target_dim = t.dim;
  r.target_vocab = t.vocab;

  const ModelIdentity& dr = d.identity;
  r.draft_name = dr.name;
  r.draft_spec = dr.spec;
  r.draft_kind = dr.kind;
  r.draft_format = dr.format;
  r.draft_sha256 = dr.sha256;
  r.draft_parameters = dr.parameters;
  r.draft_weight_bytes_per_token = dr.weight_bytes_per_token;
  r.draft_dtypes = dr.dtypes;
  r.draft_layers = dr.layers;
  r.draft_dim = dr.dim;
  r.draft_vocab = dr.vocab;

  r.cost_context_len = ctx.target_curve.context_len;
  r.target_t1_s = ctx.target_curve.t1();
  r.target_tk_s = ctx.target_curve.seconds;
  r.target_tk_ratio = ctx.target_curve.ratios();
  return r;
}

void cell_put_acceptance(const AcceptanceStats& acc, const std::vector<double>& tokens_per_round,
                         bool chain, ResultRow* row) {
  row->rounds = acc.n_rounds;
  row->drafted = acc.n_drafted;
  row->tested = acc.n_tested;
  row->accepted = acc.n_accepted;
  row->drafted_by_position = acc.drafted_at;
  row->tested_by_position = acc.tested_at;
  row->accepted_by_position = acc.accepted_at;
  row->alpha_empirical = acc.alpha_empirical();
  if (chain) row->alpha_beta = acc.alpha_beta();  // Corollary 3.6 at the tested positions
  const double a_hat = acc.alpha_empirical();
  row->alpha_se = acc.n_tested ? std::sqrt(a_hat * (1 - a_hat) / acc.n_tested) : 0.0;
  row->acceptance_by_position = acc.conditional_acceptance();
  row->survival_by_position = acc.survival();
  row->tau = acc.tau();
  row->tau_se = tokens_per_round.size() > 1
                    ? std::sqrt(stats_variance(tokens_per_round) / tokens_per_round.size())
                    : 0.0;
  row->mean_drafted_per_round = acc.n_rounds ? double(acc.n_drafted) / acc.n_rounds : 0.0;
}

PreparedDrafter cell_prepare_drafter(RunContext& ctx, const DrafterEntry& entry) {
  PreparedDrafter d;
  // A draft model runs on the target's backend (a draft on the CPU beside a target on a GPU
  // would measure the host, not speculative decoding on the device).
  d.drafter = drafter_create(entry.ref.path, *ctx.target_model, ctx.target->max_ctx(),
                             backend_runner_factory(ctx.config->generation.backend,
                                                    ctx.config->where("generation.backend")));
  if (const LlamaModel* m = d.drafter->model()) {
    // Self-speculation runs the target's own weights: identify them by the target's files.
    const bool self = entry.ref.spec.rfind("self:", 0) == 0;
    d.identity = self ? model_identity(ctx.config->target->spec, ctx.config->target->path, *m)
                      : model_identity(entry.ref.spec, entry.ref.path, *m);
  }
  d.identity.name = entry.name;
  d.identity.spec = entry.ref.spec;
  d.identity.kind = d.drafter->deterministic() ? "deterministic" : "sampled";
  return d;
}

// The timed part of a cell: warmup, then for each prompt (and repeat) the baseline and the
// speculative decoder, in alternating order, with the same seed and request id.
CellMeasurement cell_measure(RunContext& ctx, const Cell& cell, Drafter& drafter) {
  const ExperimentConfig& cfg = *ctx.config;
  TokenRunner& target = *ctx.target;
  GenerationRequest req;
  req.max_new_tokens = cfg.generation.max_new_tokens;
  req.sampling = cell.target_sampling();
  req.stop_ids = cfg.generation.ignore_eos ? std::vector<int64_t>{} : ctx.stop_ids;
  req.seed = static_cast<uint64_t>(cfg.generation.seed);
  SpeculativeConfig spec;
  spec.gamma = cell.gamma;
  spec.draft_sampling = cell.draft_sampling();
  spec.lenience = cell.lenience;
  spec.stop_rule.p_min = static_cast<float>(cell.p_min);
  spec.synthetic_accept = cell.synthetic_acceptance;  // empty = off
  const bool tree = cell.tree.depth() > 0;

  // Tree cells (sweep.tree) run the tree decoder with the same draft sampling.
  TreeSpeculativeConfig tree_cfg;
  if (tree) {
    tree_cfg.shape = cell.tree;
    tree_cfg.draft_sampling = spec.draft_sampling;
  }
  auto run_speculative = [&](const GenerationRequest& r) {
    return tree ? generate_tree_speculative(target, drafter, r, tree_cfg)
                : generate_speculative(target, drafter, r, spec);
  };

  // Warmup: short untimed runs of both.
  for (int w = 0; w < cfg.generation.warmup && !ctx.prompts.empty(); w++) {
    GenerationRequest wreq = req;
    wreq.prompt = ctx.prompts[static_cast<size_t>(w) % ctx.prompts.size()].ids;
    wreq.max_new_tokens = std::min<int64_t>(req.max_new_tokens, 8);
    generate_autoregressive(target, wreq);
    auto policy = gamma_policy_create(cell.gamma_policy, cell.gamma);
    spec.policy = policy.get();
    run_speculative(wreq);
  }

  // The in-run law check reads each prompt's first repeat (later ones emit the same tokens).
  const CellExactnessPlan exactness = cell_exactness_plan(cell, cfg.measure.baseline);
  CellMeasurement m;
  m.load_before = run_conditions_sample();
  m.started = run_conditions_utc_now();
  for (size_t pi = 0; pi < ctx.prompts.size(); pi++) {
    for (int rep = 0; rep < cfg.generation.repeats; rep++) {
      if (ctx.interrupted && ctx.interrupted->load()) throw CellInterrupted{};
      req.prompt = ctx.prompts[pi].ids;
      req.request_id = pi;  // same seed and request id for both: same random streams
      req.law_check = exactness.law_check && rep == 0;
      auto policy = gamma_policy_create(cell.gamma_policy, cell.gamma);
      spec.policy = policy.get();
      ResultSample s;
      s.prompt_id = ctx.prompts[pi].id;
      s.category = ctx.prompts[pi].category;
      s.repeat = rep;
      GenerationResult base, out;
      const bool baseline_first = (pi + static_cast<size_t>(rep)) % 2 == 0;
      if (baseline_first && cfg.measure.baseline) base = generate_autoregressive(target, req);
      out = run_speculative(req);
      if (ctx.trace)
        ctx.trace->write_cell(cell, ctx.prompts[pi].id, rep, req, out, target.max_ctx());
      if (!baseline_first && cfg.measure.baseline) base = generate_autoregressive(target, req);
      s.baseline_s = base.decode_s;
      s.baseline_tokens = static_cast<int64_t>(base.tokens.size());
      s.spec_s = out.decode_s;
      s.spec_tokens = static_cast<int64_t>(out.tokens.size());
      s.rounds = static_cast<int64_t>(out.rounds.size());
      m.outputs_match = m.outputs_match && base.tokens == out.tokens;
      m.repeat_share.push_back(
          repeated_4gram_share(cfg.measure.baseline ? base.tokens : out.tokens));
      int64_t drafted = 0, accepted = 0;
      for (const auto& r : out.rounds) {
        drafted += r.n_draft;
        accepted += r.n_accepted;
        m.draft_s += r.draft_s;
        m.verify_s += r.verify_s;
        m.sample_s += r.sample_s;
        m.rounds_on_device += r.verified_on_device;
        m.tokens_per_round.push_back(r.n_emitted);
      }
      s.drafted = drafted;
      s.accepted = accepted;
      m.acc.add(out.rounds);
      if (cfg.measure.baseline) m.parts.add_baseline(base);
      m.parts.add_speculative(out);
      if (req.law_check) law_check_tally_add(out, &m.law);
      AcceptanceStats prompt_acc;  // this request's share, for the per-category tables
      prompt_acc.add(out.rounds);
      s.tested = prompt_acc.n_tested;
      s.emitted = prompt_acc.n_emitted;
      m.draft_calls += out.n_draft_calls;
      m.target_calls_spec += out.n_target_calls;
      m.target_calls_base += base.n_target_calls;
      m.samples.push_back(std::move(s));
    }
  }
  m.load_after = run_conditions_sample();
  return m;
}

ResultRow cell_run(RunContext& ctx, const Cell& cell, PreparedDrafter& prepared) {
  const ExperimentConfig& cfg = *ctx.config;
  Drafter& drafter = *prepared.drafter;

  // Predict before running: profiles only, no speculative round.
  std::optional<CellPrediction> prediction;
  if (ctx.predictor) prediction = ctx.predictor->predict(cell, &drafter);

  // gamma_policy predicted: one request at a time, the fixed gamma its table gives one request.
  Cell run_as = cell;
  if (cell.gamma_policy == "predicted") {
    SPECLAB_INPUT_CHECK(prediction && prediction->gamma_by_load.size() > 1,
                        cfg.where("sweep.gamma_policy"),
                        ": predicted needs the pair's profiles (measure.cost_only has none)");
    run_as.gamma = std::max(1, prediction->gamma_by_load[1]);
    run_as.gamma_policy = "fixed";
  }
  const CellMeasurement m = cell_measure(ctx, run_as, drafter);

  // Assemble the row: what the cell is, what was measured, what was predicted, the flags.
  const bool synthetic = !cell.synthetic_acceptance.empty();
  const bool tree = cell.tree.depth() > 0;
  const uint64_t seed = static_cast<uint64_t>(cfg.generation.seed);

  ResultRow row = cell_row_header(ctx, cell, prepared);
  row.row_kind = "measured";
  row.run_utc = m.started;
  row.run_load_before = m.load_before.load1;
  row.run_load_after = m.load_after.load1;
  row.run_mem_free_gb = m.load_before.mem_free_gb;
  double base_s = 0, spec_s = 0;
  int64_t base_tok = 0, spec_tok = 0;
  for (const ResultSample& s : m.samples) {
    base_s += *s.baseline_s;
    spec_s += *s.spec_s;
    base_tok += *s.baseline_tokens;
    spec_tok += *s.spec_tokens;
  }
  row.samples = m.samples;
  row.tokens_baseline = base_tok;
  row.tokens_spec = spec_tok;
  row.wall_baseline_s = base_s;
  row.wall_spec_s = spec_s;
  row.target_calls_baseline = m.target_calls_base;
  row.target_calls_spec = m.target_calls_spec;
  row.draft_calls = m.draft_calls;
  cell_put_acceptance(m.acc, m.tokens_per_round, /*chain=*/!tree, &row);
  row.repeated_4gram_share = stats_mean(m.repeat_share);
  // Greedy runs must reproduce the baseline token for token (a built-in exactness check);
  // synthetic acceptance and lenience change the text by design, so they have no such check
  // (cell_law_check.h: which check a cell carries).
  const CellExactnessPlan exactness = cell_exactness_plan(cell, cfg.measure.baseline);
  const bool greedy_checked = exactness.check == "greedy_tokens";
  if (greedy_checked) row.greedy_outputs_match = m.outputs_match;

  // Acceptance seen in this run: diagnostics of the run, not of the pair (which positions
  // get tested depends on where rounds start, hence on gamma). The pair's acceptance is
  // alpha_profile below.
  if (tree) {
    row.tree_nodes = m.acc.n_tree_nodes;
    row.mean_tree_nodes_per_round =
        m.acc.n_rounds ? double(m.acc.n_tree_nodes) / m.acc.n_rounds : 0.0;
  }
  if (synthetic) {
    std::vector<double> configured;
    for (int i = 0; i < std::max(cell.gamma, 1); i++)
      configured.push_back(verify_synthetic_prob_at(cell.synthetic_acceptance, i));
    row.acceptance_by_position_configured = configured;
  }

  // Time breakdown of the speculative runs (an accounting identity: these add up to the
  // decode time, up to the loop's own bookkeeping; they are not a prediction).
  row.draft_s = m.draft_s;
  row.verify_s = m.verify_s;
  row.sample_s = m.sample_s;
  row.draft_s_per_drafted_token = m.acc.n_drafted ? m.draft_s / m.acc.n_drafted : 0.0;
  row.round_host_s = m.acc.n_rounds ? m.sample_s / m.acc.n_rounds : 0.0;
  row.rounds_verified_on_device = m.rounds_on_device;
  time_parts_put(m.parts, prediction ? &prediction->cost : nullptr,
                 prediction ? &prediction->cost_parts : nullptr, &row);

  double speedup = 0;
  if (cfg.measure.baseline && base_tok > 0 && spec_tok > 0 && spec_s > 0) {
    speedup = (base_s / base_tok) / (spec_s / spec_tok);
    const Interval ci = cell_bootstrap_speedup(m.samples, cfg.measure.bootstrap_resamples,
                                               cfg.measure.confidence, seed ^ 0x5eedULL);
    row.speedup = speedup;
    row.speedup_ci_lo = ci.lo;
    row.speedup_ci_hi = ci.hi;
    row.baseline_s_per_token = base_s / base_tok;
    row.spec_s_per_token = spec_s / spec_tok;
    if (ctx.baseline_reference_s <= 0) ctx.baseline_reference_s = base_s / base_tok;
  }

  // The out-of-sample prediction (profiles only) and Theorem 3.8 in the paper's form.
  if (prediction) {
    prediction->put_into(&row);
    if (speedup > 0) {
      row.prediction_error = prediction->prediction.speedup / speedup - 1;
      if (prediction->thm38_speedup > 0) row.thm38_error = prediction->thm38_speedup / speedup - 1;
      if (std::isfinite(prediction->mean_costs_speedup))
        row.prediction_error_mean_costs = prediction->mean_costs_speedup / speedup - 1;
    }
  }

  // The profile's price of this run's own rounds against the measured speedup: the cost side
  // of the prediction error alone (the run's rounds carry its acceptance, luck included).
  if (speedup > 0 && m.acc.n_rounds > 0) {
    const double tau = static_cast<double>(spec_tok) / static_cast<double>(m.acc.n_rounds);
    const std::optional<double> at_rounds = time_parts_profile_speedup_at_rounds(row, tau);
    if (at_rounds) row.profile_error_at_run_rounds = *at_rounds / speedup - 1;
    // Theorem 3.8's cost side the same way: its speedup E[tokens] / (gamma c + 1) with the
    // run's tokens per round for E[tokens] (only where Theorem 3.8 gave a figure).
    if (prediction && prediction->thm38_speedup > 0 && prediction->c > 0) {
      row.thm38_error_at_run_rounds =
          tau / (prediction->thm38_gamma * prediction->c + 1) / speedup - 1;
    }
  }

  // Sanity flags: results that must not be quoted as they stand.
  RunFlagInputs f;
  f.speedup = speedup;
  f.tokens_per_round = m.acc.tau();
  f.n_prompts = static_cast<int64_t>(ctx.prompts.size());
  f.cores = ctx.machine.cores;
  f.load_before = m.load_before.load1;
  f.load_after = m.load_after.load1;
  f.baseline_s_per_token = base_tok > 0 ? base_s / base_tok : 0;
  f.baseline_reference_s = ctx.baseline_reference_s;
  f.greedy_checked = greedy_checked;
  f.greedy_match = m.outputs_match;
  f.predicted = prediction.has_value();
  if (m.acc.n_rounds > 0) {
    f.verify_s_per_round = m.verify_s / m.acc.n_rounds;
    f.round_target_side_s = (m.verify_s + m.sample_s) / m.acc.n_rounds;
  }
  if (prediction) {
    // The profile's view of this cell: its plain loop, and (chains) a verify of the round's
    // mean k, T(k) interpolated between profiled k.
    f.profile_baseline_s_per_token = prediction->prediction.base_s_per_token;
    f.profile_load = prediction->profile_load;
    f.profile_plain_min_s = prediction->plain_step_min_s;
    f.profile_plain_median_s = prediction->plain_step_median_s;
    f.profile_plain_max_s = prediction->plain_step_max_s;
    if (!tree && m.acc.n_rounds > 0) {
      const double k = 1.0 + static_cast<double>(m.acc.n_drafted) / m.acc.n_rounds;
      // A round verified on the device: the run's verify_s is that whole round, as the
      // profile's verify_device_s.
      const bool device = prediction->verify_on_device;
      f.profile_round_target_side_s = prediction->cost.round_target_side_at(k, device);
      f.profile_verify_s_per_round =
          device ? f.profile_round_target_side_s : prediction->cost.target_at(k);
    }
  }
  if (row.round_draft_forward_s && row.round_draft_other_s && row.profile_round_draft_forward_s &&
      row.profile_round_draft_other_s) {
    f.draft_s_per_round = *row.round_draft_forward_s + *row.round_draft_other_s;
    f.profile_draft_s_per_round =
        *row.profile_round_draft_forward_s + *row.profile_round_draft_other_s;
  }
  f.rounds = m.acc.n_rounds;
  f.rounds_on_device = m.rounds_on_device;
  f.prediction_verify_on_device = prediction.has_value() && prediction->verify_on_device;
  cell_put_law_check(exactness, m.law, m.rounds_on_device, &row, &f);
  row.flags = run_flags_evaluate(f);
  return row;
}

ResultRow cell_run_cost_only(RunContext& ctx, const Cell& cell, PreparedDrafter& prepared) {
  // Time the draft's one-token call directly: propose 1 token from a fixed context, many times.
  ResultRow row = cell_row_header(ctx, cell, prepared);
  row.row_kind = "cost_only";
  const std::vector<int32_t>& base_ctx =
      ctx.prompts.empty() ? std::vector<int32_t>{1, 2, 3} : ctx.prompts[0].ids;
  std::vector<int32_t> context;
  for (int64_t i = 0; i < ctx.target_curve.context_len; i++)
    context.push_back(base_ctx[static_cast<size_t>(i) % base_ctx.size()]);
  Drafter& d = *prepared.drafter;
  d.reset();
  DraftProposal prop;
  RngKey key{1, 0, 0, 0, 0};
  SamplingParams sp = cell.draft_sampling();
  std::vector<double> per_token;
  for (int rep = 0; rep < 7; rep++) {
    // Two proposals of gamma tokens from the same context: the second has no catch-up, so
    // its seconds / calls is the per-call cost of drafting.
    // As the decoder drafts: on the runner's device when it samples there.
    d.propose_keeping_q_on_device(context, cell.gamma, sp, DraftStopRule{}, key, &prop);
    d.propose_keeping_q_on_device(context, cell.gamma, sp, DraftStopRule{}, key, &prop);
    if (!prop.tokens.empty()) per_token.push_back(prop.seconds / prop.tokens.size());
  }
  std::sort(per_token.begin(), per_token.end());
  const double t_draft = per_token.empty() ? 0.0 : per_token[per_token.size() / 2];
  const double t1 = ctx.target_curve.t1();
  const double c = t1 > 0 ? t_draft / t1 : 0;
  row.draft_s_per_token = t_draft;
  row.c_measured = c;
  const double target_bytes =
      static_cast<double>(ctx.target_identity.weight_bytes_per_token.value_or(0));
  const double draft_bytes =
      static_cast<double>(prepared.identity.weight_bytes_per_token.value_or(0));
  row.weight_bytes_ratio = target_bytes > 0 ? draft_bytes / target_bytes : 0.0;
  // Predicted speedup over a grid: Theorem 3.8 (T(k) = T(1)) and refined (measured T(k)).
  PredictedGrid grid;
  for (double alpha = 0.5; alpha < 0.96; alpha += 0.05) {
    for (int g = 1; g + 1 <= static_cast<int>(ctx.target_curve.seconds.size()); g++) {
      RefinedCostModel m;
      m.accept_cond.assign(static_cast<size_t>(g), alpha);
      m.draft_seconds_per_token = t_draft;
      m.target_seconds = ctx.target_curve.seconds;
      GridPoint p;
      p.alpha = std::round(alpha * 100) / 100;
      p.gamma = g;
      p.thm38 = theory_walltime_speedup(alpha, c, g);
      p.refined = theory_refined_speedup(m, g);
      grid.push_back(p);
    }
  }
  row.predicted_grid = grid;
  return row;
}

}  // namespace speclab
