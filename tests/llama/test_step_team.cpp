// The step team (LlamaRunner's default for batches of up to kMatmulItemsMaxTokens tokens: one
// parallel region per forward call, core/step_team.h) against the per-call kernels (one
// parallel region per kernel, the reference): the same logits bit for bit, on 1 and 2
// threads, on every matmul path this CPU has, for quantized, BF16 and F32 weights, for linear
// decoding, verification batches, tree batches and skipped layers, and on the real SmolLM2 GGUF.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/threads.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"

namespace speclab {
namespace {

// Rows not a multiple of the 12-row work items (hidden 352, vocab 301) so the last item of
// several matrices is partial; 3 layers; GQA with 2 query heads per kv head.
LlamaConfig team_config() {
  LlamaConfig c;
  c.vocab_size = 301;
  c.dim = 128;
  c.hidden_dim = 352;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 32;
  c.max_seq_len = 128;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.rope_pairing = RopePairing::kInterleaved;
  return c;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& v : t) v = static_cast<int32_t>(rng() % vocab);
  return t;
}

// A prompt of 7, three decode steps, a verification batch of 5 rolled back to one token, a
// batch of 16 (the largest the team takes) and one of 20 (per-call on both sides), then a tree
// of 4 nodes kept along one path and one more decode step. Returns every logits row produced.
std::vector<float> run_sequence(const LlamaModel& model, bool team, int n_threads,
                                std::vector<bool> skip = {}) {
  threads_set(n_threads);
  LlamaRunner r(model, 0, std::move(skip));
  r.set_step_team(team);
  const int64_t vocab = r.vocab();
  const std::vector<int32_t> toks = random_tokens(60, vocab, 7);
  std::vector<float> all;
  auto keep = [&](const float* logits, int64_t rows) {
    all.insert(all.end(), logits, logits + rows * vocab);
  };
  int64_t pos = 0;
  keep(r.forward(toks.data(), 7), 7);
  pos = 7;
  for (int i = 0; i < 3; i++, pos++) keep(r.forward(&toks[pos], 1, /*last_only=*/true), 1);
  keep(r.forward(&toks[pos], 5), 5);
  r.truncate(pos + 1);
  pos++;
  keep(r.forward(&toks[pos], 16), 16);
  pos += 16;
  keep(r.forward(&toks[pos], 20, /*last_only=*/true), 1);
  pos += 20;
  // Tree: a root, two children of it, a grandchild of the second child.
  const int32_t base = static_cast<int32_t>(r.n_past());
  const std::vector<int32_t> parents = {base - 1, base, base, base + 2};
  keep(r.forward_tree(&toks[pos], parents.data(), 4), 4);
  const std::vector<int32_t> path = {base, base + 2, base + 3};
  r.keep_path(base, path.data(), 3);
  keep(r.forward(&toks[pos + 5], 1), 1);
  threads_set(0);
  return all;
}

void expect_bits_equal(const std::vector<float>& a, const std::vector<float>& b,
                       const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t first = a.size();
  for (size_t i = 0; i < a.size(); i++) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      first = i;
      break;
    }
  }
  EXPECT_EQ(first, a.size()) << what << ": first differing logit at " << first << " (" << a[first]
                             << " vs " << b[first] << ")";
}

const char* isa_name(MatmulIsa isa) {
  switch (isa) {
    case MatmulIsa::kGeneric:
      return "generic";
    case MatmulIsa::kAvx2:
      return "avx2";
    case MatmulIsa::kAvx512:
      return "avx512";
    case MatmulIsa::kAvx512Bf16:
      return "avx512bf16";
    case MatmulIsa::kAvx512Vnni:
      return "avx512vnni";
    case MatmulIsa::kAmxBf16:
      return "amxbf16";
    case MatmulIsa::kBest:
      break;
  }
  return "best";
}

