// Everything a run of an experiment config shares across its cells: the loaded target, its
// runner, the tokenized prompts, the machine description, the target's cost curve, and the
// drafters (created on first use). `speclab run` and `speclab check` both drive one.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "experiments/cell_runner.h"
#include "experiments/experiment_config.h"
#include "experiments/sweep.h"

namespace speclab {

class ExperimentSession {
 public:
  // Loads the target and prompts and measures the cost curve. Throws InputError.
  // measure_bandwidth: include the machine's read bandwidth in rows (about 1 s).
  ExperimentSession(const ExperimentConfig& config, std::atomic<bool>* interrupted,
                    bool measure_bandwidth = true);
  // Runs one cell (throws CellInterrupted when interrupted).
  nlohmann::json run_cell(const Cell& cell);
  // Cells run from now on write their speculative rounds to `trace` (nullptr: none).
  void set_trace(RoundTraceWriter* trace) { ctx_.trace = trace; }

 private:
  const ExperimentConfig& config_;
  std::unique_ptr<LlamaModel> target_model_;
  std::unique_ptr<TokenRunner> target_;
  RunContext ctx_;
  std::map<std::string, PreparedDrafter> drafters_;
};

}  // namespace speclab
