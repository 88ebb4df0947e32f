// Shared helpers of the CUDA tests: skipping without a device, device round trips, and
// comparison with the CPU reference at a stated tolerance (|got - ref| <= atol + rtol*|ref|),
// printing the first mismatches.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda/cuda_buffer.h"
#include "core/cuda/cuda_device.h"
#include "models/decode/generation.h"

// Device tests start with this: without a device they skip with the runtime's reason.
#define SPECLAB_REQUIRE_CUDA_DEVICE()                       \
  do {                                                      \
    std::string speclab_why_;                               \
    if (::speclab::cuda_device_count(&speclab_why_) == 0) { \
      GTEST_SKIP() << "no CUDA device: " << speclab_why_;   \
    }                                                       \
  } while (0)

namespace speclab {

// The decoder tests' request: a 5-token prompt, 24 new tokens, at this temperature and seed.
inline GenerationRequest decoder_request(float temperature, uint64_t seed) {
  GenerationRequest req;
  req.prompt = {1, 17, 4, 99, 23};
  req.max_new_tokens = 24;
  req.seed = seed;
  req.sampling.temperature = temperature;
  return req;
}

template <typename T>
CudaBuffer<T> to_device(const std::vector<T>& host) {
  CudaBuffer<T> d(host.empty() ? 1 : host.size());
  if (!host.empty()) d.upload(host.data(), host.size());
  return d;
}

template <typename T>
std::vector<T> to_host(const CudaBuffer<T>& d, size_t n) {
  std::vector<T> host(n);
  d.download(host.data(), n);
  return host;
}

// Counts and prints (first 5) elements outside atol + rtol * |ref|.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& ref, double atol,
                         double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < ref.size(); i++) {
    const double tol = atol + rtol * std::fabs(ref[i]);
    if (!(std::fabs(static_cast<double>(got[i]) - ref[i]) <= tol)) {
      if (bad < 5) {
        ADD_FAILURE() << what << ": [" << i << "] got " << got[i] << " ref " << ref[i] << " (tol "
                      << tol << ")";
      }
      bad++;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << ref.size() << " outside tolerance";
}

}  // namespace speclab
