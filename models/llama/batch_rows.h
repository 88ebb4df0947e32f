// The host side of one batched forward (continuous batching): the checks of a batch of rows
// and its layout (each row's position, each slot group's end), and the checks of a per-slot
// rollback. BatchedLlamaRunner (CPU) and CudaBatchedLlamaRunner (CUDA) share them, so both
// accept and refuse the same batches with the same messages.
#pragma once

#include <cstdint>
#include <vector>

#include "core/kv_cache_book.h"
#include "models/llama/batch_token_runner.h"

namespace speclab {

struct BatchRowsPlan {
  std::vector<int64_t> count;      // [n_slots]  rows per slot in this batch
  std::vector<int64_t> positions;  // [n_rows]   n_past(slot) + index within the slot's group
  std::vector<int64_t> group_end;  // [n_groups] one past each slot group's last row
};

// Checks rows[0..n_rows) against the slots' books before anything changes: n_rows >= 1, every
// slot in [0, books.size()), every token in [0, vocab), each slot's rows consecutive (one
// group), and n_past(slot) + count <= max_ctx. Throws InputError (naming the row) on the first
// violation; otherwise fills *plan. Changes no book.
void batch_rows_plan(const BatchRow* rows, int64_t n_rows, const std::vector<KvCacheBook>& books,
                     int64_t vocab, int64_t max_ctx, BatchRowsPlan* plan);

// truncate(slot, n)'s checks: slot in [0, books.size()), 0 <= n <= n_past(slot). InputError.
void batch_rows_check_truncate(const std::vector<KvCacheBook>& books, int64_t slot, int64_t n);

// n_past(slot)'s check: slot in [0, books.size()). InputError.
void batch_rows_check_slot(const std::vector<KvCacheBook>& books, int64_t slot);

}  // namespace speclab
