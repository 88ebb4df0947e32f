// speclab predict CONFIG.yaml [--out DIR] [--set key=value ...] [--profiles DIR]
//                             [--cost-profile FILE]
//
// Answers a sweep without running the speculative decoder: every cell's predicted speedup and
// tokens per round, and per group of cells that differ only in gamma (and gamma policy) the
// predicted best gamma, from the pair's cost profile (measured in isolation, or imported with
// --cost-profile) and acceptance profile (teacher-forced along the target's own text); see
// core/speedup_prediction.h. Writes DIR/predictions.jsonl (DIR defaults to results/<name>)
// and the profiles to DIR/profiles; --profiles DIR2 reads the profiles of an earlier predict
// or run from DIR2/profiles instead of measuring (no model is loaded: milliseconds). Both
// flags: every cell's costs from FILE, its acceptance from DIR2's profiles (another machine's
// costs for the same pair's acceptance).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "core/error.h"
#include "core/output_file.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/output_dir_cleanup.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep.h"
#include "experiments/measure/experiment_session.h"
#include "experiments/predict/cell_prediction.h"
#include "experiments/predict/profile_io.h"
#include "models/decode/decode_counters.h"

namespace speclab {

namespace {

struct PredictArgs {
  std::string config, out, profiles, cost_profile;
  std::vector<std::string> set;
};

void write_lines_atomically(const std::string& path, const std::vector<nlohmann::json>& rows) {
  std::string text;
  for (const auto& r : rows)
    text += r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  output_file_write_atomic(path, text);  // every write, fsync and close checked
}

void predict_experiment(const PredictArgs& a) {
  const ExperimentConfig cfg = experiment_config_load(a.config, a.set);
  SPECLAB_INPUT_CHECK(cfg.target.has_value(), a.config,
                      ": no target (simulator-only configs run with `speclab simulate`)");
  SPECLAB_INPUT_CHECK(!cfg.measure.cost_only, a.config,
                      ": measure.cost_only has no cells to predict (it predicts a grid itself)");
  const std::vector<Cell> cells = sweep_expand(cfg);
  const std::string dir = a.out.empty() ? "results/" + cfg.name : a.out;
  std::unique_ptr<CostProfile> cost_override;
  if (!a.cost_profile.empty())
    cost_override = std::make_unique<CostProfile>(cost_profile_import(a.cost_profile));

  OutputDirCleanup cleanup(dir);  // profiles of a refused predict are not left behind
  std::vector<CellPrediction> predictions;
  if (!a.profiles.empty()) {
    // Offline: profiles from an earlier predict or run; no model is loaded.
    std::vector<PromptTokens> none;
    CellPredictor predictor(cfg, cells, nullptr, none, {}, a.profiles + "/profiles",
                            ProfileMode::kReuse, cost_override.get(), nullptr);
    for (const Cell& c : cells) predictions.push_back(predictor.predict(c, nullptr));
  } else {
    ExperimentSession session(cfg, nullptr, /*measure_bandwidth=*/false,
                              /*measure_cost_curve=*/false);
    session.enable_prediction(cells, dir + "/profiles", ProfileMode::kMeasure, cost_override.get());
    for (const Cell& c : cells) predictions.push_back(session.predict_cell(c));
  }

  const int64_t spec_runs = decode_speculative_generations();
  std::vector<nlohmann::json> rows;
  for (size_t i = 0; i < cells.size(); i++) {
    ResultRow r;
    r.cell = cells[i];
    r.row_kind = "predicted";
    r.row_type = "cell";
    r.experiment = cfg.name;
    r.config_hash = cfg.config_hash();
    r.max_new_tokens = cfg.generation.max_new_tokens;
    predictions[i].put_into(&r);
    r.speculative_generations_run = spec_runs;
    rows.push_back(r.to_json());
  }
  std::map<std::string, const Cell*> by_id;
  for (const Cell& c : cells) by_id[c.cell_id] = &c;
  for (const auto& g : CellPredictor::best_per_group(cells, predictions))
    rows.push_back(g.to_json(*by_id.at(g.best_cell_id)));
  output_dir_create(dir, "predictions (--out DIR)");
  write_lines_atomically(dir + "/predictions.jsonl", rows);

  // Configs with cells of concurrency > 1 get the N and the throughput columns.
  bool batched = false;
  for (const Cell& c : cells) batched = batched || c.concurrency > 1;
  std::printf(
      "| draft | T | gamma | policy |%s predicted speedup |%s tokens/round | alpha_profile "
      "| c |\n",
      batched ? " N |" : "", batched ? " predicted throughput speedup |" : "");
  std::printf("| --- | --- | --- | --- |%s --- |%s --- | --- | --- |\n", batched ? " --- |" : "",
              batched ? " --- |" : "");
  for (size_t i = 0; i < cells.size(); i++) {
    const Cell& c = cells[i];
    const CellPrediction& p = predictions[i];
    const std::string n = batched ? " " + std::to_string(c.concurrency) + " |" : "";
    char tput[64] = "";
    if (batched)
      std::snprintf(tput, sizeof tput, " %.3f |",
                    p.batched ? p.batched_prediction.throughput_speedup : p.prediction.speedup);
    std::printf("| %s | %g | %s | %s |%s %.3f |%s %.3f | %.3f | %.3f |\n", c.drafter.c_str(),
                c.temperature,
                c.tree.depth() == 0 ? std::to_string(c.gamma).c_str() : c.tree.to_string().c_str(),
                c.gamma_policy.c_str(), n.c_str(), p.prediction.speedup, tput,
                p.prediction.tokens_per_round, p.acceptance.alpha_beta, p.c);
  }
  std::fprintf(stderr, "speclab: %zu cells predicted (%lld speculative generations run); %s\n",
               cells.size(), static_cast<long long>(spec_runs),
               (dir + "/predictions.jsonl").c_str());
}

}  // namespace

void register_predict(CLI::App& app) {
  auto a = std::make_shared<PredictArgs>();
  auto* c = app.add_subcommand(
      "predict",
      "predict every cell's speedup from cost and acceptance profiles (no speculative run)");
  c->add_option("config", a->config, "experiment YAML")->required();
  c->add_option("--out", a->out, "output directory (default results/<name>)");
  c->add_option("--set", a->set, "override a config key: --set sweep.gamma=[2,4]");
  c->add_option("--profiles", a->profiles,
                "reuse the profiles in DIR/profiles (from an earlier predict or run; no model is "
                "loaded)");
  c->add_option("--cost-profile", a->cost_profile,
                "cost profile to use for every cell: speclab JSON, CSV (k,target_s,...) or "
                "llama-bench -o json of a target and a draft; with --profiles, the costs from "
                "FILE and the acceptance from DIR's profiles");
  c->callback([a] { predict_experiment(*a); });
}

}  // namespace speclab
