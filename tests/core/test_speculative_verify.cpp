// Speculative verification (Leviathan et al. 2023, Algorithm 1): exact cases, the
// distributional exactness of what it emits, lenience, greedy, and planted bugs that the
// exactness check must catch.
//
// Statistical tests: each chi-square test uses significance alpha = 1e-3 with fixed seeds
// (the suite is deterministic; alpha is the chance that a correct verifier fails for a
// given seed). Sizing: a multinomial chi-square test with n draws against a law at total
// variation distance delta has noncentrality lambda >= 4 n delta^2 (core/stats.h), so
// n = 150000 gives lambda >= 60 for delta = 1%; over <= 8 bins (df <= 7) that is power
// >= 0.9999 at alpha = 1e-3 (printed by ExactnessSizing), and >= 0.8 for the 64-bin joint.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "core/stats.h"
#include "tests/exactness/verify_exactness.h"

namespace speclab {
namespace {

constexpr double kAlpha = 1e-3;
constexpr int64_t kTrials = 150000;
constexpr int kVocab = 8;

// ---------------------------------------------------------------- hand-written rounds

TEST(SpeculativeVerify, ExactOutcomesTable) {
  // Vocab 2. Rows are chosen so that every decision is certain (probability 0 or 1):
  //   p(d) = 0 -> always rejected; l q(d) <= p(d) -> always accepted.
  struct Case {
    const char* name;
    std::vector<int32_t> draft;
    std::vector<float> q;  // [n_draft, 2], empty = deterministic drafter
    std::vector<float> p;  // [n_draft + 1, 2]
    int n_accepted;
    int32_t next_token;
    bool bonus;
    std::vector<float> beta;
  };
  const std::vector<Case> cases = {
      // position 0: p(d=0) = 0 -> reject; residual max(0, p - q) = {0, 1} -> token 1.
      // beta of position 1 is still computed: min(.5,.5) + min(.5,.5) = 1.
      {"reject first, residual forced",
       {0, 1},
       {1, 0, 0.5f, 0.5f},
       {0, 1, 0.5f, 0.5f, 1, 0},
       0,
       1,
       false,
       {0, 1}},
      // q(d) <= p(d) at both positions -> accept both; bonus from p_2 = one-hot at 0.
      {"q <= p: always accept, bonus",
       {1, 0},
       {0.5f, 0.5f, 0.5f, 0.5f},
       {0.2f, 0.8f, 0.6f, 0.4f, 1, 0},
       2,
       0,
       true,
       {0.7f, 0.9f}},
      // accept position 0 (q = p), reject position 1 (p(d) = 0): residual {1, 0} -> 0.
      {"accept then reject",
       {1, 1},
       {0.5f, 0.5f, 0, 1},
       {0.5f, 0.5f, 1, 0, 0, 1},
       1,
       0,
       false,
       {1, 0}},
      // deterministic drafter: one-hot q at d; p(d) = 1 accept, then p(d) = 0 reject and the
      // residual is p itself minus the one-hot: {p(0), 0} -> token 0.
      {"deterministic drafter", {1, 1}, {}, {0, 1, 1, 0, 0.5f, 0.5f}, 1, 0, false, {1, 0}},
      {"no drafts: plain sampling from p_0", {}, {}, {0, 1}, 0, 1, true, {}},
  };
  for (const Case& c : cases) {
    VerifyRound r;
    r.n_draft = static_cast<int>(c.draft.size());
    r.draft = c.draft.data();
    r.q = c.q.empty() ? nullptr : c.q.data();
    r.p = c.p.data();
    r.vocab = 2;
    for (uint64_t seed = 0; seed < 20; seed++) {  // the outcome must not depend on the seed
      const VerifyOutcome o = speculative_verify(r, VerifyConfig{}, RngKey{seed, 0, 10, 0, 0});
      EXPECT_EQ(o.n_accepted, c.n_accepted) << c.name;
      EXPECT_EQ(o.next_token, c.next_token) << c.name;
      EXPECT_EQ(o.bonus, c.bonus) << c.name;
      ASSERT_EQ(o.beta.size(), c.beta.size()) << c.name;
      for (size_t i = 0; i < c.beta.size(); i++) {
        EXPECT_NEAR(o.beta[i], c.beta[i], 1e-7) << c.name << " beta " << i;
        EXPECT_EQ(o.p_draft[i], c.p[i * 2 + c.draft[i]]) << c.name;
        EXPECT_EQ(o.q_draft[i], c.q.empty() ? 1.0f : c.q[i * 2 + c.draft[i]]) << c.name;
      }
    }
  }
}

TEST(SpeculativeVerify, BadInputThrows) {
  const int32_t draft[1] = {0};
  const float q[2] = {0.5f, 0.5f}, p[4] = {0.5f, 0.5f, 0.5f, 0.5f};
  VerifyRound r{1, draft, q, p, 2};
  EXPECT_THROW(speculative_verify(r, {false, 0.0}, {}), InputError);
  EXPECT_THROW(speculative_verify(r, {false, 1.5}, {}), InputError);
  const int32_t out_of_range[1] = {2};
  EXPECT_THROW(speculative_verify({1, out_of_range, q, p, 2}, {}, {}), InputError);
  const float q_zero[2] = {0.0f, 1.0f};  // draft 0 could not have come from this q
  EXPECT_THROW(speculative_verify({1, draft, q_zero, p, 2}, {}, {}), InputError);
}

// ---------------------------------------------------------------- exactness

// Dirichlet(1) row from the counter RNG (normalized exponentials).
std::vector<float> dirichlet_row(uint64_t seed, uint64_t row, int64_t n) {
  std::vector<double> e(n);
  double s = 0.0;
  for (int64_t x = 0; x < n; x++) {
    e[x] = -std::log1p(-rng_uniform({seed, row, static_cast<uint64_t>(x), kRngTest, 0}));
    s += e[x];
  }
  std::vector<float> r(n);
  for (int64_t x = 0; x < n; x++) r[x] = static_cast<float>(e[x] / s);
  return r;
}

std::vector<float> power_row(const std::vector<float>& p, double power) {  // norm(p^power)
  std::vector<float> r(p.size());
  double s = 0.0;
  for (float v : p) s += std::pow(v, power);
  for (size_t x = 0; x < p.size(); x++) r[x] = static_cast<float>(std::pow(p[x], power) / s);
  return r;
}

std::vector<float> onehot_row(int64_t n, int64_t at) {
  std::vector<float> r(n, 0.0f);
  r[at] = 1.0f;
  return r;
}

// One adversarial family: makes the (p, q) rows of one position.
struct Family {
  const char* name;
  bool deterministic;
  void (*make)(uint64_t pos, std::vector<float>& p, std::vector<float>& q);
};

const Family kFamilies[] = {
    {"dirichlet pair", false,
     [](uint64_t pos, std::vector<float>& p, std::vector<float>& q) {
       p = dirichlet_row(1, pos, kVocab);
       q = dirichlet_row(2, pos, kVocab);
     }},
    {"disjoint supports", false,
     [](uint64_t pos, std::vector<float>& p, std::vector<float>& q) {
       p = dirichlet_row(3, pos, kVocab);
       q = dirichlet_row(4, pos, kVocab);
       for (int x = 0; x < kVocab; x++) (x < kVocab / 2 ? q : p)[x] = 0.0f;
       p = power_row(p, 1.0);
       q = power_row(q, 1.0);
     }},
    {"q one-hot, deterministic drafter", true,
     [](uint64_t pos, std::vector<float>& p, std::vector<float>& q) {
       p = dirichlet_row(5, pos, kVocab);
       q = onehot_row(kVocab, (3 * pos + 1) % kVocab);
     }},
    {"q one-hot as a distribution", false,
     [](uint64_t pos, std::vector<float>& p, std::vector<float>& q) {
       p = dirichlet_row(5, pos, kVocab);
       q = onehot_row(kVocab, (3 * pos + 1) % kVocab);
     }},
    // p one-hot leaves one bin (df 0): what is tested is that no other token ever appears
    // (a count in a probability-0 bin gives p-value 0).
    {"p one-hot", false,
     [](uint64_t pos, std::vector<float>& p, std::vector<float>& q) {
       p = onehot_row(kVocab, (5 * pos + 2) % kVocab);
       q = dirichlet_row(6, pos, kVocab);
     }},
    {"q much sharper than p", false,
     [](uint64_t pos, std::vector<float>& p, std::vector<float>& q) {
       p = dirichlet_row(7, pos, kVocab);
       q = power_row(p, 4.0);
     }},
    {"q much flatter than p", false,
     [](uint64_t pos, std::vector<float>& p, std::vector<float>& q) {
       p = dirichlet_row(8, pos, kVocab);
       q = power_row(p, 0.2);
     }},
    {"p zero where q has mass", false,
     [](uint64_t pos, std::vector<float>& p, std::vector<float>& q) {
       p = dirichlet_row(9, pos, kVocab);
       for (int x = 0; x < 3; x++) p[x] = 0.0f;
       p = power_row(p, 1.0);
       q = dirichlet_row(10, pos, kVocab);
     }},
    {"p equals q", false,
     [](uint64_t pos, std::vector<float>& p, std::vector<float>& q) {
       p = dirichlet_row(11, pos, kVocab);
       q = p;
     }},
};

ExactnessCase make_case(const Family& f, int n_draft) {
  ExactnessCase c;
  c.name = std::string(f.name) + ", gamma " + std::to_string(n_draft);
  c.vocab = kVocab;
  c.n_draft = n_draft;
  c.deterministic_drafter = f.deterministic;
  for (int pos = 0; pos < n_draft + 2; pos++) {
    std::vector<float> p, q;
    f.make(pos, p, q);
    c.p.insert(c.p.end(), p.begin(), p.end());
    c.q.insert(c.q.end(), q.begin(), q.end());
  }
  return c;
}

// Asserts the three properties of an exact verifier on one case and prints the figures.
void expect_exact(const VerifierFn& verifier, const ExactnessCase& c, const VerifyConfig& cfg,
                  uint64_t seed) {
  const ExactnessReport rep = exactness_check(verifier, c, cfg, kTrials, seed, kAlpha);
  std::printf("%-44s l=%.2f first: X2=%7.2f df=%d p=%.4f", c.name.c_str(), cfg.lenience,
              rep.first.statistic, rep.first.df, rep.first.p_value);
  if (cfg.lenience == 1.0) {
    std::printf(" | joint: X2=%7.2f df=%2d p=%.4f", rep.joint.statistic, rep.joint.df,
                rep.joint.p_value);
  }
  std::printf(" | accepted %.4f [%.4f, %.4f] theory %.4f\n", rep.mean_accepted,
              rep.accepted_interval.lo, rep.accepted_interval.hi, rep.expected_accepted);
  EXPECT_GT(rep.first.p_value, kAlpha) << c.name;
  if (cfg.lenience == 1.0) {
    EXPECT_GT(rep.joint.p_value, kAlpha) << c.name;
  }
  // Degenerate cases (always / never accept) have a zero-width interval: compare exactly.
  EXPECT_TRUE(rep.accepted_interval.contains(rep.expected_accepted) ||
              std::fabs(rep.mean_accepted - rep.expected_accepted) < 1e-5)
      << c.name;
}

TEST(SpeculativeVerify, ExactnessSizing) {
  // The power this suite's sample size buys against a 1% total-variation error.
  const double lambda = 4.0 * 0.01 * 0.01 * kTrials;
  const double power_first = stats_chi2_power(kVocab - 1, lambda, kAlpha);
  const double power_joint = stats_chi2_power(kVocab * kVocab - 1, lambda, kAlpha);
  std::printf(
      "n = %lld, TV 1%%: lambda >= %.0f, power at alpha=1e-3: first token (df %d) %.5f, "
      "joint (df %d) %.4f\n",
      (long long)kTrials, lambda, kVocab - 1, power_first, kVocab * kVocab - 1, power_joint);
  EXPECT_GT(power_first, 0.999);
  EXPECT_GT(power_joint, 0.8);
}

class Exactness : public ::testing::TestWithParam<int> {};  // param = index into kFamilies

TEST_P(Exactness, EmittedTokensFollowTarget) {
  const Family& f = kFamilies[GetParam()];
  for (int n_draft = 1; n_draft <= 3; n_draft++) {
    expect_exact(speculative_verify, make_case(f, n_draft), VerifyConfig{}, 100 + n_draft);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, Exactness,
                         ::testing::Range(0, static_cast<int>(std::size(kFamilies))));

TEST(SpeculativeVerify, ExactnessAfterTemperatureTopKTopP) {
  // p and q from random logits (vocab 12), standardized with the same params; the emitted
  // law must be the standardized p. Filtering gives q zeros where p has mass and back.
  const int64_t V = 12;
  const SamplingParams settings[] = {{0.7f, 5, 1.0f}, {1.5f, 0, 0.8f}, {1.0f, 6, 0.9f}};
  for (const SamplingParams& sp : settings) {
    ExactnessCase c;
    c.name = "T=" + std::to_string(sp.temperature).substr(0, 3) + " k=" + std::to_string(sp.top_k) +
             " p=" + std::to_string(sp.top_p).substr(0, 3);
    c.vocab = V;
    c.n_draft = 2;
    c.p.resize(4 * V);
    c.q.resize(4 * V);
    for (int pos = 0; pos < 4; pos++) {
      std::vector<float> lp(V), lq(V);
      for (int64_t x = 0; x < V; x++) {
        lp[x] =
            static_cast<float>(4.0 * rng_uniform({20, uint64_t(pos), uint64_t(x), kRngTest, 0}));
        // the drafter's logits: the target's plus noise, as a smaller model would be
        lq[x] = lp[x] + static_cast<float>(
                            3.0 * rng_uniform({21, uint64_t(pos), uint64_t(x), kRngTest, 0}));
      }
      sampling_standardize(c.p.data() + pos * V, lp.data(), V, sp);
      sampling_standardize(c.q.data() + pos * V, lq.data(), V, sp);
    }
    expect_exact(speculative_verify, c, VerifyConfig{}, 300);
  }
}

TEST(SpeculativeVerify, LenienceFollowsItsLaw) {
  // With l < 1 the first emitted token follows
  //   min(q, p/l) + (1 - a_l)/(1/l - a_l) max(0, p/l - q),  a_l = sum min(q, p/l),
  // never exceeds p/l, and the accepted count follows a_l.
  for (double l : {0.5, 0.2}) {
    for (const Family& f : {kFamilies[0], kFamilies[2], kFamilies[6]}) {
      const ExactnessCase c = make_case(f, 2);
      const std::vector<double> law = exactness_first_token_law(c.p.data(), c.q.data(), kVocab, l);
      EXPECT_NEAR(std::accumulate(law.begin(), law.end(), 0.0), 1.0, 1e-6);
      for (int x = 0; x < kVocab; x++) EXPECT_LE(law[x], c.p[x] / l + 1e-7);
      expect_exact(speculative_verify, c, VerifyConfig{false, l}, 400);
    }
  }
}

// ---------------------------------------------------------------- planted bugs

enum class Bug { kResidualFromP, kUnnormalizedResidual, kAcceptIgnoresQ, kBonusFromLastDraftRow };

// Algorithm 1 with one deliberate mistake.
VerifyOutcome buggy_verify(Bug bug, const VerifyRound& r, RngKey base) {
  const int64_t V = r.vocab;
  VerifyOutcome o;
  for (int i = 0; i < r.n_draft; i++) {
    const float* p_i = r.p + i * V;
    const float* q_i = r.q + i * V;
    const int32_t d = r.draft[i];
    const double u = rng_uniform(rng_key_at(base, base.position + i, kRngAcceptTest));
    const bool accept = bug == Bug::kAcceptIgnoresQ ? u < p_i[d] : u * q_i[d] < p_i[d];
    if (accept) continue;
    o.n_accepted = i;
    const double v = rng_uniform(rng_key_at(base, base.position + i, kRngResidualSample));
    if (bug == Bug::kResidualFromP) {
      o.next_token = sampling_draw(p_i, V, v);
    } else if (bug == Bug::kUnnormalizedResidual) {
      // inverse CDF over max(0, p - q) without dividing by its mass; u beyond the mass falls
      // through to the last id
      double cum = 0.0;
      o.next_token = static_cast<int32_t>(V - 1);
      for (int64_t x = 0; x < V; x++) {
        cum += std::max(0.0f, p_i[x] - q_i[x]);
        if (v < cum) {
          o.next_token = static_cast<int32_t>(x);
          break;
        }
      }
    } else {
      std::vector<float> res(V);
      for (int64_t x = 0; x < V; x++) res[x] = std::max(0.0f, p_i[x] - q_i[x]);
      o.next_token = sampling_draw(res.data(), V, v);
    }
    return o;
  }
  o.n_accepted = r.n_draft;
  o.bonus = true;
  const int row = bug == Bug::kBonusFromLastDraftRow ? r.n_draft - 1 : r.n_draft;
  o.next_token = sampling_draw(
      r.p + row * V, V, rng_uniform(rng_key_at(base, base.position + r.n_draft, kRngBonusSample)));
  return o;
}

TEST(SpeculativeVerify, PlantedBugsAreCaught) {
  // Each wrong verifier, on the Dirichlet case with gamma 1, must give a p-value far below
  // alpha in the first-token or the joint test (here: < 1e-6), while the exact verifier
  // passes the same check (ExactnessTests above).
  const ExactnessCase c = make_case(kFamilies[0], 1);
  struct Planted {
    const char* name;
    Bug bug;
  };
  const Planted planted[] = {
      {"correction sampled from p, not the residual", Bug::kResidualFromP},
      {"residual not renormalized", Bug::kUnnormalizedResidual},
      {"accept with prob p(d), ignoring q", Bug::kAcceptIgnoresQ},
      {"bonus from p_{gamma-1} instead of p_gamma", Bug::kBonusFromLastDraftRow},
  };
  for (const Planted& pl : planted) {
    const Bug bug = pl.bug;
    const VerifierFn wrong = [bug](const VerifyRound& r, const VerifyConfig&, RngKey base) {
      return buggy_verify(bug, r, base);
    };
    const ExactnessReport rep = exactness_check(wrong, c, VerifyConfig{}, kTrials, 500, kAlpha);
    const double p_min = std::min(rep.first.p_value, rep.joint.p_value);
    std::printf("planted bug '%s': first p=%.3g joint p=%.3g\n", pl.name, rep.first.p_value,
                rep.joint.p_value);
    EXPECT_LT(p_min, 1e-6) << pl.name;
  }
}

// ---------------------------------------------------------------- greedy and lenience

// A random round: Dirichlet p rows (sharpened so argmax is meaningful), drafts that agree
// with argmax p 70% of the time, q = Dirichlet rows with the draft's mass raised (q(d) > 0).
struct RandomRound {
  int n_draft;
  int64_t vocab;
  std::vector<int32_t> draft;
  std::vector<float> p, q;
  // p_raw = p: a hand-made p is not one-hot, so it stands for its own raw distribution.
  VerifyRound view() const { return {n_draft, draft.data(), q.data(), p.data(), vocab, p.data()}; }
};

RandomRound random_round(uint64_t id) {
  RandomRound rr;
  rr.vocab = 6;
  rr.n_draft = 1 + static_cast<int>(rng_uniform({30, id, 0, kRngTest, 0}) * 5);
  for (int i = 0; i <= rr.n_draft; i++) {
    const std::vector<float> p = power_row(dirichlet_row(31, id * 16 + i, rr.vocab), 2.0);
    rr.p.insert(rr.p.end(), p.begin(), p.end());
  }
  for (int i = 0; i < rr.n_draft; i++) {
    const double u = rng_uniform({32, id, uint64_t(i), kRngTest, 0});
    const int32_t d = u < 0.7 ? sampling_argmax(rr.p.data() + i * rr.vocab, rr.vocab)
                              : static_cast<int32_t>(u * 100) % rr.vocab;
    rr.draft.push_back(d);
    std::vector<float> q = dirichlet_row(33, id * 16 + i, rr.vocab);
    q[d] += 0.5f;
    q = power_row(q, 1.0);
    rr.q.insert(rr.q.end(), q.begin(), q.end());
  }
  return rr;
}

// Algorithm 1 written out plainly, as the reference for bit-identity at l = 1.
VerifyOutcome reference_algorithm1(const VerifyRound& r, bool greedy, RngKey base) {
  const int64_t V = r.vocab;
  VerifyOutcome o;
  for (int i = 0; i < r.n_draft; i++) {
    const float* p_i = r.p + i * V;
    const float* q_i = r.q + i * V;
    const int32_t d = r.draft[i];
    bool accept;
    if (greedy) {
      accept = d == sampling_argmax(p_i, V);
    } else {
      const double u = rng_uniform(rng_key_at(base, base.position + i, kRngAcceptTest));
      accept = u < std::min(1.0, double(p_i[d]) / q_i[d]);
    }
    if (accept) continue;
    o.n_accepted = i;
    if (greedy) {
      o.next_token = sampling_argmax(p_i, V);
    } else {
      std::vector<float> res(V);
      for (int64_t x = 0; x < V; x++)
        res[x] = static_cast<float>(std::max(0.0, double(p_i[x]) - q_i[x]));
      o.next_token = sampling_draw(
          res.data(), V, rng_uniform(rng_key_at(base, base.position + i, kRngResidualSample)));
    }
    return o;
  }
  o.n_accepted = r.n_draft;
  o.bonus = true;
  const float* p_last = r.p + r.n_draft * V;
  o.next_token =
      greedy ? sampling_argmax(p_last, V)
             : sampling_draw(
                   p_last, V,
                   rng_uniform(rng_key_at(base, base.position + r.n_draft, kRngBonusSample)));
  return o;
}

TEST(SpeculativeVerify, LenienceOneIsBitIdenticalToAlgorithm1) {
  int accepted_total = 0, rounds = 0;
  for (uint64_t id = 0; id < 1000; id++) {
    const RandomRound rr = random_round(id);
    for (bool greedy : {false, true}) {
      const RngKey base{7, id, 50 + id, 0, 0};
      const VerifyOutcome got = speculative_verify(rr.view(), {greedy, 1.0}, base);
      const VerifyOutcome ref = reference_algorithm1(rr.view(), greedy, base);
      ASSERT_EQ(got.n_accepted, ref.n_accepted) << id << " greedy " << greedy;
      ASSERT_EQ(got.next_token, ref.next_token) << id << " greedy " << greedy;
      ASSERT_EQ(got.bonus, ref.bonus) << id << " greedy " << greedy;
      accepted_total += got.n_accepted;
      rounds++;
    }
  }
  std::printf("1000 random rounds x {sampling, greedy}: mean accepted %.3f\n",
              double(accepted_total) / rounds);
}

TEST(SpeculativeVerify, GreedyEmitsArgmaxSequence) {
  for (uint64_t id = 0; id < 1000; id++) {
    const RandomRound rr = random_round(id);
    const VerifyOutcome o = speculative_verify(rr.view(), {true, 1.0}, RngKey{});
    // emitted = accepted drafts + next token; each must be argmax p at its position, and the
    // draft after the accepted prefix (if any) must not be.
    for (int i = 0; i <= o.n_accepted; i++) {
      const int32_t tok = i < o.n_accepted ? rr.draft[i] : o.next_token;
      ASSERT_EQ(tok, sampling_argmax(rr.p.data() + i * rr.vocab, rr.vocab)) << id << " pos " << i;
    }
    if (o.n_accepted < rr.n_draft) {
      ASSERT_NE(rr.draft[o.n_accepted],
                sampling_argmax(rr.p.data() + o.n_accepted * rr.vocab, rr.vocab));
    }
    ASSERT_EQ(o.bonus, o.n_accepted == rr.n_draft);
  }
}

TEST(SpeculativeVerify, LenienceAcceptsSuperset) {
  // Same random numbers, smaller l: every round accepts at least as many drafts (sampling:
  // u l q < p is implied by u q < p; greedy: the argmax rule is kept and widened).
  int strict = 0, lenient = 0;
  for (uint64_t id = 0; id < 1000; id++) {
    const RandomRound rr = random_round(id);
    for (bool greedy : {false, true}) {
      const RngKey base{8, id, 0, 0, 0};
      const VerifyOutcome a = speculative_verify(rr.view(), {greedy, 1.0}, base);
      const VerifyOutcome b = speculative_verify(rr.view(), {greedy, 0.5}, base);
      ASSERT_GE(b.n_accepted, a.n_accepted) << id << " greedy " << greedy;
      strict += a.n_accepted;
      lenient += b.n_accepted;
    }
  }
  std::printf("accepted drafts over 2000 rounds: l=1 %d, l=0.5 %d\n", strict, lenient);
  EXPECT_GT(lenient, strict);  // and strictly more in total
}

TEST(SpeculativeVerify, GreedyLenienceRule) {
  // p = {0.5, 0.3, 0.2}: argmax 0. Draft 1 has p = 0.3 = 0.6 max: accepted iff l <= 0.6.
  const float p[6] = {0.5f, 0.3f, 0.2f, 0.1f, 0.1f, 0.8f};
  const int32_t draft[1] = {1};
  const VerifyRound r{1, draft, nullptr, p, 3, /*p_raw=*/p};
  EXPECT_EQ(speculative_verify(r, {true, 1.0}, {}).n_accepted, 0);
  EXPECT_EQ(speculative_verify(r, {true, 1.0}, {}).next_token, 0);
  EXPECT_EQ(speculative_verify(r, {true, 0.7}, {}).n_accepted, 0);
  const VerifyOutcome o = speculative_verify(r, {true, 0.5}, {});
  EXPECT_EQ(o.n_accepted, 1);
  EXPECT_EQ(o.next_token, 2);  // bonus = argmax p_1
  EXPECT_TRUE(o.bonus);
}

// Greedy lenience reads the raw distribution, not the standardized one: at temperature 0 p
// is one-hot, and the rule applied to it could accept nothing but the argmax (paper A.5).
TEST(SpeculativeVerify, GreedyLenienceUsesRawDistribution) {
  const float one_hot[6] = {1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f};  // [2, 3] standardized, T = 0
  const float raw[3] = {0.5f, 0.3f, 0.2f};                        // [1, 3] softmax at T = 1
  const int32_t draft[1] = {1};
  const VerifyRound r{1, draft, nullptr, one_hot, 3, raw};
  EXPECT_EQ(speculative_verify(r, {true, 1.0}, {}).n_accepted, 0);  // l = 1: argmax only
  EXPECT_EQ(speculative_verify(r, {true, 0.7}, {}).n_accepted, 0);  // 0.3 < 0.7 * 0.5
  const VerifyOutcome o = speculative_verify(r, {true, 0.5}, {});   // 0.3 >= 0.5 * 0.5
  EXPECT_EQ(o.n_accepted, 1);
  EXPECT_EQ(o.next_token, 2);  // argmax of the standardized p_1
  // Without the raw distribution greedy lenience refuses instead of silently doing nothing.
  const VerifyRound no_raw{1, draft, nullptr, one_hot, 3};
  EXPECT_THROW(speculative_verify(no_raw, {true, 0.5}, {}), InputError);
  EXPECT_EQ(speculative_verify(no_raw, {true, 1.0}, {}).n_accepted, 0);
}

TEST(SpeculativeVerify, GreedyLenientAcceptsByHand) {
  const float p[4] = {0.1f, 0.4f, 0.3f, 0.2f};
  EXPECT_TRUE(verify_greedy_lenient_accepts(p, 4, 1, 1.0));    // the argmax
  EXPECT_FALSE(verify_greedy_lenient_accepts(p, 4, 2, 1.0));   // 0.3 < 0.4
  EXPECT_TRUE(verify_greedy_lenient_accepts(p, 4, 2, 0.75));   // 0.3 >= 0.3
  EXPECT_TRUE(verify_greedy_lenient_accepts(p, 4, 3, 0.49));   // 0.2 >= 0.196
  EXPECT_FALSE(verify_greedy_lenient_accepts(p, 4, 3, 0.51));  // 0.2 < 0.204
  EXPECT_TRUE(verify_greedy_lenient_accepts(p, 4, 0, 0.2));    // 0.1 >= 0.08
}

// Hand computation, p = {0.5, 0.3, 0.2}, q = {0.2, 0.2, 0.6}:
//   l = 1:   alpha = sum min(p, q) = 0.2 + 0.2 + 0.2 = 0.6; the law is p (tv 0).
//   l = 0.5: p/l = {1, 0.6, 0.4}, alpha_l = 0.2 + 0.2 + 0.4 = 0.8; residual max(0, p/l - q) =
//            {0.8, 0.4, 0} of mass 1/l - alpha_l = 1.2, weight (1 - 0.8) / 1.2 = 1/6, so the
//            law is {0.2 + 0.8/6, 0.2 + 0.4/6, 0.4} = {1/3, 4/15, 2/5} and its total
//            variation from p is (1/6 + 1/30 + 1/5) / 2 = 0.2.
// A simulation of the lenient verifier (200000 rounds of one draft d ~ q) agrees: accepted
// share within 0.005 of alpha_l, emitted law within 0.005 of the formula per token, and so
// the empirical total variation from p within 0.01 of 0.2.
TEST(SpeculativeVerify, LenientAcceptanceAndTvByHandAndSimulation) {
  const float p[6] = {0.5f, 0.3f, 0.2f, 0.5f, 0.3f, 0.2f};  // [2, 3]: p_0 and the bonus row
  const float q[3] = {0.2f, 0.2f, 0.6f};
  EXPECT_NEAR(verify_expected_acceptance(p, q, 3, 1.0), 0.6, 1e-6);
  EXPECT_NEAR(verify_expected_acceptance(p, q, 3, 0.5), 0.8, 1e-6);
  EXPECT_NEAR(verify_lenient_tv(p, q, 3, 1.0), 0.0, 1e-6);
  EXPECT_NEAR(verify_lenient_tv(p, q, 3, 0.5), 0.2, 1e-6);
  double law[3];
  verify_lenient_law(p, q, 3, 0.5, law);
  EXPECT_NEAR(law[0], 1.0 / 3, 1e-6);
  EXPECT_NEAR(law[1], 4.0 / 15, 1e-6);
  EXPECT_NEAR(law[2], 0.4, 1e-6);

  const int n = 200000;
  int64_t accepted = 0;
  std::vector<int64_t> counts(3, 0);
  for (int t = 0; t < n; t++) {
    const RngKey base{31, static_cast<uint64_t>(t), 0, 0, 0};
    const int32_t d = sampling_draw(q, 3, rng_uniform(rng_key_at(base, 0, kRngDraftSample)));
    const VerifyRound r{1, &d, q, p, 3};
    const VerifyOutcome o = speculative_verify(r, {false, 0.5}, base);
    accepted += o.n_accepted;
    counts[o.n_accepted == 1 ? d : o.next_token]++;
  }
  EXPECT_NEAR(double(accepted) / n, 0.8, 0.005);
  double tv = 0;
  for (int x = 0; x < 3; x++) {
    EXPECT_NEAR(double(counts[x]) / n, law[x], 0.005) << "token " << x;
    tv += std::abs(double(counts[x]) / n - p[x]);
  }
  EXPECT_NEAR(tv / 2, 0.2, 0.01);
}

}  // namespace
}  // namespace speclab
