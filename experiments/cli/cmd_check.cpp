// speclab check CONFIG --baseline FILE [--two-sided] [--allow-missing-cells]
//     [--allow-model-change] [--json] [--junit FILE] [--bands FILE] [--set key=value ...]
// speclab check CONFIG --baseline FILE --update          rewrite the baseline from this run
// speclab check CONFIG --baseline FILE --calibrate N     measure the tolerance bands
//
// The acceptance-rate regression gate: re-runs the config's cells (acceptance only: no
// baseline timing) and compares alpha (accepted/tested) and tau (tokens per round) of each
// cell with the baseline row of the same cell_id (experiments/results/acceptance_gate.h has the
// rule; docs/gate.md the user's guide). Runs are seeded and our kernels reduce in a fixed order, so
// the same machine reproduces a baseline exactly; the tolerance covers other machines and
// thread counts. Exit 1 when the gate fails, 2 on bad input.
//
// --calibrate N re-runs every cell under the N seeds generation.seed + 1 .. + N and writes the
// spread of alpha and tau per cell to the bands file (default: next to the baseline,
// gate_bands_default_path), which later checks read when it exists.
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/output_file.h"
#include "core/stats.h"
#include "experiments/cli/commands.h"
#include "experiments/config/experiment_config.h"
#include "experiments/measure/experiment_session.h"
#include "experiments/results/acceptance_gate.h"
#include "experiments/results/results_store.h"

