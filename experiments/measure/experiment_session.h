// Everything a run of an experiment config shares across its cells: the loaded target, its
// runner, the tokenized prompts, the machine description, the target's cost curve, and the
// drafters (created on first use). `speclab run` and `speclab check` both drive one.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep.h"
#include "experiments/measure/cell_runner.h"

namespace speclab {

class ExperimentSession {
 public:
  // Loads the target and prompts and measures the cost curve. Throws InputError.
  // measure_bandwidth: include the machine's read bandwidth in rows (about 1 s).
  // measure_cost_curve = false skips the isolated T(k) curve (`speclab predict` has its own
  // cost profiles).
  ExperimentSession(const ExperimentConfig& config, std::atomic<bool>* interrupted,
                    bool measure_bandwidth = true, bool measure_cost_curve = true);
  // Predictions from profiles (experiments/predict/cell_prediction.h) for every cell this session
  // runs or predicts; all_cells is the whole sweep. Profiles go to or come from profiles_dir
  // (mode); the cost profiles measured record this session's commit, machine, weights, time
  // and load.
  void enable_prediction(const std::vector<Cell>& all_cells, const std::string& profiles_dir,
                         ProfileMode mode, const CostProfile* cost_override);
  // Each cell run from now on first checks its cost profile and retakes it when the machine's
  // speed has left it (measure.cost_profile_recheck; experiments/predict/cost_profile_check.h).
  void recheck_profiles_before_cells();
  // Runs one cell (throws CellInterrupted when interrupted).
  ResultRow run_cell(const Cell& cell);
  // Predicts one cell from profiles only (enable_prediction first).
  CellPrediction predict_cell(const Cell& cell);
  // Cells run from now on write their speculative rounds to `trace` (nullptr: none).
  void set_trace(RoundTraceWriter* trace) { ctx_.trace = trace; }
  // A seam for tests that plant a bug in drafting and show that a gate catches it from a real
  // rerun: every drafter of this session (those the constructor prepared, and any prepared
  // later; batched cells build their own and are not wrapped) is passed through `wrap`. Its
  // identity stays the wrapped drafter's, so a gate compares the figures, not the models.
  using DrafterWrap = std::function<std::unique_ptr<Drafter>(std::unique_ptr<Drafter>)>;
  void wrap_drafters(DrafterWrap wrap);

 private:
  const ExperimentConfig& config_;
  std::unique_ptr<LlamaModel> target_model_;
  std::unique_ptr<TokenRunner> target_;
  RunContext ctx_;
  std::map<std::string, PreparedDrafter> drafters_;
  std::unique_ptr<CellPredictor> predictor_;
  DrafterWrap wrap_drafter_;
  PreparedDrafter& drafter_for(const Cell& cell);
  // Cells of concurrency > 1 (sweep.concurrency) can run here: CPU backend, generation, prompts,
  // no tree, and the largest cell's KV caches fit in memory. InputError before the first cell.
  void check_concurrency() const;
};

}  // namespace speclab
