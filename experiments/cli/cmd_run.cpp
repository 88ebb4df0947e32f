// speclab run CONFIG.yaml [--out DIR] [--resume] [--shard I/N] [--set key=value ...]
//                          [--profiles DIR2]
//
// Runs every (not yet finished) cell of the config's sweep and appends one result row per
// cell to DIR/results.jsonl (DIR defaults to results/<name>); at the end writes
// DIR/tables.md and DIR/tables.json, the config as written (DIR/config.yaml) and resolved
// (DIR/config.resolved.json) and, when python3 with matplotlib is available, the plots and
// the report DIR/index.html (analysis/plot_results.py, docs/report.md). Each output is
// written whole or not at all (core/output_file.h): a full disk is exit 2 naming the file,
// never an empty table.
// SIGINT and SIGTERM abandon the cell in flight and exit after the rows already written, with
// one line, the lock removed and exit code 128 + signal (130 for SIGINT, 143 for SIGTERM); a
// later --resume completes the sweep. --profiles DIR2 predicts every cell from the profiles
// of an earlier run or predict in DIR2/profiles (read, never measured or written): with
// another prompt set there, the predictions are held out in prompts (docs/prediction.md).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "core/error.h"
#include "core/input_file.h"
#include "core/output_file.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/output_dir_cleanup.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep.h"
#include "experiments/measure/experiment_session.h"
#include "experiments/measure/progress_bar.h"
#include "experiments/measure/round_trace.h"
#include "experiments/predict/cell_prediction.h"
#include "experiments/results/result_tables.h"
#include "experiments/results/results_store.h"

namespace speclab {

namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};
extern "C" void on_stop_signal(int sig) {
  g_signal.store(sig);
  g_interrupted.store(true);
}
void stop_signals_catch() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}
void stop_signals_default() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

struct RunArgs {
  std::string config, out, shard = "0/1", trace, profiles;
  bool resume = false, no_plots = false;
  std::vector<std::string> set;
};

void run_plots(const std::string& dir) {
  const std::string script = std::string(SPECLAB_SOURCE_DIR) + "/analysis/plot_results.py";
  if (!std::filesystem::exists(script)) return;
  const std::string cmd = "python3 '" + script + "' '" + dir + "' 2>&1";
  if (std::system(cmd.c_str()) != 0)
    std::fprintf(stderr, "speclab: plots skipped (python3 with matplotlib needed: %s)\n",
                 script.c_str());
}

