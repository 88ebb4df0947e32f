#include "experiments/cell_runner.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/gamma_policy.h"
#include "core/rng.h"
#include "core/speculative_verify.h"
#include "core/speedup_theory.h"
#include "core/stats.h"
#include "experiments/model_identity.h"
#include "experiments/round_trace.h"
#include "models/decode/autoregressive.h"
#include "models/decode/round_stats.h"
#include "models/decode/speculative_decoder.h"
#include "models/decode/tree_decoder.h"

namespace speclab {

namespace {

// Per prompt (and repeat) raw figures.
struct Sample {
  std::string prompt_id;
  int repeat = 0;
  double baseline_s = 0, spec_s = 0;  // decode-phase wall seconds
  int64_t baseline_tokens = 0, spec_tokens = 0;
  int64_t rounds = 0, drafted = 0, accepted = 0;
  bool outputs_match = false;
};

std::unique_ptr<GammaPolicy> make_policy(const Cell& cell) {
  if (cell.gamma_policy == "heuristic") return std::make_unique<GammaHfHeuristic>(cell.gamma);
  if (cell.gamma_policy == "entropy")
    return std::make_unique<GammaEntropyGuided>(1, cell.gamma, 0.5);
  return std::make_unique<GammaFixed>(cell.gamma);
}

// Percentile bootstrap over prompts of the ratio of per-token times.
Interval bootstrap_speedup(const std::vector<Sample>& s, int resamples, double confidence,
                           uint64_t seed) {
  std::vector<double> stats;
  const size_t n = s.size();
  for (int b = 0; b < resamples; b++) {
    double bs = 0, bt = 0, ss = 0, st = 0;
    for (size_t i = 0; i < n; i++) {
      RngKey key{seed, static_cast<uint64_t>(b), static_cast<uint64_t>(i),
                 static_cast<uint32_t>(kRngBootstrap), 0};
      const auto& x = s[std::min(n - 1, static_cast<size_t>(rng_uniform(key) * n))];
      bs += x.baseline_s;
      bt += x.baseline_tokens;
      ss += x.spec_s;
      st += x.spec_tokens;
    }
    if (bt > 0 && st > 0 && ss > 0) stats.push_back((bs / bt) / (ss / st));
  }
  if (stats.empty()) return {0, 0};
  std::sort(stats.begin(), stats.end());
  const double tail = (1 - confidence) / 2;
  auto at = [&](double q) {
    return stats[std::min(stats.size() - 1, static_cast<size_t>(q * (stats.size() - 1) + 0.5))];
  };
  return {at(tail), at(1 - tail)};
}

void put_prefixed(nlohmann::json& row, const std::string& prefix, const nlohmann::json& obj) {
  for (auto it = obj.begin(); it != obj.end(); ++it) row[prefix + it.key()] = it.value();
}

nlohmann::json row_header(RunContext& ctx, const Cell& cell, const PreparedDrafter& d) {
  nlohmann::json row = cell.to_json();
  row["experiment"] = ctx.config->name;
  row["config_file"] = ctx.config->file;
  row["config_hash"] = ctx.config->config_hash();
  row["git_commit"] = ctx.git_commit;
  row["max_new_tokens"] = ctx.config->generation.max_new_tokens;
  row["seed"] = ctx.config->generation.seed;
  row["repeats"] = ctx.config->generation.repeats;
  row["n_prompts"] = ctx.prompts.size();
  put_prefixed(row, "machine_", ctx.machine);
  put_prefixed(row, "target_", ctx.target_identity);
  put_prefixed(row, "draft_", d.identity);
  row["cost_context_len"] = ctx.target_curve.context_len;
  row["target_t1_s"] = ctx.target_curve.t1();
  row["target_tk_s"] = ctx.target_curve.seconds;
  row["target_tk_ratio"] = ctx.target_curve.ratios();
  return row;
}

// Tree cells: Theorem 3.8 assumes one chain of i.i.d. acceptances and has no tree form, so it
// is dropped; the refined prediction becomes tokens per round from the per-depth conditional
// acceptance (E = 1 + sum_d prod_{j<=d} a_j over the tree's depth) over the round's measured
// cost: draft seconds per round + the in-run T(k) of each round's k = nodes + 1 (summed, that
// is the verify seconds) per round + host overhead.
void tree_predictions(nlohmann::json* row, const AcceptanceStats& acc, size_t max_depth_plus_1,
                      double draft_s, double verify_s, double t1, double overhead) {
  nlohmann::json& r = *row;
  r["tree_nodes"] = acc.n_tree_nodes;
  r["mean_tree_nodes_per_round"] = acc.n_rounds ? double(acc.n_tree_nodes) / acc.n_rounds : 0.0;
  if (!acc.n_rounds || !r.contains("speedup")) return;
  const int depth = static_cast<int>(max_depth_plus_1) - 1;
  const double e_tokens =
      depth > 0 ? theory_refined_expected_tokens(acc.conditional_acceptance(), depth) : 1.0;
  const double seconds = (draft_s + verify_s) / acc.n_rounds + overhead;
  if (seconds <= 0) return;
  const double refined = e_tokens * t1 / seconds;
  r["predicted_speedup_refined"] = refined;
  r["error_refined"] = refined / r["speedup"].get<double>() - 1;
}
}  // namespace

PreparedDrafter cell_prepare_drafter(RunContext& ctx, const DrafterEntry& entry) {
  PreparedDrafter d;
  d.drafter = drafter_create(entry.ref.path, *ctx.target_model, ctx.target->max_ctx());
  d.identity["name"] = entry.name;
  d.identity["spec"] = entry.ref.spec;
  if (const LlamaModel* m = d.drafter->model()) {
    // Self-speculation runs the target's own weights: identify them by the target's files.
    const bool self = entry.ref.spec.rfind("self:", 0) == 0;
    d.identity = self ? model_identity(ctx.config->target->spec, ctx.config->target->path, *m)
                      : model_identity(entry.ref.spec, entry.ref.path, *m);
  }
  d.identity["name"] = entry.name;
  d.identity["spec"] = entry.ref.spec;
  d.identity["kind"] = d.drafter->deterministic() ? "deterministic" : "sampled";
  return d;
}

nlohmann::json cell_run(RunContext& ctx, const Cell& cell, PreparedDrafter& prepared) {
  const ExperimentConfig& cfg = *ctx.config;
  Drafter& drafter = *prepared.drafter;
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
  const bool synthetic = !cell.synthetic_acceptance.empty();

  // Tree cells (sweep.tree) run the tree decoder with the same draft sampling.
  TreeSpeculativeConfig tree_cfg;
  if (!cell.tree.empty()) {
    tree_cfg.shape = tree_shape_parse(cell.tree, "sweep.tree");
    tree_cfg.draft_sampling = spec.draft_sampling;
  }
  auto run_speculative = [&](const GenerationRequest& r) {
    return cell.tree.empty() ? generate_speculative(target, drafter, r, spec)
                             : generate_tree_speculative(target, drafter, r, tree_cfg);
  };

  // Warmup: short untimed runs of both.
  for (int w = 0; w < cfg.generation.warmup && !ctx.prompts.empty(); w++) {
    GenerationRequest wreq = req;
    wreq.prompt = ctx.prompts[static_cast<size_t>(w) % ctx.prompts.size()].ids;
    wreq.max_new_tokens = std::min<int64_t>(req.max_new_tokens, 8);
    generate_autoregressive(target, wreq);
    auto policy = make_policy(cell);
    spec.policy = policy.get();
    run_speculative(wreq);
  }

  std::vector<Sample> samples;
  AcceptanceStats acc;
  double draft_s = 0, verify_s = 0, sample_s = 0;
  int64_t draft_calls = 0, target_calls_spec = 0, target_calls_base = 0;
  std::vector<int64_t> n_draft_hist;  // rounds by n_draft, for the refined prediction
  std::vector<double> tokens_per_round;
  std::vector<double> verify_s_by_k;   // [k] summed verify seconds of rounds with k = n_draft+1
  std::vector<int64_t> verify_n_by_k;  // [k] number of such rounds
  for (size_t pi = 0; pi < ctx.prompts.size(); pi++) {
    for (int rep = 0; rep < cfg.generation.repeats; rep++) {
      if (ctx.interrupted && ctx.interrupted->load()) throw CellInterrupted{};
      req.prompt = ctx.prompts[pi].ids;
      req.request_id = pi;  // same seed and request id for both: same random streams
      auto policy = make_policy(cell);
      spec.policy = policy.get();
      Sample s;
      s.prompt_id = ctx.prompts[pi].id;
      s.repeat = rep;
      GenerationResult base, out;
      const bool baseline_first = (pi + static_cast<size_t>(rep)) % 2 == 0;
      if (baseline_first && cfg.measure.baseline) base = generate_autoregressive(target, req);
      out = run_speculative(req);
      if (ctx.trace) ctx.trace->write_cell(cell, s.prompt_id, rep, req, out, target.max_ctx());
      if (!baseline_first && cfg.measure.baseline) base = generate_autoregressive(target, req);
      s.baseline_s = base.decode_s;
      s.baseline_tokens = static_cast<int64_t>(base.tokens.size());
      s.spec_s = out.decode_s;
      s.spec_tokens = static_cast<int64_t>(out.tokens.size());
      s.rounds = static_cast<int64_t>(out.rounds.size());
      s.outputs_match = base.tokens == out.tokens;
      for (const auto& r : out.rounds) {
        s.drafted += r.n_draft;
        s.accepted += r.n_accepted;
        draft_s += r.draft_s;
        verify_s += r.verify_s;
        sample_s += r.sample_s;
        if (n_draft_hist.size() <= static_cast<size_t>(r.n_draft))
          n_draft_hist.resize(r.n_draft + 1, 0);
        n_draft_hist[static_cast<size_t>(r.n_draft)]++;
        tokens_per_round.push_back(r.n_emitted);
        // Tokens in the verification pass: the chain's drafts + 1, or every tree node.
        const size_t k = static_cast<size_t>((r.tree_nodes > 0 ? r.tree_nodes : r.n_draft) + 1);
        if (verify_s_by_k.size() <= k) {
          verify_s_by_k.resize(k + 1, 0.0);
          verify_n_by_k.resize(k + 1, 0);
        }
        verify_s_by_k[k] += r.verify_s;
        verify_n_by_k[k]++;
      }
      acc.add(out.rounds);
      draft_calls += out.n_draft_calls;
      target_calls_spec += out.n_target_calls;
      target_calls_base += base.n_target_calls;
      samples.push_back(s);
    }
  }

  nlohmann::json row = row_header(ctx, cell, prepared);
  double base_s = 0, spec_s = 0;
  int64_t base_tok = 0, spec_tok = 0;
  bool all_match = true;
  nlohmann::json raw = nlohmann::json::array();
  for (const auto& s : samples) {
    base_s += s.baseline_s;
    spec_s += s.spec_s;
    base_tok += s.baseline_tokens;
    spec_tok += s.spec_tokens;
    all_match = all_match && s.outputs_match;
    raw.push_back({{"prompt_id", s.prompt_id},
                   {"repeat", s.repeat},
                   {"baseline_s", s.baseline_s},
                   {"baseline_tokens", s.baseline_tokens},
                   {"spec_s", s.spec_s},
                   {"spec_tokens", s.spec_tokens},
                   {"rounds", s.rounds},
                   {"drafted", s.drafted},
                   {"accepted", s.accepted}});
  }
  row["samples"] = raw;
  row["tokens_baseline"] = base_tok;
  row["tokens_spec"] = spec_tok;
  row["wall_baseline_s"] = base_s;
  row["wall_spec_s"] = spec_s;
  row["target_calls_baseline"] = target_calls_base;
  row["target_calls_spec"] = target_calls_spec;
  row["draft_calls"] = draft_calls;
  row["rounds"] = acc.n_rounds;
  row["drafted"] = acc.n_drafted;
  row["tested"] = acc.n_tested;
  row["accepted"] = acc.n_accepted;
  row["drafted_by_position"] = acc.drafted_at;
  row["tested_by_position"] = acc.tested_at;
  row["accepted_by_position"] = acc.accepted_at;
  row["draft_s"] = draft_s;
  row["verify_s"] = verify_s;
  row["sample_s"] = sample_s;
  // Greedy runs must reproduce the baseline token for token (a built-in exactness check);
  // synthetic acceptance changes the text by design, so it has no such check.
  if (cell.temperature == 0 && cfg.measure.baseline && !synthetic)
    row["greedy_outputs_match"] = all_match;

  // Acceptance.
  const double alpha = acc.alpha_beta();
  row["alpha_empirical"] = acc.alpha_empirical();
  const bool tree = !cell.tree.empty();
  if (!tree) row["alpha_beta"] = alpha;  // tree rounds record no beta (Corollary 3.6 is per chain)
  const double a_hat = acc.alpha_empirical();
  row["alpha_se"] = acc.n_tested ? std::sqrt(a_hat * (1 - a_hat) / acc.n_tested) : 0.0;
  row["acceptance_by_position"] = acc.conditional_acceptance();
  row["survival_by_position"] = acc.survival();
  row["tau"] = acc.tau();
  row["tau_se"] = tokens_per_round.size() > 1
                      ? std::sqrt(stats_variance(tokens_per_round) / tokens_per_round.size())
                      : 0.0;

  // Costs, measured inside this cell's runs (the isolated T(k) curve above is reported too,
  // but calls timed alone run faster than the same calls inside a generation loop, where
  // caches are shared with sampling and the draft):
  //   T1      baseline decode seconds per generated token (one target call + sampling)
  //   T(k)    mean verify seconds of the rounds that verified k = n_draft + 1 tokens
  //   t_draft draft seconds per drafted token;  c = t_draft / T1
  const double t1 = base_tok > 0 ? base_s / base_tok : ctx.target_curve.t1();
  const double t_draft = acc.n_drafted ? draft_s / acc.n_drafted : 0.0;
  const double overhead = acc.n_rounds ? sample_s / acc.n_rounds : 0.0;
  std::vector<double> t_k_inrun;  // [k-1] T(k) for k = 1.., 0 where no round verified k tokens
  for (size_t k = 1; k < verify_s_by_k.size(); k++)
    t_k_inrun.push_back(verify_n_by_k[k] ? verify_s_by_k[k] / verify_n_by_k[k] : 0.0);
  row["t1_s"] = t1;
  row["tk_inrun_s"] = t_k_inrun;
  row["draft_s_per_token"] = t_draft;
  row["c_measured"] = t1 > 0 ? t_draft / t1 : 0.0;
  row["round_overhead_s"] = overhead;
  row["mean_drafted_per_round"] = acc.n_rounds ? double(acc.n_drafted) / acc.n_rounds : 0.0;

  // Per-position conditional acceptance the predictions use: measured, or under synthetic
  // acceptance the configured probabilities (known alpha), over every drafted position.
  const size_t max_drafted = n_draft_hist.empty() ? 0 : n_draft_hist.size() - 1;
  std::vector<double> accept_cond = acc.conditional_acceptance();
  if (synthetic) {
    accept_cond.clear();
    for (size_t i = 0; i < std::max<size_t>(max_drafted, static_cast<size_t>(cell.gamma)); i++)
      accept_cond.push_back(
          verify_synthetic_prob_at(cell.synthetic_acceptance, static_cast<int>(i)));
    // The configured counterpart of alpha_empirical (accepted / tested): expected accepted
    // over expected tested for the rounds' actual draft lengths.
    double e_accepted = 0, e_tested = 0;
    for (size_t g_r = 1; g_r < n_draft_hist.size(); g_r++) {
      double reach = 1;  // P(position i is tested)
      for (size_t i = 0; i < g_r; i++) {
        e_tested += n_draft_hist[g_r] * reach;
        e_accepted += n_draft_hist[g_r] * reach * accept_cond[i];
        reach *= accept_cond[i];
      }
    }
    row["alpha_configured"] = e_tested > 0 ? e_accepted / e_tested : accept_cond.at(0);
    row["acceptance_by_position_configured"] = accept_cond;
  }

  if (cfg.measure.baseline && base_tok > 0 && spec_tok > 0 && spec_s > 0) {
    const double speedup = (base_s / base_tok) / (spec_s / spec_tok);
    const Interval ci = bootstrap_speedup(samples, cfg.measure.bootstrap_resamples,
                                          cfg.measure.confidence, req.seed ^ 0x5eedULL);
    row["speedup"] = speedup;
    row["speedup_ci_lo"] = ci.lo;
    row["speedup_ci_hi"] = ci.hi;
    row["baseline_s_per_token"] = base_s / base_tok;
    row["spec_s_per_token"] = spec_s / spec_tok;
  }
  if (!tree && row.contains("speedup")) {
    const double speedup = row["speedup"].get<double>();
    // Theorem 3.8 at the cell's gamma (the mean drafted per round for adaptive policies and
    // drafters that propose fewer), from alpha (Corollary 3.6) and the measured c. Under
    // synthetic acceptance alpha is the configured one; a per-position list enters as the
    // i.i.d. alpha with the same Eq. (1) tokens per round at that gamma.
    const double mean_g = row["mean_drafted_per_round"].get<double>();
    const int g = std::max(1, static_cast<int>(std::lround(mean_g)));
    const double c = row["c_measured"];
    double thm_alpha = alpha;
    if (synthetic) {
      const double target_tokens = theory_refined_expected_tokens(accept_cond, g);
      double lo = 0, hi = 1;  // Eq. (1) increases with alpha: bisect
      for (int it = 0; it < 100; it++) {
        const double mid = (lo + hi) / 2;
        (theory_expected_tokens(mid, g) < target_tokens ? lo : hi) = mid;
      }
      thm_alpha = std::all_of(accept_cond.begin(), accept_cond.begin() + g,
                              [&](double a) { return a == accept_cond[0]; })
                      ? accept_cond[0]
                      : (lo + hi) / 2;
    }
    const double thm = theory_walltime_speedup(std::min(thm_alpha, 1.0 - 1e-12), c, g);
    row["thm38_alpha"] = thm_alpha;
    row["predicted_speedup_thm38"] = thm;
    row["error_thm38"] = thm / speedup - 1;

    // Refined: tokens per round predicted from per-position conditional acceptance
    // (E = 1 + sum_i prod_{j<=i} a_j) for each round's actual draft length, and the round's
    // cost from the measured pieces: g * t_draft + T(g+1) + host overhead.
    auto refined_speedup = [&](const std::vector<double>& a) {
      double e_tokens = 0, seconds = 0;
      for (size_t g_r = 0; g_r < n_draft_hist.size(); g_r++) {
        if (!n_draft_hist[g_r]) continue;
        const double e = g_r == 0 ? 1.0 : theory_refined_expected_tokens(a, static_cast<int>(g_r));
        e_tokens += n_draft_hist[g_r] * e;
        seconds += n_draft_hist[g_r] * (g_r * t_draft + t_k_inrun[g_r] + overhead);
      }
      return seconds > 0 ? e_tokens * t1 / seconds : 0.0;
    };
    const double refined = refined_speedup(accept_cond);
    if (refined > 0) {
      row["predicted_speedup_refined"] = refined;
      row["error_refined"] = refined / speedup - 1;
    }
    // Synthetic: the same model at the measured acceptance separates the cost model's error
    // from the sampling noise of the accept draws.
    if (synthetic && refined > 0) {
      const double at_measured = refined_speedup(acc.conditional_acceptance());
      row["predicted_speedup_refined_measured_alpha"] = at_measured;
      row["error_refined_measured_alpha"] = at_measured / speedup - 1;
    }
  }
  if (tree) tree_predictions(&row, acc, n_draft_hist.size(), draft_s, verify_s, t1, overhead);
  return row;
}

nlohmann::json cell_run_cost_only(RunContext& ctx, const Cell& cell, PreparedDrafter& prepared) {
  // Time the draft's one-token call directly: propose 1 token from a fixed context, many times.
  nlohmann::json row = row_header(ctx, cell, prepared);
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
    d.propose(context, cell.gamma, sp, DraftStopRule{}, key, &prop);
    d.propose(context, cell.gamma, sp, DraftStopRule{}, key, &prop);
    if (!prop.tokens.empty()) per_token.push_back(prop.seconds / prop.tokens.size());
  }
  std::sort(per_token.begin(), per_token.end());
  const double t_draft = per_token.empty() ? 0.0 : per_token[per_token.size() / 2];
  const double t1 = ctx.target_curve.t1();
  const double c = t1 > 0 ? t_draft / t1 : 0;
  row["draft_s_per_token"] = t_draft;
  row["c_measured"] = c;
  row["weight_bytes_ratio"] = ctx.target_identity.value("weight_bytes_per_token", 0.0) > 0
                                  ? prepared.identity.value("weight_bytes_per_token", 0.0) /
                                        ctx.target_identity.value("weight_bytes_per_token", 1.0)
                                  : 0.0;
  // Predicted speedup over a grid: Theorem 3.8 (T(k) = T(1)) and refined (measured T(k)).
  nlohmann::json grid = nlohmann::json::array();
  for (double alpha = 0.5; alpha < 0.96; alpha += 0.05) {
    for (int g = 1; g + 1 <= static_cast<int>(ctx.target_curve.seconds.size()); g++) {
      RefinedCostModel m;
      m.accept_cond.assign(static_cast<size_t>(g), alpha);
      m.draft_seconds_per_token = t_draft;
      m.target_seconds = ctx.target_curve.seconds;
      grid.push_back({{"alpha", std::round(alpha * 100) / 100},
                      {"gamma", g},
                      {"thm38", theory_walltime_speedup(alpha, c, g)},
                      {"refined", theory_refined_speedup(m, g)}});
    }
  }
  row["predicted_grid"] = grid;
  return row;
}

}  // namespace speclab
