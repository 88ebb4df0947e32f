// Monte Carlo of speculative rounds and offline replay of recorded round traces.
//
// A round drafts gamma tokens; the drafts are examined in order until the first rejection, so a
// round yields (accepted run length, capped at gamma) + 1 tokens (the correction or bonus token)
// and costs gamma c + 1 target-step units (Theorem 3.8's cost model; c = 0 counts target calls).
// The speedup estimate over a run is sum(tokens) / sum(cost), a ratio of sums (renewal reward).
//
// Acceptance processes ("who decides whether the next examined draft is accepted"):
//   iid     each examined draft accepted with probability alpha (section 3.1's assumption);
//   markov  a hidden two-state chain (Gilbert-Elliott): state easy (acceptance a_easy) or hard
//           (a_hard). The chain takes one step per *examined* draft token (bonus tokens and the
//           drafts after a rejection are never examined, so they take no step), with
//           P(easy -> hard) = p_easy_to_hard, P(hard -> easy) = p_hard_to_easy. Acceptances
//           are then positively correlated when a_easy != a_hard and the switching is slow,
//           which is what makes Eq. (1) (i.i.d.) misjudge real traces (appendix A.3, (2)).
//
// Gamma policies: fixed gamma; "heuristic" = Hugging Face's schedule (core/gamma_policy.h,
// +2 after a fully accepted round, -1 otherwise, >= 1); "oracle" = section 3.5's upper bound:
// each round drafts exactly the L tokens that will be accepted, yielding L + 1 tokens at cost
// c L + 1 (the target still verifies them, footnote 4).
//
// Trace format (JSON lines, one round per line, as the runtime records it; blank lines are
// skipped, other keys are ignored):
//   {"n_draft": g, "n_accepted": n, "beta": [b_1, ..., b_g], "draft_cap": m}
//   n_draft >= 1, 0 <= n_accepted <= n_draft, beta optional: per-position sum_x min(p, q)
//   (Theorem 3.5) of the drafted positions, each in [0, 1], at most n_draft entries.
//   draft_cap optional, m >= n_draft: the most drafts the round could have used whatever the
//   gamma policy asked: the generation budget (remaining tokens - 1), the context left, or
//   n_draft itself when the drafter proposed fewer than it was asked for (an n-gram miss). A
//   round with draft_cap 0 may have n_draft 0 (a round that drafted nothing: 1 token).
//   Replay drafts min(policy gamma, draft_cap) in such a round, so replaying a trace at the
//   gamma it was recorded with reproduces every round's tokens exactly (no imputation).
// experiments/measure/round_trace.h writes this format from real runs (with more keys: the drafted
// ids, p and q at them, the accept decisions, the emitted tokens, timings).
//
// What replay can and cannot infer. A round recorded with gamma g tells the accepted run length
// L (how many drafts in a row the target would accept, with unlimited drafting) exactly when
// n < g (L = n: the (n+1)-th draft was rejected) and only L >= g when n = g (right-censored).
// Replaying gamma' <= g is therefore exact per round: tokens = min(L, gamma') + 1. Replaying
// gamma' > g on a censored round needs L beyond g: we impute L = g + L' with L' drawn from the
// geometric law fitted to the whole trace (alpha_hat below; memoryless, i.e. the i.i.d.
// assumption is used only for the unseen tail) and count such rounds as "imputed". Replay also
// assumes that changing gamma does not change the rounds themselves: in a real run a different
// gamma cuts the text into different rounds (other contexts, other draft tokens); replay keeps
// the recorded sequence of run lengths, which is right if run lengths do not depend on where a
// round starts.
//
// alpha_hat (censored geometric MLE): each examined draft is a Bernoulli(alpha) trial; a trace
// has A = sum n_accepted accepts and R = #(rounds with n < g) rejects, so alpha_hat = A / (A + R).
// The Corollary 3.6 estimate is the mean of all recorded beta values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace speclab {

// ---------------------------------------------------------------------------------------------
// Acceptance models.

struct MarkovAcceptance {
  double a_easy = 0.9, a_hard = 0.3;  // acceptance probability in each state
  double p_easy_to_hard = 0.05;       // switching probabilities per examined token
  double p_hard_to_easy = 0.05;
};

// Throws InputError unless all four numbers lie in [0, 1] and the chain can switch both ways
// (p_easy_to_hard + p_hard_to_easy > 0).
void markov_validate(const MarkovAcceptance& m);

// Stationary probability of "easy", pi_easy = p_he / (p_eh + p_he), and the stationary
// acceptance alpha = pi_easy a_easy + (1 - pi_easy) a_hard.
double markov_stationary_easy(const MarkovAcceptance& m);
double markov_stationary_alpha(const MarkovAcceptance& m);

