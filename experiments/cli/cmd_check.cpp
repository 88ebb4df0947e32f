// speclab check CONFIG --baseline FILE [--update] [--set key=value ...]
//
// The acceptance-rate regression gate: re-runs the config's cells (acceptance only: no
// baseline timing) and compares alpha (accepted/tested) and tau (tokens per round) of each
// cell with the committed baseline row of the same cell_id. A cell fails when
//   |x - x_baseline| > gate.sigmas * sqrt(se^2 + se_baseline^2) + 1e-9
// with se the standard error recorded in each row (binomial for alpha, over rounds for tau).
// Runs are seeded and our kernels reduce in a fixed order, so the same machine reproduces a
// baseline exactly; the tolerance covers other machines and thread counts. Exit 1 on failure.
// --update writes the new rows to FILE instead (a deliberate baseline refresh).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/output_file.h"
#include "experiments/cli/commands.h"
#include "experiments/experiment_session.h"
#include "experiments/results_store.h"

namespace speclab {

namespace {

struct CheckArgs {
  std::string config, baseline;
  bool update = false;
  std::vector<std::string> set;
};

void run_check(const CheckArgs& a) {
  std::vector<std::string> overrides = a.set;
  overrides.push_back("measure.baseline=false");
  const ExperimentConfig cfg = experiment_config_load(a.config, overrides);
  const std::vector<Cell> cells = sweep_expand(cfg);
  std::map<std::string, nlohmann::json> base;
  if (!a.update) {
    for (auto& row : results_read(a.baseline)) {
      SPECLAB_INPUT_CHECK(row.contains("cell_id") && row["cell_id"].is_string(), a.baseline,
                          ": a row without cell_id");
      base[row["cell_id"].get<std::string>()] = row;
    }
    for (const auto& c : cells)
      SPECLAB_INPUT_CHECK(base.count(c.cell_id), a.baseline, ": no baseline row for cell ",
                          c.cell_id, " (", c.drafter, " gamma ", c.gamma, " T ", c.temperature,
                          "); refresh it with --update");
  }
  ExperimentSession session(cfg, nullptr, /*measure_bandwidth=*/false);
  std::vector<nlohmann::json> rows;
  int failures = 0;
  std::printf("%-14s %5s %5s | %7s %7s %6s | %6s %6s %6s | %s\n", "draft", "gamma", "T", "alpha",
              "base", "z", "tau", "base", "z", "verdict");
  for (const auto& c : cells) {
    nlohmann::json row = session.run_cell(c);
    rows.push_back(row);
    if (a.update) continue;
    const auto& b = base[c.cell_id];
    auto z = [&](const char* key, const char* se_key) {
      const double d = row[key].get<double>() - b[key].get<double>();
      const double se = std::hypot(row[se_key].get<double>(), b[se_key].get<double>());
      const double tol = cfg.gate.sigmas * se + 1e-9;
      return std::make_pair(se > 0 ? d / se : (std::fabs(d) <= 1e-9 ? 0.0 : INFINITY),
                            std::fabs(d) <= tol);
    };
    const auto [za, oka] = z("alpha_empirical", "alpha_se");
    const auto [zt, okt] = z("tau", "tau_se");
    const bool ok = oka && okt;
    failures += ok ? 0 : 1;
    std::printf("%-14s %5d %5.2f | %7.4f %7.4f %6.2f | %6.3f %6.3f %6.2f | %s\n", c.drafter.c_str(),
                c.gamma, c.temperature, row["alpha_empirical"].get<double>(),
                b["alpha_empirical"].get<double>(), za, row["tau"].get<double>(),
                b["tau"].get<double>(), zt, ok ? "ok" : "REGRESSION");
  }
  if (a.update) {
    std::string text;
    for (const auto& r : rows) text += r.dump() + "\n";
    output_file_write_atomic(a.baseline, text);
    std::printf("wrote %zu baseline rows to %s\n", rows.size(), a.baseline.c_str());
    return;
  }
  if (failures)
    throw CheckFailed(str_cat(failures, " of ", cells.size(), " cells outside ", cfg.gate.sigmas,
                              " standard errors of ", a.baseline));
  std::printf("all %zu cells within %.1f standard errors of the baseline\n", cells.size(),
              cfg.gate.sigmas);
}

}  // namespace

void register_check(CLI::App& app) {
  auto a = std::make_shared<CheckArgs>();
  auto* c = app.add_subcommand("check", "acceptance-rate regression gate against a baseline");
  c->add_option("config", a->config, "experiment YAML")->required();
  c->add_option("--baseline", a->baseline, "baseline results (JSONL)")->required();
  c->add_flag("--update", a->update, "rewrite the baseline from this run");
  c->add_option("--set", a->set, "override a config key");
  c->callback([a] { run_check(*a); });
}

}  // namespace speclab
