#include "experiments/results/category_tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "core/stats.h"

namespace speclab {

namespace {

constexpr int kResamples = 1000;
constexpr double kConfidence = 0.95;

// One prompt's sums over its repeats (one bootstrap cluster).
struct PromptSums {
  double baseline_s = 0, baseline_tokens = 0, spec_s = 0, spec_tokens = 0;
  double rounds = 0, emitted = 0, tested = 0, accepted = 0;
  bool has_tested = false, has_emitted = false;
};

// A row's prompts in sample order, each with its category.
struct RowPrompts {
  std::vector<std::string> category;  // [prompts]
  std::vector<PromptSums> sums;       // [prompts]
};

RowPrompts row_prompts(const ResultRow& row) {
  RowPrompts out;
  std::map<std::string, size_t> index;
  for (const ResultSample& s : row.samples.value_or(ResultSamples{})) {
    const auto [at, fresh] = index.try_emplace(s.prompt_id.value_or(""), out.sums.size());
    if (fresh) {
      out.sums.emplace_back();
      const std::string c = s.category.value_or("");
      out.category.push_back(c.empty() ? "uncategorized" : c);
    }
    PromptSums& p = out.sums[at->second];
    p.baseline_s += s.baseline_s.value_or(0);
    p.baseline_tokens += static_cast<double>(s.baseline_tokens.value_or(0));
    p.spec_s += s.spec_s.value_or(0);
    p.spec_tokens += static_cast<double>(s.spec_tokens.value_or(0));
    p.rounds += static_cast<double>(s.rounds.value_or(0));
    p.accepted += static_cast<double>(s.accepted.value_or(0));
    p.has_tested = s.tested.has_value();
    p.has_emitted = s.emitted.has_value();
    p.tested += static_cast<double>(s.tested.value_or(0));
    p.emitted += static_cast<double>(s.emitted.value_or(0));
  }
  return out;
}

enum class Metric { kAcceptance, kTokensPerRound, kSpeedup };

// The metric as a ratio of sums over the picked prompts; NaN when undefined.
double metric_of(Metric m, const std::vector<const PromptSums*>& picked) {
  PromptSums t;
  bool tested = true, emitted = true;
  for (const PromptSums* p : picked) {
    t.baseline_s += p->baseline_s;
    t.baseline_tokens += p->baseline_tokens;
    t.spec_s += p->spec_s;
    t.spec_tokens += p->spec_tokens;
    t.rounds += p->rounds;
    t.emitted += p->emitted;
    t.tested += p->tested;
    t.accepted += p->accepted;
    tested = tested && p->has_tested;
    emitted = emitted && p->has_emitted;
  }
  switch (m) {
    case Metric::kAcceptance:
      return tested && t.tested > 0 ? t.accepted / t.tested : NAN;
    case Metric::kTokensPerRound:
      return emitted && t.rounds > 0 ? t.emitted / t.rounds : NAN;
    case Metric::kSpeedup:
      return t.baseline_s > 0 && t.baseline_tokens > 0 && t.spec_s > 0 && t.spec_tokens > 0
                 ? (t.baseline_s / t.baseline_tokens) / (t.spec_s / t.spec_tokens)
                 : NAN;
  }
  return NAN;
}

// FNV-1a: a bootstrap seed that depends only on the cell and the column, so that the tables
// are the same on every machine and every rendering.
uint64_t seed_of(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::vector<Table> category_tables_build(const std::vector<const ResultRow*>& rows, bool machine) {
  // Categories in order of first appearance (the prompt files' order), then overall.
  std::vector<RowPrompts> prompts;
  std::vector<std::string> categories;
  bool any_category = false;
  for (const auto* r : rows) {
    prompts.push_back(row_prompts(*r));
    for (const ResultSample& s : r->samples.value_or(ResultSamples{}))
      any_category |= s.category.has_value();
    for (const auto& c : prompts.back().category)
      if (std::find(categories.begin(), categories.end(), c) == categories.end())
        categories.push_back(c);
  }
  if (!any_category) return {};
  const std::string overall = "overall";

  struct Spec {
    Metric metric;
    const char* name;
    const char* title;
    int digits;
  };
  const Spec specs[] = {
      {Metric::kAcceptance, "category_acceptance",
       "Acceptance by category (Spec-Bench layout): accepted / tested drafts of the category's "
       "prompts, 95% bootstrap interval (prompts as clusters), n = prompts",
       3},
      {Metric::kTokensPerRound, "category_tokens_per_round",
       "Tokens per round (tau) by category: tokens emitted / rounds, 95% bootstrap interval "
       "(prompts as clusters), n = prompts",
       2},
      {Metric::kSpeedup, "category_speedup",
       "Speedup by category: (baseline s / token) / (speculative s / token) over the category's "
       "prompts, 95% bootstrap interval (prompts as clusters), n = prompts",
       2},
  };
  std::vector<Table> out;
  for (const Spec& spec : specs) {
    Table t{spec.name, spec.title, {"draft", "T", "gamma", "policy"}, {}, {}, {}};
    std::vector<std::string> columns = categories;
    columns.push_back(overall);
    for (const auto& c : columns) {
      t.headers.push_back(c);
      if (machine) {
        t.headers.push_back(c + "_ci_lo");
        t.headers.push_back(c + "_ci_hi");
        t.headers.push_back(c + "_n");
      }
    }
    // A category may be named like a fixed column ("gamma", "overall", "a_n" beside "a"):
    // later duplicates get "~2", "~3", ... so that every column name stays unique.
    std::set<std::string> seen;
    for (auto& h : t.headers) {
      std::string name = h;
      for (int k = 2; seen.count(name); k++) name = h + "~" + std::to_string(k);
      seen.insert(name);
      h = name;
    }
    bool any_value = false;
    for (size_t ri = 0; ri < rows.size(); ri++) {
      const ResultRow& r = *rows[ri];
      std::vector<std::string> cells{r.cell.drafter, table_number(r.cell.temperature, 1, machine),
                                     std::to_string(r.cell.gamma), r.cell.gamma_policy};
      for (const auto& c : columns) {
        std::vector<const PromptSums*> group;
        for (size_t i = 0; i < prompts[ri].sums.size(); i++)
          if (c == overall || prompts[ri].category[i] == c) group.push_back(&prompts[ri].sums[i]);
        const double value = group.empty() ? NAN : metric_of(spec.metric, group);
        Interval ci{NAN, NAN};
        if (!std::isnan(value)) {
          any_value = true;
          ci = stats_cluster_bootstrap_interval(
              group.size(),
              [&](const std::vector<size_t>& picks) {
                std::vector<const PromptSums*> resample;
                for (size_t i : picks) resample.push_back(group[i]);
                return metric_of(spec.metric, resample);
              },
              kResamples, 1 - kConfidence, seed_of(r.cell.cell_id + "/" + c + "/" + spec.name));
        }
        const std::string n = std::to_string(group.size());
        if (machine) {
          cells.push_back(table_number(value, spec.digits, true));
          cells.push_back(table_number(ci.lo, spec.digits, true));
          cells.push_back(table_number(ci.hi, spec.digits, true));
          cells.push_back(group.empty() ? "" : n);
        } else if (group.empty()) {
          cells.push_back("-");
        } else {
          cells.push_back(table_number(value, spec.digits, false) +
                          (std::isnan(value)
                               ? ""
                               : " [" + table_number(ci.lo, spec.digits, false) + ", " +
                                     table_number(ci.hi, spec.digits, false) + "]") +
                          " n=" + n);
        }
      }
      t.rows.push_back(cells);
    }
    // A run without a baseline has no speedup: no speedup table rather than one of dashes.
    if (any_value) out.push_back(t);
  }
  return out;
}

}  // namespace speclab
