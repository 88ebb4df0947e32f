// The drafter interface: anything that proposes tokens for the target to verify.
//
// A drafter sees the whole committed context (prompt + accepted tokens) at each round and
// proposes up to k tokens with the distributions q it sampled them from. Rollback is implicit:
// model drafters keep a KV cache and truncate it to the longest common prefix of what they
// have fed and the new context (llama.cpp's "rollback is truncation by position"), then
// catch up lazily on tokens they have not seen (the correction or bonus token, the prompt).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/sampling.h"
#include "core/token_tree.h"
#include "models/llama/token_runner.h"

namespace speclab {

struct LlamaModel;

struct DraftProposal {
  std::vector<int32_t> tokens;  // [n] proposed ids, n <= k (a drafter may propose fewer, even 0)
  // [n, vocab] the standardized distributions the tokens were drawn from; empty for a
  // deterministic drafter (q is one-hot at each token, which the verifier handles exactly).
  std::vector<float> q;
  // Set instead of q when a model drafter sampled on its runner's device
  // (propose_keeping_q_on_device, TokenRunner::draft_on_device): [n, vocab] device rows,
  // valid until the drafter's next call. fetch_q brings them to the host.
  const float* q_device = nullptr;
  std::vector<float> top_prob;      // [n] max_x q_i(x) (1 for deterministic drafters)
  std::vector<float> entropy_norm;  // [n] entropy of q_i / log(vocab), in [0, 1]
  double seconds = 0;               // wall time spent proposing (incl. catch-up)
  double forward_s = 0;             // of seconds: the draft model's forward calls (the rest is
                                    // sampling and bookkeeping; 0 for model-free drafters)
  int64_t n_forward_calls = 0;      // model forward calls made (0 for model-free drafters)
};

// When to stop drafting early within a round (llama.cpp's p_min rule): 0 disables.
struct DraftStopRule {
  float p_min = 0.0f;  // stop before proposing a token whose q-probability is below p_min
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::string name() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual bool deterministic() const = 0;
  // context: every committed token so far (prompt + generated). Proposes up to k tokens drawn
  // with `params` (the draft temperature may differ from the target's) using random keys
  // derived from `key` (position = absolute position of each drafted token).
  virtual void propose(const std::vector<int32_t>& context, int k, const SamplingParams& params,
                       const DraftStopRule& stop, const RngKey& key, DraftProposal* out) = 0;
  // As propose(), for a round verified on the device (TokenRunner::verify_on_device): a
  // drafter whose runner samples on the device may leave q there (out->q empty,
  // out->q_device set); the tokens, top_prob and entropy_norm are propose()'s, up to float
  // summation order. The default is propose().
  virtual void propose_keeping_q_on_device(const std::vector<int32_t>& context, int k,
                                           const SamplingParams& params, const DraftStopRule& stop,
                                           const RngKey& key, DraftProposal* out) {
    propose(context, k, params, stop, key, out);
  }
  // Brings q_device rows to out->q (and clears q_device): for a round whose verification
  // falls back to the host. Nothing to do when q is already on the host.
  virtual void fetch_q(DraftProposal* out) {}
  // Tree speculation: builds a tree of the given shape below the root context.back() (see
  // core/token_tree.h), drawing with keys derived from `key` (position = absolute position
  // of the depth-1 nodes). The base implementation, for drafters that cannot branch
  // (prompt lookup, n-gram), proposes one chain of shape.depth() tokens with propose().
  virtual void propose_tree(const std::vector<int32_t>& context, const TreeShape& shape,
                            const SamplingParams& params, const RngKey& key, DraftTree* out);
  // Forgets all state (new request).
  virtual void reset() = 0;
  // The model a model drafter runs (for identity and cost figures); null for model-free ones.
  virtual const LlamaModel* model() const { return nullptr; }
};

// Makes a drafter from a spec string (see drafter_factory.cpp for the grammar):
//   a model path            small model of the same vocabulary
//   self:skip=4-11          the target with layers 4..11 skipped
//   lookup:n=3              prompt lookup matching the last 3..1 tokens
//   ngram:PATH              unigram/bigram counts stored in a file
// make_runner: where model drafters run (empty = the CPU; experiments pass the target's
// backend so that a draft model runs on the same device as the target).
std::unique_ptr<Drafter> drafter_create(const std::string& spec, const LlamaModel& target,
                                        int64_t max_ctx,
                                        const TokenRunnerFactory& make_runner = {});

// Whether drafter_create reads `spec` as a model path (not lookup, self: or ngram:).
bool drafter_spec_is_model(const std::string& spec);

// The syntax of a lookup:, self: or ngram: spec, without a model (a config's drafters, used
// by the sweep or not): InputError "drafter 'SPEC': ..." as drafter_create would give. The
// layer ranges of self: are checked against the target when the drafter is made.
void drafter_spec_check(const std::string& spec);

// drafter_create for a draft model the caller has already loaded (from `spec`, the name used
// in errors and reports): a caller that sizes the context by the draft's loads it once.
std::unique_ptr<Drafter> drafter_create_model(std::unique_ptr<LlamaModel> model,
                                              const std::string& spec, int64_t max_ctx,
                                              const TokenRunnerFactory& make_runner = {});

}  // namespace speclab
