// speclab_cuda_device_info: a description with a device, the InputError the CLI maps to exit
// code 2 without one. Runs on every machine.
#include <gtest/gtest.h>

#include <string>

#include "core/cuda/cuda_device.h"
#include "core/error.h"

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

}  // namespace
}  // namespace speclab
