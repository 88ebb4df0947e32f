#include "experiments/results/result_tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "core/batched_speedup_prediction.h"
#include "core/error.h"
#include "experiments/config/sweep_axes.h"
#include "experiments/results/category_tables.h"
#include "experiments/results/prediction_tables.h"
#include "experiments/results/table_cells.h"
#include "experiments/results/time_parts_table.h"

namespace speclab {

namespace {

// The columns every speedup table ends with: the speedup interval, the out-of-sample
// prediction and its error, Theorem 3.8's speedup and error (tables that have it), the flags.
void speedup_tail_header(const CellFormat& f, bool thm38, std::vector<std::string>* h) {
  f.interval_header(h);
  h->push_back("predicted");
  h->push_back("err predicted");
  if (thm38) {
    h->push_back("thm 3.8");
    h->push_back("err thm 3.8");
  }
  h->push_back("flags");
}
void speedup_tail_cells(const CellFormat& f, const ResultRow& r, bool thm38,
                        std::vector<std::string>* row) {
  f.interval_cells(r, row);
  row->push_back(f.maybe(row_value(r.predicted_speedup)));
  row->push_back(f.pct(row_value(r.prediction_error)));
  if (thm38) {
    row->push_back(f.maybe(row_value(r.thm38_speedup)));
    row->push_back(f.pct(row_value(r.thm38_error)));
  }
  row->push_back(flag_codes(r).empty() ? f.none() : flag_codes(r));
}

}  // namespace

namespace {

// The settings of a cell other than gamma and the gamma policy, as each sweep axis writes
// itself in tables (experiments/config/sweep_axes.h): cells with the same key differ only in gamma
// (the speedup-vs-gamma tables). The first two are the drafter and the temperature.
std::vector<std::string> gamma_group_key(const Cell& c) {
  std::vector<std::string> key;
  for (const auto& [label, text] : sweep_axes_table_key(c, {"gamma", "gamma_policy"}))
    key.push_back(text);
  return key;
}

// Continuous batching (sweep.concurrency): throughput and per-request speedup per cell at each
// concurrency, concurrency-1 cells of the same settings beside them (one request at a time:
// both speedups are the cell's speedup); then the speedup in throughput against concurrency
// per cell, and the largest concurrency at which it stays above 1.
std::vector<Table> concurrency_tables(const std::vector<const ResultRow*>& rows,
                                      const CellFormat& f) {
  std::vector<Table> out;
  Table tc{"concurrency",
           "Many requests at once (continuous batching): N = requests in flight; throughput = "
           "tokens of every request / wall time of the loop (tok/s), plain and speculative, "
           "and their ratio with a 95% bootstrap interval over prompts; per request = (s per "
           "token of each request, summed) plain / speculative at the same N, its interval; "
           "tpot = median per-request time per output token; at N = 1 both speedups are the "
           "one-at-a-time speedup; predicted: from profiles measured before the cell ran (the "
           "closed loop replayed from the batched cost profile at N > 1)",
           {"draft", "T", "gamma", "policy", "N", "tau", "plain tok/s", "spec tok/s",
            "throughput speedup"},
           {},
           {},
           {}};
  if (f.machine) {
    tc.headers.push_back(row_field::throughput_speedup_ci_lo);
    tc.headers.push_back(row_field::throughput_speedup_ci_hi);
  } else {
    tc.headers.push_back("throughput interval");
  }
  tc.headers.push_back("predicted throughput");
  tc.headers.push_back("per-request speedup");
  f.interval_header(&tc.headers);
  tc.headers.push_back("predicted per-request");
  tc.headers.push_back("tpot spec ms");
  tc.headers.push_back("tpot plain ms");
  tc.headers.push_back("flags");
  // Per (draft, T, gamma, policy, synthetic acceptance): N -> throughput speedup, measured
  // and predicted.
  // evidence: the low end of the measured speedup's interval (the point where none is
  // estimated): a speedup of 1.003 within noise is not speculation paying.
  std::map<std::vector<std::string>, std::map<int, double>> curves, evidence, predicted;
  std::set<int> all_n;
  for (const auto* r : rows) {
    const bool one = r->cell.concurrency <= 1;
    const double tput = one ? row_value(r->speedup) : row_value(r->throughput_speedup);
    const double lo = one ? row_value(r->speedup_ci_lo) : row_value(r->throughput_speedup_ci_lo);
    const double hi = one ? row_value(r->speedup_ci_hi) : row_value(r->throughput_speedup_ci_hi);
    const double pred =
        one ? row_value(r->predicted_speedup) : row_value(r->predicted_throughput_speedup);
    std::vector<std::string> row{r->cell.drafter,
                                 f.fmt(r->cell.temperature, 1),
                                 std::to_string(r->cell.gamma),
                                 r->cell.gamma_policy,
                                 std::to_string(r->cell.concurrency),
                                 f.maybe(row_value(r->tau)),
                                 f.maybe(row_value(r->throughput_baseline_tokens_per_s), 1),
                                 f.maybe(row_value(r->throughput_spec_tokens_per_s), 1),
                                 f.maybe(tput)};
    if (f.machine) {
      row.push_back(f.maybe(lo));
      row.push_back(f.maybe(hi));
    } else {
      row.push_back(std::isnan(tput) ? "-"
                    : std::isnan(lo) ? "not estimated"
                                     : "[" + f.maybe(lo) + ", " + f.maybe(hi) + "]");
    }
    row.push_back(f.maybe(pred));
    row.push_back(f.maybe(row_value(r->speedup)));
    f.interval_cells(*r, &row);
    row.push_back(f.maybe(row_value(r->predicted_speedup)));
    const double ms = f.machine ? 1.0 : 1000.0;
    row.push_back(f.maybe(row_value(r->tpot_spec_median_s) * ms, f.machine ? 6 : 2));
    row.push_back(f.maybe(row_value(r->tpot_baseline_median_s) * ms, f.machine ? 6 : 2));
    row.push_back(flag_codes(*r).empty() ? f.none() : flag_codes(*r));
    tc.rows.push_back(row);
    std::string set;
    for (double a : r->cell.synthetic_acceptance) set += (set.empty() ? "" : "/") + f.fmt(a);
    const std::vector<std::string> key{r->cell.drafter, f.fmt(r->cell.temperature, 1),
                                       std::to_string(r->cell.gamma), r->cell.gamma_policy,
                                       set.empty() ? f.none() : set};
    // The load-following policy has no crossover of its own (it stops drafting where
    // speculation would lose): its curve is in gamma_policy_regret.
    if (r->cell.gamma_policy != "predicted") {
      curves[key][r->cell.concurrency] = tput;
      evidence[key][r->cell.concurrency] = std::isnan(lo) ? tput : lo;
      if (!std::isnan(pred)) predicted[key][r->cell.concurrency] = pred;
    }
    all_n.insert(r->cell.concurrency);
  }
  out.push_back(tc);

  Table tn{"concurrency_crossover",
           "Throughput speedup vs concurrency N, measured and predicted (at N = 1 the "
           "one-at-a-time speedup and its prediction; at N > 1 the closed loop replayed from the "
           "batched cost profile, before the cell ran), and the largest N at which speculation "
           "still beats the plain batched loop (measured: the low end of its 95% interval above "
           "1, the point where no interval is estimated; predicted: the point above 1); on "
           "predicted rows, how many steps of the N grid the predicted crossover lies from the "
           "measured one",
           {"draft", "T", "gamma", "policy", "alpha set", "figure"},
           {},
           {},
           {}};
  for (int n : all_n) tn.headers.push_back("N=" + std::to_string(n));
  tn.headers.push_back("last N above 1x");
  tn.headers.push_back("crossover off by (grid steps)");
  const std::vector<int> grid(all_n.begin(), all_n.end());
  auto crossover_of = [&](const std::map<int, double>& by_n) {
    std::vector<double> v;
    for (int n : grid) v.push_back(by_n.count(n) ? by_n.at(n) : NAN);
    return crossover_concurrency(grid, v);
  };
  auto grid_index = [&](int n) {  // 0 (none above 1x) sits one step below the grid's first
    const auto it = std::find(grid.begin(), grid.end(), n);
    return it == grid.end() ? -1 : static_cast<int>(it - grid.begin());
  };
  for (const auto& [key, by_n] : curves) {
    const int measured = crossover_of(evidence.at(key));
    for (int pass = 0; pass < 2; pass++) {
      const bool pred = pass == 1;
      const auto pit = predicted.find(key);
      if (pred && pit == predicted.end()) continue;
      const std::map<int, double>& src = pred ? pit->second : by_n;
      std::vector<std::string> row = key;
      row.push_back(pred ? "predicted" : "measured");
      for (int n : all_n) {
        const auto it = src.find(n);
        row.push_back(it == src.end() ? f.none() : f.maybe(it->second));
      }
      const int last = pred ? crossover_of(src) : measured;
      row.push_back(last > 0 ? std::to_string(last) : (f.machine ? "" : "none"));
      // Complete curves only: a crossover from a partial one says nothing.
      const bool complete = src.size() == grid.size() && by_n.size() == grid.size();
      row.push_back(pred && complete
                        ? std::to_string(std::abs(grid_index(last) - grid_index(measured)))
                        : f.none());
      tn.rows.push_back(row);
    }
  }
  out.push_back(tn);

  // gamma_policy predicted against every fixed gamma of the same settings, per N: one row per
  // predicted-policy cell (its gamma is the ceiling), the best fixed gamma of its N beside it.
  struct BestFixed {
    double speedup = NAN;
    int gamma = 0;
  };
  std::map<std::pair<std::vector<std::string>, int>, BestFixed> best_fixed;
  std::vector<const ResultRow*> policy_rows;
  auto setting_key = [&](const ResultRow& r) {
    std::string set;
    for (double a : r.cell.synthetic_acceptance) set += (set.empty() ? "" : "/") + f.fmt(a);
    return std::vector<std::string>{r.cell.drafter, f.fmt(r.cell.temperature, 1),
                                    set.empty() ? f.none() : set};
  };
  auto speedup_of = [](const ResultRow& r) {
    return r.cell.concurrency <= 1 ? row_value(r.speedup) : row_value(r.throughput_speedup);
  };
  for (const auto* r : rows) {
    const double tput = speedup_of(*r);
    if (std::isnan(tput)) continue;
    if (r->cell.gamma_policy == "predicted") {
      policy_rows.push_back(r);
    } else if (r->cell.gamma_policy == "fixed") {
      BestFixed& b = best_fixed[{setting_key(*r), r->cell.concurrency}];
      if (std::isnan(b.speedup) || tput > b.speedup) b = {tput, r->cell.gamma};
    }
  }
  Table tr{"gamma_policy_regret",
           "gamma_policy predicted (the gamma the profiles predict best at N requests in flight "
           "up to the cell's gamma, its ceiling; 0 = no drafting; at N = 1 at least 1) against "
           "the best fixed gamma measured at the same N: throughput speedups (one-at-a-time "
           "speedup at N = 1) and regret = 1 - predicted policy / best fixed (negative: the "
           "policy beat every fixed gamma)",
           {"draft", "T", "alpha set", "N", "ceiling", "best fixed gamma", "its speedup",
            "policy gamma", "policy speedup", "regret"},
           {},
           {},
           {}};
  for (const ResultRow* r : policy_rows) {
    const size_t n = static_cast<size_t>(r->cell.concurrency);
    const std::vector<int64_t> table = r->predicted_gamma_by_load.value_or(std::vector<int64_t>{});
    // One request at a time the cell ran the table's first entry, at least 1.
    const int k = table.empty() ? -1
                                : std::max(n == 1 ? 1 : 0,
                                           static_cast<int>(table[std::min(n, table.size() - 1)]));
    const auto it = best_fixed.find({setting_key(*r), r->cell.concurrency});
    const BestFixed b = it == best_fixed.end() ? BestFixed{} : it->second;
    const double policy = speedup_of(*r);
    std::vector<std::string> row = setting_key(*r);
    row.push_back(std::to_string(n));
    row.push_back(std::to_string(r->cell.gamma));
    row.push_back(std::isnan(b.speedup) ? f.none() : std::to_string(b.gamma));
    row.push_back(f.maybe(b.speedup));
    row.push_back(k < 0 ? f.none() : std::to_string(k));
    row.push_back(f.maybe(policy));
    row.push_back(std::isnan(b.speedup) ? f.none() : f.pct(1 - policy / b.speedup));
    tr.rows.push_back(row);
  }
  if (!tr.rows.empty()) out.push_back(tr);
  return out;
}

// The tables of the rows of one config.
std::vector<Table> tables_of_config(const std::vector<const ResultRow*>& rows,
                                    const CellFormat& f) {
  std::vector<Table> out;
  // Synthetic-acceptance cells get their own table: their alpha is configured, not the pair's.
  // Tree cells too: their acceptance is per depth of a tree, not a chain's alpha.
  std::vector<const ResultRow*> gen, cost, synthetic, tree;
  // A config with cells of concurrency > 1 gets the concurrency tables (its concurrency-1
  // cells there too, for the curve); its concurrency > 1 cells appear only there.
  std::vector<const ResultRow*> batched;
  bool any_batched = false;
  for (const auto* r : rows) any_batched = any_batched || r->cell.concurrency > 1;
  if (any_batched) {
    for (const auto* r : rows)
      if (r->kind() == "measured" && r->cell.tree.depth() == 0) batched.push_back(r);
    for (Table& t : concurrency_tables(batched, f)) out.push_back(std::move(t));
  }
  for (const auto* r : rows) {
    if (r->cell.concurrency > 1) continue;
    (r->kind() == "cost_only"                ? cost
     : !r->cell.synthetic_acceptance.empty() ? synthetic
     : r->cell.tree.depth() > 0              ? tree
                                             : gen)
        .push_back(r);
  }

  if (!gen.empty()) {
    // Table 3 analog: the pair's acceptance per target x drafter x temperature. alpha_profile
    // (Corollary 3.6 along the target's own text, teacher-forced) does not depend on gamma;
    // accepted/tested pooled over the cells is the runs' diagnostic, which does.
    struct Acc {
      double accepted = 0, tested = 0;
      double profile = NAN, lo = NAN, hi = NAN;
    };
    std::map<std::tuple<std::string, std::string, double>, Acc> by;
    for (const auto* r : gen) {
      auto& a = by[{r->target_spec.value_or(""), r->cell.drafter, r->cell.temperature}];
      a.accepted += static_cast<double>(r->accepted.value_or(0));
      a.tested += static_cast<double>(r->tested.value_or(0));
      if (!std::isnan(row_value(r->alpha_profile))) {
        a.profile = row_value(r->alpha_profile);
        a.lo = row_value(r->alpha_profile_ci_lo);
        a.hi = row_value(r->alpha_profile_ci_hi);
      }
    }
    Table t3{"acceptance",
             "Acceptance (Table 3 analog): alpha_profile = Corollary 3.6 along the target's own "
             "text with its 95% interval (prompts as clusters), the pair's alpha; "
             "accepted/tested = pooled over the measured cells (it depends on where rounds "
             "start, hence on gamma)",
             {"target", "draft", "T", row_field::alpha_profile, row_field::alpha_profile_ci_lo,
              row_field::alpha_profile_ci_hi, "accepted/tested", "tested"},
             {},
             {},
             {}};
    for (const auto& [k, a] : by) {
      t3.rows.push_back({std::get<0>(k), std::get<1>(k), f.fmt(std::get<2>(k), 1),
                         f.maybe(a.profile, 3), f.maybe(a.lo, 3), f.maybe(a.hi, 3),
                         a.tested ? f.fmt(a.accepted / a.tested, 3) : f.maybe(NAN),
                         f.fmt(a.tested, 0)});
    }
    out.push_back(t3);

    // Table 4 analog.
    Table t4{"speedup",
             "Speedup (Table 4 analog): measured (95% bootstrap interval, prompts as clusters) "
             "vs the out-of-sample prediction (cost and acceptance profiles, no speculative run) "
             "and Theorem 3.8 (alpha_profile, c from the cost profile, the cell's gamma)",
             {"draft", "T", "gamma", "policy", row_field::alpha_profile, "c", "tau",
              "predicted tau", "speedup"},
             {},
             {},
             {}};
    speedup_tail_header(f, /*thm38=*/true, &t4.headers);
    for (const auto* r : gen) {
      std::vector<std::string> row{r->cell.drafter,
                                   f.fmt(r->cell.temperature, 1),
                                   std::to_string(r->cell.gamma),
                                   r->cell.gamma_policy,
                                   f.maybe(row_value(r->alpha_profile), 3),
                                   f.maybe(row_value(r->c_profile), 3),
                                   f.maybe(row_value(r->tau)),
                                   f.maybe(row_value(r->predicted_tokens_per_round)),
                                   f.maybe(row_value(r->speedup))};
      speedup_tail_cells(f, *r, /*thm38=*/true, &row);
      t4.rows.push_back(row);
    }
    out.push_back(t4);

    // Speedup vs gamma, and the best gamma: measured vs predicted.
    std::set<int> gammas;
    struct Gammas {
      std::map<int, double> measured, predicted;
    };
    std::map<std::vector<std::string>, Gammas> grid;
    for (const auto* r : gen) {
      if (r->cell.gamma_policy != "fixed" && !r->cell.gamma_policy.empty()) continue;
      const int g = r->cell.gamma;
      gammas.insert(g);
      // Cells that differ only in gamma.
      const std::vector<std::string> key = gamma_group_key(r->cell);
      grid[key].measured[g] = row_value(r->speedup);
      grid[key].predicted[g] = row_value(r->predicted_speedup);
    }
    Table tg{"gamma", "Measured speedup vs gamma (fixed gamma)", {"draft", "T"}, {}, {}, {}};
    for (int g : gammas) tg.headers.push_back("g=" + std::to_string(g));
    Table tp{"gamma_predicted",
             "Predicted speedup vs gamma (fixed gamma, out of sample)",
             {"draft", "T"},
             {},
             {},
             {}};
    for (int g : gammas) tp.headers.push_back("g=" + std::to_string(g));
    Table tb{"best_gamma",
             "Best gamma per group: measured best vs predicted best, and the measured speedup "
             "at the predicted best ('ok' when within 3% of the measured best)",
             {"draft", "T", "measured best", "speedup at measured best", "predicted best",
              "speedup at predicted best", "within 3%"},
             {},
             {},
             {}};
    for (const auto& [k, m] : grid) {
      std::vector<std::string> row{k[0], k[1]}, prow{k[0], k[1]};
      int best_m = 0, best_p = 0;
      for (int g : gammas) {
        const bool has = m.measured.count(g) > 0;
        row.push_back(has ? f.maybe(m.measured.at(g)) : f.maybe(NAN));
        prow.push_back(has ? f.maybe(m.predicted.at(g)) : f.maybe(NAN));
        if (has && !std::isnan(m.measured.at(g)) &&
            (best_m == 0 || m.measured.at(g) > m.measured.at(best_m)))
          best_m = g;
        if (has && !std::isnan(m.predicted.at(g)) &&
            (best_p == 0 || m.predicted.at(g) > m.predicted.at(best_p)))
          best_p = g;
      }
      tg.rows.push_back(row);
      tp.rows.push_back(prow);
      if (best_m && best_p) {
        const double at_p = m.measured.at(best_p), best = m.measured.at(best_m);
        tb.rows.push_back({k[0], k[1], std::to_string(best_m), f.maybe(best),
                           std::to_string(best_p), f.maybe(at_p),
                           at_p >= 0.97 * best ? "ok" : "miss"});
      }
    }
    out.push_back(tg);
    bool any_prediction = false;
    for (const auto* r : gen) any_prediction |= !std::isnan(row_value(r->predicted_speedup));
    if (any_prediction) out.push_back(tp);
    if (!tb.rows.empty()) out.push_back(tb);

    // Spec-Bench's layout: acceptance, tau and speedup per prompt category.
    for (Table& t : category_tables_build(gen, f.machine)) out.push_back(std::move(t));
  }

  if (!tree.empty()) {
    Table tt{
        "tree",
        "Tree speculation: tokens per round (tau) and measured speedup per tree shape "
        "(AxBxC: A children of the root, B of each, ...; topk = the draft's top tokens, sample "
        "= independent draft samples) vs the out-of-sample prediction (chain profile with "
        "siblings as independent tries per depth: an approximation); Theorem 3.8 has no tree "
        "form",
        {"draft", "T", "tree", "nodes/round", "tau", "predicted tau", "speedup"},
        {},
        {},
        {}};
    speedup_tail_header(f, /*thm38=*/false, &tt.headers);
    for (const auto* r : tree) {
      std::vector<std::string> row{r->cell.drafter,
                                   f.fmt(r->cell.temperature, 1),
                                   r->cell.tree.to_string(),
                                   f.maybe(row_value(r->mean_tree_nodes_per_round), 1),
                                   f.maybe(row_value(r->tau)),
                                   f.maybe(row_value(r->predicted_tokens_per_round)),
                                   f.maybe(row_value(r->speedup))};
      speedup_tail_cells(f, *r, /*thm38=*/false, &row);
      tt.rows.push_back(row);
    }
    out.push_back(tt);
  }

  if (!synthetic.empty()) {
    Table ts{"synthetic",
             "Synthetic acceptance (known alpha): measured speedup vs the prediction from the "
             "cost profile at the configured acceptance, and Theorem 3.8; alpha set = "
             "configured per position (last repeats), alpha = measured accepted/tested",
             {"draft", "T", "gamma", "alpha set", "alpha", "c", "tau", "predicted tau", "speedup"},
             {},
             {},
             {}};
    speedup_tail_header(f, /*thm38=*/true, &ts.headers);
    for (const auto* r : synthetic) {
      std::string set;
      for (double a : r->cell.synthetic_acceptance) set += (set.empty() ? "" : "/") + f.fmt(a);
      std::vector<std::string> row{r->cell.drafter,
                                   f.fmt(r->cell.temperature, 1),
                                   std::to_string(r->cell.gamma),
                                   set,
                                   f.maybe(row_value(r->alpha_empirical)),
                                   f.maybe(row_value(r->c_profile), 3),
                                   f.maybe(row_value(r->tau)),
                                   f.maybe(row_value(r->predicted_tokens_per_round)),
                                   f.maybe(row_value(r->speedup))};
      speedup_tail_cells(f, *r, /*thm38=*/true, &row);
      ts.rows.push_back(row);
    }
    out.push_back(ts);
  }

  for (Table& t : prediction_tables(rows, f)) out.push_back(std::move(t));

  if (!cost.empty()) {
    Table tc{"cost",
             "Cost terms: c = draft time per token / T(1); T(k)/T(1) of the target",
             {"draft", "c", "bytes ratio", "T(1) ms"},
             {},
             {},
             {}};
    size_t kmax = 0;
    for (const auto* r : cost)
      kmax = std::max(kmax, r->target_tk_ratio.value_or(std::vector<double>{}).size());
    for (size_t k = 2; k <= kmax; k++) tc.headers.push_back("T(" + std::to_string(k) + ")/T(1)");
    for (const auto* r : cost) {
      std::vector<std::string> row{r->cell.drafter, f.maybe(row_value(r->c_measured), 3),
                                   f.maybe(row_value(r->weight_bytes_ratio), 3),
                                   f.maybe(1e3 * row_value(r->target_t1_s), 1)};
      const std::vector<double> ratios = r->target_tk_ratio.value_or(std::vector<double>{});
      for (size_t k = 1; k < kmax; k++)
        row.push_back(k < ratios.size() ? f.fmt(ratios[k]) : f.maybe(NAN));
      tc.rows.push_back(row);
    }
    out.push_back(tc);
  }

  std::vector<const ResultRow*> measured_one_at_a_time;
  for (const auto* r : rows)
    if (r->kind() == "measured" && r->cell.concurrency <= 1) measured_one_at_a_time.push_back(r);
  for (Table& t : time_parts_tables(measured_one_at_a_time, f.machine)) out.push_back(std::move(t));
  return out;
}

}  // namespace

std::vector<Table> result_tables_build(const std::vector<ResultRow>& rows, bool machine) {
  const CellFormat f{machine};
  // Rows of different configs (config_hash) measure different things under the same names
  // (other prompts, lengths, models): never pooled, one set of tables per config, in the order
  // the configs first appear.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ResultRow*>> by_config;
  for (const auto& r : rows) {
    const std::string h = r.config_hash.value_or("");
    if (!by_config.count(h)) order.push_back(h);
    by_config[h].push_back(&r);
  }
  std::vector<Table> out;
  for (const auto& h : order) {
    for (Table t : tables_of_config(by_config[h], f)) {
      t.config_hash = h;
      t.experiment = by_config[h].front()->experiment.value_or("");
      if (order.size() > 1)
        t.title = "config " + (h.empty() ? std::string("(no config_hash)") : h) + " (" +
                  t.experiment + "): " + t.title;
      SPECLAB_ASSERT(table_headers_unique(t));
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::string result_tables_render(const std::vector<ResultRow>& rows, TableFormat format) {
  const bool machine = format == TableFormat::kCsv || format == TableFormat::kJson;
  const std::vector<Table> tables = result_tables_build(rows, machine);
  if (format == TableFormat::kJson) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& t : tables) all.push_back(table_json(t));
    return nlohmann::json{{"tables", all}}.dump(1) + "\n";
  }
  std::string s;
  for (const auto& t : tables) s += table_render(t, format);
  return s;
}

}  // namespace speclab
