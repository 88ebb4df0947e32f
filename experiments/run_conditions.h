// The conditions a cell was measured under, recorded in its row so that a reader can judge a
// timing: when (UTC), how loaded the machine was before and after, how much memory was free,
// which source tree (git describe --dirty: a modified tree says so), which build and which
// kernel ISA path ran.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace speclab {

struct LoadSample {
  double load1 = 0;        // /proc/loadavg, 1-minute average (-1 when unreadable)
  double mem_free_gb = 0;  // /proc/meminfo MemAvailable
};
LoadSample run_conditions_sample();

// Fixed for a run: {run_git_describe, run_cpu_model_name, run_cpu_family, run_cpu_model,
// run_build_type, run_matmul_isa}.
nlohmann::json run_conditions_static(const std::string& source_dir);

// The current time as "YYYY-MM-DDTHH:MM:SSZ".
std::string run_conditions_utc_now();

}  // namespace speclab
