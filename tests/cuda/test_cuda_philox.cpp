// The host/device Philox of core/cuda/cuda_philox.h draws exactly what core/rng.h draws
// (checked on the host; the device runs the same source).
#include <gtest/gtest.h>

#include "core/cuda/cuda_philox.h"
#include "core/cuda/cuda_verify_result.h"
#include "core/rng.h"

namespace speclab {
namespace {

TEST(CudaPhilox, BlockFunctionMatchesCore) {
  const std::array<uint32_t, 4> ctrs[] = {{0, 0, 0, 0},
                                          {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                          {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
  const std::array<uint32_t, 2> keys[] = {
      {0, 0}, {0xffffffffu, 0xffffffffu}, {0xa4093822u, 0x299f31d0u}};
  for (int i = 0; i < 3; i++) {
    const std::array<uint32_t, 4> ref = rng_philox4x32_10(ctrs[i], keys[i]);
    uint32_t ctr[4] = {ctrs[i][0], ctrs[i][1], ctrs[i][2], ctrs[i][3]};
    cuda_philox4x32_10(ctr, keys[i][0], keys[i][1]);
    for (int j = 0; j < 4; j++) EXPECT_EQ(ctr[j], ref[j]) << i << "," << j;
  }
}

TEST(CudaPhilox, UniformsMatchCoreForVerifyStreams) {
  for (uint64_t seed : {0ull, 1ull, 0xdeadbeefcafef00dull}) {
    for (uint64_t pos : {0ull, 7ull, 4096ull, (1ull << 33) + 5}) {
      for (uint32_t stream : {kRngAcceptTest, kRngResidualSample, kRngBonusSample}) {
        RngKey k;
        k.seed = seed;
        k.request = 3;
        const RngKey at = rng_key_at(k, pos, stream, 1);
        const CudaRngKey ck = cuda_rng_key_at(cuda_rng_key_from(k), pos, stream, 1);
        EXPECT_EQ(cuda_rng_bits64(ck), rng_bits64(at));
        EXPECT_EQ(cuda_rng_uniform(ck), rng_uniform(at));
      }
    }
  }
}

}  // namespace
}  // namespace speclab
