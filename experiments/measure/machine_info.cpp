#include "experiments/measure/machine_info.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>

#include "experiments/measure/read_bandwidth_probe.h"

#ifdef SPECLAB_HAVE_CUDA
#include "core/cuda/cuda_device.h"
#endif

namespace speclab {

namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? "unknown" : line.substr(start);
      }
    }
  }
  return "unknown";
}

int64_t total_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") return kb * 1024;
  return 0;
}

}  // namespace

double machine_measure_read_bandwidth(size_t bytes, double seconds, int threads) {
  return read_bandwidth_measure(bytes, seconds, threads).best_gbps;
}

std::string machine_git_commit(const std::string& source_dir) {
  if (source_dir.find('\'') != std::string::npos) return "unknown";  // would break the quoting
  const std::string cmd = "git -C '" + source_dir + "' rev-parse --short HEAD 2>/dev/null";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "unknown";
  char buf[128] = {0};
  std::string out;
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int rc = ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (rc != 0 || out.empty()) return "unknown";
  return out;
}

MachineInfo machine_info_collect(int threads_in_use, const std::string& source_dir,
                                 bool measure_bandwidth) {
  MachineInfo m;
  m.cpu_model = cpu_model_name();
  m.cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  m.threads = threads_in_use > 0 ? threads_in_use : m.cores;
  m.memory_bytes = total_memory_bytes();
  if (measure_bandwidth)
    m.mem_read_gbps = machine_measure_read_bandwidth(size_t{512} << 20, 0.5, m.threads);
  char host[256] = {0};
  m.hostname = ::gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  m.git_commit = machine_git_commit(source_dir);
#ifdef SPECLAB_HAVE_CUDA
  if (cuda_device_count() > 0) m.gpu = speclab_cuda_device_info();
#endif
  return m;
}

}  // namespace speclab
