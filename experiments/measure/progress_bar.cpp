#include "experiments/measure/progress_bar.h"

#include <unistd.h>

#include <cmath>

#include "core/error.h"

namespace speclab {

std::string progress_format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  const long s = std::lround(seconds);
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%lds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  return buf;
}

std::string progress_format(int done, int total, double elapsed_s, int bar_width,
                            const std::string& label) {
  const double eta = done > 0 ? elapsed_s / done * (total - done) : -1;
  const std::string times =
      "elapsed " + progress_format_duration(elapsed_s) + "  ETA " + progress_format_duration(eta);
  std::string line;
  if (bar_width > 0) {
    const int filled =
        total > 0 ? static_cast<int>(static_cast<int64_t>(bar_width) * done / total) : bar_width;
    line = "[" + std::string(static_cast<size_t>(filled), '#') +
           std::string(static_cast<size_t>(bar_width - filled), '.') + "]  " +
           str_cat(done, "/", total, " cells  ") + times;
  } else {
    line = str_cat("[", done, "/", total, "] ") + times;
  }
  if (!label.empty()) line += "  " + label;
  return line;
}

ProgressBar::ProgressBar(int total, std::FILE* out)
    : total_(total),
      out_(out),
      tty_(::isatty(::fileno(out)) == 1),
      start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(int done, const std::string& label) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tty_) {
    // \r + clear to end of line (ANSI): the bar redraws in place.
    std::fprintf(out_, "\r%s\x1b[K", progress_format(done, total_, elapsed, 20, label).c_str());
    drawn_ = true;
  } else {
    std::fprintf(out_, "%s\n", progress_format(done, total_, elapsed, 0, label).c_str());
  }
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (tty_ && drawn_) std::fprintf(out_, "\n");
  drawn_ = false;
  std::fflush(out_);
}

}  // namespace speclab
