// The sort-free top-k / top-p selection of core/cuda/cuda_top_set.h, run on the host with the
// very functions the device kernels call (core/cuda/cuda_top_set.cu), step for step as the
// kernels take them: four histogram passes a selection, top-k's ties added to top-p's
// histograms, the ties at the threshold ranked by id. The kept sets must be the ones
// sampling_standardize (core/sampling.cpp, a sort) keeps, on rows built to reach every branch
// (ties at either boundary, one logit for every id, -inf ids, -0 beside +0, the Llama 3
// vocabulary); each planted wrong rule is rejected by the same comparison. Runs without a
// device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cuda/cuda_top_set.h"
#include "core/sampling.h"

namespace speclab {
namespace {

// Wrong rules the comparison must reject.
enum class Flaw {
  kNone,
  kTiesToHigherIds,    // the ties at T ranked from the highest id down
  kTopPBoundaryShort,  // top-p keeps one id of key T fewer than it needs
  kTopKTiesDropped,    // top-p after top-k forgets the ties at top-k's T
};

// The device's steps (cuda_top_set.cu) on one row, on the host.
std::vector<float> host_top_set(const std::vector<float>& logits, const SamplingParams& sp,
                                Flaw flaw = Flaw::kNone) {
  const int64_t n = static_cast<int64_t>(logits.size());
  const float max_logit = logits[sampling_argmax(logits.data(), n)];
  const double inv_t = 1.0 / static_cast<double>(sp.temperature);
  const double scale = std::ldexp(1.0, cuda_top_mass_shift(n));
  std::vector<uint32_t> key(n);
  std::vector<uint64_t> fixed(n);
  for (int64_t i = 0; i < n; i++) {
    key[i] = cuda_top_key(logits[i]);
    fixed[i] = cuda_top_fixed(cuda_top_weight(logits[i], max_logit, inv_t), scale);
  }
  auto fixed_of_key = [&](uint32_t k) {
    return cuda_top_fixed(cuda_top_weight(cuda_top_key_logit(k), max_logit, inv_t), scale);
  };
  const bool use_k = sp.top_k > 0 && sp.top_k < n, use_p = sp.top_p < 1.0f;

  // One selection: top_hist_kernel then top_pick_kernel, four times.
  auto select = [&](CudaTopSelect* s, bool mass, const CudaTopSelect* k) {
    *s = CudaTopSelect{};
    const uint32_t bound = cuda_top_p_key_bound(k);
    for (int pass = 0; pass < kCudaTopPasses; pass++) {
      uint64_t hist[kCudaTopBuckets] = {};
      for (int64_t i = 0; i < n; i++) {
        if (!cuda_top_in_range(key[i], *s)) continue;
        if (mass && !cuda_top_p_histograms(key[i], bound)) continue;
        hist[cuda_top_digit(key[i], pass)] += mass ? fixed[i] : 1;
      }
      if (mass && k != nullptr && flaw != Flaw::kTopKTiesDropped)
        cuda_top_p_add_top_k_ties(hist, *s, *k, fixed_of_key(k->prefix), pass);
      if (pass == 0) {
        uint64_t total = 0;
        for (uint64_t h : hist) total += h;
        s->target = mass ? cuda_top_need(total, sp.top_p) : static_cast<uint64_t>(sp.top_k);
      }
      cuda_top_pick(s, hist, pass);
    }
    if (!mass) {
      s->take = cuda_top_count_take(*s);
    } else {
      s->take = cuda_top_mass_take(*s, fixed_of_key(s->prefix));
      if (k != nullptr && s->prefix == k->prefix) s->take = std::min(s->take, k->take);
      if (flaw == Flaw::kTopPBoundaryShort) s->take -= 1;
    }
  };
  CudaTopSelect k_sel{}, p_sel{};
  if (use_k) select(&k_sel, false, nullptr);
  if (use_p) select(&p_sel, true, use_k ? &k_sel : nullptr);
  const CudaTopSelect& fin = use_p ? p_sel : k_sel;

  // top_mark_kernel and top_normalize_kernel: ties ranked in id order, the kept mass summed
  // in id order.
  std::vector<uint64_t> rank(n, 0);
  uint64_t seen = 0;
  if (flaw == Flaw::kTiesToHigherIds) {
    for (int64_t i = n - 1; i >= 0; i--)
      if (key[i] == fin.prefix) rank[i] = seen++;
  } else {
    for (int64_t i = 0; i < n; i++)
      if (key[i] == fin.prefix) rank[i] = seen++;
  }
  std::vector<float> probs(n, 0.0f);
  double kept_mass = 0.0;
  for (int64_t i = 0; i < n; i++)
    if (cuda_top_kept(key[i], rank[i], fin))
      kept_mass += cuda_top_weight(logits[i], max_logit, inv_t);
  for (int64_t i = 0; i < n; i++)
    if (cuda_top_kept(key[i], rank[i], fin))
      probs[i] = static_cast<float>(cuda_top_weight(logits[i], max_logit, inv_t) / kept_mass);
  return probs;
}

struct Row {
  std::string name;
  std::vector<float> logits;
};

std::vector<Row> rows_to_reach_every_branch() {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<Row> rows;
  auto random_row = [&](int64_t n) {
    std::vector<float> l(n);
    for (float& x : l) x = normal(gen);
    return l;
  };
  rows.push_back({"random 3000", random_row(3000)});
  rows.push_back({"random 128256", random_row(128256)});
  {  // logits on a grid of 0.5: every boundary falls inside a group of equal logits
    std::vector<float> l = random_row(5000);
    for (float& x : l) x = std::round(x * 2.0f) / 2.0f;
    rows.push_back({"ties everywhere", l});
  }
  rows.push_back({"one logit for all", std::vector<float>(1000, 1.25f)});
  {  // a third of the ids masked: top-k can reach past the finite ones
    std::vector<float> l = random_row(300);
    for (size_t i = 0; i < l.size(); i += 3) l[i] = -std::numeric_limits<float>::infinity();
    rows.push_back({"-inf ids", l});
  }
  {  // -0 and +0 are one logit: a tie broken by id
    std::vector<float> l(64);
    for (size_t i = 0; i < l.size(); i++) l[i] = (i % 2) ? -0.0f : 0.0f;
    l[10] = 1.0f;
    l[40] = -1.0f;
    rows.push_back({"signed zeros", l});
  }
  {  // one logit far above the rest
    std::vector<float> l = random_row(2000);
    l[1234] = 60.0f;
    rows.push_back({"peaked", l});
  }
  {  // ties at the top spanning the 4,096-id chunks of the device kernels
    std::vector<float> l = random_row(128256);
    l[4095] = l[4096] = l[100000] = l[7] = 25.0f;
    rows.push_back({"top ties across chunks", l});
  }
  return rows;
}

std::vector<SamplingParams> params_with_top_k_or_top_p() {
  std::vector<SamplingParams> out;
  for (float t : {1.0f, 0.7f, 2.0f}) {
    for (int k : {0, 1, 3, 40, 999}) {
      for (float p : {1.0f, 0.9f, 0.5f, 0.3f, 0.05f}) {
        if (k == 0 && p == 1.0f) continue;
        SamplingParams sp;
        sp.temperature = t;
        sp.top_k = k;
        sp.top_p = p;
        out.push_back(sp);
      }
    }
  }
  return out;
}

std::string describe(const Row& r, const SamplingParams& sp) {
  return r.name + " T=" + std::to_string(sp.temperature) + " k=" + std::to_string(sp.top_k) +
         " p=" + std::to_string(sp.top_p);
}

// Kept sets differ (an id kept by one and not the other), or a kept probability differs by
// more than 1e-7 + 1e-5 relative (the kept mass is summed in id order, not in sorted order).
bool differs(const std::vector<float>& got, const std::vector<float>& ref) {
  for (size_t i = 0; i < ref.size(); i++) {
    if ((got[i] > 0.0f) != (ref[i] > 0.0f)) return true;
    if (std::fabs(static_cast<double>(got[i]) - ref[i]) > 1e-7 + 1e-5 * std::fabs(ref[i]))
      return true;
  }
  return false;
}

TEST(CudaTopSet, KeysOrderLogitsAndComeBack) {
  const float inf = std::numeric_limits<float>::infinity();
  const float denorm = std::numeric_limits<float>::denorm_min();
  // Ascending logits: keys strictly descending, except -0 and +0, which share one.
  const std::vector<float> ascending = {-inf, -3.0e38f, -2.5f,  -1.0f, -denorm, -0.0f,
                                        0.0f, denorm,   1e-30f, 1.0f,  7.5f,    3.0e38f};
  for (size_t i = 1; i < ascending.size(); i++) {
    const bool zeros = ascending[i] == 0.0f && ascending[i - 1] == 0.0f;
    if (zeros) {
      EXPECT_EQ(cuda_top_key(ascending[i]), cuda_top_key(ascending[i - 1]));
    } else {
      EXPECT_LT(cuda_top_key(ascending[i]), cuda_top_key(ascending[i - 1])) << ascending[i];
    }
  }
  for (float x : ascending) {
    const float back = cuda_top_key_logit(cuda_top_key(x));
    EXPECT_EQ(back, x);
    if (x != 0.0f) {
      EXPECT_EQ(std::signbit(back), std::signbit(x));
    }
  }
  EXPECT_EQ(cuda_top_key(-inf), 0xFF800000u);
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 10.0f);
  for (int i = 0; i < 10000; i++) {
    const float a = normal(gen), b = normal(gen);
    EXPECT_EQ(a > b, cuda_top_key(a) < cuda_top_key(b)) << a << " " << b;
  }
}

TEST(CudaTopSet, FixedPointMassesFitAndNeedIsCeiled) {
  EXPECT_EQ(cuda_top_mass_shift(128256), 62 - 17);
  EXPECT_EQ(cuda_top_mass_shift(1024), 52);
  EXPECT_EQ(cuda_top_mass_shift(1025), 51);
  // vocab weights of 1 each: the total stays below 2^63.
  const double scale = std::ldexp(1.0, cuda_top_mass_shift(128256));
  const uint64_t one = cuda_top_fixed(1.0, scale);
  EXPECT_EQ(one, uint64_t{1} << 45);
  EXPECT_LT(static_cast<double>(one) * 128256, std::ldexp(1.0, 63));
  EXPECT_EQ(cuda_top_fixed(0.0, scale), 0u);
  EXPECT_EQ(cuda_top_need(1000, 0.5f), 500u);
  EXPECT_EQ(cuda_top_need(1000, 0.3f), 301u);  // 0.3f is 0.30000001...
  EXPECT_EQ(cuda_top_need(3, 1e-9f), 1u);      // at least one
  EXPECT_EQ(cuda_top_need(uint64_t{1} << 62, 0.9999999f),
            static_cast<uint64_t>(std::ceil(std::ldexp(1.0, 62) * 0.9999999f)));
}

TEST(CudaTopSet, PickFindsTheBucketThatReachesTheTarget) {
  uint64_t hist[kCudaTopBuckets] = {};
  hist[3] = 5;
  hist[7] = 2;
  hist[200] = 10;
  CudaTopSelect s{};
  s.target = 6;  // 5 in bucket 3, the 6th in bucket 7
  cuda_top_pick(&s, hist, 0);
  EXPECT_EQ(s.prefix, 7u << 24);
  EXPECT_EQ(s.mask, 0xFF000000u);
  EXPECT_EQ(s.below, 5u);
  CudaTopSelect exact{};
  exact.target = 5;  // reached exactly inside bucket 3
  cuda_top_pick(&exact, hist, 0);
  EXPECT_EQ(exact.prefix, 3u << 24);
  EXPECT_EQ(exact.below, 0u);
  // The last pass: digits in the low byte, the take follows.
  CudaTopSelect last{};
  last.prefix = 0x12345600u;
  last.mask = 0xFFFFFF00u;
  last.below = 4;
  last.target = 15;
  cuda_top_pick(&last, hist, 3);
  EXPECT_EQ(last.prefix, 0x123456C8u);  // bucket 200: 4 + 5 + 2 < 15 <= 4 + 5 + 2 + 10
  EXPECT_EQ(last.below, 11u);
  EXPECT_EQ(cuda_top_count_take(last), 4u);
  EXPECT_EQ(cuda_top_mass_take(last, 3), 2u);  // ceil(4 / 3)
}

TEST(CudaTopSet, KeepsWhatTheSortKeeps) {
  int cases = 0;
  for (const Row& r : rows_to_reach_every_branch()) {
    for (const SamplingParams& sp : params_with_top_k_or_top_p()) {
      if (sp.top_k >= static_cast<int>(r.logits.size()) && sp.top_p == 1.0f) continue;
      std::vector<float> ref(r.logits.size());
      sampling_standardize(ref.data(), r.logits.data(), static_cast<int64_t>(r.logits.size()), sp);
      const std::vector<float> got = host_top_set(r.logits, sp);
      ASSERT_FALSE(differs(got, ref)) << describe(r, sp);
      cases++;
    }
  }
  EXPECT_GT(cases, 400);
}

// Each wrong rule changes the kept set of some row the test above uses (so that test would
// catch it), and on the rows where the rule matters.
TEST(CudaTopSet, PlantedWrongRulesAreRejected) {
  const std::vector<Row> rows = rows_to_reach_every_branch();
  const std::vector<SamplingParams> params = params_with_top_k_or_top_p();
  for (Flaw flaw : {Flaw::kTiesToHigherIds, Flaw::kTopPBoundaryShort, Flaw::kTopKTiesDropped}) {
    int rejected = 0;
    for (const Row& r : rows) {
      for (const SamplingParams& sp : params) {
        std::vector<float> ref(r.logits.size());
        sampling_standardize(ref.data(), r.logits.data(), static_cast<int64_t>(r.logits.size()),
                             sp);
        if (differs(host_top_set(r.logits, sp, flaw), ref)) rejected++;
      }
    }
    EXPECT_GT(rejected, 0) << "planted rule " << static_cast<int>(flaw) << " passed every case";
  }
}

}  // namespace
}  // namespace speclab
