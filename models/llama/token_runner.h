// What the decoders need from a model instance: a forward pass over k tokens with a KV
// cache that can be truncated. LlamaRunner (CPU) and CudaLlamaRunner (GPU) implement it, so
// the autoregressive baseline, the speculative decoder and the measurement protocol run on
// either backend unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"

namespace speclab {

struct LlamaModel;

// The drafter's distributions q a verification reads, [n_draft, vocab] row-major: on the host,
// or on the device where the draft runner's draft_on_device left them (same device as the
// target's runner, written on the draft runner's stream and complete when its draft call
// returned), or neither: a one-hot drafter (q(d_i) = 1).
struct DraftRows {
  const float* host = nullptr;
  const float* device = nullptr;
  bool empty() const { return host == nullptr && device == nullptr; }
};

// What one draft step on the device returns to the host (TokenRunner::draft_on_device):
// the drawn id and the scalars draft_sample_step records for it.
struct DraftStep {
  int32_t token = -1;
  float top_prob = 0;             // max_x q(x) (the p_min stop rule reads it)
  float entropy_norm = 0;         // sampling_entropy_normalized(q)
  const float* q_rows = nullptr;  // device [row + 1, vocab]: this round's rows so far
};

// The last forward()'s wall seconds, split where the step's work changes kind: the embedding
// lookup and the transformer layers (whose weights every call reads once, whatever its tokens)
// and the output head (final RMSNorm and the vocabulary projection, over the rows the call
// returns). Negative: not split (a runner whose calls are asynchronous, e.g. on a GPU).
struct ForwardSplit {
  double layers_s = -1;
  double head_s = -1;
  bool known() const { return layers_s >= 0 && head_s >= 0; }
};

class TokenRunner {
 public:
  virtual ~TokenRunner() = default;
  // Runs tokens at positions [n_past, n_past + n_tokens), appends their K/V; returns host
  // logits [n_tokens, vocab] (or the last row only), valid until the next call.
  virtual const float* forward(const int32_t* tokens, int64_t n_tokens, bool last_only = false) = 0;
  // O(1): forgets cache positions >= n (n <= n_past).
  virtual void truncate(int64_t n) = 0;
  virtual int64_t n_past() const = 0;

  // Tree speculation (seed 004 section 2.1): appends n_tokens nodes of a token tree at cache
  // slots [n_past, n_past + n_tokens) in one pass. parent_slot[i] is the slot of node i's
  // parent: a slot already in the cache or an earlier node of this call (< n_past + i). A
  // node sits at position position(parent) + 1 and attends to its ancestors and itself
  // only (tree attention mask), so each node's logits equal those of the linear sequence
  // along its path. Returns logits [n_tokens, vocab], valid until the next call.
  // The base implementation throws InputError: a backend without tree attention.
  virtual const float* forward_tree(const int32_t* tokens, const int32_t* parent_slot,
                                    int64_t n_tokens);
  // After forward_tree: keeps the chain of slots path[0..n) (path[0]'s parent is slot
  // base - 1, path[j]'s parent is path[j-1], ascending) as the linear sequence at slots
  // [base, base + n), and forgets every slot >= base + n. base = the number of linear
  // (non-tree) slots before the tree, n_past afterwards = base + n.
  virtual void keep_path(int64_t base, const int32_t* path, int64_t n);
  virtual int64_t max_ctx() const = 0;
  virtual int64_t vocab() const = 0;
  // The split of the last forward() or forward_tree() (ForwardSplit; unknown by default).
  virtual ForwardSplit last_forward_split() const { return {}; }

  // One speculative verification where the logits are (docs/design.md: on a GPU the round stays
  // on the device). Runs batch[0..n_draft] = [last, d_1..d_n] at positions
  // [n_past, n_past + n_draft + 1) like forward(), standardizes the n_draft + 1 logit rows
  // with `sampling` (sampling_standardize) and verifies the drafts against them
  // (speculative_verify, Leviathan et al. 2023 Algorithm 1, the same Philox keys), so only
  // *out (accepted count, next token, per-position p, q, beta) crosses to the host.
  //   q: the drafter's [n_draft, vocab] distributions on the host or left on the device by
  //      a draft runner's draft_on_device (DraftRows), or neither (a one-hot drafter)
  // Returns false, touching nothing, when this backend verifies on the host (the default):
  // the caller then runs forward + sampling_standardize + speculative_verify itself, the
  // reference path. Leaves the cache at n_past + n_draft + 1 either way (the caller truncates).
  virtual bool verify_on_device(const int32_t* batch, int n_draft, const DraftRows& q,
                                const SamplingParams& sampling, const VerifyConfig& config,
                                RngKey base, VerifyOutcome* out) {
    return false;
  }

  // One draft step where the logits are: runs tokens[0..n_tokens) like
  // forward(tokens, n_tokens, last_only = true), standardizes the last row with `sampling`
  // (sampling_standardize) into row `row` of this runner's device draft rows, and draws one
  // id from it by sampling_draw's inverse CDF at u (the caller draws u on the host from the
  // drafter's Philox key, as draft_sample_step does), so only *out crosses to the host.
  // Rows [0, row) written by earlier steps are kept (a round's q, [n_draft, vocab]); they stay
  // valid, at out->q_rows, until this runner's next forward or draft call.
  // Returns false, touching nothing, when this backend drafts on the host (the default): the
  // caller then runs forward + draft_sample_step, the reference path.
  virtual bool draft_on_device(const int32_t* tokens, int64_t n_tokens, int row,
                               const SamplingParams& sampling, double u, DraftStep* out) {
    return false;
  }
  // k >= 2 draft steps where the logits are, with one synchronization at the end: step 0 is
  // draft_on_device(tokens, n_tokens, 0, sampling, u[0]); step i > 0 runs the id step i - 1
  // drew at the next position, that id never leaving the device, into row i at u[i]. Fills
  // out[0..k) with each step's id and scalars; out[k - 1].q_rows holds rows [0, k), valid as
  // draft_on_device's. Every step runs: a caller with a stop rule between steps drafts step
  // by step. Returns false, touching nothing, when this backend has no such chain (the
  // default): the caller then drafts step by step with draft_on_device.
  virtual bool draft_chain_on_device(const int32_t* tokens, int64_t n_tokens, int k,
                                     const SamplingParams& sampling, const double* u,
                                     DraftStep* out) {
    return false;
  }
  // Copies draft rows [0, n_rows) (written by draft_on_device or draft_chain_on_device) to
  // host [n_rows, vocab], for a round whose verification falls back to the host. Only runners that
  // draft on the device have rows; the base throws InputError.
  virtual void download_draft_rows(int n_rows, float* host);
};

// Makes a runner for a model on some backend: (model, max_ctx, skip_layers). Drafters that run
// a model take one, so a draft model runs where the target runs (experiments/measure/backend.h
// makes it from generation.backend / --backend). An empty factory means the CPU runner.
using TokenRunnerFactory = std::function<std::unique_ptr<TokenRunner>(
    const LlamaModel& model, int64_t max_ctx, std::vector<bool> skip_layers)>;

// The checks every runner makes on its arguments (heads, head_dim, layer count, skip list)
// and the context it resolves: max_ctx, or min(max_seq_len, 4096) when 0. Fills an empty
// skip list with "skip nothing". Throws InputError.
int64_t token_runner_check_setup(const LlamaModel& model, int64_t max_ctx,
                                 std::vector<bool>* skip_layers);

}  // namespace speclab
