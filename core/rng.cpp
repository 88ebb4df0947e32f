#include "core/rng.h"

namespace speclab {
namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1

// SplitMix64 finalizer (Steele et al. 2014): a bijective 64-bit mixer.
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::array<uint32_t, 4> rng_philox4x32_10(std::array<uint32_t, 4> ctr,
                                          std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; round++) {
    if (round > 0) {  // the key schedule bumps before every round but the first
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    const uint64_t prod0 = static_cast<uint64_t>(kPhiloxM0) * ctr[0];
    const uint64_t prod1 = static_cast<uint64_t>(kPhiloxM1) * ctr[2];
    const uint32_t hi0 = static_cast<uint32_t>(prod0 >> 32), lo0 = static_cast<uint32_t>(prod0);
    const uint32_t hi1 = static_cast<uint32_t>(prod1 >> 32), lo1 = static_cast<uint32_t>(prod1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

uint64_t rng_bits64(const RngKey& k) {
  const uint64_t key64 = splitmix64(k.seed ^ splitmix64(k.request));
  const std::array<uint32_t, 4> out =
      rng_philox4x32_10({static_cast<uint32_t>(k.position), static_cast<uint32_t>(k.position >> 32),
                         k.stream, k.index},
                        {static_cast<uint32_t>(key64), static_cast<uint32_t>(key64 >> 32)});
  return (static_cast<uint64_t>(out[0]) << 32) | out[1];
}

double rng_uniform(const RngKey& key) {
  return static_cast<double>(rng_bits64(key) >> 11) * 0x1.0p-53;
}

}  // namespace speclab
