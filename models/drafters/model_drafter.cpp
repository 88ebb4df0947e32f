#include "models/drafters/model_drafter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/tree_verify.h"
#include "models/drafters/draft_sampling.h"

namespace speclab {

ModelDrafter::ModelDrafter(const LlamaModel& model, std::string name, int64_t max_ctx,
                           std::vector<bool> skip_layers, const TokenRunnerFactory& make_runner)
    : name_(std::move(name)),
      model_(model),
      runner_(make_runner ? make_runner(model, max_ctx, std::move(skip_layers))
                          : std::make_unique<LlamaRunner>(model, max_ctx, std::move(skip_layers))) {
}

void ModelDrafter::reset() {
  runner_->truncate(0);
  fed_.clear();
}

int64_t ModelDrafter::roll_back(const std::vector<int32_t>& context) {
  const int64_t L = static_cast<int64_t>(context.size());
  // Roll back to the longest common prefix of what we fed and the new context, then catch
  // up on everything after it, the last committed token included (its logits predict
  // position L).
  size_t common = 0;
  while (common < fed_.size() && common < static_cast<size_t>(L) && fed_[common] == context[common])
    common++;
  common = std::min(common, static_cast<size_t>(L - 1));  // always re-feed at least the last token
  runner_->truncate(static_cast<int64_t>(common));
  fed_.resize(common);
  return static_cast<int64_t>(common);
}

const float* ModelDrafter::catch_up(const std::vector<int32_t>& context, int64_t* n_calls) {
  const int64_t L = static_cast<int64_t>(context.size());
  const int64_t common = roll_back(context);
  const float* logits = runner_->forward(context.data() + common, L - common, /*last_only=*/true);
  (*n_calls)++;
  fed_.insert(fed_.end(), context.begin() + common, context.end());
  return logits;
}

void ModelDrafter::propose(const std::vector<int32_t>& context, int k, const SamplingParams& params,
                           const DraftStopRule& stop, const RngKey& key, DraftProposal* out) {
  propose_chain(context, k, params, stop, key, /*on_device=*/false, out);
}

void ModelDrafter::propose_keeping_q_on_device(const std::vector<int32_t>& context, int k,
                                               const SamplingParams& params,
                                               const DraftStopRule& stop, const RngKey& key,
                                               DraftProposal* out) {
  propose_chain(context, k, params, stop, key, /*on_device=*/true, out);
}

void ModelDrafter::fetch_q(DraftProposal* out) {
  if (out->q_device == nullptr) return;
  const int n = static_cast<int>(out->tokens.size());
  out->q.resize(static_cast<size_t>(n) * static_cast<size_t>(runner_->vocab()));
  runner_->download_draft_rows(n, out->q.data());
  out->q_device = nullptr;
}

void ModelDrafter::propose_chain(const std::vector<int32_t>& context, int k,
                                 const SamplingParams& params, const DraftStopRule& stop,
                                 const RngKey& key, bool on_device, DraftProposal* out) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t vocab = runner_->vocab();
  const int64_t L = static_cast<int64_t>(context.size());
  SPECLAB_ASSERT(L >= 1);
  *out = DraftProposal();
  k = static_cast<int>(std::min<int64_t>(k, runner_->max_ctx() - L));
  if (k <= 0) return;

  // The device path: each call runs the draft's pass over the fed tokens, standardizes into
  // the runner's device row i and draws with draft_sample_step's uniform; the stop rule and
  // the records read the returned scalars. A runner that declines touches nothing and the
  // host path below runs from the same rollback.
  DraftStep step;
  if (on_device) {
    const int64_t common = roll_back(context);
    // Without a stop rule every step runs, so the whole chain goes in one call where the runner
    // offers it: the drawn ids stay on the device and the host waits once per round, not once
    // per drafted token. The same calls, rows, ids and records as the steps below.
    if (stop.p_min <= 0 && k >= 2) {
      std::vector<double> u(static_cast<size_t>(k));
      for (int i = 0; i < k; i++) u[static_cast<size_t>(i)] = draft_uniform(key, i);
      std::vector<DraftStep> steps(static_cast<size_t>(k));
      if (runner_->draft_chain_on_device(context.data() + common, L - common, k, params, u.data(),
                                         steps.data())) {
        out->n_forward_calls += k;
        fed_.insert(fed_.end(), context.begin() + common, context.end());
        for (int i = 0; i < k; i++) {
          const DraftStep& s = steps[static_cast<size_t>(i)];
          out->tokens.push_back(s.token);
          out->top_prob.push_back(s.top_prob);
          out->entropy_norm.push_back(s.entropy_norm);
          if (i + 1 < k) fed_.push_back(s.token);
        }
        out->q_device = steps.back().q_rows;
        out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        out->forward_s = out->seconds;
        return;
      }
    }
    if (runner_->draft_on_device(context.data() + common, L - common, 0, params,
                                 draft_uniform(key, 0), &step)) {
      out->n_forward_calls++;
      fed_.insert(fed_.end(), context.begin() + common, context.end());
      // The rows' address is the last call's: a call may move them (growing keeps them).
      const float* rows = step.q_rows;
      for (int i = 0; i < k; i++) {
        if (stop.p_min > 0 && step.top_prob < stop.p_min) break;  // the draft is unsure
        const int32_t tok = step.token;
        out->tokens.push_back(tok);
        out->top_prob.push_back(step.top_prob);
        out->entropy_norm.push_back(step.entropy_norm);
        if (i + 1 < k) {
          const bool on =
              runner_->draft_on_device(&tok, 1, i + 1, params, draft_uniform(key, i + 1), &step);
          SPECLAB_ASSERT(on);  // a runner that drafted once drafts every step
          out->n_forward_calls++;
          fed_.push_back(tok);
          rows = step.q_rows;
        }
      }
      out->q_device = out->tokens.empty() ? nullptr : rows;
      out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      out->forward_s = out->seconds;  // each device call fuses the forward and the draw
      return;
    }
  }