void run_experiment(const RunArgs& a) {
  const ExperimentConfig cfg = experiment_config_load(a.config, a.set);
  SPECLAB_INPUT_CHECK(cfg.target.has_value(), a.config,
                      ": no target (simulator-only configs run with `speclab simulate`)");
  const Shard shard = sweep_parse_shard(a.shard);
  const std::vector<Cell> all = sweep_expand(cfg);
  const std::vector<Cell> cells = sweep_shard(all, shard.index, shard.count);
  const std::string dir = a.out.empty() ? "results/" + cfg.name : a.out;
  if (!a.profiles.empty()) {
    // Every profile the cells need must be there before anything is written.
    SPECLAB_INPUT_CHECK(!a.resume,
                        "--profiles: does not combine with --resume (a resumed run reads the "
                        "profiles its earlier rows came from, in its own directory)");
    SPECLAB_INPUT_CHECK(!cfg.measure.cost_only, "--profiles: ", a.config,
                        ": measure.cost_only predicts nothing");
    for (const Cell& c : cells) {
      const std::string g = CellPredictor::group_of(cfg, c);
      for (const std::string& f : {"cost-" + g + ".json", CellPredictor::acceptance_file_name(
                                                              g, cfg.measure.acceptance_stride)}) {
        const std::string path = a.profiles + "/profiles/" + f;
        SPECLAB_INPUT_CHECK(std::filesystem::is_regular_file(path), "--profiles: ", path,
                            ": missing (cell ", c.cell_id,
                            " needs its group's profiles; expected a speclab run or predict "
                            "of the same pair, sampling and budget)");
      }
    }
  }
  OutputDirCleanup cleanup(dir);  // a run refused before its first row leaves nothing behind
  ResultsStore store(dir, a.resume ? ResultsOpenMode::resume : ResultsOpenMode::fresh);
  if (a.resume) {
    // A row counts as done only if this config wrote it: another config's row (or a cell
    // this sweep lacks) under the same id would be taken for a measurement it is not.
    const std::string hash = cfg.config_hash();
    std::set<std::string> ids;
    for (const Cell& c : all) ids.insert(c.cell_id);
    const std::vector<ResultRow> earlier = results_read(store.results_path());
    for (size_t i = 0; i < earlier.size(); ++i) {
      const ResultRow& r = earlier[i];
      SPECLAB_INPUT_CHECK(r.config_hash.value_or("") == hash, store.results_path(), ": row ", i + 1,
                          " (cell ", r.cell.cell_id, ") is of config_hash ",
                          r.config_hash.value_or("(none)"), ", this config hashes to ", hash,
                          "; resume with the config (and --set) that wrote it, or write "
                          "elsewhere with --out DIR");
      SPECLAB_INPUT_CHECK(ids.count(r.cell.cell_id), store.results_path(), ": row ", i + 1,
                          " is of cell ", r.cell.cell_id,
                          ", which this sweep does not have; resume with the config that wrote "
                          "it, or write elsewhere with --out DIR");
    }
  }
  std::vector<const Cell*> todo;
  for (const auto& c : cells)
    if (!store.finished_cell_ids().count(c.cell_id)) todo.push_back(&c);

  // Ctrl-C or SIGTERM from here on (model loading included) stops before the next cell: exit
  // 130 / 143 with the lock released and only complete rows written.
  stop_signals_catch();
  // Bad models, tokenizers or prompts are found while the session loads: leave no empty
  // results file behind for them.
  std::unique_ptr<ExperimentSession> session_ptr;
  try {
    session_ptr = std::make_unique<ExperimentSession>(cfg, &g_interrupted);
  } catch (...) {
    store.remove_if_empty();
    throw;
  }
  ExperimentSession& session = *session_ptr;
  // Every cell is predicted from profiles before it is measured (cost-only runs measure
  // costs alone). The profiles land in DIR/profiles for `speclab predict --profiles DIR`;
  // --resume reads the ones already there (the earlier rows came from them) and never
  // overwrites them.
  if (!cfg.measure.cost_only) {
    if (!a.profiles.empty())
      session.enable_prediction(all, a.profiles + "/profiles", ProfileMode::kReuse, nullptr);
    else
      session.enable_prediction(all, dir + "/profiles",
                                a.resume ? ProfileMode::kResume : ProfileMode::kMeasure, nullptr);
    // A profile taken minutes before a cell may no longer describe the machine: check it
    // before each cell and retake it when it does not (profiles reused from --profiles DIR are
    // another run's and stay as they are; their cells are flagged profile_stale instead).
    session.recheck_profiles_before_cells();
  }
  std::unique_ptr<RoundTraceWriter> trace;  // --trace: every speculative round of the run
  if (!a.trace.empty()) {
    try {
      trace = std::make_unique<RoundTraceWriter>(a.trace);
    } catch (...) {
      store.remove_if_empty();
      throw;
    }
    session.set_trace(trace.get());
  }
  std::fprintf(stderr, "speclab: %s: %zu cells (%zu in shard %d/%d, %zu already done)\n",
               cfg.name.c_str(), all.size(), cells.size(), shard.index, shard.count,
               cells.size() - todo.size());

  ProgressBar bar(static_cast<int>(todo.size()));
  int done = 0;
  auto stop = [&]() {
    cleanup.keep();
    bar.finish();
    stop_signals_default();
    const int sig = g_signal.load();
    throw Interrupted(str_cat(sig == SIGTERM ? "terminated (SIGTERM)" : "interrupted", "; ", done,
                              " cells written to ", store.results_path(), " (rerun with --resume)"),
                      128 + (sig > 0 ? sig : SIGINT));
  };
  for (const Cell* c : todo) {
    ResultRow row;
    try {
      if (g_interrupted.load()) throw CellInterrupted{};
      row = session.run_cell(*c);
    } catch (const CellInterrupted&) {
      stop();
    } catch (const InputError&) {
      // A cell cut short by the signal may fail on its partial measurement (nothing to
      // predict from): it is the cell in flight being dropped, not bad input.
      if (!g_interrupted.load()) throw;
      stop();
    }
    store.append_row(row);
    done++;
    char label[160];
    std::snprintf(label, sizeof label, "%s g=%d T=%.2g", c->drafter.c_str(), c->gamma,
                  c->temperature);
    bar.update(done, label);
  }
  bar.finish();
  stop_signals_default();
  if (trace) {
    trace->close();
    std::fprintf(stderr, "speclab: %lld rounds traced in %s (%lld tree generations not traced)\n",
                 static_cast<long long>(trace->rounds_written()), a.trace.c_str(),
                 static_cast<long long>(trace->skipped_tree_generations()));
  }

  // Tables and plots from everything in the results file (other shards' rows included).
  const auto rows = results_read(store.results_path());
  output_file_write_atomic(dir + "/tables.md", result_tables_render(rows, TableFormat::kMarkdown));
  // The same tables as JSON, for the plots (analysis/plot_results.py: category_breakdown).
  output_file_write_atomic(dir + "/tables.json", result_tables_render(rows, TableFormat::kJson));
  // The report shows the config's header comment and the resolved config (--set applied).
  output_file_write_atomic(dir + "/config.yaml",
                           input_file_read(a.config, "config file", 16ull << 20));
  output_file_write_atomic(dir + "/config.resolved.json", cfg.to_json().dump(2) + "\n");
  std::fprintf(stderr, "speclab: %zu rows in %s; tables in %s/tables.md\n", rows.size(),
               store.results_path().c_str(), dir.c_str());
  if (!a.no_plots) run_plots(dir);
  std::printf("%s", result_tables_render(rows, TableFormat::kMarkdown).c_str());
  // Sanity flags, summarized: impossible or fragile figures are named, never silent.
  size_t flagged = 0;
  for (const auto& r : rows)
    if (r.flags && !r.flags->empty()) {
      if (flagged++ == 0) std::fprintf(stderr, "speclab: flagged cells:\n");
      for (const auto& f : *r.flags)
        std::fprintf(stderr, "  %s %s g=%d: %s\n", r.cell.cell_id.c_str(), r.cell.drafter.c_str(),
                     r.cell.gamma, f.c_str());
    }
  std::fprintf(stderr, "speclab: %zu of %zu cells flagged (see \"%s\" in the rows)\n", flagged,
               rows.size(), row_field::flags);
}

}  // namespace

void register_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* c = app.add_subcommand("run", "run an experiment config (a sweep of cells)");
  c->add_option("config", a->config, "experiment YAML")->required();
  c->add_option("--out", a->out, "output directory (default results/<name>)");
  c->add_flag("--resume", a->resume, "skip cells already in the results file");
  c->add_option("--shard", a->shard, "run shard I of N (0-based), e.g. 2/8");
  c->add_option("--set", a->set, "override a config key: --set sweep.gamma=[2,4]");
  c->add_flag("--no-plots", a->no_plots, "skip the plots and the HTML report");
  c->add_option("--profiles", a->profiles,
                "predict every cell from the profiles in DIR/profiles (an earlier run or "
                "predict; another prompt set there makes the predictions held out)");
  c->add_option("--trace", a->trace,
                "write every speculative round to FILE (JSON lines; speclab simulate --replay)");
  c->callback([a] { run_experiment(*a); });
}

}  // namespace speclab
