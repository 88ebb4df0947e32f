#include "experiments/results/table_cells.h"

#include <algorithm>

#include "core/error.h"

namespace speclab {

void CellFormat::interval_cells(const ResultRow& r, std::vector<std::string>* row) const {
  const bool no_speedup = std::isnan(row_value(r.speedup));
  if (machine) {
    row->push_back(no_speedup ? "" : maybe(row_value(r.speedup_ci_lo)));
    row->push_back(no_speedup ? "" : maybe(row_value(r.speedup_ci_hi)));
  } else {
    row->push_back(no_speedup ? "-"
                   : std::isnan(row_value(r.speedup_ci_lo))
                       ? "not estimated"
                       : "[" + maybe(row_value(r.speedup_ci_lo)) + ", " +
                             maybe(row_value(r.speedup_ci_hi)) + "]");
  }
}

std::string flag_codes(const ResultRow& r) {
  std::string o;
  for (const auto& f : r.flags.value_or(std::vector<std::string>{}))
    o += (o.empty() ? "" : " ") + f.substr(0, f.find(':'));
  return o;
}

double median_of(std::vector<double> v) {
  SPECLAB_ASSERT(!v.empty());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace speclab
