// CLI11 validators for numeric flags. CLI::Range compares with < and >, which NaN passes
// (every comparison with NaN is false): `--temperature nan` slipped through it. These also
// refuse NaN and the infinities, so a flag's value is a finite number in its range or the
// command stops with "speclab: arguments: --flag: ..." and exit code 2.
#pragma once

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "models/tokenizer/utf8.h"

namespace speclab {

// A finite number in [lo, hi], or (lo, hi] when lo_open (top-p and lenience: 0 is no law). The
// flags it checks are held as floats by the sampler, where a nonzero value below 1e-30 is 0 or
// a denormal: refused too, as a config's sweep refuses it.
inline CLI::Validator finite_range(double lo, double hi, bool lo_open = false) {
  const std::string range = std::string(lo_open ? "(" : "[") + CLI::detail::to_string(lo) + ", " +
                            CLI::detail::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, lo_open, range](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi ||
            (lo_open && v == lo))
          return "'" + s + "' is not a finite number in " + range;
        if (v != 0 && std::fabs(v) < 1e-30)
          return "'" + s + "' is below 1e-30 (the sampler computes in float, where it is 0)";
        return std::string();
      },
      "FINITE in " + range);
}

// A whole number in [0, max] written in decimal digits: "-1" would wrap to 2^64 - 1 and
// "99999999999999999999" saturate when read as an unsigned integer.
inline CLI::Validator unsigned_up_to(unsigned long long max) {
  return CLI::Validator(
      [max](std::string& s) -> std::string {
        errno = 0;
        const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
        const unsigned long long v = digits ? std::strtoull(s.c_str(), nullptr, 10) : 0;
        if (!digits || errno == ERANGE || v > max)
          return "'" + s + "' is not a whole number in [0, " + std::to_string(max) + "]";
        return std::string();
      },
      "UINT in [0, " + std::to_string(max) + "]");
}

// A non-empty value (`--tree ""` is not "no tree": it is a missing shape).
inline CLI::Validator non_empty(const std::string& expected) {
  return CLI::Validator(
      [expected](std::string& s) -> std::string {
        return s.empty() ? "empty value (expected " + expected + ")" : std::string();
      },
      "NON-EMPTY");
}

// UTF-8 text (a prompt, a --text): a tokenizer would turn bytes that are no UTF-8 into
// U+FFFD without a word, so they are refused, as in configs.
inline CLI::Validator utf8_text() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        for (size_t pos = 0; pos < s.size(); pos += utf8_sequence_length(s, pos))
          if (!utf8_is_valid_at(s, pos)) {
            char b[8];
            std::snprintf(b, sizeof b, "0x%02X", static_cast<unsigned char>(s[pos]));
            return std::string("invalid UTF-8 byte ") + b + " at byte " + std::to_string(pos) +
                   " (expected UTF-8 text)";
          }
        return std::string();
      },
      "UTF-8");
}

}  // namespace speclab
