// A drafter that runs a Llama model: a small model of the same vocabulary, or the target
// itself with some layers skipped (self-speculation).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/drafters/drafter.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner.h"
#include "models/llama/token_runner.h"

namespace speclab {

class ModelDrafter : public Drafter {
 public:
  // `model` must outlive the drafter. skip_layers as in LlamaRunner (empty = none).
  // make_runner: where the draft model runs (empty = the CPU LlamaRunner).
  ModelDrafter(const LlamaModel& model, std::string name, int64_t max_ctx,
               std::vector<bool> skip_layers = {}, const TokenRunnerFactory& make_runner = {});
  std::string name() const override { return name_; }
  int64_t vocab_size() const override { return runner_->vocab(); }
  bool deterministic() const override { return false; }
  void propose(const std::vector<int32_t>& context, int k, const SamplingParams& params,
               const DraftStopRule& stop, const RngKey& key, DraftProposal* out) override;
  // Samples on the runner's device when it offers to (TokenRunner::draft_on_device: one
  // call per drafted token, only the id and its scalars cross to the host, q stays there);
  // otherwise propose().
  void propose_keeping_q_on_device(const std::vector<int32_t>& context, int k,
                                   const SamplingParams& params, const DraftStopRule& stop,
                                   const RngKey& key, DraftProposal* out) override;
  void fetch_q(DraftProposal* out) override;
  // Builds the tree level by level: one draft forward_tree pass per level over all of its
  // nodes (tree attention), then rolls its cache back to the committed context; the
  // accepted path is caught up in one batch at the next round.
  void propose_tree(const std::vector<int32_t>& context, const TreeShape& shape,
                    const SamplingParams& params, const RngKey& key, DraftTree* out) override;
  void reset() override;
  const LlamaModel* model() const override { return &model_; }

 private:
  std::string name_;
  const LlamaModel& model_;
  std::unique_ptr<TokenRunner> runner_;  // LlamaRunner, or the target's backend's runner
  // Rolls back to the longest common prefix of fed_ and context (keeping at least the last
  // token to feed); returns that prefix's length.
  int64_t roll_back(const std::vector<int32_t>& context);
  // roll_back, then feeds the rest; returns the logits of context.back(), [vocab].
  const float* catch_up(const std::vector<int32_t>& context, int64_t* n_calls);
  void propose_chain(const std::vector<int32_t>& context, int k, const SamplingParams& params,
                     const DraftStopRule& stop, const RngKey& key, bool on_device,
                     DraftProposal* out);

  std::vector<int32_t> fed_;  // tokens whose K/V are in runner_'s cache, in order
};

}  // namespace speclab
