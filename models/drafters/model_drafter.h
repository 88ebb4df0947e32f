// A drafter that runs a Llama model: a small model of the same vocabulary, or the target
// itself with some layers skipped (self-speculation).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/drafters/drafter.h"
#include "models/llama/llama_forward.h"
#include "models/llama/llama_model.h"

namespace speclab {

class ModelDrafter : public Drafter {
 public:
  // `model` must outlive the drafter. skip_layers as in LlamaRunner (empty = none).
  ModelDrafter(const LlamaModel& model, std::string name, int64_t max_ctx,
               std::vector<bool> skip_layers = {});
  std::string name() const override { return name_; }
  int64_t vocab_size() const override { return runner_.vocab(); }
  bool deterministic() const override { return false; }
  void propose(const std::vector<int32_t>& context, int k, const SamplingParams& params,
               const DraftStopRule& stop, const RngKey& key, DraftProposal* out) override;
  void reset() override;
  const LlamaModel* model() const override { return &runner_.model(); }

 private:
  std::string name_;
  LlamaRunner runner_;
  std::vector<int32_t> fed_;  // tokens whose K/V are in runner_'s cache, in order
};

}  // namespace speclab
