// The law of every emitted token of a round, through the decoders (generate_speculative,
// generate_tree_speculative), against the exact law of a second-order Markov target
// (markov_test_models.h, tests/exactness/verify_exactness.h).
//
// Nothing is clamped: max_new_tokens = gamma + 2 (depth + 2), and each trial asserts that
// its first round drafted the full gamma (the tree's full depth and node count for top-k).
// Per position j = 1..gamma+1 (1..depth+1) the triples (t_{j-2}, t_{j-1}, t_j) are tested
// by Pearson chi-square at significance kAlpha = 1e-4 per position; with kTrials = 250000
// requests the power against ANY law at total variation 0.01 is >= 0.99 at df 63 (lambda
// >= 4 n 0.01^2 = 100, stats_chi2_power), printed and asserted >= 0.9 per position.
//
// Planted wrong laws (a test-only drafter that reports a q other than the one it drew
// from) at the last draft position of gamma 8, at a middle one, at depth 2 of a sampled tree
// and at depth 3 of a top-k tree must be rejected at that position (p < 1e-9) and pass
// before it.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/stats.h"
#include "models/decode/speculative_decoder.h"
#include "models/decode/tree_decoder.h"
#include "tests/decode/markov_test_models.h"
#include "tests/exactness/exactness_position_check.h"
#include "tests/exactness/verify_exactness.h"

