// Per-category tables in Spec-Bench's layout (Xia et al. 2024, "Unlocking Efficiency in Large
// Language Model Inference: A Comprehensive Survey of Speculative Decoding", Spec-Bench): one row
// per measured cell (drafter, temperature, gamma, gamma policy), one column per prompt category
// (the prompts' `category`, experiments/config/prompt_set.h) in order of first appearance, plus
// `overall`. Three tables:
//   category_acceptance       accepted / tested drafts of the category's prompts
//   category_tokens_per_round tokens emitted / rounds (tau)
//   category_speedup          (baseline s / token) / (speculative s / token)
// each a ratio of sums over the category's prompts, with a 95% percentile bootstrap interval
// over prompts as clusters (stats_cluster_bootstrap_interval; a prompt's repeats stay
// together, 1000 resamples, seeded by cell and category) and the count of prompts behind it.
// The `overall` column equals the row's own alpha_empirical, tau and speedup.
//
// Built from each row's per-prompt `samples` (cell_runner.cpp). Rows whose samples carry no
// `category` (written before categories existed) give no category tables; a sample without
// `tested` / `emitted` has no acceptance / tokens per round.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "experiments/results/result_row.h"
#include "experiments/results/table.h"

namespace speclab {

// The category tables of the generation rows of one config (no tree, synthetic or cost-only
// rows); empty when no sample has a category. machine: csv/json cells (full precision, "" for
// none, the interval and count as columns <category>_ci_lo, <category>_ci_hi, <category>_n).
std::vector<Table> category_tables_build(const std::vector<const ResultRow*>& rows, bool machine);

}  // namespace speclab
