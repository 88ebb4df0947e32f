#include "models/decode/batched_decoder.h"

#include <algorithm>
#include <memory>

#include "core/error.h"
#include "core/gamma_policy.h"
#include "core/rng.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "models/decode/decode_counters.h"
#include "models/decode/decode_steps.h"
#include "models/decode/law_check_round.h"

namespace speclab {

int64_t BatchedGeneration::total_tokens() const {
  int64_t n = 0;
  for (const GenerationResult& r : results) n += static_cast<int64_t>(r.tokens.size());
  return n;
}

namespace {

// One request in flight: its slot and what it has committed.
struct ActiveRequest {
  size_t index = 0;  // in the queue (and in the results)
  int64_t slot = 0;
  std::vector<int32_t> context;  // every committed token (prompt + generated)
  uint32_t round = 0;            // rounds (or decode steps) run so far
  std::unique_ptr<GammaPolicy> policy;
  bool stopped = false;
  // Autoregressive loop: the token to feed next and the position it samples.
  int32_t last = 0;
  int64_t position = 0;
};

// The closed loop's queue and slots: requests enter free slots in queue order and leave when
// they stop; each admission is one batched prefill.
class RequestPool {
 public:
  RequestPool(BatchTokenRunner& target, const std::vector<GenerationRequest>& queue,
              BatchedGeneration* out)
      : target_(target), queue_(queue), out_(out) {
    SPECLAB_INPUT_CHECK(!queue.empty(), "batched decoding: no request (expected at least one)");
    for (size_t i = 0; i < queue.size(); i++) {
      const int64_t n = static_cast<int64_t>(queue[i].prompt.size());
      SPECLAB_INPUT_CHECK(n >= 1, "request ", i, ": prompt: empty (need at least one token)");
      SPECLAB_INPUT_CHECK(n < target.max_ctx(), "request ", i, ": prompt: ", n,
                          " tokens do not fit the context of ", target.max_ctx(), " tokens");
    }
    out->concurrency = target.n_slots();
    out->results.assign(queue.size(), GenerationResult());
    out->timing.assign(queue.size(), RequestTiming());
    for (int64_t s = target.n_slots() - 1; s >= 0; s--) free_slots_.push_back(s);
  }

  bool done() const { return next_ >= queue_.size() && active_.empty(); }
  std::vector<ActiveRequest>& active() { return active_; }
  const GenerationRequest& request(const ActiveRequest& a) const { return queue_[a.index]; }
  GenerationResult& result(const ActiveRequest& a) { return out_->results[a.index]; }
  RequestTiming& timing(const ActiveRequest& a) { return out_->timing[a.index]; }

  // Fills free slots from the queue and prefills all prompt tokens but the last of every
  // admitted request in one batched forward; on_admit(request) runs for each. Returns the
  // number admitted.
  template <typename OnAdmit>
  int admit(DecodeClock::time_point t0, BatchStep* step, OnAdmit on_admit) {
    const auto ta = DecodeClock::now();
    const size_t first = active_.size();
    rows_.clear();
    while (!free_slots_.empty() && next_ < queue_.size()) {
      ActiveRequest a;
      a.index = next_++;
      a.slot = free_slots_.back();
      free_slots_.pop_back();
      a.context = queue_[a.index].prompt;
      target_.truncate(a.slot, 0);
      for (size_t j = 0; j + 1 < a.context.size(); j++)
        rows_.push_back(BatchRow{static_cast<int32_t>(a.slot), a.context[j]});
      timing(a).slot = a.slot;
      timing(a).admitted_s = seconds_since(t0);
      on_admit(a);
      active_.push_back(std::move(a));
    }
    if (!rows_.empty()) target_.forward_batch(rows_, /*last_only=*/true);
    const double prefill_s = seconds_since(ta);
    for (size_t i = first; i < active_.size(); i++) result(active_[i]).prefill_s = prefill_s;
    step->n_admitted = static_cast<int>(active_.size() - first);
    step->admit_s = prefill_s;
    return step->n_admitted;
  }

