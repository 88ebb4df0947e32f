// Predictions for the cells of a sweep from profiles only (core/speedup_prediction.h): the
// cost profile and the acceptance profile of each (drafter, sampling setting) group are
// measured once (experiments/predict/cost_profile.h, experiments/predict/acceptance_profile.h) - or
// read from a profiles directory - and every cell of the group is predicted from them. No
// speculative round runs here: `speclab predict` is this alone, `speclab run` adds the measurement.
//
// Group: the cells that differ only in gamma, gamma policy, p_min, synthetic acceptance, tree
// shape and concurrency share their profiles (those settings change how rounds are cut and
// batched, not the pair's acceptance at a position nor its costs). The acceptance rollouts are
// as deep as the deepest cell of the group needs (the whole sweep, not the shard, so shards
// agree). A group with cells of concurrency > 1 also has a batched cost profile over slots
// {1} and every such concurrency of the sweep (core/batched_speedup_prediction.h).
//
// Files in the profiles directory (DIR/profiles/): cost-<group>.json, acceptance-<group>.json
// (acceptance-<group>-strideN.json at measure.acceptance_stride N > 1),
// batched-cost-<group>.json (experiments/predict/profile_io.h) and index.json (group -> its
// settings). A profile that
// result rows came from is never overwritten by `speclab run --resume` (ProfileMode::kResume).
#pragma once

#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/batched_speedup_prediction.h"
#include "core/speedup_prediction.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep.h"
#include "experiments/predict/acceptance_profile.h"
#include "experiments/predict/batched_cost_profile.h"
#include "experiments/predict/cost_profile.h"
#include "experiments/predict/cost_range.h"
#include "experiments/results/result_row.h"
#include "models/drafters/drafter.h"
#include "models/llama/token_runner.h"

