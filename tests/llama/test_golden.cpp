// Golden tests: our forward pass against Hugging Face transformers on the same weights
// (tests/golden/README.md says how the references were made and why these tolerances).
//   tiny-llama32: HF directory, BF16, llama3 rope scaling, tied embeddings, GQA, explicit
//                 head_dim != hidden/heads. FP32 compute from the BF16 values.
//   smollm2:      SmolLM2-135M-Instruct Q4_1 GGUF (Q/K rows permuted by the HF->GGUF
//                 conversion, Q8_0 embeddings); transformers dequantized it exactly.
// Checks: full logits at stored positions within atol + |ref| * rtol; the top-20 logits at
// every prompt position by id; 40 greedy tokens token for token; for SmolLM2 also that our
// GGUF tokenizer produces the reference prompt ids.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/sampling.h"
#include "models/llama/llama_forward.h"
#include "models/llama/llama_model.h"

namespace speclab {
namespace {

std::string smollm2_path() {
  const char* cache = std::getenv("SPECLAB_CACHE");
  const char* home = std::getenv("HOME");
  std::string dir = cache ? cache : std::string(home ? home : "/root") + "/.cache/speclab";
  return dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

bool exists(const std::string& p) { return std::ifstream(p).good(); }

struct Golden {
  nlohmann::json index;
  std::vector<float> logits;  // [rows, vocab]
};

Golden load_golden(const std::string& name) {
  Golden g;
  const std::string dir = std::string(SPECLAB_SOURCE_DIR) + "/tests/golden/";
  std::ifstream j(dir + name + ".json");
  EXPECT_TRUE(j.good()) << name;
  g.index = nlohmann::json::parse(j);
  const int64_t rows = g.index["rows"], vocab = g.index["vocab"];
  g.logits.resize(static_cast<size_t>(rows * vocab));
  std::ifstream f(dir + name + ".logits.f32", std::ios::binary);
  f.read(reinterpret_cast<char*>(g.logits.data()),
         static_cast<std::streamsize>(g.logits.size() * 4));
  EXPECT_TRUE(f.good()) << name << ".logits.f32 shorter than " << rows << " x " << vocab;
  return g;
}

void check_model_against_golden(const LlamaModel& model, const Golden& g, double atol, double rtol,
                                bool check_tokenizer) {
  const int64_t vocab = g.index["vocab"];
  ASSERT_EQ(model.config.vocab_size, vocab);
  LlamaRunner runner(model, 1024);
  int prompt_no = 0;
  for (const auto& p : g.index["prompts"]) {
    SCOPED_TRACE("prompt " + std::to_string(prompt_no++));
    const std::vector<int32_t> ids = p["ids"].get<std::vector<int32_t>>();
    if (check_tokenizer) {
      ASSERT_NE(model.tokenizer, nullptr);
      EXPECT_EQ(model.tokenizer->encode(p["text"].get<std::string>(), /*add_bos=*/false), ids);
    }
    runner.truncate(0);
    const float* out = runner.forward(ids.data(), static_cast<int64_t>(ids.size()));
    std::vector<float> all(out, out + ids.size() * vocab);  // [n_prompt, vocab]

    // Full logits at the stored positions.
    const auto positions = p["full_logits"]["positions"].get<std::vector<int64_t>>();
    const int64_t row0 = p["full_logits"]["row_offset"];
    double worst = 0;
    for (size_t r = 0; r < positions.size(); r++) {
      const float* ref = g.logits.data() + (row0 + static_cast<int64_t>(r)) * vocab;
      const float* got = all.data() + positions[r] * vocab;
      int reported = 0;
      for (int64_t x = 0; x < vocab; x++) {
        const double err = std::fabs(double(got[x]) - ref[x]);
        worst = std::max(worst, err);
        if (err > atol + std::fabs(ref[x]) * rtol && reported++ < 5)
          ADD_FAILURE() << "position " << positions[r] << " id " << x << ": " << got[x]
                        << " vs reference " << ref[x];
      }
    }
    std::printf("  max |logit error| %.3g over %zu stored rows\n", worst, positions.size());

    // Top-20 at every position, compared by id.
    const auto& topk_ids = p["topk"]["ids"];
    const auto& topk_vals = p["topk"]["logits"];
    for (size_t t = 0; t < ids.size(); t++) {
      for (size_t j = 0; j < topk_ids[t].size(); j++) {
        const int64_t id = topk_ids[t][j];
        const double ref = topk_vals[t][j];
        ASSERT_NEAR(all[t * vocab + id], ref, atol + std::fabs(ref) * rtol)
            << "position " << t << " id " << id;
      }
    }

    // 40 greedy tokens (no EOS stop, as the reference).
    const auto greedy = p["greedy"].get<std::vector<int32_t>>();
    std::vector<int32_t> got_tokens;
    int32_t next = sampling_argmax(all.data() + (ids.size() - 1) * vocab, vocab);
    for (size_t i = 0; i < greedy.size(); i++) {
      got_tokens.push_back(next);
      if (i + 1 < greedy.size()) next = sampling_argmax(runner.forward(&next, 1, true), vocab);
    }
    EXPECT_EQ(got_tokens, greedy);
  }
}

TEST(Golden, TinyLlama32MatchesTransformers) {
  auto model = llama_load(std::string(SPECLAB_SOURCE_DIR) + "/tests/data/tiny-llama32");
  EXPECT_TRUE(model->config.tie_embeddings);
  EXPECT_TRUE(model->config.rope_scaling.enabled);
  EXPECT_EQ(model->config.head_dim, 16);
  // Tolerance: 10x the FP32 spread measured between transformers' FP32 and FP64 (1.2e-5).
  check_model_against_golden(*model, load_golden("tiny-llama32"), 2e-4, 1e-4, false);
}

TEST(Golden, SmolLM2GgufMatchesTransformers) {
  const std::string path = smollm2_path();
  if (!exists(path)) GTEST_SKIP() << path << " absent: run `bash .ci/install` to fetch SmolLM2";
  auto model = llama_load(path);
  EXPECT_EQ(model->config.rope_pairing, RopePairing::kInterleaved);
  // Tolerance: 10x the measured FP32 spread (1.1e-4 on logits up to 42).
  check_model_against_golden(*model, load_golden("smollm2"), 1e-3, 1e-4, true);
}

}  // namespace
}  // namespace speclab
