// The machine a result was measured on, for the result row (docs/result-fields.md): speedups
// are only comparable between rows with the same cpu, threads and memory bandwidth (decoding
// small batches is memory-bound: tokens/s ~ bandwidth / bytes of weights).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace speclab {

struct MachineInfo {
  std::string cpu_model;     // /proc/cpuinfo "model name" ("unknown" if absent)
  int cores = 0;             // logical CPUs online
  int threads = 0;           // threads the run uses
  int64_t memory_bytes = 0;  // total RAM (/proc/meminfo MemTotal)
  double mem_read_gbps = 0;  // measured streaming read bandwidth; 0 = not measured
  std::string hostname;
  std::string git_commit;  // short hash of the source tree, "unknown" outside a repo
  // The CUDA device a cuda-backend run uses (speclab_cuda_device_info: name, sm, memory,
  // SMs, runtime and driver), or "none": a build without the CUDA backend, or no device.
  std::string gpu = "none";
};

// Collects the above. threads_in_use: what the run uses (0 = all cores). source_dir: the
// repository to ask git about. measure_bandwidth = false skips the ~0.5 s measurement.
MachineInfo machine_info_collect(int threads_in_use, const std::string& source_dir,
                                 bool measure_bandwidth = true);

// Streaming read bandwidth in GB/s (1e9 bytes/s) over a `bytes` buffer with `threads` OpenMP
// threads (0 = all), for about `seconds`: the best pass of the best of several read probes
// (experiments/measure/read_bandwidth_probe.h), the napkin limit of a memory-bound decode. 512 MB
// defeats every cache level.
double machine_measure_read_bandwidth(size_t bytes = size_t{512} << 20, double seconds = 0.5,
                                      int threads = 0);

// `git rev-parse --short HEAD` in source_dir; "unknown" when that fails.
std::string machine_git_commit(const std::string& source_dir);

}  // namespace speclab
