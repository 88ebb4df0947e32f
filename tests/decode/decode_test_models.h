// Small random models, prompts and drafters shared by the decoder tests (chain and tree).
#pragma once

#include <memory>
#include <vector>

#include "core/sampling.h"
#include "models/drafters/model_drafter.h"
#include "models/drafters/ngram_drafter.h"
#include "models/drafters/prompt_lookup_drafter.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"

namespace speclab {
namespace decode_test {

inline LlamaConfig small_config(int64_t vocab) {
  LlamaConfig c;
  c.vocab_size = vocab;
  c.dim = 32;
  c.hidden_dim = 64;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.max_seq_len = 256;
  c.rope_theta = 10000.0f;
  c.tie_embeddings = true;
  return c;
}

// A target and a cheaper draft with the same vocabulary. Random models are far apart, so to
// get interesting acceptance the draft is the target with its last layer skipped, plus an
// independent random model as a poor draft.
struct Pair {
  std::unique_ptr<LlamaModel> target, other;
  explicit Pair(int64_t vocab) {
    target = llama_make_random(small_config(vocab), DType::F32, 11);
    other = llama_make_random(small_config(vocab), DType::F32, 12);
  }
};

// 8 prompts of 3..10 tokens; odd ones repeat themselves so prompt lookup finds matches.
inline std::vector<std::vector<int32_t>> prompts(int64_t vocab) {
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < 8; i++) {
    std::vector<int32_t> p;
    for (int j = 0; j < 3 + i; j++)
      p.push_back(static_cast<int32_t>((i * 37 + j * 11 + 1) % vocab));
    if (i % 2) p.insert(p.end(), p.begin(), p.end());
    out.push_back(p);
  }
  return out;
}

// Every drafter kind: self-speculation (last layer skipped), another model, prompt lookup,
// a bigram table.
inline std::vector<std::unique_ptr<Drafter>> all_drafters(const Pair& pair, int64_t vocab) {
  std::vector<std::unique_ptr<Drafter>> d;
  d.push_back(std::make_unique<ModelDrafter>(*pair.target, "self:skip=2", 256,
                                             std::vector<bool>{false, false, true}));
  d.push_back(std::make_unique<ModelDrafter>(*pair.other, "other", 256));
  d.push_back(std::make_unique<PromptLookupDrafter>(vocab, 3, 1));
  std::vector<std::vector<int32_t>> docs = {{1, 2, 3, 4, 5, 1, 2, 3}, {7, 8, 9, 7, 8}};
  d.push_back(std::make_unique<NgramDrafter>(NgramTable::count(docs, vocab, 2), "bigram"));
  return d;
}

// The exact law of the first two generated tokens, from the target's probabilities.
//   returns [vocab * vocab], joint[x * vocab + y] = p(x | prompt) p(y | prompt, x)
inline std::vector<double> exact_joint(LlamaRunner& runner, const std::vector<int32_t>& prompt,
                                       const SamplingParams& sp, int64_t vocab) {
  std::vector<float> p1(vocab), p2(vocab);
  runner.truncate(0);
  sampling_standardize(p1.data(), runner.forward(prompt.data(), prompt.size(), true), vocab, sp);
  std::vector<double> joint(static_cast<size_t>(vocab * vocab), 0.0);
  const int64_t base = runner.n_past();
  for (int32_t x = 0; x < vocab; x++) {
    if (p1[x] == 0) continue;
    runner.truncate(base);
    sampling_standardize(p2.data(), runner.forward(&x, 1, true), vocab, sp);
    for (int64_t y = 0; y < vocab; y++) joint[x * vocab + y] = double(p1[x]) * p2[y];
  }
  return joint;
}

}  // namespace decode_test
}  // namespace speclab
