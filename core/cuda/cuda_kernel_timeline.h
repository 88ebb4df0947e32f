// Where a forward pass's device time goes, kernel by kernel: CUDA events recorded between the
// launches of one stream, the interval before each mark credited to that mark's label
// ("qkv", "attention", ...). The events sit in the stream between kernels, so an interval is
// the kernel's time plus any gap in which the device waited for the host's next launch; with
// the host ahead of the device (a decode step's launches are queued in microseconds) the gaps
// are small, and the sum of the intervals against the step timed without events says how
// small. Only plain launches can be timed this way (a CUDA graph replays as one unit), so a
// runner with a timeline set runs its steps without graphs. Reused across steps: events are
// created once and recorded again.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace speclab {

class CudaKernelTimeline {
 public:
  CudaKernelTimeline() = default;
  CudaKernelTimeline(const CudaKernelTimeline&) = delete;
  CudaKernelTimeline& operator=(const CudaKernelTimeline&) = delete;
  ~CudaKernelTimeline();

  // Starts a pass on `stream` (records the first event).
  void begin(cudaStream_t stream);
  // The device time since the previous event goes to `label` (a string literal or one that
  // outlives end()).
  void mark(const char* label, cudaStream_t stream);
  // Waits for the pass's last event and adds its intervals to the totals.
  void end();

  // Milliseconds per label summed over the passes so far, and their count.
  const std::map<std::string, double>& totals_ms() const { return totals_ms_; }
  int64_t passes() const { return passes_; }
  // Labels in the order the last pass first marked them (for tables).
  const std::vector<std::string>& order() const { return order_; }

 private:
  cudaEvent_t event_at(size_t i);
  std::vector<cudaEvent_t> events_;  // [marks + 1] of the current pass, reused
  std::vector<const char*> labels_;  // [marks] of the current pass
  size_t used_ = 0;                  // events recorded in the current pass
  std::map<std::string, double> totals_ms_;
  std::vector<std::string> order_;
  int64_t passes_ = 0;
};

}  // namespace speclab
