// Run progress on stderr: one redrawn line on a terminal, one plain line per cell otherwise
// (so logs and CI output stay readable).
//   terminal:  [##########..........]  18/36 cells  elapsed 1m04s  ETA 1m04s  draft-2m g=4 T=0
//   log:       [18/36] elapsed 1m04s  ETA 1m04s  draft-2m g=4 T=0
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace speclab {

// "42s", "1m04s", "2h03m"; negative or non-finite -> "--".
std::string progress_format_duration(double seconds);

// The bar line without '\r' or '\n'. ETA = elapsed / done * (total - done), "--" before the
// first cell. bar_width = number of cells in the [...] bar; 0 = the plain log form.
std::string progress_format(int done, int total, double elapsed_s, int bar_width,
                            const std::string& label);

class ProgressBar {
 public:
  // `out` defaults to stderr; the bar form is used only when `out` is a terminal.
  explicit ProgressBar(int total, std::FILE* out = stderr);
  // Reports `done` finished cells; `label` names the cell just finished (or running).
  void update(int done, const std::string& label);
  // Ends the terminal line (newline) so later output starts clean.
  void finish();

 private:
  int total_;
  std::FILE* out_;
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace speclab
