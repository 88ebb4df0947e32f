// Synthetic models: real shapes, requested dtype, deterministic seeded weights with the
// promised scale, and clear errors for unknown specs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/threads.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"

namespace speclab {
namespace {

TEST(LlamaSynthetic, RealShapes) {
  const LlamaConfig l1 = llama_synthetic_config("llama-3.2-1b");
  EXPECT_EQ(l1.dim, 2048);
  EXPECT_EQ(l1.hidden_dim, 8192);
  EXPECT_EQ(l1.n_layers, 16);
  EXPECT_EQ(l1.n_heads, 32);
  EXPECT_EQ(l1.n_kv_heads, 8);
  EXPECT_EQ(l1.head_dim, 64);
  EXPECT_EQ(l1.vocab_size, 128256);
  EXPECT_TRUE(l1.tie_embeddings);
  EXPECT_EQ(l1.rope_theta, 500000.0f);
  EXPECT_TRUE(l1.rope_scaling.enabled);
  EXPECT_EQ(l1.rope_scaling.factor, 32.0f);
  EXPECT_EQ(l1.rope_scaling.original_max_position, 8192);
  EXPECT_EQ(l1.max_seq_len, 131072);
  const LlamaConfig l3 = llama_synthetic_config("llama-3.2-3b");
  EXPECT_EQ(l3.dim, 3072);
  EXPECT_EQ(l3.n_layers, 28);
  EXPECT_EQ(l3.n_heads, 24);
  EXPECT_EQ(l3.head_dim, 128);
  const LlamaConfig s135 = llama_synthetic_config("smollm2-135m");
  EXPECT_EQ(s135.dim, 576);
  EXPECT_EQ(s135.n_layers, 30);
  EXPECT_EQ(s135.n_heads, 9);
  EXPECT_EQ(s135.n_kv_heads, 3);
  EXPECT_EQ(s135.vocab_size, 49152);
  EXPECT_EQ(s135.rope_theta, 100000.0f);
  EXPECT_FALSE(s135.rope_scaling.enabled);
  EXPECT_EQ(llama_synthetic_config("smollm2-360m").n_kv_heads, 5);
  EXPECT_EQ(llama_synthetic_config("smollm2-1.7b").rope_theta, 130000.0f);
  EXPECT_EQ(llama_synthetic_config("tiny").head_dim, 32);
}

TEST(LlamaSynthetic, DtypeSuffixAndDeterminism) {
  auto a = llama_make_synthetic("tiny:q4_1", 7);
  auto b = llama_make_synthetic("tiny:q4_1", 7);
  auto other_seed = llama_make_synthetic("tiny:q4_1", 8);
  EXPECT_EQ(a->path, "synthetic:tiny:q4_1");
  EXPECT_EQ(a->format, "synthetic");
  const TensorView& wa = a->weights.layers[1].w_down;
  EXPECT_EQ(wa.dtype, DType::Q4_1);
  EXPECT_EQ(wa.shape, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(wa.nbytes, dtype_row_bytes(DType::Q4_1, 128) * 64);
  EXPECT_EQ(a->weights.layers[0].attn_norm.dtype, DType::F32);
  EXPECT_EQ(0, std::memcmp(wa.data, b->weights.layers[1].w_down.data, wa.nbytes));
  EXPECT_NE(0, std::memcmp(wa.data, other_seed->weights.layers[1].w_down.data, wa.nbytes));
  EXPECT_EQ(llama_make_synthetic("tiny")->weights.layers[0].wq.dtype, DType::BF16);
}

// Every value is a pure function of (seed, tensor, index), so the threads that fill the rows
// cannot change a bit: one thread and two give the same bytes, for the direct BF16 writer and
// for the dtypes quantized through an FP32 row.
TEST(LlamaSynthetic, SameBytesOnOneAndTwoThreads) {
  for (const char* spec : {"tiny:bf16", "tiny:q8_0"}) {
    threads_set(1);
    auto one = llama_make_synthetic(spec, 5);
    threads_set(2);
    auto two = llama_make_synthetic(spec, 5);
    threads_set(0);
    auto same = [&](const TensorView& a, const TensorView& b) {
      ASSERT_EQ(a.nbytes, b.nbytes);
      EXPECT_EQ(0, std::memcmp(a.data, b.data, a.nbytes)) << spec << " " << a.name;
    };
    same(one->weights.tok_embeddings, two->weights.tok_embeddings);
    same(one->weights.output, two->weights.output);
    for (size_t l = 0; l < one->weights.layers.size(); l++) {
      const LlamaLayerWeights& a = one->weights.layers[l];
      const LlamaLayerWeights& b = two->weights.layers[l];
      for (auto m : {&LlamaLayerWeights::wq, &LlamaLayerWeights::wk, &LlamaLayerWeights::wv,
                     &LlamaLayerWeights::wo, &LlamaLayerWeights::w_gate, &LlamaLayerWeights::w_up,
                     &LlamaLayerWeights::w_down, &LlamaLayerWeights::attn_norm})
        same(a.*m, b.*m);
    }
  }
}

TEST(LlamaSynthetic, WeightScaleIsOneOverSqrtFanIn) {
  auto m = llama_make_synthetic("tiny:f32", 3);
  for (const TensorView* w : {&m->weights.layers[0].w_gate, &m->weights.layers[0].w_down}) {
    const float* v = static_cast<const float*>(w->data);
    double sum = 0.0, sum_sq = 0.0;
    for (int64_t i = 0; i < w->numel(); i++) {
      sum += v[i];
      sum_sq += static_cast<double>(v[i]) * v[i];
    }
    const double mean = sum / w->numel();
    const double stddev = std::sqrt(sum_sq / w->numel() - mean * mean);
    const double expected = 1.0 / std::sqrt(static_cast<double>(w->cols()));
    EXPECT_NEAR(stddev, expected, 0.05 * expected) << w->name;
    EXPECT_NEAR(mean, 0.0, 0.05 * expected) << w->name;
  }
  const float* norm = static_cast<const float*>(m->weights.final_norm.data);
  for (int64_t i = 0; i < m->config.dim; i++) EXPECT_NEAR(norm[i], 1.0f, 0.25f);
}

TEST(LlamaSynthetic, UnknownSpecsListTheValidOnes) {
  try {
    llama_make_synthetic("llama-9b");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("llama-3.2-1b, llama-3.2-3b, smollm2-135m"),
              std::string::npos)
        << e.what();
  }
  try {
    llama_make_synthetic("tiny:q2_k");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bf16, f16, f32, q8_0, q4_0, q4_1"), std::string::npos)
        << e.what();
  }
}

// The smallest real shape builds quickly and runs: finite logits of the right size.
TEST(LlamaSynthetic, Smollm135mRuns) {
  auto m = llama_make_synthetic("smollm2-135m:q4_1");
  LlamaRunner runner(*m, 64);
  const int32_t tokens[] = {1, 500, 49151};
  const float* logits = runner.forward(tokens, 3, /*last_only=*/true);
  for (int64_t i = 0; i < runner.vocab(); i++) ASSERT_TRUE(std::isfinite(logits[i])) << i;
  EXPECT_EQ(runner.vocab(), 49152);
}

}  // namespace
}  // namespace speclab