namespace speclab {

namespace {

using nlohmann::json;

struct CheckArgs {
  std::string config, baseline, bands, junit;
  bool update = false, json = false, two_sided = false;
  bool allow_missing_cells = false, allow_model_change = false;
  int calibrate = 0;
  std::vector<std::string> set;
};

std::vector<ResultRow> rerun_cells(const ExperimentConfig& cfg, const std::vector<Cell>& cells) {
  ExperimentSession session(cfg, nullptr, /*measure_bandwidth=*/false);
  std::vector<ResultRow> rows;
  for (const auto& c : cells) rows.push_back(session.run_cell(c));
  return rows;
}

// What a bands file was calibrated for: the config without its sweep (a check of some of the
// cells, --set sweep.drafter=[lookup], reads the same bands: cells are matched by cell_id, and
// gate_bands_check refuses one without a band) and without its gate section (sigmas is
// checked on its own, with its own message; deterministic_band applies at check time).
std::string gate_bands_config_hash(const ExperimentConfig& cfg) {
  nlohmann::json j = cfg.to_json();
  j.erase("sweep");
  j.erase("gate");
  return experiment_hash_hex(j.dump());
}

GateOptions gate_options_of(const ExperimentConfig& cfg) {
  GateOptions o;
  o.sigmas = cfg.gate.sigmas;
  o.deterministic_band = cfg.gate.deterministic_band;
  return o;
}

void run_calibrate(const CheckArgs& a, const std::vector<std::string>& overrides,
                   const ExperimentConfig& cfg, const std::vector<Cell>& cells) {
  // Each seed reruns the whole sweep: the bound is generation.repeats', as a seed is a repeat.
  SPECLAB_INPUT_CHECK(a.calibrate >= 2 && a.calibrate <= kMaxRepeats,
                      "--calibrate: expected N in 2..", kMaxRepeats, " seeds, got ", a.calibrate);
  SPECLAB_INPUT_CHECK(!a.update, "--calibrate and --update: give one of them");
  const std::string path = a.bands.empty() ? gate_bands_default_path(a.baseline) : a.bands;
  // values[cell index][figure 0 = alpha, 1 = tau][seed], and their standard errors
  std::vector<std::array<std::vector<double>, 2>> values(cells.size()), errors(cells.size());
  json seeds = json::array();
  for (int i = 1; i <= a.calibrate; i++) {
    const int64_t seed = cfg.generation.seed + i;
    seeds.push_back(seed);
    std::vector<std::string> o = overrides;
    o.push_back(str_cat("generation.seed=", seed));
    const ExperimentConfig seeded = experiment_config_load(a.config, o);
    const std::vector<Cell> seeded_cells = sweep_expand(seeded);
    SPECLAB_ASSERT(seeded_cells.size() == cells.size());  // the seed is not a sweep axis
    const std::vector<ResultRow> rows = rerun_cells(seeded, seeded_cells);
    for (size_t j = 0; j < rows.size(); j++) {
      values[j][0].push_back(rows[j].alpha_empirical.value_or(NAN));
      values[j][1].push_back(rows[j].tau.value_or(NAN));
      errors[j][0].push_back(rows[j].alpha_se.value_or(NAN));
      errors[j][1].push_back(rows[j].tau_se.value_or(NAN));
    }
    if (!a.json) std::printf("calibration seed %lld: %zu cells\n", (long long)seed, rows.size());
  }
  json out = {{"format", "speclab-gate-bands/2"},
              {"config", a.config},
              {"config_hash", gate_bands_config_hash(cfg)},
              {"sigmas", cfg.gate.sigmas},
              {"seeds", seeds},
              {"cells", json::object()}};
  if (!a.json)
    std::printf("%-14s %5s %5s | %8s %8s %8s | %8s %8s %8s\n", "draft", "gamma", "T", "alpha sd",
                "band", "fails <", "tau sd", "band", "fails <");
  // A cell whose tolerance reaches below the figure's floor (alpha 0, tau 1) passes whatever
  // the code does: a blind cell, refused here rather than discovered after a missed regression.
  const GateOptions opt = gate_options_of(cfg);
  std::string blind;
  for (size_t j = 0; j < cells.size(); j++) {
    const GateBand alpha = gate_band_from(values[j][0], cfg.gate.sigmas);
    const GateBand tau = gate_band_from(values[j][1], cfg.gate.sigmas);
    const double alpha_fails_below =
        alpha.mean - gate_expected_tolerance(alpha, stats_mean(errors[j][0]), opt);
    const double tau_fails_below =
        tau.mean - gate_expected_tolerance(tau, stats_mean(errors[j][1]), opt);
    out["cells"][cells[j].cell_id] = {
        {"drafter", cells[j].drafter},
        {"gamma", cells[j].gamma},
        {"temperature", cells[j].temperature},
        {"alpha", gate_band_json(alpha)},
        {"tau", gate_band_json(tau)},
        {"fails_below", {{"alpha", alpha_fails_below}, {"tau", tau_fails_below}}}};
    if (!a.json)
      std::printf("%-14s %5d %5.2f | %8.4f %8.4f %8.4f | %8.4f %8.4f %8.4f\n",
                  cells[j].drafter.c_str(), cells[j].gamma, cells[j].temperature, alpha.sd,
                  alpha.band, alpha_fails_below, tau.sd, tau.band, tau_fails_below);
    const std::string label = str_cat("drafter ", cells[j].drafter, " gamma ", cells[j].gamma,
                                      " T ", cells[j].temperature, " [", cells[j].cell_id, "]");
    if (alpha_fails_below <= kGateAlphaFloor)
      blind += str_cat(blind.empty() ? "" : "; ", label, ": alpha ", alpha.mean,
                       " fails only below ", alpha_fails_below);
    if (tau_fails_below <= kGateTauFloor)
      blind += str_cat(blind.empty() ? "" : "; ", label, ": tau ", tau.mean, " fails only below ",
                       tau_fails_below);
  }
  SPECLAB_INPUT_CHECK(blind.empty(), a.config,
                      ": cells whose tolerance no regression can exceed (alpha >= 0, tau >= 1), "
                      "so no bands were written: ",
                      blind,
                      ". Give them more prompts or tokens, or leave them out (sweep.exclude)");
  output_file_write_atomic(path, out.dump(2) + "\n");
  if (a.json)
    std::printf("%s\n",
                json({{"bands", path}, {"cells", cells.size()}, {"seeds", seeds}}).dump().c_str());
  else
    std::printf("wrote the bands of %zu cells (%d seeds) to %s\n", cells.size(), a.calibrate,
                path.c_str());
}

const char* verdict_word(const GateCellResult& c) {
  switch (c.status) {
    case GateStatus::kOk:
      return "ok";
    case GateStatus::kImprovement:
      return "IMPROVEMENT";
    case GateStatus::kRegression:
      return "REGRESSION";
    case GateStatus::kChanged:
      return "CHANGED";
    case GateStatus::kMissing:
      return c.failed ? "MISSING" : "missing (allowed)";
    case GateStatus::kNew:
      return c.failed ? "NEW" : "new (allowed)";
    case GateStatus::kModelChanged:
      return "MODEL CHANGED";
  }
  return "?";
}

void print_human(const GateReport& rep) {
  std::printf("%-14s %5s %5s | %7s %7s %6s | %6s %6s %6s | %s\n", "draft", "gamma", "T", "alpha",
              "base", "z", "tau", "base", "z", "verdict");
  for (const auto& c : rep.cells) {
    if (c.compared)
      std::printf("%-14s %5d %5.2f | %7.4f %7.4f %6.2f | %6.3f %6.3f %6.2f | %s\n",
                  c.drafter.c_str(), c.gamma, c.temperature, c.alpha.value, c.alpha.baseline,
                  c.alpha.z, c.tau.value, c.tau.baseline, c.tau.z, verdict_word(c));
    else
      std::printf("%-14s %5d %5.2f | %7s %7s %6s | %6s %6s %6s | %s\n", c.drafter.c_str(), c.gamma,
                  c.temperature, "-", "-", "-", "-", "-", "-", verdict_word(c));
  }
  for (const auto& [who, d] : rep.identity_changes)
    std::printf("identity of %s changed: %s\n", who.c_str(), d.c_str());
  for (const auto& c : rep.cells)
    if (!c.reason.empty()) std::printf("%s: %s\n", c.label().c_str(), c.reason.c_str());
}

void run_check(const CheckArgs& a) {
  std::vector<std::string> overrides = a.set;
  overrides.push_back("measure.baseline=false");
  const ExperimentConfig cfg = experiment_config_load(a.config, overrides);
  const std::vector<Cell> cells = sweep_expand(cfg);
  if (a.calibrate) return run_calibrate(a, overrides, cfg, cells);

  std::vector<ResultRow> baseline;
  if (!a.update) {
    baseline = results_read(a.baseline);
    SPECLAB_INPUT_CHECK(!baseline.empty(), a.baseline, ": no baseline rows");
    // Checked before the (long) rerun: the figures the gate compares.
    for (const auto& row : baseline) {
      const std::pair<const char*, const std::optional<double>&> figures[] = {
          {row_field::alpha_empirical, row.alpha_empirical},
          {row_field::alpha_se, row.alpha_se},
          {row_field::tau, row.tau},
          {row_field::tau_se, row.tau_se}};
      for (const auto& [name, value] : figures)
        SPECLAB_INPUT_CHECK(value && std::isfinite(*value), a.baseline, ": the row of cell ",
                            row.cell.cell_id, " has no number '", name, "'");
    }
  }
  GateOptions opt = gate_options_of(cfg);
  opt.two_sided = a.two_sided;
  opt.allow_missing_cells = a.allow_missing_cells;
  opt.allow_model_change = a.allow_model_change;
  std::string bands_path = a.bands;
  if (bands_path.empty() && !a.update &&
      std::filesystem::exists(gate_bands_default_path(a.baseline)))
    bands_path = gate_bands_default_path(a.baseline);
  GateBands bands;
  if (!bands_path.empty()) {
    bands = gate_bands_read(bands_path);
    std::vector<std::string> ids;
    for (const Cell& c : cells) ids.push_back(c.cell_id);
    gate_bands_check(bands, bands_path, gate_bands_config_hash(cfg), cfg.gate.sigmas, ids);
  }

  const std::vector<ResultRow> rows = rerun_cells(cfg, cells);
  if (a.update) {
    std::string text;
    for (const auto& r : rows) text += r.to_json().dump() + "\n";
    output_file_write_atomic(a.baseline, text);
    std::printf("wrote %zu baseline rows to %s\n", rows.size(), a.baseline.c_str());
    return;
  }

  const GateReport rep = gate_compare(baseline, rows, bands.cells, opt);
  if (!a.junit.empty()) output_file_write_atomic(a.junit, gate_junit_xml(rep, cfg.name));
  if (a.json) {
    for (const auto& c : rep.cells) std::printf("%s\n", gate_cell_json(c).dump().c_str());
    std::printf("%s\n", gate_verdict_json(rep, opt, a.baseline, bands_path).dump().c_str());
  } else {
    print_human(rep);
  }
  const std::string rule =
      str_cat(opt.sigmas, " standard errors", bands_path.empty() ? "" : " or the calibrated band");
  const char* sided = opt.two_sided ? "two-sided" : "one-sided: a drop fails";
  if (!rep.passed()) {
    std::string named;
    for (const auto& c : rep.cells)
      if (c.failed)
        named += str_cat(named.empty() ? "" : "; ", c.label(), " ", gate_status_name(c.status));
    for (const auto& [who, d] : rep.identity_changes)
      if (!opt.allow_model_change) named += str_cat("; ", who, " identity changed: ", d);
    throw CheckFailed(str_cat(rep.n_failed, " of ", rep.cells.size(), " cells failed against ",
                              a.baseline, " (", rule, ", ", sided, "): ", named));
  }
  if (!a.json)
    std::printf("all %zu cells within %s of the baseline (%s; %d compared)\n", rep.cells.size(),
                rule.c_str(), sided, rep.n_compared);
}

}  // namespace

void register_check(CLI::App& app) {
  auto a = std::make_shared<CheckArgs>();
  auto* c = app.add_subcommand("check", "acceptance-rate regression gate against a baseline");
  c->add_option("config", a->config, "experiment YAML")->required();
  c->add_option("--baseline", a->baseline, "baseline results (JSONL)")->required();
  c->add_flag("--update", a->update, "rewrite the baseline from this run");
  c->add_flag("--two-sided", a->two_sided,
              "fail on a rise of acceptance too (one-sided: only a drop fails)");
  c->add_flag("--allow-missing-cells", a->allow_missing_cells,
              "report, but do not fail on, cells in only one of baseline and rerun");
  c->add_flag("--allow-model-change", a->allow_model_change,
              "report, but do not fail on, a changed model identity behind a name");
  c->add_flag("--json", a->json, "one JSON object per cell, then a verdict object");
  c->add_option("--junit", a->junit, "also write a JUnit XML report to FILE");
  c->add_option("--bands", a->bands,
                "calibrated bands file; unset: <baseline>.bands.json when it exists");
  c->add_option("--calibrate", a->calibrate,
                "re-run the cells under N seeds and write the tolerance bands");
  c->add_option("--set", a->set, "override a config key");
  c->callback([a] { run_check(*a); });
}

}  // namespace speclab
