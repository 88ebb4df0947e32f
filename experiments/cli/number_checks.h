// CLI11 validators for numeric flags. CLI::Range compares with < and >, which NaN passes
// (every comparison with NaN is false): `--temperature nan` slipped through it. These also
// refuse NaN and the infinities, so a flag's value is a finite number in its range or the
// command stops with "speclab: arguments: --flag: ..." and exit code 2.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <string>

namespace speclab {

// A finite number in [lo, hi].
inline CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
          return "'" + s + "' is not a finite number in [" + CLI::detail::to_string(lo) + ", " +
                 CLI::detail::to_string(hi) + "]";
        return std::string();
      },
      "FINITE in [" + CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) + "]");
}

// A non-empty value (`--tree ""` is not "no tree": it is a missing shape).
inline CLI::Validator non_empty(const std::string& expected) {
  return CLI::Validator(
      [expected](std::string& s) -> std::string {
        return s.empty() ? "empty value (expected " + expected + ")" : std::string();
      },
      "NON-EMPTY");
}

}  // namespace speclab
