// The Philox4x32-10 generator of core/rng.h, written once for host and device.
//
// cuda_verify.cu draws its accept tests and residual / bonus samples with these functions,
// so a device round consumes exactly the uniforms the CPU verifier would for the same
// RngKey. tests/cuda/test_cuda_philox.cpp checks them against core/rng.cpp on the host.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SPECLAB_HOST_DEVICE __host__ __device__
#else
#define SPECLAB_HOST_DEVICE
#endif

namespace speclab {

// Plain-old-data twin of RngKey (core/rng.h) that a kernel can take by value.
struct CudaRngKey {
  uint64_t seed;
  uint64_t request;
  uint64_t position;
  uint32_t stream;
  uint32_t index;
};

SPECLAB_HOST_DEVICE inline uint64_t cuda_splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// ctr[4] is replaced by the Philox4x32-10 block of (ctr, key[2]).
SPECLAB_HOST_DEVICE inline void cuda_philox4x32_10(uint32_t ctr[4], uint32_t key0, uint32_t key1) {
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      key0 += 0x9E3779B9u;
      key1 += 0xBB67AE85u;
    }
    const uint64_t prod0 = static_cast<uint64_t>(0xD2511F53u) * ctr[0];
    const uint64_t prod1 = static_cast<uint64_t>(0xCD9E8D57u) * ctr[2];
    const uint32_t hi0 = static_cast<uint32_t>(prod0 >> 32), lo0 = static_cast<uint32_t>(prod0);
    const uint32_t hi1 = static_cast<uint32_t>(prod1 >> 32), lo1 = static_cast<uint32_t>(prod1);
    const uint32_t c1 = ctr[1], c3 = ctr[3];
    ctr[0] = hi1 ^ c1 ^ key0;
    ctr[1] = lo1;
    ctr[2] = hi0 ^ c3 ^ key1;
    ctr[3] = lo0;
  }
}

// rng_bits64 of core/rng.h.
SPECLAB_HOST_DEVICE inline uint64_t cuda_rng_bits64(const CudaRngKey& k) {
  const uint64_t key64 = cuda_splitmix64(k.seed ^ cuda_splitmix64(k.request));
  uint32_t ctr[4] = {static_cast<uint32_t>(k.position), static_cast<uint32_t>(k.position >> 32),
                     k.stream, k.index};
  cuda_philox4x32_10(ctr, static_cast<uint32_t>(key64), static_cast<uint32_t>(key64 >> 32));
  return (static_cast<uint64_t>(ctr[0]) << 32) | ctr[1];
}

// rng_uniform of core/rng.h: [0, 1) with 53-bit resolution.
SPECLAB_HOST_DEVICE inline double cuda_rng_uniform(const CudaRngKey& k) {
  return static_cast<double>(cuda_rng_bits64(k) >> 11) * (1.0 / 9007199254740992.0);
}

SPECLAB_HOST_DEVICE inline CudaRngKey cuda_rng_key_at(CudaRngKey base, uint64_t position,
                                                      uint32_t stream, uint32_t index = 0) {
  base.position = position;
  base.stream = stream;
  base.index = index;
  return base;
}

}  // namespace speclab