namespace speclab {

struct CellPrediction {
  std::string group;  // 12 hex digits
  std::string model;  // "chain" | "policy-walk" | "configured-acceptance" | "tree-top-b" |
                      // "tree-approx"
  Prediction prediction;
  AcceptanceSummary acceptance;  // of the group's profile (configured for synthetic cells)
  AlphaInterval alpha_ci;
  // predict_chain_interval: the acceptance side's interval (NaN: none, as for synthetic and
  // batched cells).
  PredictionInterval interval{NAN, NAN, NAN, NAN};
  // predict_cost_range: the speedup at the ends of the cost profile's own timing spread (NaN:
  // no spread recorded, or a batched cell).
  SpeedupRange cost_range;
  // predict_speedup_at_mean_costs: the same prediction with every timed figure at the mean of
  // its repetitions (a diagnostic; NaN: no means recorded, or a batched cell).
  double mean_costs_speedup = NAN;
  int acceptance_stride = 1;  // of the profile the prediction came from
  double c = 0;               // the paper's c from the cost profile
  // The rounds were priced as verified on the target's device (the profile timed that round:
  // CostProfile::verify_device_s; the decoder verifies there: ChainSetting::verify_on_device).
  bool verify_on_device = false;
  double thm38_alpha = 0;       // alpha_profile; under a configured per-position list, the
                                // i.i.d. alpha with the same Eq. (1) tokens at the cell's gamma
  double thm38_speedup = 0;     // Theorem 3.8 at (thm38_alpha, c, the cell's gamma)
  int thm38_gamma = 0;          // the gamma it was given (a load-following policy: its first)
  CostProfile cost;             // a copy: predictions outlive their predictor
  CostProfileParts cost_parts;  // its parts (empty when its file has none)
  std::string cost_file;        // the cost profile's file (written, read or imported)
  std::string cost_taken_utc;   // when the cost profile was taken ("" when unknown)
  // The check before the cell (experiments/predict/cost_profile_check.h): "held", "retaken"
  // (the profile failed it and was taken again before this prediction), or "" when none ran;
  // the plain step it timed.
  std::string cost_check;
  double cost_check_step_s = 0;
  // The cost profile's plain step over its repetitions: min, median, max (0: not recorded).
  double plain_step_min_s = 0, plain_step_median_s = 0, plain_step_max_s = 0;
  // The acceptance profile's prompts against the cell's: "same" (measured on this config's
  // prompts), "other" (held out: another prompt set's, read with --profiles), "" (unknown: an
  // index written before it recorded them).
  std::string profile_prompts;
  // The highest 1-minute load average recorded around the profiles this prediction used
  // (cost, and batched at concurrency > 1); -1 when no file says.
  double profile_load = -1;
  // Concurrency > 1: the closed loop replayed from the batched cost profile
  // (core/batched_speedup_prediction.h); `prediction` then holds its per-request figures.
  bool batched = false;
  BatchedPrediction batched_prediction;
  std::string batched_cost_source, batched_cost_file;
  // gamma_policy predicted: the gamma drafted at b requests in flight, [b] for b = 1..the
  // profiled slots ([0] unused): predicted_gamma_by_load. The cell runs with it.
  std::vector<int> gamma_by_load;
  // Its fields of a result / prediction row.
  void put_into(ResultRow* row) const;
};

struct PredictionGroupRow {
  std::string group;
  std::vector<std::string> cell_ids;
  std::string best_cell_id;
  int best_gamma = 0;
  std::string best_policy;
  double best_speedup = 0;
  // A predictions.jsonl row (row_type "group"): the group's shared cell parameters (those of
  // `best` but gamma, gamma_policy and the cell's id and index, so readers can match it to
  // measured rows), its cells and the predicted best.
  nlohmann::json to_json(const Cell& best) const;
};

// Measures a group's batched cost profile for `cell` (supplied by the measuring side, which
// owns the models: it builds the batched runners with request.slots.back() slots).
using BatchedCostMeasure =
    std::function<BatchedCostProfile(const Cell&, const BatchedCostRequest&, BatchedCostSpread*)>;

// Where a predictor's profiles come from.
enum class ProfileMode {
  kMeasure,  // measure every group's profiles and write them to the profiles directory
  kReuse,    // read every group's profiles from it; nothing is measured (a missing file is an
             // InputError) and nothing is written
  kResume,   // `speclab run --resume`: read each profile file the directory already holds
             // (earlier rows may have come from it: it is never overwritten), measure and
             // write only the missing ones
};

// The circumstances of the profiles a predictor measures, supplied by the measuring side
// (experiments/measure/experiment_session.cpp): the predict room reads no clock, /proc or
// model file itself. Unset functions leave their fields unknown.
struct ProfileConditions {
  CostProfileTaken fixed;                // the run's commit, machine and target sha256
  std::function<std::string()> utc_now;  // YYYY-MM-DDTHH:MM:SSZ
  std::function<double()> load1;         // 1-minute load average
  std::function<std::string(const Cell&)> draft_sha256;  // of the cell's drafter's weights
};

class CellPredictor {
 public:
  // all_cells: the whole sweep (profile depths come from it). profiles_dir: where profiles
  // are written or read (mode). cost_override: a cost profile for every group
  // (--cost-profile), or null.
  CellPredictor(const ExperimentConfig& config, const std::vector<Cell>& all_cells,
                TokenRunner* target, std::vector<PromptTokens> prompts,
                std::vector<int64_t> stop_ids, std::string profiles_dir, ProfileMode mode,
                const CostProfile* cost_override, const std::atomic<bool>* interrupted);
  // Recorded in the cost profiles measured from now on (their "taken").
  void set_conditions(ProfileConditions conditions) { conditions_ = std::move(conditions); }
  // How batched cost profiles are measured (cells of concurrency > 1); without it they can
  // only be read.
  void set_batched_measure(BatchedCostMeasure m) { batched_measure_ = std::move(m); }
  // Check each cost profile before every prediction of a cell of one request, and retake it
  // when the check fails (experiments/predict/cost_profile_check.h): `speclab run`, whose
  // cells run right after their prediction. band <= 0: no check. Profiles this predictor
  // owns only (measured, or read on --resume), not reused or imported ones.
  void set_recheck(double band) { recheck_band_ = band; }

