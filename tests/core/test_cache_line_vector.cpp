// CacheLineVector: storage on a 64-byte boundary at every size, after growth and copies (the
// packed activations of the matmul kernels are read in 64-byte vectors from its start).
#include <gtest/gtest.h>

#include <cstdint>

#include "core/cache_line_vector.h"

namespace speclab {
namespace {

template <class T>
bool on_cache_line(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % 64 == 0;
}

TEST(CacheLineVector, StorageStartsOnACacheLineAtEverySize) {
  // Sizes below and above glibc's mmap threshold (128 KB), where a plain vector's storage
  // starts 16 bytes into a page.
  for (size_t n :
       {size_t{1}, size_t{3}, size_t{17}, size_t{1000}, size_t{40000}, size_t{1} << 20}) {
    CacheLineVector<float> f(n, 1.0f);
    CacheLineVector<uint16_t> h(n);
    CacheLineVector<uint8_t> b(n);
    EXPECT_TRUE(on_cache_line(f.data())) << n;
    EXPECT_TRUE(on_cache_line(h.data())) << n;
    EXPECT_TRUE(on_cache_line(b.data())) << n;
    EXPECT_EQ(f.size(), n);
    EXPECT_EQ(f[n - 1], 1.0f);
  }
}

TEST(CacheLineVector, GrowthAndCopiesKeepTheAlignmentAndTheValues) {
  CacheLineVector<float> v;
  for (int i = 0; i < 100000; i++) {
    v.push_back(static_cast<float>(i));
    ASSERT_TRUE(on_cache_line(v.data())) << i;
  }
  v.resize(300000);
  EXPECT_TRUE(on_cache_line(v.data()));
  EXPECT_EQ(v[99999], 99999.0f);
  const CacheLineVector<float> copy = v;
  EXPECT_TRUE(on_cache_line(copy.data()));
  EXPECT_EQ(copy[12345], 12345.0f);
}

}  // namespace
}  // namespace speclab
