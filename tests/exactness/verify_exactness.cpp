#include "tests/exactness/verify_exactness.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/sampling.h"

namespace speclab {

std::vector<double> exactness_first_token_law(const float* p, const float* q, int64_t vocab,
                                              double l) {
  std::vector<double> law(vocab);
  verify_lenient_law(p, q, vocab, l, law.data());
  return law;
}

ExactnessReport exactness_check(const VerifierFn& verifier, const ExactnessCase& c,
                                const VerifyConfig& config, int64_t n_trials, uint64_t seed,
                                double alpha) {
  const int k = c.n_draft;
  const int64_t V = c.vocab;
  const int64_t n_pos = k + 2;
  SPECLAB_INPUT_CHECK(!config.greedy, "exactness_check: sampling mode only");
  SPECLAB_INPUT_CHECK(k >= 1 && V > 0 && static_cast<int64_t>(c.p.size()) == n_pos * V &&
                          static_cast<int64_t>(c.q.size()) == n_pos * V,
                      "exactness_check: case '", c.name, "' needs p and q of shape [", n_pos, ", ",
                      V, "]");

  ExactnessReport rep;
  rep.first_counts.assign(V, 0);
  std::vector<int64_t> joint_counts(V * V, 0);  // [first, second]
  std::vector<double> accepted(n_trials);
  std::vector<int32_t> draft(k);

  // One round starting at absolute position `start`; returns the emitted tokens.
  auto run_round = [&](uint64_t trial, int start, std::vector<int32_t>& emitted) {
    const RngKey base{seed, trial, static_cast<uint64_t>(start), 0, 0};
    for (int i = 0; i < k; i++) {
      const float* q_i = c.q.data() + (start + i) * V;
      draft[i] = sampling_draw(q_i, V, rng_uniform(rng_key_at(base, start + i, kRngDraftSample)));
    }
    VerifyRound r;
    r.n_draft = k;
    r.draft = draft.data();
    r.q = c.deterministic_drafter ? nullptr : c.q.data() + start * V;
    r.p = c.p.data() + start * V;
    r.vocab = V;
    const VerifyOutcome o = verifier(r, config, base);
    SPECLAB_ASSERT(o.n_accepted >= 0 && o.n_accepted <= k);
    SPECLAB_ASSERT(o.next_token >= 0 && o.next_token < V);
    emitted.assign(draft.begin(), draft.begin() + o.n_accepted);
    emitted.push_back(o.next_token);
    return o.n_accepted;
  };

  std::vector<int32_t> emitted, emitted2;
  for (int64_t t = 0; t < n_trials; t++) {
    accepted[t] = run_round(t, 0, emitted);
    int32_t second;
    if (emitted.size() >= 2) {
      second = emitted[1];
    } else {
      run_round(t, 1, emitted2);
      second = emitted2[0];
    }
    rep.first_counts[emitted[0]]++;
    joint_counts[emitted[0] * V + second]++;
  }

  rep.first_law = exactness_first_token_law(c.p.data(), c.q.data(), V, config.lenience);
  rep.first = stats_chi2_gof(rep.first_counts, rep.first_law);
  if (config.lenience == 1.0) {
    std::vector<double> joint_law(V * V);
    for (int64_t a = 0; a < V; a++)
      for (int64_t b = 0; b < V; b++) joint_law[a * V + b] = double(c.p[a]) * c.p[V + b];
    rep.joint = stats_chi2_gof(joint_counts, joint_law);
  }
  std::vector<double> accept_prob(k);
  for (int i = 0; i < k; i++) {
    accept_prob[i] =
        verify_expected_acceptance(c.p.data() + i * V, c.q.data() + i * V, V, config.lenience);
  }
  rep.expected_accepted = verify_expected_accepted(accept_prob);
  rep.mean_accepted = stats_mean(accepted);
  rep.accepted_interval = stats_mean_interval(accepted, alpha);
  return rep;
}

MarkovPair exactness_random_markov_pair(int64_t V, uint64_t seed, double s_shared, double s_context,
                                        double s_draft) {
  SPECLAB_INPUT_CHECK(V >= 3, "exactness: vocab must be >= 3");
  MarkovPair m;
  m.vocab = V;
  m.a0 = 1;
  m.b0 = 2;
  auto u = [&](uint64_t stream, int64_t a, int64_t b, int64_t c) {
    return rng_uniform(RngKey{seed, static_cast<uint64_t>(stream * V + a),
                              static_cast<uint64_t>(b * V + c), kRngTest, 0});
  };
  auto law = [&](std::vector<double> w, float* out) {
    double sum = 0;
    for (double& x : w) sum += (x = std::exp(x));
    for (int64_t c = 0; c < V; c++) out[c] = static_cast<float>(0.9 * w[c] / sum + 0.1 / V);
  };
  m.p.resize(static_cast<size_t>(V * V * V));
  m.q.resize(static_cast<size_t>(V * V));
  std::vector<double> w(V);
  for (int64_t a = 0; a < V; a++)
    for (int64_t b = 0; b < V; b++) {
      for (int64_t c = 0; c < V; c++) w[c] = s_shared * u(0, 0, b, c) + s_context * u(1, a, b, c);
      law(w, m.p.data() + (a * V + b) * V);
    }
  for (int64_t b = 0; b < V; b++) {
    for (int64_t c = 0; c < V; c++) w[c] = s_shared * u(0, 0, b, c) + s_draft * u(2, 0, b, c);
    law(w, m.q.data() + b * V);
  }
  return m;
}

std::vector<std::vector<double>> exactness_markov_triple_laws(const MarkovPair& m,
                                                              int n_positions) {
  const int64_t V = m.vocab;
  std::vector<double> pair(static_cast<size_t>(V * V), 0.0);  // [V, V] law of (t_{j-1}, t_j)
  pair[m.a0 * V + m.b0] = 1.0;
  std::vector<std::vector<double>> laws;
  for (int j = 1; j <= n_positions; j++) {
    std::vector<double> triple(static_cast<size_t>(V * V * V), 0.0);
    std::vector<double> next(static_cast<size_t>(V * V), 0.0);
    for (int32_t a = 0; a < V; a++)
      for (int32_t b = 0; b < V; b++) {
        const double w = pair[a * V + b];
        if (w == 0.0) continue;
        const float* p = m.p_row(a, b);
        for (int32_t c = 0; c < V; c++) {
          triple[(a * V + b) * V + c] = w * p[c];
          next[b * V + c] += w * p[c];
        }
      }
    laws.push_back(std::move(triple));
    pair.swap(next);
  }
  return laws;
}

void exactness_count_sequence(const MarkovPair& m, const std::vector<int32_t>& tokens,
                              PositionCounts* counts) {
  const int64_t V = m.vocab;
  const size_t n = counts->triples.size();
  SPECLAB_ASSERT(tokens.size() >= n);
  int32_t a = m.a0, b = m.b0;
  for (size_t j = 0; j < n; j++) {
    const int32_t c = tokens[j];
    SPECLAB_ASSERT(c >= 0 && c < V);
    counts->triples[j][(a * V + b) * V + c]++;
    a = b;
    b = c;
  }
  counts->n_sequences++;
}

std::vector<PositionTest> exactness_position_tests(const PositionCounts& counts,
                                                   const std::vector<std::vector<double>>& laws,
                                                   double alpha, double tv) {
  SPECLAB_ASSERT(counts.triples.size() <= laws.size());
  std::vector<PositionTest> out;
  const double lambda = 4.0 * static_cast<double>(counts.n_sequences) * tv * tv;
  for (size_t j = 0; j < counts.triples.size(); j++) {
    PositionTest t;
    t.position = static_cast<int>(j + 1);
    t.gof = stats_chi2_gof(counts.triples[j], laws[j]);
    t.power = t.gof.df > 0 ? stats_chi2_power(t.gof.df, lambda, alpha) : 0.0;
    out.push_back(t);
  }
  return out;
}

namespace {

PositionCounts exactness_empty_counts(const MarkovPair& m, int n_positions) {
  SPECLAB_INPUT_CHECK(m.vocab > 0 &&
                          m.p.size() == static_cast<size_t>(m.vocab * m.vocab * m.vocab) &&
                          m.q.size() == static_cast<size_t>(m.vocab * m.vocab),
                      "exactness: Markov pair needs p [V*V, V] and q [V, V]");
  SPECLAB_INPUT_CHECK(n_positions >= 1, "exactness: n_positions must be >= 1");
  PositionCounts counts;
  counts.triples.assign(n_positions, std::vector<int64_t>(m.vocab * m.vocab * m.vocab, 0));
  return counts;
}

}  // namespace

PositionCounts exactness_chain_positions(const VerifierFn& verifier, const MarkovPair& m, int gamma,
                                         bool deterministic_drafter, const VerifyConfig& config,
                                         int n_positions, int64_t n_trials, uint64_t seed) {
  SPECLAB_INPUT_CHECK(gamma >= 1 && !config.greedy, "exactness: sampling mode, gamma >= 1");
  const int64_t V = m.vocab;
  PositionCounts counts = exactness_empty_counts(m, n_positions);
  std::vector<int32_t> seq;                                    // [a0, b0, t_1, ...]
  std::vector<int32_t> draft(gamma);                           // [gamma]
  std::vector<float> q(static_cast<size_t>(gamma * V));        // [gamma, V]
  std::vector<float> p(static_cast<size_t>((gamma + 1) * V));  // [gamma + 1, V]
  for (int64_t trial = 0; trial < n_trials; trial++) {
    seq.assign({m.a0, m.b0});
    for (uint32_t round = 0; static_cast<int>(seq.size()) - 2 < n_positions; round++) {
      const uint64_t pos = seq.size() - 2;  // absolute position of the first draft
      const RngKey base{seed, static_cast<uint64_t>(trial), pos, 0, round};
      int32_t a = seq[seq.size() - 2], b = seq.back();
      for (int i = 0; i <= gamma; i++) {
        std::copy(m.p_row(a, b), m.p_row(a, b) + V, p.begin() + i * V);
        if (i == gamma) break;
        const float* q_b = m.q_row(b);
        std::copy(q_b, q_b + V, q.begin() + i * V);
        draft[i] =
            deterministic_drafter
                ? sampling_argmax(q_b, V)
                : sampling_draw(q_b, V, rng_uniform(rng_key_at(base, pos + i, kRngDraftSample)));
        a = b;
        b = draft[i];
      }
      VerifyRound r;
      r.n_draft = gamma;
      r.draft = draft.data();
      r.q = deterministic_drafter ? nullptr : q.data();
      r.p = p.data();
      r.vocab = V;
      const VerifyOutcome o = verifier(r, config, base);
      SPECLAB_ASSERT(o.n_accepted >= 0 && o.n_accepted <= gamma);
      seq.insert(seq.end(), draft.begin(), draft.begin() + o.n_accepted);
      seq.push_back(o.next_token);
    }
    exactness_count_sequence(m, std::vector<int32_t>(seq.begin() + 2, seq.end()), &counts);
  }
  return counts;
}

void exactness_markov_tree(const MarkovPair& m, int32_t root, const TreeShape& shape, RngKey key,
                           DraftTree* t) {
  const int64_t V = m.vocab;
  t->reset(root);
  std::vector<int32_t> frontier = {0};
  for (int d = 0; d < shape.depth(); d++) {
    std::vector<int32_t> next;
    for (int32_t f : frontier) {
      const float* q = m.q_row(t->token[f]);
      if (shape.mode == TreeMode::kSample) {
        const int32_t row = static_cast<int32_t>(t->q.size() / V);
        t->q.insert(t->q.end(), q, q + V);
        std::vector<int32_t> drawn;
        for (int s = 0; s < shape.branching[d]; s++) {
          const RngKey k = rng_key_at(key, key.position + d, kRngDraftSample,
                                      static_cast<uint32_t>(f * kTreeMaxBranch + s));
          const int32_t tok = sampling_draw(q, V, rng_uniform(k));
          if (std::find(drawn.begin(), drawn.end(), tok) != drawn.end()) {
            t->add_repeat(f, tok, row);
          } else {
            drawn.push_back(tok);
            next.push_back(t->add_child(f, tok, row));
          }
        }
      } else {
        std::vector<int32_t> ids(V);
        std::iota(ids.begin(), ids.end(), 0);
        std::stable_sort(ids.begin(), ids.end(), [&](int32_t x, int32_t y) { return q[x] > q[y]; });
        for (int s = 0; s < shape.branching[d] && s < V; s++)
          next.push_back(t->add_child(f, ids[s], -1));
      }
    }
    frontier.swap(next);
  }
}

PositionCounts exactness_tree_positions(const TreeVerifierFn& verifier, const MarkovPair& m,
                                        const TreeShape& shape, int n_positions, int64_t n_trials,
                                        uint64_t seed) {
  const int64_t V = m.vocab;
  PositionCounts counts = exactness_empty_counts(m, n_positions);
  std::vector<int32_t> seq;  // [a0, b0, t_1, ...]
  std::vector<float> p;      // [n_nodes, V]
  DraftTree tree;
  for (int64_t trial = 0; trial < n_trials; trial++) {
    seq.assign({m.a0, m.b0});
    for (uint32_t round = 0; static_cast<int>(seq.size()) - 2 < n_positions; round++) {
      const uint64_t pos = seq.size() - 2;  // absolute position of the depth-1 nodes
      const RngKey base{seed, static_cast<uint64_t>(trial), pos, 0, round};
      exactness_markov_tree(m, seq.back(), shape, base, &tree);
      p.resize(static_cast<size_t>(tree.n_nodes() * V));
      for (int32_t i = 0; i < tree.n_nodes(); i++) {
        const int32_t a = i == 0 ? seq[seq.size() - 2] : tree.token[tree.parent[i]];
        std::copy(m.p_row(a, tree.token[i]), m.p_row(a, tree.token[i]) + V, p.begin() + i * V);
      }
      const TreeVerifyOutcome o = verifier(tree, p.data(), V, false, base);
      for (int32_t node : o.path) seq.push_back(tree.token[node]);
      seq.push_back(o.next_token);
    }
    exactness_count_sequence(m, std::vector<int32_t>(seq.begin() + 2, seq.end()), &counts);
  }
  return counts;
}

}  // namespace speclab
