// Statistical check that a speculative verifier emits tokens with the target's law.
//
// The model is "context-free": the target and the drafter have a fixed distribution per
// absolute position, p[pos] and q[pos], whatever the prefix. Then exact speculative
// decoding must emit token t_pos ~ p[pos] independently at every position. One trial:
//   round 1 at position 0: drafts d_i ~ q[i] (i < gamma, counter RNG), verify against
//            p[0..gamma];
//   if it emitted only one token, round 2 at position 1 (drafts from q[1..gamma],
//            p[1..gamma+1]) supplies the second.
// The first emitted token is tested against p[0], the pair (first, second) against
// p[0] x p[1], and the number of drafts accepted in round 1 against the closed form
// sum_j prod_{i<=j} alpha_i (alpha_i = sum_x min(q_i(x), p_i(x)/l), paper A.5 / Cor. 3.6).
//
// A wrong verifier (residual from p, unnormalized residual, accept without q, ...) shifts
// these laws; tests/core/test_speculative_verify.cpp shows it is caught.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/speculative_verify.h"
#include "core/stats.h"
#include "core/token_tree.h"
#include "core/tree_verify.h"

namespace speclab {

using VerifierFn = std::function<VerifyOutcome(const VerifyRound&, const VerifyConfig&, RngKey)>;

struct ExactnessCase {
  std::string name;
  int64_t vocab = 0;
  int n_draft = 1;                     // gamma >= 1
  std::vector<float> p;                // [n_draft + 2, vocab] target law per position
  std::vector<float> q;                // [n_draft + 2, vocab] draft law per position
  bool deterministic_drafter = false;  // q rows are one-hot; the verifier gets q = nullptr
};

struct ExactnessReport {
  std::vector<int64_t> first_counts;  // [vocab] first emitted token
  std::vector<double> first_law;      // [vocab] its expected law
  GofResult first;                    // chi-square of first_counts vs first_law
  GofResult joint;                    // chi-square of (first, second) vs p[0] x p[1]; l = 1 only
  double mean_accepted = 0.0;         // drafts accepted in round 1, averaged over trials
  Interval accepted_interval;         // its normal interval at level 1 - alpha
  double expected_accepted = 0.0;     // closed form
};

// Law of the first emitted token of a round with gamma >= 1 and lenience l (see
// core/speculative_verify.h): min(q, p/l) + (1 - a_l) / (1/l - a_l) * max(0, p/l - q),
// a_l = sum_x min(q, p/l). Equals p when l = 1.
std::vector<double> exactness_first_token_law(const float* p, const float* q, int64_t vocab,
                                              double lenience);

// Runs n_trials trials (sampling mode; config.greedy must be false) with the counter RNG
// seeded by seed; alpha sets the level of accepted_interval.
ExactnessReport exactness_check(const VerifierFn& verifier, const ExactnessCase& c,
                                const VerifyConfig& config, int64_t n_trials, uint64_t seed,
                                double alpha);

// ---------------------------------------------------------------------------------------
// Every position of a round, chain and tree, on a second-order Markov target.
//
// The target law depends on the two previous tokens, p(c | a, b); the draft law on the
// previous one, q(c | b) (another law, as a real draft is). Exact verification makes the
// emitted tokens t_1, t_2, ... (after a context ending in a0, b0) a Markov chain of order 2
// with kernel p, whatever the drafter, gamma or tree shape, so the triple
// (t_{j-2}, t_{j-1}, t_j) (t_{-1} = a0, t_0 = b0) has a law computable from p alone at every
// position j. A trial runs rounds until n_positions tokens exist, so positions 1..gamma+1
// (chain) or 1..depth+1 (tree) of the FIRST round are all covered, each with its accept
// tests, its correction and the bonus. A wrong law anywhere in a round (a later draft
// position, a deeper tree level, the bonus) shifts the triple law at that position.

struct MarkovPair {
  int64_t vocab = 0;
  std::vector<float> p;    // [vocab * vocab, vocab] target: row a * vocab + b = p(. | a, b)
  std::vector<float> q;    // [vocab, vocab] draft: row b = q(. | b)
  int32_t a0 = 0, b0 = 0;  // the context's last two tokens
  const float* p_row(int32_t a, int32_t b) const { return p.data() + (a * vocab + b) * vocab; }
  const float* q_row(int32_t b) const { return q.data() + b * vocab; }
};

// A random pair over `vocab` tokens (seeded, counter RNG):
//   p(c | a, b) = 0.9 softmax_c(s_shared u(b, c) + s_context u'(a, b, c)) + 0.1 / vocab
//   q(c | b)    = 0.9 softmax_c(s_shared u(b, c) + s_draft u''(b, c)) + 0.1 / vocab
// so every probability is >= 0.1 / vocab; small s_context and s_draft make the draft close
// to the target (long accepted runs), large ones make it far. Context: a0 = 1, b0 = 2.
MarkovPair exactness_random_markov_pair(int64_t vocab, uint64_t seed, double s_shared,
                                        double s_context, double s_draft);

// Exact law of (t_{j-2}, t_{j-1}, t_j) for j = 1..n_positions: [n_positions][vocab^3],
// index (a * vocab + b) * vocab + c.
std::vector<std::vector<double>> exactness_markov_triple_laws(const MarkovPair& m, int n_positions);

struct PositionCounts {
  int64_t n_sequences = 0;
  std::vector<std::vector<int64_t>> triples;  // [n_positions][vocab^3] as the laws
};
// Counts the first counts->triples.size() tokens of `tokens` (which must have as many).
void exactness_count_sequence(const MarkovPair& m, const std::vector<int32_t>& tokens,
                              PositionCounts* counts);

struct PositionTest {
  int position = 0;  // j, 1-based
  GofResult gof;     // Pearson chi-square of the observed triples against the exact law
  double power = 0;  // of this level-alpha test against ANY law at total variation `tv`
};
// One test per position at level alpha. Power: a law at total variation tv from the exact
// one has noncentrality lambda = n sum (p1 - p0)^2 / p0 >= 4 n tv^2 (Cauchy-Schwarz), so
// stats_chi2_power(df, 4 n tv^2, alpha) is a lower bound on the (asymptotic) power whatever
// the shape of the error; df is the test's own (after pooling).
std::vector<PositionTest> exactness_position_tests(const PositionCounts& counts,
                                                   const std::vector<std::vector<double>>& laws,
                                                   double alpha, double tv);

// Chain rounds of `verifier` with gamma drafts d_i ~ q(. | d_{i-1}) (or, deterministic,
// d_i = argmax q(. | d_{i-1}) with q = nullptr given to the verifier); p rows from the
// Markov target along [context, d_0..d_{gamma-1}]. n_trials sequences of n_positions
// tokens, keys (seed, trial, position).
PositionCounts exactness_chain_positions(const VerifierFn& verifier, const MarkovPair& m, int gamma,
                                         bool deterministic_drafter, const VerifyConfig& config,
                                         int n_positions, int64_t n_trials, uint64_t seed);

// The tree a drafter with law q builds below `root`: sample mode draws branching[d] children of
// each node from q(. | node token) with keys (key.position + depth, kRngDraftSample,
// node * kTreeMaxBranch + s), a repeated token is recorded as a repeat (no node); top-k
// mode takes the branching[d] most likely tokens of q (ties: lowest id) as deterministic
// proposals. Nodes are added level by level.
void exactness_markov_tree(const MarkovPair& m, int32_t root, const TreeShape& shape, RngKey key,
                           DraftTree* out);

using TreeVerifierFn =
    std::function<TreeVerifyOutcome(const DraftTree&, const float*, int64_t, bool, RngKey)>;

// Tree rounds of `verifier` (sampling mode) with trees of `shape` from exactness_markov_tree
// and p rows p(. | parent token, node token) for every node; n_trials sequences of
// n_positions tokens.
PositionCounts exactness_tree_positions(const TreeVerifierFn& verifier, const MarkovPair& m,
                                        const TreeShape& shape, int n_positions, int64_t n_trials,
                                        uint64_t seed);

}  // namespace speclab
