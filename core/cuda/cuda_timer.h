// Device time between two points of a stream, measured with CUDA events.
//   CudaEventTimer timer;
//   timer.start(stream); ...kernels...; double ms = timer.stop_ms(stream);
#pragma once

#include <cuda_runtime.h>

namespace speclab {

class CudaEventTimer {
 public:
  CudaEventTimer();
  ~CudaEventTimer();
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  void start(cudaStream_t stream = nullptr);
  // Records the stop event, waits for it, returns milliseconds since start().
  double stop_ms(cudaStream_t stream = nullptr);

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace speclab
