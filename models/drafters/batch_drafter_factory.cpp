// batch_drafter_create: the drafter of a spec for many requests at once (the grammar of
// drafter_create, drafter_factory.cpp).
#include "core/error.h"
#include "models/drafters/batch_drafter.h"
#include "models/drafters/batched_model_drafter.h"
#include "models/llama/batched_llama_runner.h"
#include "models/llama/llama_model.h"

namespace speclab {

namespace {

// A BatchedModelDrafter that owns its model and its batched runner.
class OwningBatchedModelDrafter : public BatchedModelDrafter {
 public:
  OwningBatchedModelDrafter(std::unique_ptr<LlamaModel> model,
                            std::unique_ptr<BatchTokenRunner> runner, const std::string& name)
      : BatchedModelDrafter(*runner, name, model.get()),
        model_(std::move(model)),
        runner_(std::move(runner)) {}

 private:
  // The base holds references to *model_ and *runner_, which stay put when the pointers move.
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<BatchTokenRunner> runner_;
};

}  // namespace

std::unique_ptr<BatchDrafter> batch_drafter_create(const std::string& spec,
                                                   const LlamaModel& target, int64_t n_slots,
                                                   int64_t max_ctx,
                                                   const BatchTokenRunnerFactory& make_batched) {
  SPECLAB_INPUT_CHECK(n_slots >= 1, "drafter '", spec, "': ", n_slots,
                      " slots (expected at least 1)");
  if (drafter_spec_is_model(spec))
    return batch_drafter_create_model(llama_load(spec), spec, target, n_slots, max_ctx,
                                      make_batched);
  std::vector<std::unique_ptr<Drafter>> drafters;
  for (int64_t s = 0; s < n_slots; s++) drafters.push_back(drafter_create(spec, target, max_ctx));
  return std::make_unique<PerSlotDrafters>(std::move(drafters));
}

std::unique_ptr<BatchDrafter> batch_drafter_create_model(
    std::unique_ptr<LlamaModel> model, const std::string& spec, const LlamaModel& target,
    int64_t n_slots, int64_t max_ctx, const BatchTokenRunnerFactory& make_batched) {
  SPECLAB_INPUT_CHECK(n_slots >= 1, "drafter '", spec, "': ", n_slots,
                      " slots (expected at least 1)");
  SPECLAB_INPUT_CHECK(model->config.max_seq_len <= 0 || max_ctx <= model->config.max_seq_len,
                      "drafter '", spec, "': a context of ", max_ctx,
                      " tokens (generation.ctx) exceeds the draft model's context length ",
                      model->config.max_seq_len);
  SPECLAB_INPUT_CHECK(model->config.vocab_size == target.config.vocab_size, "draft '", spec,
                      "': vocabulary of ", model->config.vocab_size, " tokens, the target has ",
                      target.config.vocab_size);
  std::unique_ptr<BatchTokenRunner> runner =
      make_batched ? make_batched(*model, n_slots, max_ctx)
                   : std::make_unique<BatchedLlamaRunner>(*model, n_slots, max_ctx);
  return std::make_unique<OwningBatchedModelDrafter>(std::move(model), std::move(runner), spec);
}

}  // namespace speclab
