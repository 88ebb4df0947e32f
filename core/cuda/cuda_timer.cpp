#include "core/cuda/cuda_timer.h"

#include "core/cuda/cuda_check.h"

namespace speclab {

CudaEventTimer::CudaEventTimer() {
  SPECLAB_CUDA_CHECK(cudaEventCreate(&start_), "no CUDA device? check speclab_cuda_device_info()");
  SPECLAB_CUDA_CHECK(cudaEventCreate(&stop_), "no CUDA device? check speclab_cuda_device_info()");
}

CudaEventTimer::~CudaEventTimer() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
}

void CudaEventTimer::start(cudaStream_t stream) {
  SPECLAB_CUDA_CHECK(cudaEventRecord(start_, stream), "invalid stream?");
}

double CudaEventTimer::stop_ms(cudaStream_t stream) {
  SPECLAB_CUDA_CHECK(cudaEventRecord(stop_, stream), "invalid stream?");
  SPECLAB_CUDA_CHECK(cudaEventSynchronize(stop_), "a kernel in the timed region failed");
  float ms = 0.0f;
  SPECLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_), "start() not called?");
  return ms;
}

}  // namespace speclab
