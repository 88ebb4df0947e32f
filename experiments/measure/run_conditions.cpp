#include "experiments/measure/run_conditions.h"

#include <array>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include "core/cpu_matmul.h"

#ifndef SPECLAB_BUILD_TYPE
#define SPECLAB_BUILD_TYPE "unknown"
#endif

namespace speclab {

LoadSample run_conditions_sample() {
  LoadSample s;
  std::ifstream load("/proc/loadavg");
  if (!(load >> s.load1)) s.load1 = -1;
  std::ifstream mem("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (mem >> key >> kb >> unit)
    if (key == "MemAvailable:") s.mem_free_gb = kb / (1024.0 * 1024.0);
  return s;
}

RunConditions run_conditions_static(const std::string& source_dir) {
  std::string describe = "unknown";
  const std::string cmd =
      "git -C '" + source_dir + "' describe --always --dirty --abbrev=12 2>/dev/null";
  if (FILE* f = popen(cmd.c_str(), "r")) {
    std::array<char, 256> buf{};
    if (fgets(buf.data(), buf.size(), f)) {
      describe = buf.data();
      while (!describe.empty() && (describe.back() == '\n' || describe.back() == '\r'))
        describe.pop_back();
    }
    pclose(f);
  }
  // The processor as /proc/cpuinfo names it: the marketing string alone hides the stepping a
  // kernel path depends on.
  std::string family = "unknown", model = "unknown", model_name = "unknown";
  std::ifstream cpu("/proc/cpuinfo");
  for (std::string line; std::getline(cpu, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon), value = line.substr(colon + 1);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    if (key == "cpu family" && family == "unknown") family = value;
    if (key == "model" && model == "unknown") model = value;
    if (key == "model name" && model_name == "unknown") model_name = value;
    if (key.empty()) break;  // the first processor is enough
  }
  return {describe, model_name, family, model, SPECLAB_BUILD_TYPE, matmul_isa()};
}

std::string run_conditions_utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace speclab
