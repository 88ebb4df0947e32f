// How good the out-of-sample predictions of a config's measured cells were:
//   prediction_quality     |predicted / measured - 1| (median, max), by regime when a run mixes
//                          them, and how many predictions lie inside the measured interval;
//                          Theorem 3.8 beside it
//   prediction_vs_theorem  the profile against Theorem 3.8 cell by cell, ex ante and at the
//                          run's own rounds (both cost models given the run's tokens per round)
#pragma once

#include <vector>

#include "experiments/results/result_row.h"
#include "experiments/results/table.h"
#include "experiments/results/table_cells.h"

namespace speclab {

// The tables above over `rows` (one config's rows; rows without a prediction are skipped);
// none when no row has a prediction error.
std::vector<Table> prediction_tables(const std::vector<const ResultRow*>& rows,
                                     const CellFormat& f);

}  // namespace speclab