  // Commits a token to request a (stops in order, as decode_commit_token) and stamps the
  // first token's and the last token's times.
  bool commit(ActiveRequest& a, int32_t token, DecodeClock::time_point t0) {
    GenerationResult& r = result(a);
    const bool stop = decode_commit_token(request(a), token, &a.context, &r);
    if (r.tokens.size() == 1) timing(a).first_token_s = seconds_since(t0);
    if (stop) a.stopped = true;
    return stop;
  }

  // Frees the slots of every stopped request and stamps their finish times.
  void retire(DecodeClock::time_point t0) {
    const double now = seconds_since(t0);
    size_t kept = 0;
    for (size_t i = 0; i < active_.size(); i++) {
      ActiveRequest& a = active_[i];
      if (a.stopped) {
        GenerationResult& r = result(a);
        timing(a).finished_s = now;
        r.decode_s = now - timing(a).admitted_s - r.prefill_s;
        free_slots_.push_back(a.slot);
      } else {
        if (kept != i) active_[kept] = std::move(a);
        kept++;
      }
    }
    active_.resize(kept);
  }

 private:
  BatchTokenRunner& target_;
  const std::vector<GenerationRequest>& queue_;
  BatchedGeneration* out_;
  size_t next_ = 0;                    // the next queued request
  std::vector<int64_t> free_slots_;    // taken from the back: slot 0 first
  std::vector<ActiveRequest> active_;  // in admission order
  std::vector<BatchRow> rows_;
};

// Per request of a speculative step: its round's k, key and where its rows are.
struct RoundPlan {
  int64_t k = 0;
  RngKey base;
  int proposal = -1;      // index into the step's draft proposals, or -1 (k = 0)
  int64_t first_row = 0;  // its first row in the batched verify forward
};

// Buffers a batched speculative step reuses.
struct StepBuffers {
  std::vector<RoundPlan> plan;  // [n_active]
  std::vector<SlotDraftRequest> draft_requests;
  std::vector<DraftProposal> proposals;  // [n_draft_requests]
  std::vector<BatchRow> rows;            // the verify forward's rows
  HostVerifyBuffers host;                // one request's p rows
};

// Algorithm 1 for one request of the step, on the host, from its rows of the batched
// logits; rolls its target slot back to its accepted prefix and fills rec (the same steps
// as speculative_chain_round's host path).
void accept_one(BatchTokenRunner& target, const GenerationRequest& request,
                const SpeculativeConfig& config, const ActiveRequest& a, const RoundPlan& plan,
                const DraftProposal* proposal, const float* logits, StepBuffers& buf,
                RoundRecord* rec) {
  const auto ts = DecodeClock::now();
  const int64_t vocab = target.vocab();
  const int64_t L = static_cast<int64_t>(a.context.size());
  static const std::vector<int32_t> kNoDrafts;
  const std::vector<int32_t>& drafts = proposal ? proposal->tokens : kNoDrafts;
  const float* q = (proposal && !proposal->q.empty()) ? proposal->q.data() : nullptr;
  VerifyOutcome& out = *rec;
  out = decode_verify_on_host(logits + plan.first_row * vocab, vocab, drafts, q, request.sampling,
                              config.lenience, config.synthetic_accept, plan.base, &buf.host);
  target.truncate(a.slot, L + rec->n_accepted);  // keeps [.., last, d1..dn]
  rec->n_draft = static_cast<int>(drafts.size());
  rec->drafted = drafts;
  rec->sample_s = seconds_since(ts);
  // The in-run law check on the rows just verified against (core/law_check.h), timed apart.
  if (request.law_check) {
    const auto tc = DecodeClock::now();
    law_check_chain_round(buf.host.p.data(), vocab, plan.base, rec);
    rec->law_check_s = seconds_since(tc);
  }
}

}  // namespace

BatchedGeneration generate_batched_speculative(BatchTokenRunner& target, BatchDrafter& drafter,
                                               const std::vector<GenerationRequest>& queue,
                                               const SpeculativeConfig& config,
                                               const std::string& gamma_policy) {
  SPECLAB_INPUT_CHECK(config.gamma >= 1, "gamma: ", config.gamma, " (expected >= 1)");
  SPECLAB_ASSERT(config.policy == nullptr);  // per request: gamma_policy
  for (double a : config.synthetic_accept)
    SPECLAB_INPUT_CHECK(a > 0.0 && a <= 1.0, "synthetic acceptance: ", a,
                        " (expected a number in (0, 1])");
  SPECLAB_INPUT_CHECK(drafter.vocab_size() == target.vocab(), "draft '", drafter.name(),
                      "': vocabulary of ", drafter.vocab_size(), " tokens, the target has ",
                      target.vocab());
  SPECLAB_INPUT_CHECK(drafter.n_slots() == target.n_slots(), "draft '", drafter.name(),
                      "': ", drafter.n_slots(), " slots, the target has ", target.n_slots());
  gamma_policy_create(gamma_policy, config.gamma);  // a bad name fails before any work
  for (int k : config.gamma_by_load)
    SPECLAB_INPUT_CHECK(k >= 0 && k <= config.gamma, "gamma by load: ", k, " (expected 0..",
                        config.gamma, ")");

  BatchedGeneration out;
  RequestPool pool(target, queue, &out);
  StepBuffers buf;
  // The loop's clock origin. The law check's seconds move it forward as they are spent, so
  // every stamp and phase time leaves the instrument out.
  auto t0 = DecodeClock::now();
  while (!pool.done()) {
    BatchStep step;
    pool.admit(t0, &step, [&](ActiveRequest& a) {
      decode_count_speculative_generation();
      drafter.reset_slot(a.slot);
      a.policy = gamma_policy_create(gamma_policy, config.gamma);
    });
    std::vector<ActiveRequest>& active = pool.active();
    step.n_active = static_cast<int>(active.size());

    // Plan: each request's k, as speculative_chain_round clamps it.
    buf.plan.assign(active.size(), RoundPlan());
    buf.draft_requests.clear();
    for (size_t i = 0; i < active.size(); i++) {
      ActiveRequest& a = active[i];
      const GenerationRequest& req = pool.request(a);
      const int64_t L = static_cast<int64_t>(a.context.size());
      const int64_t remaining =
          req.max_new_tokens - static_cast<int64_t>(pool.result(a).tokens.size());
      const int gamma =
          config.gamma_by_load.empty()
              ? a.policy->next_gamma()
              : config.gamma_by_load[std::min(active.size(), config.gamma_by_load.size() - 1)];
      RoundPlan& plan = buf.plan[i];
      plan.k = std::min<int64_t>({gamma, remaining - 1, target.max_ctx() - L});
      plan.base = RngKey{req.seed, req.request_id, static_cast<uint64_t>(L), 0, a.round};
      if (plan.k < 0) {  // the context is full: not even the last token fits
        pool.result(a).stop = StopReason::kContext;
        a.stopped = true;
        continue;
      }
      if (plan.k > 0) {
        plan.proposal = static_cast<int>(buf.draft_requests.size());
        buf.draft_requests.push_back(
            SlotDraftRequest{a.slot, &a.context, static_cast<int>(plan.k), plan.base});
      }
    }

    // Draft: every request at once.
    auto tp = DecodeClock::now();
    buf.proposals.clear();
    if (!buf.draft_requests.empty())
      drafter.propose_batch(buf.draft_requests, config.draft_sampling, config.stop_rule,
                            &buf.proposals);
    step.draft_s = seconds_since(tp);

    // Verify: one target forward over every request's [last, d_1..d_n] rows.
    tp = DecodeClock::now();
    buf.rows.clear();
    for (size_t i = 0; i < active.size(); i++) {
      if (active[i].stopped) continue;
      RoundPlan& plan = buf.plan[i];
      plan.first_row = static_cast<int64_t>(buf.rows.size());
      const int32_t slot = static_cast<int32_t>(active[i].slot);
      buf.rows.push_back(BatchRow{slot, active[i].context.back()});
      if (plan.proposal >= 0) {
        const DraftProposal& p = buf.proposals[static_cast<size_t>(plan.proposal)];
        SPECLAB_ASSERT(static_cast<int64_t>(p.tokens.size()) <= plan.k);
        for (int32_t d : p.tokens) buf.rows.push_back(BatchRow{slot, d});
        step.n_draft_rows += static_cast<int64_t>(p.tokens.size());
      }
    }
    const float* logits = nullptr;  // [n_rows, vocab]
    if (!buf.rows.empty()) logits = target.forward_batch(buf.rows, /*last_only=*/false);
    step.n_verify_rows = static_cast<int64_t>(buf.rows.size());
    step.verify_s = seconds_since(tp);

    // Accept, roll back and commit, request by request.
    tp = DecodeClock::now();
    for (size_t i = 0; i < active.size(); i++) {
      ActiveRequest& a = active[i];
      if (a.stopped) continue;
      const RoundPlan& plan = buf.plan[i];
      const DraftProposal* proposal =
          plan.proposal >= 0 ? &buf.proposals[static_cast<size_t>(plan.proposal)] : nullptr;
      GenerationResult& result = pool.result(a);
      RoundRecord rec;
      accept_one(target, pool.request(a), config, a, plan, proposal, logits, buf, &rec);
      const auto check = std::chrono::duration_cast<DecodeClock::duration>(
          std::chrono::duration<double>(rec.law_check_s));
      t0 += check;
      tp += check;
      rec.draft_s = step.draft_s;
      rec.verify_s = step.verify_s;
      result.n_target_calls++;
      if (proposal) result.n_draft_calls += proposal->n_forward_calls;
      static const std::vector<float> kNoEntropies;
      a.policy->observe(rec.n_draft, rec.n_accepted,
                        proposal ? proposal->entropy_norm : kNoEntropies);
      SPECLAB_ASSERT(rec.n_accepted >= 0 && rec.n_accepted <= static_cast<int>(rec.drafted.size()));
      bool stopped = false;
      for (int j = 0; j <= rec.n_accepted && !stopped; j++) {
        const int32_t tok = j < rec.n_accepted ? rec.drafted[j] : rec.next_token;
        stopped = pool.commit(a, tok, t0);
        rec.n_emitted++;
      }
      step.n_emitted += rec.n_emitted;
      result.rounds.push_back(std::move(rec));
      a.round++;
    }
    step.accept_s = seconds_since(tp);
    pool.retire(t0);
    out.steps.push_back(step);
  }
  out.total_s = seconds_since(t0);
  return out;
}

BatchedGeneration generate_batched_autoregressive(BatchTokenRunner& target,
                                                  const std::vector<GenerationRequest>& queue) {
  BatchedGeneration out;
  RequestPool pool(target, queue, &out);
  const int64_t vocab = target.vocab();
  std::vector<float> probs(static_cast<size_t>(vocab));  // [vocab] standardized p
  std::vector<BatchRow> rows;
  const auto t0 = DecodeClock::now();
  while (!pool.done()) {
    BatchStep step;
    pool.admit(t0, &step, [&](ActiveRequest& a) {
      a.last = a.context.back();
      a.position = static_cast<int64_t>(a.context.size());
    });
    std::vector<ActiveRequest>& active = pool.active();
    step.n_active = static_cast<int>(active.size());

    auto tp = DecodeClock::now();
    rows.clear();
    for (const ActiveRequest& a : active)
      rows.push_back(BatchRow{static_cast<int32_t>(a.slot), a.last});
    const float* logits = target.forward_batch(rows, /*last_only=*/true);  // [n_active, vocab]
    step.n_verify_rows = static_cast<int64_t>(rows.size());
    step.verify_s = seconds_since(tp);

    tp = DecodeClock::now();
    for (size_t i = 0; i < active.size(); i++) {
      ActiveRequest& a = active[i];
      const GenerationRequest& req = pool.request(a);
      pool.result(a).n_target_calls++;
      sampling_standardize(probs.data(), logits + static_cast<int64_t>(i) * vocab, vocab,
                           req.sampling);
      const RngKey key{req.seed, req.request_id, static_cast<uint64_t>(a.position),
                       static_cast<uint32_t>(RngStream::kRngTargetSample), 0};
      const int32_t tok = sampling_draw(probs.data(), vocab, rng_uniform(key));
      a.position++;
      a.last = tok;
      a.round++;
      step.n_emitted++;
      if (pool.commit(a, tok, t0)) continue;
      if (target.n_past(a.slot) + 1 > target.max_ctx()) {
        pool.result(a).stop = StopReason::kContext;
        a.stopped = true;
      }
    }
    step.accept_s = seconds_since(tp);
    pool.retire(t0);
    out.steps.push_back(step);
  }
  out.total_s = seconds_since(t0);
  return out;
}

}  // namespace speclab
