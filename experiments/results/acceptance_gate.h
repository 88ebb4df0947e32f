// The acceptance-rate regression gate (`speclab check`): compares the rows of a rerun of a
// config's cells with the baseline rows of the same cell_id, and says which cells fail and why.
//
// A cell is compared on two figures, alpha = accepted / tested (alpha_empirical, standard
// error alpha_se: binomial) and tau = tokens per round (tau, standard error tau_se: over
// rounds). For a figure x with baseline b:
//   d = x - b,  se = sqrt(se_x^2 + se_b^2),  z = d / se
//   tolerance = max(sigmas * se, band) + 1e-9
// where band is the cell's calibrated band for that figure (0 without calibration; see
// GateBand). A figure the calibration found deterministic (the same value under every seed:
// greedy cells) is near-exact instead:
//   tolerance = deterministic_band * |b| + 1e-9
// since its standard error describes seed-to-seed randomness that the cell does not have. One-sided
// (the default): d < -tolerance is a REGRESSION (fails), d > tolerance an IMPROVEMENT (passes).
// Two-sided: any |d| > tolerance fails (a rise is CHANGED).
//
// Before any figure is compared, the rows must describe the same experiment:
//   - a baseline cell absent from the rerun (MISSING) and a rerun cell absent from the
//     baseline (NEW) fail unless allow_missing_cells;
//   - a cell whose model identity changed (drafter name, drafter_spec, and the draft_* /
//     target_* identity fields: sha256 of the weights, spec, parameters, dtypes, format,
//     kind, shape) fails unless allow_model_change; so does a drafter name whose identity
//     differs between the baseline's rows and the rerun's rows (the same name now loads
//     other weights), named in GateReport::identity_changes.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/results/result_row.h"

namespace speclab {

struct GateOptions {
  double sigmas = 4.0;  // gate.sigmas of the config
  // gate.deterministic_band: relative tolerance of a deterministic figure (see above).
  double deterministic_band = 0.01;
  bool two_sided = false;
  bool allow_missing_cells = false;
  bool allow_model_change = false;
};

// A calibrated tolerance band for one figure of one cell (speclab check --calibrate N): the
// figure measured under N different seeds, its sample standard deviation sd over those runs,
// and band = sigmas * sqrt(2) * sd, the sigmas-standard-deviation bound on the difference of
// two independent runs.
struct GateBand {
  int n = 0;
  double mean = 0, sd = 0, min = 0, max = 0, band = 0;
  bool deterministic = false;  // min == max: every seed gave the same value
};
struct GateCellBands {
  GateBand alpha, tau;
};

// A bands file (gate_bands_read): what it was calibrated for, and the bands by cell_id.
struct GateBands {
  std::string config_hash;  // gate_bands_config_hash of the calibrated config
  double sigmas = 0;        // gate.sigmas the bands were computed with
  std::map<std::string, GateCellBands> cells;
};

// The lowest value each figure can take: alpha >= 0, tau >= 1 (a round emits at least the
// correction or bonus token). A tolerance that reaches below it makes a cell that cannot fail.
constexpr double kGateAlphaFloor = 0.0;
constexpr double kGateTauFloor = 1.0;

// The tolerance a check will apply to a figure of mean `mean` and typical standard error
// `se` (one run's) after calibration: near-exact when deterministic, else
// max(sigmas * sqrt(2) * se, band) (two runs' errors combined, as gate_compare does).
double gate_expected_tolerance(const GateBand& band, double se, const GateOptions& options);

enum class GateStatus {
  kOk,
  kImprovement,   // a rise beyond the tolerance, one-sided: passes
  kRegression,    // a drop beyond the tolerance: fails
  kChanged,       // a rise beyond the tolerance, two-sided: fails
  kMissing,       // in the baseline, not in the rerun
  kNew,           // in the rerun, not in the baseline
  kModelChanged,  // the cell's model identity differs from the baseline row's
};
const char* gate_status_name(GateStatus s);  // "ok", "improvement", "regression", ...

struct GateFigure {
  double value = 0, baseline = 0, se = 0, band = 0, tolerance = 0, z = 0;
  bool deterministic = false;  // the near-exact tolerance applied
};

struct GateCellResult {
  std::string cell_id, drafter;
  int gamma = 0;
  double temperature = 0;
  GateStatus status = GateStatus::kOk;
  bool failed = false;
  bool compared = false;  // alpha and tau hold a comparison
  GateFigure alpha, tau;
  std::string reason;  // why it failed or was not compared; "" when ok
  // "drafter draft-2m gamma 2 T 0 [11a0c5300eff]"
  std::string label() const;
};

struct GateReport {
  std::vector<GateCellResult> cells;  // baseline order, then the rerun's new cells
  // Per drafter name (or "target"): "draft_sha256 10548727cc82 -> 3f0e..., ..." when its
  // identity differs between the baseline rows and the rerun rows.
  std::map<std::string, std::string> identity_changes;
  int n_failed = 0;
  int n_compared = 0;
  bool passed() const { return n_failed == 0; }
};

// bands: calibrated bands by cell_id (cells without one use band 0; the check refuses a bands
// file that lacks a rerun cell before it gets here: gate_bands_check).
GateReport gate_compare(const std::vector<ResultRow>& baseline, const std::vector<ResultRow>& rerun,
                        const std::map<std::string, GateCellBands>& bands,
                        const GateOptions& options);

// One JSON object per cell (gate_cell_json) and the verdict object (gate_verdict_json).
nlohmann::json gate_cell_json(const GateCellResult& c);
nlohmann::json gate_verdict_json(const GateReport& r, const GateOptions& options,
                                 const std::string& baseline_path, const std::string& bands_path);
// JUnit XML: one <testcase> per cell, <failure> for a failed cell, <skipped> for a missing or
// new cell that allow_missing_cells let pass.
std::string gate_junit_xml(const GateReport& r, const std::string& suite_name);

// The bands file that sits next to a baseline: "<baseline without .jsonl>.bands.json".
std::string gate_bands_default_path(const std::string& baseline_path);
// Format (one JSON object):
//   {"format": "speclab-gate-bands/2", "config_hash": "...", "sigmas": 4,
//    "seeds": [1, 2, ...],
//    "cells": {"<cell_id>": {"drafter": "...", "gamma": 2, "temperature": 0,
//                            "alpha": {"n", "mean", "sd", "min", "max", "band",
//                                      "deterministic", ...},
//                            "tau":   {...}}, ...}}
// Reads a bands file; InputError naming the file and key when malformed (a /1 file, written
// before deterministic cells were told apart, is refused with the command that replaces it).
GateBands gate_bands_read(const std::string& path);
// Refuses (InputError naming the file) bands calibrated for another config (config_hash),
// with other sigmas, or lacking a cell the check compares: each would let a cell pass on a
// tolerance nobody measured for it.
void gate_bands_check(const GateBands& bands, const std::string& path,
                      const std::string& config_hash, double sigmas,
                      const std::vector<std::string>& cell_ids);
nlohmann::json gate_band_json(const GateBand& b);
// The band of one figure from its values in N >= 2 seeded reruns of one cell.
GateBand gate_band_from(const std::vector<double>& values, double sigmas);

}  // namespace speclab
