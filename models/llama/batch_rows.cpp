#include "models/llama/batch_rows.h"

#include "core/error.h"

namespace speclab {

void batch_rows_plan(const BatchRow* rows, int64_t n_rows, const std::vector<KvCacheBook>& books,
                     int64_t vocab, int64_t max_ctx, BatchRowsPlan* plan) {
  SPECLAB_INPUT_CHECK(n_rows >= 1, "forward_batch needs at least one row, got ", n_rows);
  const int64_t n_slots = static_cast<int64_t>(books.size());
  std::vector<int64_t>& count = plan->count;
  count.assign(books.size(), 0);
  plan->group_end.clear();
  for (int64_t r = 0; r < n_rows; r++) {
    const int64_t s = rows[r].slot;
    SPECLAB_INPUT_CHECK(s >= 0 && s < n_slots, "row ", r, ": slot ", s, " is not in [0, ", n_slots,
                        ")");
    SPECLAB_INPUT_CHECK(rows[r].token >= 0 && rows[r].token < vocab, "row ", r, ": token id ",
                        rows[r].token, " is outside the vocabulary [0, ", vocab, ")");
    const bool new_group = r == 0 || rows[r - 1].slot != s;
    SPECLAB_INPUT_CHECK(!new_group || count[s] == 0, "row ", r, ": slot ", s,
                        "'s rows are not consecutive (each slot's rows must form one group)");
    if (new_group && r > 0) plan->group_end.push_back(r);
    count[s]++;
    SPECLAB_INPUT_CHECK(books[s].n_past + count[s] <= max_ctx, "row ", r, ": slot ", s,
                        "'s context of ", books[s].n_past + count[s], " tokens exceeds the limit ",
                        max_ctx);
  }
  plan->group_end.push_back(n_rows);
  plan->positions.resize(static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; r++) {
    const int64_t s = rows[r].slot;
    plan->positions[r] =
        (r > 0 && rows[r - 1].slot == s) ? plan->positions[r - 1] + 1 : books[s].n_past;
  }
}

void batch_rows_check_truncate(const std::vector<KvCacheBook>& books, int64_t slot, int64_t n) {
  const int64_t n_slots = static_cast<int64_t>(books.size());
  SPECLAB_INPUT_CHECK(slot >= 0 && slot < n_slots, "truncate: slot ", slot, " is not in [0, ",
                      n_slots, ")");
  const KvCacheBook& book = books[slot];
  SPECLAB_INPUT_CHECK(n >= 0 && n <= book.n_past, "truncate: slot ", slot, " has ", book.n_past,
                      " positions, cannot keep ", n);
}

void batch_rows_check_slot(const std::vector<KvCacheBook>& books, int64_t slot) {
  const int64_t n_slots = static_cast<int64_t>(books.size());
  SPECLAB_INPUT_CHECK(slot >= 0 && slot < n_slots, "slot ", slot, " is not in [0, ", n_slots, ")");
}

}  // namespace speclab