// Exact long-run mean tokens per round for fixed gamma under the markov model. The hidden state
// at the start of a round is itself a Markov chain: with A = diag(a) P, R = diag(1 - a) P
// (P the 2x2 transition matrix), a round from start-state row vector v ends with
//   k accepts then a reject (k < gamma): v A^k R, tokens k + 1
//   all gamma accepted:                   v A^gamma, tokens gamma + 1
// (the end state already carries the step to the next examined token), so the round-to-round
// kernel is K = sum_k A^k R + A^gamma; its stationary vector pi_K gives
//   E[tokens] = pi_K . (sum_k (k+1) A^k R 1 + (gamma+1) A^gamma 1).
// With a_easy = a_hard = alpha this is Eq. (1).
double markov_expected_tokens(const MarkovAcceptance& m, int gamma);

// Maximum-likelihood fit of the two-state hidden chain to a sequence of per-token outcomes
// (1 = accepted, 0 = rejected, in the order the drafts were examined) by Baum-Welch (EM with
// scaled forward-backward): each iteration maximizes the expected complete-data log-likelihood,
// so the observed log-likelihood never decreases; it stops when it improves by less than tol per
// outcome (or after max_iter). Initialization: the fully observed special case (a_easy = 1, a_hard
// = 0: state = outcome), whose MLE is the transition counts n_10/n_1. and n_01/n_0., shrunk toward
// the middle so EM can move. Labels: "easy" is the state with the higher acceptance. The initial
// state distribution is fitted too but not reported (it matters only for the first token).
struct MarkovFit {
  MarkovAcceptance model;
  double log_likelihood = 0.0;
  int iterations = 0;
  bool converged = false;
};
MarkovFit markov_fit(const std::vector<uint8_t>& outcomes, int max_iter = 500, double tol = 1e-9);

// ---------------------------------------------------------------------------------------------
// Simulation.

enum class PolicyKind { kFixed, kHeuristic, kOracle };
struct PolicySpec {
  PolicyKind kind = PolicyKind::kFixed;
  int gamma = 5;  // fixed: gamma; heuristic: initial gamma; oracle: unused
};
// "fixed" | "heuristic" | "oracle" (InputError otherwise) and back.
PolicyKind policy_kind_parse(const std::string& name);
const char* policy_kind_name(PolicyKind kind);

struct SimResult {
  int64_t n_rounds = 0;
  int64_t tokens = 0;              // sum over rounds of (accepted + 1)
  int64_t drafted = 0;             // sum of gamma
  int64_t accepted = 0;            // sum of accepted drafts
  double cost = 0.0;               // sum of (gamma c + 1), in target-step units
  double tokens_per_round = 0;     // mean
  double tokens_per_round_se = 0;  // standard error (batch means over 50 batches: rounds of a
                                   // markov run are correlated through the hidden state)
  double speedup = 0;              // tokens / cost
  double speedup_se = 0;           // delta method on the batch means of (tokens, cost)
  double mean_gamma = 0;           // drafted / n_rounds
  double acceptance = 0;           // accepted / examined drafts (examined = accepted + rejections)
  int64_t imputed_rounds = 0;      // replay only: censored rounds whose tail was imputed
};

// Monte Carlo with i.i.d. acceptance alpha. Random numbers: rng_uniform keyed by
// (seed, request 0, position = examined-token index, stream kRngTest).
SimResult simulate_iid(double alpha, double c, const PolicySpec& policy, int64_t n_rounds,
                       uint64_t seed);
// Monte Carlo with the markov acceptance model, starting from its stationary distribution.
SimResult simulate_markov(const MarkovAcceptance& m, double c, const PolicySpec& policy,
                          int64_t n_rounds, uint64_t seed);

// ---------------------------------------------------------------------------------------------
// Traces.

struct RoundTrace {
  int n_draft = 0;
  int n_accepted = 0;
  std::vector<double> beta;  // optional, per drafted position
  int draft_cap = -1;        // optional (-1: none): see the format above
  bool censored() const { return n_accepted == n_draft; }
};

// Parses the JSON-lines format above; InputError "<source>:<line>: ..." for a malformed line.
std::vector<RoundTrace> trace_parse(const std::string& text, const std::string& source);
// Reads and parses a file; InputError naming the file if it cannot be read or has no round.
std::vector<RoundTrace> trace_read_file(const std::string& path);
// One JSON line in the format above (the runtime's writer can use it).
std::string trace_format_line(const RoundTrace& r);

// alpha_hat = A / (A + R) (censored geometric MLE, see above); 1 when no draft was rejected.
// InputError if the trace is empty.
double trace_alpha_mle(const std::vector<RoundTrace>& trace);
// Mean of all recorded beta values (Corollary 3.6); -1 when no round recorded beta.
double trace_alpha_beta(const std::vector<RoundTrace>& trace);
// The per-token outcome sequence (n_accepted ones, then a zero if the round was not censored),
// for markov_fit.
std::vector<uint8_t> trace_outcomes(const std::vector<RoundTrace>& trace);

// Replays the trace's run lengths under a policy (see "What replay can and cannot infer").
// Imputation draws use rng_uniform keyed by (seed, request = round index, stream kRngTest), so
// every policy sees the same imputed tails (common random numbers).
SimResult trace_replay(const std::vector<RoundTrace>& trace, double c, const PolicySpec& policy,
                       uint64_t seed);

}  // namespace speclab
