// The tables of where a plain step and a speculative round go (experiments/measure/time_parts.h):
// each part as the loop measured it beside what the cost profile prices it at, per cell.
#pragma once

#include <vector>

#include "experiments/results/result_row.h"
#include "experiments/results/table.h"

namespace speclab {

// "step_parts" (per plain-loop token) and "round_parts" (per round) over the rows that have
// the loop's parts; none when no row has them. Cells are named by the sweep axes that vary
// among the rows (the drafter and gamma always). machine: csv/json cells (loop and profile in
// columns of their own, seconds) instead of "loop / profile" in milliseconds.
std::vector<Table> time_parts_tables(const std::vector<const ResultRow*>& rows, bool machine);

}  // namespace speclab
