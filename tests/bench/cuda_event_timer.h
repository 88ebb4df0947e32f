// Device time between two points of a stream, measured with CUDA events (benchmarks only:
// the product times whole synchronized calls on the host).
//   CudaEventTimer timer;
//   timer.start(stream); ...kernels...; double ms = timer.stop_ms(stream);
#pragma once

#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"

namespace speclab {

class CudaEventTimer {
 public:
  CudaEventTimer() {
    SPECLAB_CUDA_CHECK(cudaEventCreate(&start_),
                       "no CUDA device? check speclab_cuda_device_info()");
    SPECLAB_CUDA_CHECK(cudaEventCreate(&stop_), "no CUDA device? check speclab_cuda_device_info()");
  }
  ~CudaEventTimer() {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  void start(cudaStream_t stream = nullptr) {
    SPECLAB_CUDA_CHECK(cudaEventRecord(start_, stream), "invalid stream?");
  }
  // Records the stop event, waits for it, returns milliseconds since start().
  double stop_ms(cudaStream_t stream = nullptr) {
    SPECLAB_CUDA_CHECK(cudaEventRecord(stop_, stream), "invalid stream?");
    SPECLAB_CUDA_CHECK(cudaEventSynchronize(stop_), "a kernel in the timed region failed");
    float ms = 0.0f;
    SPECLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_), "start() not called?");
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace speclab
