// Host-side bookkeeping of the device KV cache (no GPU needed).
#include <gtest/gtest.h>

#include "core/cuda/cuda_kv_cache_book.h"
#include "core/error.h"

namespace speclab {
namespace {

TEST(CudaKvCacheBook, SizesAndOffsets) {
  const CudaKvCacheBook b = cuda_kv_cache_book_make(4096, 8, 64);
  EXPECT_EQ(b.kv_dim(), 512);
  EXPECT_EQ(b.layer_bytes(), sizeof(float) * 4096 * 512);
  EXPECT_EQ(b.row_offset(0), 0);
  EXPECT_EQ(b.row_offset(3), 3 * 512);
  EXPECT_EQ(b.n_past, 0);
}

TEST(CudaKvCacheBook, AppendTruncateIsPositionBookkeeping) {
  CudaKvCacheBook b = cuda_kv_cache_book_make(16, 2, 4);
  b.check_append(10);
  b.commit(10);
  EXPECT_EQ(b.n_past, 10);
  b.truncate(7);  // 3 drafts rejected
  EXPECT_EQ(b.n_past, 7);
  b.check_append(9);
  b.commit(9);
  EXPECT_EQ(b.n_past, 16);
  b.truncate(16);  // no-op
  b.truncate(0);
  EXPECT_EQ(b.n_past, 0);
}

TEST(CudaKvCacheBook, OverflowAndEmptyBatchAreInputErrors) {
  CudaKvCacheBook b = cuda_kv_cache_book_make(8, 1, 2);
  b.commit(6);
  try {
    b.check_append(3);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "context of 9 tokens exceeds the limit 8");
  }
  EXPECT_THROW(b.check_append(0), InputError);
  EXPECT_NO_THROW(b.check_append(2));
  EXPECT_EQ(b.n_past, 6);  // checks change nothing
}

TEST(CudaKvCacheBook, BadShapeIsInputError) {
  EXPECT_THROW(cuda_kv_cache_book_make(0, 8, 64), InputError);
  EXPECT_THROW(cuda_kv_cache_book_make(16, 0, 64), InputError);
  EXPECT_THROW(cuda_kv_cache_book_make(16, 8, 0), InputError);
}

}  // namespace
}  // namespace speclab