namespace speclab {
namespace {

using decode_test::DraftPlant;
using decode_test::markov_standardized_target;
using decode_test::MarkovDrafter;
using decode_test::MarkovRunner;

// kVocab, kAlpha, kTv, kTrials, expect_exact, expect_rejected_at
using namespace testing::position_check;  // NOLINT(build/namespaces)

const MarkovPair& close_pair() {
  static const MarkovPair m = exactness_random_markov_pair(kVocab, 5, 3.0, 0.7, 0.7);
  return m;
}
const MarkovPair& far_pair() {
  static const MarkovPair m = exactness_random_markov_pair(kVocab, 6, 2.0, 2.0, 4.0);
  return m;
}

GenerationRequest request(const MarkovPair& m, int64_t max_new_tokens, const SamplingParams& sp,
                          uint64_t seed) {
  GenerationRequest req;
  req.prompt = {0, m.a0, m.b0};
  req.max_new_tokens = max_new_tokens;
  req.sampling = sp;
  req.seed = seed;
  return req;
}

// n_trials requests through generate_speculative; counts positions 1..gamma+1.
PositionCounts chain_counts(const MarkovPair& m, Drafter& drafter, int gamma,
                            const SamplingParams& sp, const SamplingParams& draft_sp,
                            uint64_t seed) {
  MarkovRunner target(m, 64);
  SpeculativeConfig cfg;
  cfg.gamma = gamma;
  cfg.draft_sampling = draft_sp;
  GenerationRequest req = request(m, gamma + 2, sp, seed);
  PositionCounts counts;
  counts.triples.assign(gamma + 1, std::vector<int64_t>(kVocab * kVocab * kVocab, 0));
  for (int64_t t = 0; t < kTrials; t++) {
    req.request_id = static_cast<uint64_t>(t);
    const GenerationResult out = generate_speculative(target, drafter, req, cfg);
    // The gamma actually used: the first round drafted all gamma tokens (none clamped).
    if (out.rounds.empty() || out.rounds[0].n_draft != gamma ||
        out.tokens.size() != static_cast<size_t>(gamma + 2)) {
      ADD_FAILURE() << "request " << t << ": first round drafted "
                    << (out.rounds.empty() ? -1 : out.rounds[0].n_draft) << " of gamma " << gamma
                    << ", " << out.tokens.size() << " tokens";
      return counts;
    }
    exactness_count_sequence(m, out.tokens, &counts);
  }
  return counts;
}

PositionCounts tree_counts(const MarkovPair& m, Drafter& drafter, const TreeShape& shape,
                           const SamplingParams& sp, uint64_t seed) {
  MarkovRunner target(m, 64);
  TreeSpeculativeConfig cfg;
  cfg.shape = shape;
  cfg.draft_sampling = sp;
  const int depth = shape.depth();
  GenerationRequest req = request(m, depth + 2, sp, seed);
  PositionCounts counts;
  counts.triples.assign(depth + 1, std::vector<int64_t>(kVocab * kVocab * kVocab, 0));
  for (int64_t t = 0; t < kTrials; t++) {
    req.request_id = static_cast<uint64_t>(t);
    const GenerationResult out = generate_tree_speculative(target, drafter, req, cfg);
    // The whole shape was drafted in the first round: its depth, and for top-k every node.
    const bool full_tree =
        !out.rounds.empty() && out.rounds[0].n_draft == depth &&
        (shape.mode == TreeMode::kSample || out.rounds[0].tree_nodes == shape.n_drafted());
    if (!full_tree || out.tokens.size() != static_cast<size_t>(depth + 2)) {
      ADD_FAILURE() << "request " << t << ": first tree of depth "
                    << (out.rounds.empty() ? -1 : out.rounds[0].n_draft) << " for shape "
                    << shape.to_string();
      return counts;
    }
    exactness_count_sequence(m, out.tokens, &counts);
  }
  return counts;
}

TEST(DecoderExactnessPositions, ChainEveryPosition) {
  struct Case {
    const char* name;
    bool far;
    int gamma;
    bool deterministic;
    SamplingParams sp, draft_sp;
  };
  const Case cases[] = {
      {"chain gamma 2, far", true, 2, false, {1.0f, 0, 1.0f}, {1.0f, 0, 1.0f}},
      {"chain gamma 4, T 0.8, draft T 1.3", true, 4, false, {0.8f, 0, 1.0f}, {1.3f, 0, 1.0f}},
      {"chain gamma 8, close", false, 8, false, {1.0f, 0, 1.0f}, {1.0f, 0, 1.0f}},
      {"chain gamma 8, deterministic drafter", false, 8, true, {1.0f, 0, 1.0f}, {1.0f, 0, 1.0f}},
  };
  uint64_t seed = 300;
  for (const Case& c : cases) {
    const MarkovPair& m = c.far ? far_pair() : close_pair();
    MarkovDrafter drafter(m, c.deterministic);
    expect_exact(c.name, markov_standardized_target(m, c.sp),
                 chain_counts(m, drafter, c.gamma, c.sp, c.draft_sp, seed++));
  }
}

TEST(DecoderExactnessPositions, TreeEveryDepth) {
  struct Case {
    const char* name;
    bool far;
    const char* shape;
  };
  const Case cases[] = {
      {"tree 2x2x2 sampled, far", true, "2x2x2:sample"},
      {"tree 3x2x1 top-k, far", true, "3x2x1:topk"},
      {"tree 2x1x1x1 sampled, close", false, "2x1x1x1:sample"},
  };
  const SamplingParams sp{1.0f, 0, 1.0f};
  uint64_t seed = 400;
  for (const Case& c : cases) {
    const MarkovPair& m = c.far ? far_pair() : close_pair();
    MarkovDrafter drafter(m, false);
    expect_exact(c.name, m, tree_counts(m, drafter, tree_shape_parse(c.shape, "test"), sp, seed++));
  }
}

TEST(DecoderExactnessPositions, PlantAtLastDraftPositionIsRejected) {
  DraftPlant plant;
  plant.chain_index = 7;
  MarkovDrafter drafter(close_pair(), false, plant);
  const SamplingParams sp{1.0f, 0, 1.0f};
  expect_rejected_at("plant: q misreported at draft 8 of 8", close_pair(),
                     chain_counts(close_pair(), drafter, 8, sp, sp, 310), 8);
}

TEST(DecoderExactnessPositions, PlantAtMiddleDraftPositionIsRejected) {
  DraftPlant plant;
  plant.chain_index = 3;
  MarkovDrafter drafter(close_pair(), false, plant);
  const SamplingParams sp{1.0f, 0, 1.0f};
  expect_rejected_at("plant: q misreported at draft 4 of 8", close_pair(),
                     chain_counts(close_pair(), drafter, 8, sp, sp, 311), 4);
}

TEST(DecoderExactnessPositions, PlantAtTreeDepth2IsRejected) {
  DraftPlant plant;
  plant.tree_depth = 2;
  MarkovDrafter drafter(far_pair(), false, plant);
  expect_rejected_at("plant: sampled tree, q misreported at depth 2", far_pair(),
                     tree_counts(far_pair(), drafter, tree_shape_parse("2x2x2:sample", "test"),
                                 SamplingParams{1.0f, 0, 1.0f}, 410),
                     2);
}

TEST(DecoderExactnessPositions, PlantAtTreeDepth3IsRejected) {
  DraftPlant plant;
  plant.tree_depth = 3;
  MarkovDrafter drafter(far_pair(), false, plant);
  expect_rejected_at("plant: top-k tree, depth-3 proposals claimed sampled", far_pair(),
                     tree_counts(far_pair(), drafter, tree_shape_parse("3x2x1:topk", "test"),
                                 SamplingParams{1.0f, 0, 1.0f}, 411),
                     3);
}

}  // namespace
}  // namespace speclab
