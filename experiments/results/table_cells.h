// How the result tables write their cells, shared by the builders of result_tables.cpp and
// prediction_tables.cpp: an optional field as a number, the cell format for readers or for
// machines, a row's flag codes, the median of a list.
#pragma once

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "experiments/results/result_row.h"
#include "experiments/results/table.h"

namespace speclab {

// An optional field as a number, NaN when absent.
inline double row_value(const std::optional<double>& v) { return v.value_or(NAN); }

// How cells are written: for reading (fixed digits, "-" for none, "+5.0%", "[lo, hi]") or
// for machines (csv/json: every digit that matters, "" for none, fractions, lo and hi in
// columns of their own).
struct CellFormat {
  bool machine = false;

  std::string fmt(double v, int digits = 2) const { return table_number(v, digits, machine); }
  std::string none() const { return machine ? "" : "-"; }
  std::string maybe(double v, int digits = 2) const {
    return std::isnan(v) ? none() : fmt(v, digits);
  }
  std::string pct(double v) const {
    if (std::isnan(v)) return none();
    if (machine) return fmt(v);
    char b[64];
    std::snprintf(b, sizeof b, "%+.1f%%", 100 * v);
    return b;
  }
  // A size (an |error|, a half-width): "3.2%", no sign; as pct for machines.
  std::string size_pct(double v) const {
    if (std::isnan(v) || machine) return pct(v);
    char b[64];
    std::snprintf(b, sizeof b, "%.1f%%", 100 * v);
    return b;
  }
  // The speedup interval: one "[lo, hi]" column ("-" for rows without a speedup), or for
  // machines two columns speedup_ci_lo, speedup_ci_hi.
  void interval_header(std::vector<std::string>* h) const {
    if (machine) {
      h->push_back(row_field::speedup_ci_lo);
      h->push_back(row_field::speedup_ci_hi);
    } else {
      h->push_back("interval");
    }
  }
  void interval_cells(const ResultRow& r, std::vector<std::string>* row) const;
};

// The codes of a row's sanity flags ("speedup_above_bound few_prompts"), "" when none.
std::string flag_codes(const ResultRow& r);

// The median of a non-empty list (the mean of the two middle values for an even count).
double median_of(std::vector<double> v);

}  // namespace speclab
