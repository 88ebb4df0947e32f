// Standardization (temperature -> top-k -> top-p) and drawing, on tiny hand-written
// distributions with exact expected outputs (llama.cpp test-sampling style).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/sampling.h"
#include "core/stats.h"

namespace speclab {
namespace {

std::vector<float> log_of(const std::vector<float>& probs) {
  std::vector<float> l(probs.size());
  for (size_t i = 0; i < probs.size(); i++) l[i] = std::log(probs[i]);
  return l;
}

struct StandardizeCase {
  const char* name;
  std::vector<float> logits;
  SamplingParams params;
  std::vector<float> expected;
};

TEST(Sampling, StandardizeTable) {
  const float kInf = std::numeric_limits<float>::infinity();
  const std::vector<float> p4 = {0.1f, 0.2f, 0.3f, 0.4f};
  const std::vector<StandardizeCase> cases = {
      {"plain softmax", log_of(p4), {1.0f, 0, 1.0f}, p4},
      {"top_k 1", log_of(p4), {1.0f, 1, 1.0f}, {0, 0, 0, 1}},
      {"top_k 3", log_of(p4), {1.0f, 3, 1.0f}, {0, 0.2f / 0.9f, 0.3f / 0.9f, 0.4f / 0.9f}},
      {"top_k = n", log_of(p4), {1.0f, 4, 1.0f}, p4},
      {"top_k > n", log_of(p4), {1.0f, 9, 1.0f}, p4},
      {"top_p tiny keeps one", log_of(p4), {1.0f, 0, 1e-6f}, {0, 0, 0, 1}},
      {"top_p 0.65", log_of(p4), {1.0f, 0, 0.65f}, {0, 0, 3.0f / 7, 4.0f / 7}},
      {"top_p 0.75", log_of(p4), {1.0f, 0, 0.75f}, {0, 0.2f / 0.9f, 0.3f / 0.9f, 0.4f / 0.9f}},
      {"top_p 0.95", log_of(p4), {1.0f, 0, 0.95f}, p4},
      // Order matters: top-k 2 leaves (3/7, 4/7); top-p 0.5 of that keeps only 4/7. Top-p
      // first would keep {0.4, 0.3} (mass 0.7 >= 0.5) and give (3/7, 4/7).
      {"top_k then top_p", log_of(p4), {1.0f, 2, 0.5f}, {0, 0, 0, 1}},
      {"temperature 2", {0.0f, std::log(4.0f)}, {2.0f, 0, 1.0f}, {1.0f / 3, 2.0f / 3}},
      {"temperature 0.5", {0.0f, std::log(2.0f)}, {0.5f, 0, 1.0f}, {0.2f, 0.8f}},
      // T = 2: weights {1, 2, 1}; top-k 2 keeps id 1 and, of the tied ids 0 and 2, id 0.
      {"temperature then top_k",
       {0.0f, std::log(4.0f), 0.0f},
       {2.0f, 2, 1.0f},
       {1.0f / 3, 2.0f / 3, 0}},
      {"greedy", {1, 3, 2, 0}, {0.0f, 0, 1.0f}, {0, 1, 0, 0}},
      {"greedy tie -> lowest id", {1, 3, 3, 2}, {0.0f, 0, 1.0f}, {0, 1, 0, 0}},
      {"greedy ignores top_k/top_p", {1, 3, 3, 2}, {0.0f, 3, 0.1f}, {0, 1, 0, 0}},
      {"top_k tie at boundary -> lower ids", {1, 2, 2, 2}, {1.0f, 2, 1.0f}, {0, 0.5f, 0.5f, 0}},
      {"top_p ties -> lower ids first", {0, 0, 0, 0}, {1.0f, 0, 0.3f}, {0.5f, 0.5f, 0, 0}},
      {"masked -inf", {-kInf, 0, 0}, {1.0f, 0, 1.0f}, {0, 0.5f, 0.5f}},
      {"masked -inf with top_k",
       {-kInf, 1, 0},
       {1.0f, 2, 1.0f},
       {0, float(std::exp(1.0) / (std::exp(1.0) + 1)), float(1 / (std::exp(1.0) + 1))}},
      {"large logits stable",
       {1000, 1001},
       {1.0f, 0, 1.0f},
       {float(1 / (1 + std::exp(1.0))), float(std::exp(1.0) / (1 + std::exp(1.0)))}},
  };
  for (const StandardizeCase& c : cases) {
    std::vector<float> probs(c.logits.size(), -1.0f);
    sampling_standardize(probs.data(), c.logits.data(), c.logits.size(), c.params);
    for (size_t i = 0; i < probs.size(); i++) {
      if (c.expected[i] == 0.0f) {
        EXPECT_EQ(probs[i], 0.0f) << c.name << " id " << i;  // filtered ids are exactly 0
      } else {
        EXPECT_NEAR(probs[i], c.expected[i], 2e-6) << c.name << " id " << i;
      }
    }
  }
}

TEST(Sampling, InvalidParamsThrow) {
  const std::vector<float> logits = {0, 1};
  std::vector<float> probs(2);
  const SamplingParams bad[] = {
      {-0.5f, 0, 1.0f},
      {std::numeric_limits<float>::quiet_NaN(), 0, 1.0f},
      {std::numeric_limits<float>::infinity(), 0, 1.0f},
      {1.0f, -1, 1.0f},
      {1.0f, 0, 0.0f},
      {1.0f, 0, -0.1f},
      {1.0f, 0, 1.5f},
  };
  for (const SamplingParams& sp : bad) {
    EXPECT_THROW(sampling_standardize(probs.data(), logits.data(), 2, sp), InputError)
        << sp.temperature << " " << sp.top_k << " " << sp.top_p;
  }
  const float all_masked[2] = {-std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity()};
  EXPECT_THROW(sampling_standardize(probs.data(), all_masked, 2, SamplingParams{}), InputError);
}

// Reference for top-k / top-p on a big vocabulary: full stable sort, then the definition.
std::vector<float> reference_standardize(const std::vector<float>& logits, SamplingParams sp) {
  const int64_t n = logits.size();
  std::vector<double> w(n);
  const double m = *std::max_element(logits.begin(), logits.end());
  for (int64_t i = 0; i < n; i++) w[i] = std::exp((logits[i] - m) / sp.temperature);
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  int64_t keep = sp.top_k > 0 ? std::min<int64_t>(sp.top_k, n) : n;
  double mass = 0.0;
  for (int64_t j = 0; j < keep; j++) mass += w[ids[j]];
  double cum = 0.0;
  int64_t j = 0;
  for (; j < keep; j++) {
    cum += w[ids[j]];
    if (cum >= sp.top_p * mass) break;
  }
  keep = std::min(j + 1, keep);
  double kept = 0.0;
  for (int64_t i = 0; i < keep; i++) kept += w[ids[i]];
  std::vector<float> out(n, 0.0f);
  for (int64_t i = 0; i < keep; i++) out[ids[i]] = static_cast<float>(w[ids[i]] / kept);
  return out;
}

TEST(Sampling, LargeVocabMatchesFullSortReference) {
  // Vocab 128256 (Llama 3), logits ~ 3 * N(0,1)-ish from the counter RNG, with a block of
  // exact ties. Each setting must match the full-sort reference id for id.
  const int64_t n = 128256;
  std::vector<float> logits(n);
  for (int64_t i = 0; i < n; i++) {
    const double u1 = rng_uniform({5, 0, static_cast<uint64_t>(i), kRngTest, 0});
    const double u2 = rng_uniform({5, 0, static_cast<uint64_t>(i), kRngTest, 1});
    logits[i] =
        static_cast<float>(3.0 * std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(6.283185307 * u2));
  }
  for (int64_t i = 100; i < 110; i++) logits[i] = 9.0f;  // ties among the top
  const SamplingParams settings[] = {{1.0f, 0, 0.9f}, {0.7f, 40, 1.0f}, {0.7f, 40, 0.8f},
                                     {1.3f, 0, 0.5f}, {1.0f, 5, 1.0f},  {1.0f, 0, 0.999f}};
  std::vector<float> probs(n);
  for (const SamplingParams& sp : settings) {
    const auto t0 = std::chrono::steady_clock::now();
    sampling_standardize(probs.data(), logits.data(), n, sp);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const std::vector<float> ref = reference_standardize(logits, sp);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
      ASSERT_EQ(probs[i] == 0.0f, ref[i] == 0.0f) << "id " << i;
      ASSERT_NEAR(probs[i], ref[i], 1e-6f) << "id " << i;
      kept += probs[i] > 0.0f;
    }
    std::printf("T=%.1f top_k=%d top_p=%.3f: kept %lld of %lld ids in %.2f ms\n", sp.temperature,
                sp.top_k, sp.top_p, (long long)kept, (long long)n, ms);
  }
}

TEST(Sampling, DrawInverseCdfTable) {
  struct DrawCase {
    std::vector<float> w;
    double u;
    int32_t expected;
  };
  const double below_one = std::nextafter(1.0, 0.0);
  const std::vector<DrawCase> cases = {
      {{0.25f, 0.0f, 0.75f}, 0.0, 0},
      {{0.25f, 0.0f, 0.75f}, 0.2499, 0},
      {{0.25f, 0.0f, 0.75f}, 0.25, 2},  // skips the zero-weight id
      {{0.25f, 0.0f, 0.75f}, below_one, 2},
      {{0.0f, 1.0f}, 0.0, 1},                    // u = 0 never picks a zero weight
      {{0.3f, 0.7f, 0.0f, 0.0f}, below_one, 1},  // tail rounding never lands on zeros
      {{0.1f, 0.1f, 0.1f}, 0.5, 1},              // unnormalized weights: proportional
      {{1e-30f, 0.0f, 1e-30f}, 0.75, 2},
  };
  for (const DrawCase& c : cases) {
    EXPECT_EQ(sampling_draw(c.w.data(), c.w.size(), c.u), c.expected) << "u = " << c.u;
  }
  const float zeros[3] = {0, 0, 0};
  EXPECT_THROW(sampling_draw(zeros, 3, 0.5), InputError);
  const float one[1] = {1};
  EXPECT_THROW(sampling_draw(one, 1, 1.0), InputError);
}

TEST(Sampling, DrawFrequenciesMatchWeights) {
  // 100k draws from {0.1, 0.2, 0.3, 0.4, 0}: chi-square at alpha = 1e-3, and never id 4.
  const std::vector<float> w = {0.1f, 0.2f, 0.3f, 0.4f, 0.0f};
  std::vector<int64_t> counts(w.size(), 0);
  for (int i = 0; i < 100000; i++) {
    counts[sampling_draw(w.data(), w.size(), rng_uniform({3, 0, uint64_t(i), kRngTest, 0}))]++;
  }
  EXPECT_EQ(counts[4], 0);
  const GofResult g = stats_chi2_gof(counts, {0.1, 0.2, 0.3, 0.4, 0.0});
  std::printf("draw chi2 = %.2f df = %d p = %.4f\n", g.statistic, g.df, g.p_value);
  EXPECT_GT(g.p_value, 1e-3);
}

TEST(Sampling, ArgmaxAndEntropy) {
  const float v[] = {1, 5, 5, -2};
  EXPECT_EQ(sampling_argmax(v, 4), 1);
  const float uniform[] = {0.25f, 0.25f, 0.25f, 0.25f};
  const float onehot[] = {0, 0, 1, 0};
  const float half[] = {0.5f, 0.5f, 0, 0};
  EXPECT_NEAR(sampling_entropy_normalized(uniform, 4), 1.0, 1e-7);
  EXPECT_EQ(sampling_entropy_normalized(onehot, 4), 0.0);
  EXPECT_NEAR(sampling_entropy_normalized(half, 4), 0.5, 1e-7);  // log 2 / log 4
}

}  // namespace
}  // namespace speclab
