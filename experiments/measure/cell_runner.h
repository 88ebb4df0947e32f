// The measurement protocol for one sweep cell (docs/measurement-protocol.md):
//
//  * Predict first: the cell's predicted speedup comes from the pair's cost and acceptance
//    profiles (experiments/predict/cell_prediction.h), measured apart from any speculative round.
//  * For each prompt (and repeat), the target alone (baseline) and the speculative decoder
//    run on the same prompt with the same sampling parameters and seed; the order of the two
//    alternates from prompt to prompt so slow drift of the machine cancels.
//  * A short untimed speculative run precedes the timed ones (warmup).
//  * Time per generated token = decode wall time / tokens generated, where the decode phase
//    of both starts after the same prefill (all prompt tokens but the last).
//  * speedup = (sum baseline decode s / sum baseline tokens) / (sum spec decode s / sum spec
//    tokens), with a percentile bootstrap interval over prompts (a prompt's repeats are
//    resampled together, as one cluster).
//  * Beside it: the out-of-sample prediction and Theorem 3.8 (alpha from the acceptance
//    profile, c from the cost profile, the cell's gamma), each with its relative error; the
//    in-run time breakdown (draft, verify, host seconds) is accounting, not a prediction.
//  * Sanity flags name results that cannot be trusted as they stand (run_flags.h).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/stats.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep.h"
#include "experiments/measure/cost_measurement.h"
#include "experiments/measure/machine_info.h"
#include "experiments/measure/model_identity.h"
#include "experiments/measure/run_conditions.h"
#include "experiments/predict/cell_prediction.h"
#include "experiments/results/result_row.h"
#include "models/decode/round_stats.h"
#include "models/drafters/drafter.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner.h"

namespace speclab {

class RoundTraceWriter;  // experiments/measure/round_trace.h

// Everything shared by the cells of one run.
struct RunContext {
  const ExperimentConfig* config = nullptr;
  const LlamaModel* target_model = nullptr;
  TokenRunner* target = nullptr;  // CPU or CUDA (generation.backend)
  ModelIdentity target_identity;
  MachineInfo machine;
  std::string git_commit;
  std::vector<PromptTokens> prompts;
  std::vector<int64_t> stop_ids;
  CostCurve target_curve;                    // T(1..k_max), measured once per run
  CellPredictor* predictor = nullptr;        // profiles and predictions (null: none)
  RunConditions run_static;                  // run_conditions_static()
  double baseline_reference_s = 0;           // the run's first measured baseline s/token
  std::atomic<bool>* interrupted = nullptr;  // set by SIGINT: abandon the cell in flight
  RoundTraceWriter* trace = nullptr;         // --trace: each speculative generation's rounds
};

// A drafter prepared for measurement, with its identity for the result rows.
struct PreparedDrafter {
  std::unique_ptr<Drafter> drafter;
  ModelIdentity identity;
};

// Raised when the run was interrupted in the middle of a cell (nothing is written for it).
struct CellInterrupted {};

PreparedDrafter cell_prepare_drafter(RunContext& ctx, const DrafterEntry& entry);

// Runs one cell and returns its result row (experiments/results/result_row.h).
ResultRow cell_run(RunContext& ctx, const Cell& cell, PreparedDrafter& drafter);

// The parts of a row every cell of the run shares: the run, machine, conditions, target and
// draft identities and the target's cost curve.
ResultRow cell_row_header(RunContext& ctx, const Cell& cell, const PreparedDrafter& d);

// One cluster of a speedup bootstrap (a prompt with its repeats): seconds and tokens of each
// loop, summed.
struct SpeedupCluster {
  double base_s = 0, base_tokens = 0, spec_s = 0, spec_tokens = 0;
};
// Percentile bootstrap over clusters of
// (sum baseline s / sum baseline tokens) / (sum speculative s / sum speculative tokens);
// {0, 0} without clusters, with resamples < 2 or when a resample has no time or tokens.
// whole (may be null) receives the statistic over every cluster.
Interval speedup_cluster_interval(const std::vector<SpeedupCluster>& clusters, int resamples,
                                  double confidence, uint64_t seed, double* whole = nullptr);

// speedup_cluster_interval over prompts (a prompt's repeats resampled together, as one cluster)
// of the samples' decode seconds and tokens.
Interval cell_bootstrap_speedup(const ResultSamples& samples, int resamples, double confidence,
                                uint64_t seed);

// The acceptance part of a measured row, from the speculative runs' rounds: counts, per-position
// counts and rates, alpha (and alpha_beta for chains: Corollary 3.6 at the tested positions),
// tau with its standard error over rounds, drafted per round.
void cell_put_acceptance(const AcceptanceStats& acc, const std::vector<double>& tokens_per_round,
                         bool chain, ResultRow* row);

// Cost-only cells (measure.cost_only): T(k), the draft's call cost, c, and predicted
// speedup curves over a grid of alpha and gamma; no generation.
ResultRow cell_run_cost_only(RunContext& ctx, const Cell& cell, PreparedDrafter& drafter);

}  // namespace speclab
