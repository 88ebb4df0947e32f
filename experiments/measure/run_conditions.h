// The conditions a cell was measured under, recorded in its row so that a reader can judge a
// timing: when (UTC), how loaded the machine was before and after, how much memory was free,
// which source tree (git describe --dirty: a modified tree says so), which build and which
// kernel ISA path ran.
#pragma once

#include <string>

namespace speclab {

struct LoadSample {
  double load1 = 0;        // /proc/loadavg, 1-minute average (-1 when unreadable)
  double mem_free_gb = 0;  // /proc/meminfo MemAvailable
};
LoadSample run_conditions_sample();

// Fixed for a run.
struct RunConditions {
  std::string git_describe;    // git describe --always --dirty --abbrev=12
  std::string cpu_model_name;  // /proc/cpuinfo of processor 0
  std::string cpu_family, cpu_model;
  std::string build_type;  // CMake build type
  std::string matmul_isa;  // the kernel path dispatched at run time
};
RunConditions run_conditions_static(const std::string& source_dir);

// The current time as "YYYY-MM-DDTHH:MM:SSZ".
std::string run_conditions_utc_now();

}  // namespace speclab
