// A model's BF16 matrices in row pairs (models/llama/weights_layout.h): the forward gives the
// plain model's logits bit for bit, a tied head is repacked once, matrices that do not fit and
// weights that are not the model's own memory keep their rows, and the run's layout setting
// decides what a load does.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/row_pairs.h"
#include "models/llama/batched_llama_runner.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "models/llama/weights_layout.h"

namespace speclab {
namespace {

LlamaConfig small_config(bool tied, int64_t vocab) {
  LlamaConfig c;
  c.vocab_size = vocab;
  c.dim = 128;
  c.hidden_dim = 320;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 32;
  c.max_seq_len = 64;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.tie_embeddings = tied;
  return c;
}

// A random model built with `layout` forced, the setting restored after.
std::unique_ptr<LlamaModel> model_with(MatmulLayout layout, const LlamaConfig& c, DType dtype) {
  matmul_force_layout(layout);
  auto m = llama_make_random(c, dtype, 17);
  matmul_force_layout(MatmulLayout::kDefault);
  return m;
}

// Logits of a prompt of 7 tokens, then 3 verified at once, then 1 (decode).
std::vector<float> logits_of(const LlamaModel& m) {
  const int64_t vocab = m.config.vocab_size;
  const std::vector<int32_t> tokens = {1, 5, 9, 2, 7, 3, 11, 4, 8, 6, 10};
  LlamaRunner runner(m);
  std::vector<float> all;
  int64_t at = 0;
  for (int64_t n : {7, 3, 1}) {
    const float* l = runner.forward(tokens.data() + at, n);
    all.insert(all.end(), l, l + n * vocab);
    at += n;
  }
  return all;
}

TEST(WeightsLayout, PairedModelGivesThePlainModelsLogitsBitForBit) {
  for (bool tied : {true, false}) {
    const LlamaConfig c = small_config(tied, 256);
    auto plain = model_with(MatmulLayout::kRows, c, DType::BF16);
    auto paired = model_with(MatmulLayout::kRowPairs, c, DType::BF16);
    EXPECT_EQ(llama_weights_layout(*plain), "rows");
    EXPECT_EQ(llama_weights_layout(*paired), "row pairs");
    EXPECT_EQ(paired->weights.layers[1].w_down.layout, RowLayout::kRowPairs);
    EXPECT_EQ(paired->weights.output.layout, RowLayout::kRowPairs);
    EXPECT_EQ(paired->parameter_count(), plain->parameter_count());
    const std::vector<float> a = logits_of(*plain), b = logits_of(*paired);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "tied=" << tied;
    // The batched runner (continuous batching's verify) reads the same pairs.
    // Slot 0 the prompt of logits_of, slot 1 something else beside it.
    BatchedLlamaRunner batched(*paired, 2, 64);
    std::vector<BatchRow> rows;
    for (int32_t t : {1, 5, 9, 2, 7, 3, 11}) rows.push_back({0, t});
    for (int32_t t : {4, 4, 2}) rows.push_back({1, t});
    const float* l = batched.forward_batch(rows);
    EXPECT_EQ(std::memcmp(l, a.data(), 7 * c.vocab_size * sizeof(float)), 0)
        << "batched, tied=" << tied;
  }
}

TEST(WeightsLayout, TiedHeadIsRepackedOnceAndOddRowsKeepTheirRows) {
  // Tied: the embedding table is the head, one matrix, repacked once (twice would scramble it).
  auto tied = model_with(MatmulLayout::kRows, small_config(true, 256), DType::BF16);
  EXPECT_EQ(tied->weights.output.data, tied->weights.tok_embeddings.data);
  EXPECT_EQ(llama_weights_store_row_pairs(*tied), 1 + 2 * 7);
  EXPECT_EQ(tied->weights.tok_embeddings.layout, RowLayout::kRowPairs);
  EXPECT_EQ(tied->weights.output.layout, RowLayout::kRowPairs);
  EXPECT_EQ(llama_weights_store_row_pairs(*tied), 0);  // nothing left to repack
  // A vocabulary of odd size: the embedding table keeps its rows, the layers are paired.
  auto odd = model_with(MatmulLayout::kRowPairs, small_config(true, 255), DType::BF16);
  EXPECT_EQ(odd->weights.output.layout, RowLayout::kRows);
  EXPECT_EQ(odd->weights.layers[0].wq.layout, RowLayout::kRowPairs);
  EXPECT_EQ(llama_weights_layout(*odd), "rows and row pairs");
  auto odd_plain = model_with(MatmulLayout::kRows, small_config(true, 255), DType::BF16);
  const std::vector<float> a = logits_of(*odd_plain), b = logits_of(*odd);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(WeightsLayout, OtherDtypesAndMappedWeightsKeepTheirRows) {
  auto q8 = model_with(MatmulLayout::kRowPairs, small_config(false, 256), DType::Q8_0);
  EXPECT_EQ(llama_weights_layout(*q8), "rows");
  EXPECT_EQ(llama_weights_store_row_pairs(*q8), 0);
  // Weights mapped from a file in place (not copied) are the page cache's, read-only.
  auto mapped = model_with(MatmulLayout::kRows, small_config(false, 256), DType::BF16);
  mapped->format = "gguf";
  mapped->weights_copied = false;
  EXPECT_EQ(llama_weights_store_row_pairs(*mapped), 0);
  EXPECT_EQ(llama_weights_layout(*mapped), "rows");
  mapped->weights_copied = true;  // a copy in huge pages is the model's own
  EXPECT_EQ(llama_weights_store_row_pairs(*mapped), 2 + 2 * 7);
}

}  // namespace
}  // namespace speclab