  // Measures (or loads) the group's profiles on first use; `drafter` is the cell's drafter
  // (null when reusing profiles).
  CellPrediction predict(const Cell& cell, Drafter* drafter);
  // Same, for a group whose profiles are already loaded or measured (no drafter needed).
  static std::string group_of(const ExperimentConfig& config, const Cell& cell);
  // The group's acceptance profile file name: acceptance-<group>.json, and at
  // measure.acceptance_stride N > 1 acceptance-<group>-strideN.json (a strided profile
  // estimates the same law from fewer positions: same group and cost profile, but one is never
  // read for a config asking the other).
  static std::string acceptance_file_name(const std::string& group, int stride);

  // Per group of cells differing only in gamma and gamma policy: the predicted best.
  static std::vector<PredictionGroupRow> best_per_group(
      const std::vector<Cell>& cells, const std::vector<CellPrediction>& predictions);

 private:
  struct Profiles {
    CostProfile cost;
    CostProfileSpread cost_spread;
    CostProfileTaken cost_taken;
    CostProfileParts cost_parts;
    std::string cost_file;
    CostProfileRequest cost_request;  // what the cost profile times (a retake times it again)
    int cost_retakes = 0;
    AcceptanceProfile acceptance;
    AcceptanceSummary summary;
    AlphaInterval alpha_ci;
    std::string prompts;       // "same" | "other" | "" (see CellPrediction::profile_prompts)
    bool has_batched = false;  // the batched cost profile (cells of concurrency > 1)
    BatchedCostProfileRecord batched;
    std::vector<int64_t> queue_prompt_lens;  // the prompts its prefill figures apply to
    std::string batched_file;
  };
  Profiles& profiles_for(const Cell& cell, Drafter* drafter);
  // Times prof's cost profile (prof->cost_request) and records where and when.
  void measure_cost(const Cell& cell, Drafter* drafter, Profiles* prof);
  // The check before a cell; retakes prof's cost profile into a file of its own when it fails.
  void recheck_cost(const Cell& cell, Drafter* drafter, Profiles* prof, CellPrediction* out);
  void batched_for(const Cell& cell, Profiles* prof);
  // Fills out's batched figures for cell (concurrency > 1) from prof's batched cost profile.
  void predict_batched_into(const Cell& cell, const Profiles& prof,
                            const AcceptanceProfile& acceptance, const ChainSetting& chain,
                            CellPrediction* out) const;
  // The context and prompt length the cost profiles time (mean prompt + half the budget).
  void profile_context(std::vector<int32_t>* context, int64_t* context_len,
                       int64_t* prompt_len) const;
  void write_index();

  const ExperimentConfig& config_;
  TokenRunner* target_;  // null when reusing profiles
  std::vector<PromptTokens> prompts_;
  std::vector<int64_t> stop_ids_;
  std::string dir_;
  ProfileMode mode_;
  const CostProfile* cost_override_;
  const std::atomic<bool>* interrupted_;
  ProfileConditions conditions_;
  nlohmann::json index_ = nlohmann::json::object();  // index.json: group -> its entry
  std::map<std::string, int> depth_;                 // group -> rollout depth
  std::map<std::string, int> top_branching_;     // group -> widest level of its top-k tree cells
  std::map<std::string, int> sample_branching_;  // group -> widest level of its sampled trees
  std::map<std::string, std::vector<TreeShape>> trees_;  // group -> its cells' tree shapes
  std::map<std::string, bool> needs_acceptance_;         // group -> has a cell not synthetic
  std::map<std::string, int> k_max_;                     // group -> T(k) up to
  std::map<std::string, nlohmann::json> settings_;       // group -> its settings (index.json)
  std::map<std::string, std::vector<int>> slots_;        // group -> concurrencies > 1 of its cells
  BatchedCostMeasure batched_measure_;
  double recheck_band_ = 0;
  std::map<std::string, Profiles> cache_;
};

}  // namespace speclab
