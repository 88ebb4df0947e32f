// speclab_cuda_device_info: a description with a device, the InputError the CLI maps to exit
// code 2 without one. Runs on every machine.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "core/cuda/cuda_device.h"
#include "core/error.h"
#include "tests/cuda/cuda_test_util.h"

namespace speclab {
namespace {

TEST(CudaDeviceInfo, DescribesTheDeviceOrSaysWhyNot) {
  std::string why;
  const int n = cuda_device_count(&why);
  if (n > 0) {
    const std::string info = speclab_cuda_device_info();
    EXPECT_NE(info.find("sm_"), std::string::npos) << info;
    return;
  }
  EXPECT_FALSE(why.empty());
  try {
    speclab_cuda_device_info();
    FAIL() << "expected InputError without a device";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "no CUDA device found (cudaGetDeviceCount: " + why + ")");
  }
}

// Freed stream-ordered memory stays in the pool across a synchronization once the runners'
// setting is made (without it the default release threshold, 0, hands it back to the driver
// at the synchronization, and the reserved bytes fall to what is still allocated).
TEST(CudaDevicePool, FreedScratchStaysReservedAcrossSynchronization) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  int dev = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, dev), cudaSuccess);
  auto reserved_after_free = [&](size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMallocAsync(&p, bytes, nullptr), cudaSuccess);
    EXPECT_EQ(cudaFreeAsync(p, nullptr), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    uint64_t reserved = 0;
    EXPECT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
              cudaSuccess);
    return reserved;
  };
  const size_t bytes = size_t{64} << 20;
  uint64_t zero = 0;
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &zero), cudaSuccess);
  EXPECT_LT(reserved_after_free(bytes), bytes) << "the planted default kept the memory";
  cuda_keep_stream_ordered_memory();
  uint64_t keep = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), cudaSuccess);
  EXPECT_EQ(keep, kCudaPoolKeepBytes);
  EXPECT_GE(reserved_after_free(bytes), bytes);
}

}  // namespace
}  // namespace speclab