// For each model dtype and each of `paths` the CPU has: the per-call kernels on 2 threads and
// the team on 1 and 2 threads give the per-call kernels' 1-thread logits, bit for bit. Returns
// the number of (dtype, path) pairs checked.
int expect_team_matches_per_call(const LlamaConfig& config, std::initializer_list<DType> dtypes,
                                 std::initializer_list<MatmulIsa> paths, uint64_t seed) {
  int checked = 0;
  for (DType dtype : dtypes) {
    auto model = llama_make_random(config, dtype, seed);
    for (MatmulIsa isa : paths) {
      if (!matmul_force_isa(isa)) continue;
      const std::string what = std::string(dtype_name(dtype)) + " on " + isa_name(isa);
      const std::vector<float> ref = run_sequence(*model, /*team=*/false, 1);
      expect_bits_equal(run_sequence(*model, false, 2), ref, what + ", per-call, 2 threads");
      expect_bits_equal(run_sequence(*model, true, 1), ref, what + ", team, 1 thread");
      expect_bits_equal(run_sequence(*model, true, 2), ref, what + ", team, 2 threads");
      checked++;
    }
  }
  matmul_force_isa(MatmulIsa::kBest);
  return checked;
}

TEST(StepTeam, SameLogitsAsPerCallKernelsOnOneAndTwoThreadsOnEveryPath) {
  const int checked = expect_team_matches_per_call(
      team_config(), {DType::Q4_1, DType::Q8_0, DType::BF16, DType::F32},
      {MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512, MatmulIsa::kAvx512Bf16,
       MatmulIsa::kAvx512Vnni, MatmulIsa::kAmxBf16},
      11);
  EXPECT_GE(checked, 4);  // at least the generic path for each dtype
}

// K-quant models (rows of whole 256-value super-blocks: dim 256, hidden 512), whose int8 path
// (avx512vnni) packs one activation record per super-block and reads one-token rows whole on
// Zen 4: the team's items give the per-call kernels' bits there too.
TEST(StepTeam, KQuantModelsSameLogitsAsPerCallKernelsOnEveryPath) {
  LlamaConfig c = team_config();
  c.dim = 256;
  c.hidden_dim = 512;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  const int checked = expect_team_matches_per_call(
      c, {DType::Q4_K, DType::Q6_K},
      {MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512, MatmulIsa::kAvx512Vnni}, 13);
  EXPECT_GE(checked, 2);
}

// Skipped layers (self-speculation drafts) leave holes in the layer loop; the team's phases
// must follow the same layers.
TEST(StepTeam, SkippedLayersGiveTheSameLogits) {
  auto model = llama_make_random(team_config(), DType::Q4_1, 12);
  const std::vector<bool> skip = {false, true, false};
  const std::vector<float> ref = run_sequence(*model, false, 1, skip);
  expect_bits_equal(run_sequence(*model, true, 2, skip), ref, "skip layer 1, team, 2 threads");
  // And skipping does change the result (the skip list is honoured).
  const std::vector<float> full = run_sequence(*model, true, 2);
  EXPECT_NE(0, std::memcmp(full.data(), ref.data(), ref.size() * sizeof(float)));
}

// The real model: 30 layers, Q4_1 layer matrices, a Q8_0 head of 49152 rows, 9 heads over 3
// kv heads (groups of 3), interleaved RoPE.
TEST(StepTeam, SmolLM2GgufSameLogitsAsPerCallKernels) {
  const char* home = std::getenv("HOME");
  const char* cache = std::getenv("SPECLAB_CACHE");
  const std::string dir =
      cache && *cache ? cache : std::string(home ? home : "") + "/.cache/speclab";
  const std::string path = dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::ifstream(path).good()) GTEST_SKIP() << path << " not present";
  auto model = llama_load(path);
  const std::vector<int32_t> toks = random_tokens(12, model->config.vocab_size, 3);
  std::vector<std::vector<float>> runs;
  for (bool team : {false, true}) {
    for (int n_threads : {1, 2}) {
      threads_set(n_threads);
      LlamaRunner r(*model, 64);
      r.set_step_team(team);
      std::vector<float> all;
      const float* logits = r.forward(toks.data(), 8, true);
      all.insert(all.end(), logits, logits + r.vocab());
      for (int i = 8; i < 12; i++) {
        logits = r.forward(&toks[i], 1, true);
        all.insert(all.end(), logits, logits + r.vocab());
      }
      runs.push_back(std::move(all));
    }
  }
  threads_set(0);
  expect_bits_equal(runs[1], runs[0], "per-call, 2 threads");
  expect_bits_equal(runs[2], runs[0], "team, 1 thread");
  expect_bits_equal(runs[3], runs[0], "team, 2 threads");
}

}  // namespace
}  // namespace speclab
