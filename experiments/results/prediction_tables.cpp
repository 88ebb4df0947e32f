#include "experiments/results/prediction_tables.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"

namespace speclab {
namespace {

// How good the out-of-sample prediction was over every measured cell that has one: cells
// served one at a time (split by what the acceptance half rests on, when a run mixes them),
// then cells of concurrency > 1 per request and in throughput.
Table prediction_quality_table(const std::vector<const ResultRow*>& rows, const CellFormat& f) {
  // Besides the errors: how many predictions lie inside the measured speedup's own interval
  // (an error of the size of the measurement's sampling noise cannot be told from none), and
  // that interval's median half-width relative to the measured figure.
  struct Errors {
    std::string what;
    std::vector<double> errs, thm_errs, half_widths;
    int flagged = 0, inside = 0, thm_inside = 0, thm_with_interval = 0;
  };
  // [0] every one-at-a-time cell; [1..4] the same by regime; [5], [6] concurrency > 1.
  std::vector<Errors> sets;
  for (const char* what :
       {"one request at a time: speedup",
        "- of which T = 0 (tokens per round an identity: the profile walks the decoder's own "
        "greedy text; the error is the cost model's)",
        "- of which T > 0 (the profiled text is another sample than the measured one)",
        "- of which synthetic acceptance (configured probabilities: the cost model alone)",
        "- of which held-out prompts (profiles measured on another prompt set)",
        "concurrency > 1: per-request speedup", "concurrency > 1: throughput speedup"}) {
    sets.emplace_back();
    sets.back().what = what;
  }
  // measured, lo, hi: the measured figure and its interval (NaN: none).
  auto add = [](Errors& e, double err, double thm_err, bool flagged, double measured, double lo,
                double hi) {
    e.errs.push_back(std::fabs(err));
    if (!std::isnan(thm_err)) e.thm_errs.push_back(std::fabs(thm_err));
    e.flagged += flagged;
    if (std::isnan(lo) || std::isnan(hi) || !(measured > 0)) return;
    e.half_widths.push_back((hi - lo) / 2 / measured);
    const auto in = [&](double predicted) { return predicted >= lo && predicted <= hi; };
    e.inside += in(measured * (1 + err)) ? 1 : 0;
    if (std::isnan(thm_err)) return;
    e.thm_with_interval++;
    e.thm_inside += in(measured * (1 + thm_err)) ? 1 : 0;
  };
  for (const auto* r : rows) {
    const bool batched = r->cell.concurrency > 1;
    const bool flagged = !flag_codes(*r).empty();
    const double err = row_value(r->prediction_error);
    const double measured = row_value(r->speedup), lo = row_value(r->speedup_ci_lo),
                 hi = row_value(r->speedup_ci_hi);
    if (!std::isnan(err)) {
      add(sets[batched ? 5 : 0], err, row_value(r->thm38_error), flagged, measured, lo, hi);
      if (!batched) {
        const size_t regime = r->profile_prompts.value_or("") == "other" ? 4
                              : !r->cell.synthetic_acceptance.empty()    ? 3
                              : r->cell.temperature == 0.0               ? 1
                                                                         : 2;
        add(sets[regime], err, row_value(r->thm38_error), flagged, measured, lo, hi);
      }
    }
    if (!std::isnan(row_value(r->throughput_prediction_error)))
      add(sets[6], row_value(r->throughput_prediction_error), NAN, flagged,
          row_value(r->throughput_speedup), row_value(r->throughput_speedup_ci_lo),
          row_value(r->throughput_speedup_ci_hi));
  }
  // The regimes only when the run mixes them (else the first row says it all).
  const int regimes =
      !sets[1].errs.empty() + !sets[2].errs.empty() + !sets[3].errs.empty() + !sets[4].errs.empty();
  if (regimes < 2)
    for (size_t i = 1; i <= 4; i++) sets[i].errs.clear();
  Table tq{"prediction_quality",
           "Prediction quality: |predicted / measured - 1| over the measured cells (the "
           "out-of-sample prediction, then Theorem 3.8 for comparison; Theorem 3.8 prices one "
           "request at a time); inside = predictions within the measured speedup's own "
           "interval, beside that interval's median half-width (relative to the measured "
           "speedup): errors of that size are the measurement's sampling noise",
           {"cells", "flagged", "median |err|", "max |err|", "inside", "measured half-width",
            "thm 3.8 median |err|", "thm 3.8 max |err|", "thm 3.8 inside"},
           {},
           {},
           {}};
  const bool several = regimes >= 2 || !sets[5].errs.empty() || !sets[6].errs.empty();
  if (several) tq.headers.insert(tq.headers.begin(), "figure");
  const double none = NAN;
  for (const Errors& e : sets) {
    if (e.errs.empty()) continue;
    std::vector<std::string> row{
        std::to_string(e.errs.size()),
        std::to_string(e.flagged),
        f.size_pct(median_of(e.errs)),
        f.size_pct(*std::max_element(e.errs.begin(), e.errs.end())),
        e.half_widths.empty() ? "-" : str_cat(e.inside, " of ", e.half_widths.size()),
        e.half_widths.empty() ? "-" : f.size_pct(median_of(e.half_widths)),
        f.size_pct(e.thm_errs.empty() ? none : median_of(e.thm_errs)),
        f.size_pct(e.thm_errs.empty() ? none
                                      : *std::max_element(e.thm_errs.begin(), e.thm_errs.end())),
        e.thm_with_interval == 0 ? "-" : str_cat(e.thm_inside, " of ", e.thm_with_interval)};
    if (several) row.insert(row.begin(), e.what);
    tq.rows.push_back(row);
  }
  return tq;
}

// The out-of-sample prediction against Theorem 3.8, cell by cell (one request at a time):
// ex ante, and at the run's own rounds, where both cost models are given the run's tokens
// per round, so that neither gains or loses by the run's acceptance draws. "Closer" counts
// the cells where Theorem 3.8 is off by more than 3% and the profile is off by less.
Table prediction_vs_theorem_table(const std::vector<const ResultRow*>& rows, const CellFormat& f) {
  struct Pair {
    std::vector<double> profile, thm;
    int thm_off = 0, closer = 0;
    void add(double p, double t) {
      profile.push_back(std::fabs(p));
      thm.push_back(std::fabs(t));
      if (std::fabs(t) > 0.03) {
        thm_off++;
        closer += std::fabs(p) < std::fabs(t) ? 1 : 0;
      }
    }
  };
  Pair ex_ante, mean_costs, at_rounds;
  for (const auto* r : rows) {
    if (r->cell.concurrency > 1) continue;
    const double p = row_value(r->prediction_error), t = row_value(r->thm38_error);
    if (!std::isnan(p) && !std::isnan(t)) ex_ante.add(p, t);
    const double pm = row_value(r->prediction_error_mean_costs);
    if (!std::isnan(pm) && !std::isnan(t)) mean_costs.add(pm, t);
    const double pr = row_value(r->profile_error_at_run_rounds),
                 tr = row_value(r->thm38_error_at_run_rounds);
    if (!std::isnan(pr) && !std::isnan(tr)) at_rounds.add(pr, tr);
  }
  Table tv{"prediction_vs_theorem",
           "The prediction against Theorem 3.8, one request at a time: |error| of each "
           "against the measured speedup, ex ante (the acceptance each was given) and at the "
           "run's own rounds (profile_error_at_run_rounds, thm38_error_at_run_rounds: both "
           "cost models given the run's tokens per round, its acceptance draws taken out); "
           "'ex ante, mean costs': the same profile with each timed figure at the mean of its "
           "repetitions instead of the median (prediction_error_mean_costs, a diagnostic); "
           "profile closer = cells where Theorem 3.8 is off by more than 3% and the profile "
           "by less",
           {"figure", "cells", "profile median |err|", "profile max |err|", "thm 3.8 median |err|",
            "thm 3.8 max |err|", "thm 3.8 off > 3%", "profile closer"},
           {},
           {},
           {}};
  for (const auto& [what, e] :
       {std::pair<const char*, const Pair*>{"ex ante", &ex_ante},
        std::pair<const char*, const Pair*>{"ex ante, mean costs", &mean_costs},
        std::pair<const char*, const Pair*>{"at the run's own rounds", &at_rounds}}) {
    if (e->profile.empty()) continue;
    tv.rows.push_back({what, std::to_string(e->profile.size()), f.size_pct(median_of(e->profile)),
                       f.size_pct(*std::max_element(e->profile.begin(), e->profile.end())),
                       f.size_pct(median_of(e->thm)),
                       f.size_pct(*std::max_element(e->thm.begin(), e->thm.end())),
                       std::to_string(e->thm_off), str_cat(e->closer, " of ", e->thm_off)});
  }
  return tv;
}

}  // namespace

std::vector<Table> prediction_tables(const std::vector<const ResultRow*>& rows,
                                     const CellFormat& f) {
  std::vector<Table> out;
  for (Table t : {prediction_quality_table(rows, f), prediction_vs_theorem_table(rows, f)})
    if (!t.rows.empty()) out.push_back(std::move(t));
  return out;
}

}  // namespace speclab
