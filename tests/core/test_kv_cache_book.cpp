// The KV-cache bookkeeping both runners share (core/kv_cache_book.h): sizes, append and
// rollback by position, the tree slots' life cycle, and the one argument check of a
// forward pass with its exact messages.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/kv_cache_book.h"

namespace speclab {
namespace {

std::string input_error(const KvCacheBook& b, const std::vector<int32_t>& tokens, int64_t n,
                        int64_t vocab) {
  try {
    b.check_append(tokens.data(), n, vocab);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(KvCacheBook, SizesAndOffsets) {
  const KvCacheBook b = kv_cache_book_make(4096, 8, 64);
  EXPECT_EQ(b.kv_dim(), 512);
  EXPECT_EQ(b.layer_floats(), size_t{4096} * 512);
  EXPECT_EQ(b.layer_bytes(), sizeof(float) * 4096 * 512);
  EXPECT_EQ(b.row_offset(0), 0);
  EXPECT_EQ(b.row_offset(3), 3 * 512);
  EXPECT_EQ(b.n_past, 0);
  EXPECT_EQ(b.linear_len, 0);
}

TEST(KvCacheBook, AppendTruncateIsPositionBookkeeping) {
  KvCacheBook b = kv_cache_book_make(16, 2, 4);
  b.commit_linear(10);
  EXPECT_EQ(b.n_past, 10);
  EXPECT_EQ(b.linear_len, 10);
  b.truncate(7);  // 3 drafts rejected
  EXPECT_EQ(b.n_past, 7);
  EXPECT_EQ(b.linear_len, 7);
  b.commit_linear(9);
  EXPECT_EQ(b.n_past, 16);
  b.truncate(16);  // no-op
  EXPECT_EQ(b.n_past, 16);
  b.truncate(0);
  EXPECT_EQ(b.n_past, 0);
  EXPECT_EQ(b.linear_len, 0);
}

// A tree pass appends non-linear slots; keep_path makes a path linear and forgets the rest;
// truncate below the tree drops it too.
TEST(KvCacheBook, TreeSlotsUntilKeepPathOrTruncate) {
  KvCacheBook b = kv_cache_book_make(32, 1, 2);
  b.commit_linear(5);
  b.commit_tree(7);
  EXPECT_TRUE(b.has_tree());
  EXPECT_EQ(b.n_past, 12);
  EXPECT_EQ(b.linear_len, 5);
  b.keep_path(5, 3);
  EXPECT_FALSE(b.has_tree());
  EXPECT_EQ(b.n_past, 8);
  EXPECT_EQ(b.linear_len, 8);
  b.commit_tree(4);
  b.truncate(6);  // below the tree: back to a shorter linear sequence
  EXPECT_FALSE(b.has_tree());
  EXPECT_EQ(b.linear_len, 6);
  b.commit_tree(2);
  b.truncate(7);  // inside the tree: slot 6 stays a tree slot
  EXPECT_TRUE(b.has_tree());
  EXPECT_EQ(b.linear_len, 6);
}

// The messages both runners give for a bad forward call (tests/llama and tests/cuda check
// that the runners reach this check).
TEST(KvCacheBook, CheckAppendMessagesAndNoChange) {
  KvCacheBook b = kv_cache_book_make(8, 1, 2);
  b.commit_linear(6);
  const std::vector<int32_t> ok = {1, 2, 3};
  EXPECT_EQ(input_error(b, ok, 3, 10), "context of 9 tokens exceeds the limit 8");
  EXPECT_EQ(input_error(b, ok, 0, 10), "forward needs at least one token, got 0");
  EXPECT_EQ(input_error(b, {1, 10}, 2, 10),
            "token id 10 at index 1 is outside the vocabulary [0, 10)");
  EXPECT_EQ(input_error(b, {-1}, 1, 10),
            "token id -1 at index 0 is outside the vocabulary [0, 10)");
  EXPECT_EQ(input_error(b, ok, 2, 10), "no error");
  EXPECT_EQ(b.n_past, 6);  // checks change nothing
}

TEST(KvCacheBook, BadShapeIsInputError) {
  EXPECT_THROW(kv_cache_book_make(0, 8, 64), InputError);
  EXPECT_THROW(kv_cache_book_make(16, 0, 64), InputError);
  EXPECT_THROW(kv_cache_book_make(16, 8, 0), InputError);
}

}  // namespace
}  // namespace speclab
