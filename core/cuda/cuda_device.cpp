#include "core/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace speclab {

int cuda_device_count(std::string* error) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (error) *error = cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  if (n == 0 && error) *error = "0 devices";
  return n;
}

void cuda_keep_stream_ordered_memory() {
  int dev = 0;
  SPECLAB_CUDA_CHECK(cudaGetDevice(&dev), "no CUDA device? see speclab_cuda_device_info()");
  cudaMemPool_t pool = nullptr;
  SPECLAB_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev), "no default memory pool");
  uint64_t keep = kCudaPoolKeepBytes;
  SPECLAB_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
                     "memory pool release threshold not settable");
}

std::string speclab_cuda_device_info() {
  std::string why;
  if (cuda_device_count(&why) == 0)
    fail_input("no CUDA device found (cudaGetDeviceCount: ", why, ")");
  int dev = 0;
  SPECLAB_CUDA_CHECK(cudaGetDevice(&dev), "is CUDA_VISIBLE_DEVICES set to a valid device?");
  cudaDeviceProp prop{};
  SPECLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev), "device properties unavailable");
  int runtime = 0, driver = 0;
  SPECLAB_CUDA_CHECK(cudaRuntimeGetVersion(&runtime), "CUDA runtime not usable");
  SPECLAB_CUDA_CHECK(cudaDriverGetVersion(&driver), "is the NVIDIA driver installed?");
  const double gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
  char mem[32];
  std::snprintf(mem, sizeof(mem), "%.1f", gib);
  return str_cat(prop.name, " (sm_", prop.major, prop.minor, ", ", mem, " GiB, ",
                 prop.multiProcessorCount, " SMs, CUDA runtime ", runtime, ", driver ", driver,
                 ")");
}

int64_t cuda_device_free_bytes() {
  if (cuda_device_count() == 0) return -1;
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    cudaGetLastError();  // clear it, as cuda_device_count does
    return -1;
  }
  return static_cast<int64_t>(free_b);
}

}  // namespace speclab