  auto tf = std::chrono::steady_clock::now();
  const float* logits = catch_up(context, &out->n_forward_calls);
  out->forward_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - tf).count();
  out->q.reserve(static_cast<size_t>(k * vocab));
  for (int i = 0; i < k; i++) {
    const int32_t tok = draft_sample_step(logits, vocab, i, params, stop, key, out);
    if (tok < 0) break;
    if (i + 1 < k) {
      tf = std::chrono::steady_clock::now();
      logits = runner_->forward(&tok, 1, /*last_only=*/true);
      out->forward_s +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - tf).count();
      out->n_forward_calls++;
      fed_.push_back(tok);
    }
  }
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

namespace {
// The b highest logits of one row, best first (ties: lower id).   logits: [vocab]
std::vector<int32_t> top_tokens(const float* logits, int64_t vocab, int b) {
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  for (int64_t x = 0; x < vocab; x++) ids[x] = static_cast<int32_t>(x);
  const auto better = [logits](int32_t a, int32_t c) {
    return logits[a] > logits[c] || (logits[a] == logits[c] && a < c);
  };
  const int64_t n = std::min<int64_t>(b, vocab);
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), better);
  ids.resize(static_cast<size_t>(n));
  return ids;
}
}  // namespace

void ModelDrafter::propose_tree(const std::vector<int32_t>& context, const TreeShape& shape,
                                const SamplingParams& params, const RngKey& key, DraftTree* out) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t vocab = runner_->vocab();
  const int64_t L = static_cast<int64_t>(context.size());
  SPECLAB_ASSERT(L >= 1);
  out->reset(context.back());
  if (shape.depth() == 0) return;
  SPECLAB_INPUT_CHECK(L - 1 + shape.n_drafted() <= runner_->max_ctx(), "draft '", name_,
                      "': a tree of ", shape.n_drafted(), " nodes at position ", L,
                      " exceeds its context of ", runner_->max_ctx());
  const bool sample = shape.mode == TreeMode::kSample;
  const float* logits = catch_up(context, &out->n_forward_calls);

  // What each frontier node offers its children: top-k mode keeps the ranked tokens of the
  // draft's logits (deterministic proposals), sample mode a row of q.   row: [vocab]
  std::vector<int32_t> frontier = {0};
  std::vector<int32_t> slot = {static_cast<int32_t>(L - 1)};  // [n_nodes] draft cache slot
  std::vector<std::vector<int32_t>> ranked(1);
  std::vector<int32_t> q_row_of(1, -1);
  const auto take = [&](int32_t node, const float* row, int next_branching) {
    if (sample) {
      q_row_of[node] = static_cast<int32_t>(out->q.size() / static_cast<size_t>(vocab));
      out->q.resize(out->q.size() + static_cast<size_t>(vocab));
      sampling_standardize(out->q.data() + out->q.size() - vocab, row, vocab, params);
    } else {
      ranked[node] = top_tokens(row, vocab, next_branching);
    }
  };
  take(0, logits, shape.branching[0]);

  std::vector<int32_t> level_tokens, level_parent_slots;
  for (int d = 0; d < shape.depth(); d++) {
    std::vector<int32_t> next;
    for (int32_t f : frontier) {
      if (sample) {
        const float* q = out->q.data() + static_cast<size_t>(q_row_of[f]) * vocab;
        std::vector<int32_t> drawn;
        for (int s = 0; s < shape.branching[d]; s++) {
          const RngKey k =
              rng_key_at(key, key.position + static_cast<uint64_t>(out->depth[f]), kRngDraftSample,
                         static_cast<uint32_t>(f * kTreeMaxBranch + s));
          const int32_t tok = sampling_draw(q, vocab, rng_uniform(k));
          if (std::find(drawn.begin(), drawn.end(), tok) != drawn.end()) {
            out->add_repeat(f, tok, q_row_of[f]);
          } else {
            drawn.push_back(tok);
            next.push_back(out->add_child(f, tok, q_row_of[f]));
          }
        }
      } else {
        for (int32_t tok : ranked[f]) next.push_back(out->add_child(f, tok, -1));
      }
    }
    slot.resize(out->token.size(), -1);
    ranked.resize(out->token.size());
    q_row_of.resize(out->token.size(), -1);
    if (d + 1 == shape.depth() || next.empty()) break;
    // One draft pass over the whole level with the tree mask.
    level_tokens.clear();
    level_parent_slots.clear();
    const int64_t first_slot = runner_->n_past();
    for (size_t i = 0; i < next.size(); i++) {
      level_tokens.push_back(out->token[next[i]]);
      level_parent_slots.push_back(slot[out->parent[next[i]]]);
      slot[next[i]] = static_cast<int32_t>(first_slot + static_cast<int64_t>(i));
    }
    const float* rows = runner_->forward_tree(level_tokens.data(), level_parent_slots.data(),
                                              static_cast<int64_t>(next.size()));
    out->n_forward_calls++;
    for (size_t i = 0; i < next.size(); i++)
      take(next[i], rows + i * vocab, shape.branching[d + 1]);
    frontier = std::move(next);
  }
  runner_->truncate(L);  // forget the tree: the cache holds the committed context again
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace speclab
