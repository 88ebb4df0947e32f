// What the batched decoders need from a model serving many sequences at once: one forward over
// rows of several sequence slots (continuous batching), and a rollback per slot. The
// batched counterpart of TokenRunner: BatchedLlamaRunner (CPU) implements it, and tests
// implement it with hand-made laws, so the batched decoder's exactness is tested on the same
// loop that the models run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace speclab {

struct LlamaModel;

// One row of a batch: token `token` appended to sequence slot `slot` (llama_batch's
// (token, seq_id) pair; the position is implied by the slot's n_past).
struct BatchRow {
  int32_t slot = 0;
  int32_t token = 0;
};

class BatchTokenRunner {
 public:
  virtual ~BatchTokenRunner() = default;
  // Runs rows[0..n_rows): each slot's rows are consecutive in `rows` (grouped per slot, a
  // slot at most once) and are appended in order at positions [n_past(slot), n_past(slot) +
  // count). Returns logits [n_rows, vocab] row-major in row order, or, if last_only, one row
  // per slot group [n_groups, vocab] (each group's last row, in group order); valid until the
  // next call. Bad rows throw InputError and leave every slot unchanged.
  virtual const float* forward_batch(const BatchRow* rows, int64_t n_rows,
                                     bool last_only = false) = 0;
  const float* forward_batch(const std::vector<BatchRow>& rows, bool last_only = false) {
    return forward_batch(rows.data(), static_cast<int64_t>(rows.size()), last_only);
  }
  // O(1) rollback of one slot: forgets its positions >= n (0 <= n <= n_past(slot)).
  virtual void truncate(int64_t slot, int64_t n) = 0;
  virtual int64_t n_slots() const = 0;
  virtual int64_t n_past(int64_t slot) const = 0;
  virtual int64_t max_ctx() const = 0;  // positions per slot
  virtual int64_t vocab() const = 0;
};

// Makes a batched runner for a model on some backend: (model, n_slots, max_ctx). Batched
// drafters that run a model take one, so a draft model runs where the target runs
// (experiments/measure/backend.h makes it from generation.backend / --backend). An empty
// factory means the CPU's BatchedLlamaRunner.
using BatchTokenRunnerFactory = std::function<std::unique_ptr<BatchTokenRunner>(
    const LlamaModel& model, int64_t n_slots, int64_t max_ctx)>;

}  // namespace speclab
