// std::vector whose storage starts on a cache line (64 bytes, one AVX-512 register).
//
// The matmul kernels read packed activations in 64-byte vectors at offsets that are multiples of
// 64 from the buffer's start. A plain std::vector of a few hundred KB comes from mmap with
// glibc's 16-byte chunk header in front, so every one of those loads straddled two cache lines
// (two L1 accesses): in calls of 12 to 32 tokens, which load an activation vector per 4 FMAs, that
// cost 5-18% of the matmul's rate (docs/findings.md, "Packed activations on a cache line").
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace speclab {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};

  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}  // NOLINT: rebinding is implicit

  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }

  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const {
    return false;
  }
};

template <class T>
using CacheLineVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace speclab
