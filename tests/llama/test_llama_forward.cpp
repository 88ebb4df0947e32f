// LlamaRunner against a plain reference forward written here: every weight dequantized to
// double, no KV cache, the full causal score matrix, RoPE frequencies recomputed in double
// from the config (HF's llama3 formula, or explicit factors), complex-number rotation.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/row_pairs.h"
#include "core/threads.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"

namespace speclab {
namespace {

// ---------------------------------------------------------------------------------------
// Reference forward.

std::vector<double> dequantize(const TensorView& v) {
  std::vector<float> f(v.numel());
  // The plain rows, whichever layout the model stores them in (core/row_pairs.h).
  std::vector<uint8_t> plain(static_cast<size_t>(v.rows()) * dtype_row_bytes(v.dtype, v.cols()));
  row_pairs_copy_rows(plain.data(), v, 0, v.rows());
  dtype_to_f32(v.dtype, plain.data(), f.data(), v.numel());
  return std::vector<double>(f.begin(), f.end());
}

// out[t][r] = sum_i in[t][i] * w[r][i];  in: [n][cols], w: [rows][cols], out: [n][rows]
std::vector<double> linear(const std::vector<double>& in, const TensorView& w_view, int64_t n) {
  const std::vector<double> w = dequantize(w_view);
  const int64_t rows = w_view.shape[0], cols = w_view.shape[1];
  std::vector<double> out(n * rows, 0.0);
  for (int64_t t = 0; t < n; t++) {
    for (int64_t r = 0; r < rows; r++) {
      for (int64_t i = 0; i < cols; i++) out[t * rows + r] += in[t * cols + i] * w[r * cols + i];
    }
  }
  return out;
}

std::vector<double> rmsnorm_ref(const std::vector<double>& x, const TensorView& w_view, int64_t n,
                                int64_t dim, double eps) {
  const std::vector<double> w = dequantize(w_view);
  std::vector<double> out(n * dim);
  for (int64_t t = 0; t < n; t++) {
    double ss = 0.0;
    for (int64_t i = 0; i < dim; i++) ss += x[t * dim + i] * x[t * dim + i];
    const double inv_rms = 1.0 / std::sqrt(ss / dim + eps);
    for (int64_t i = 0; i < dim; i++) out[t * dim + i] = x[t * dim + i] * inv_rms * w[i];
  }
  return out;
}

std::vector<double> rope_freqs_ref(const LlamaConfig& c) {
  const int64_t half = c.head_dim / 2;
  std::vector<double> freq(half);
  for (int64_t i = 0; i < half; i++) {
    double f = std::pow(static_cast<double>(c.rope_theta), -2.0 * i / c.head_dim);
    if (!c.rope_freq_factors.empty()) {
      f /= c.rope_freq_factors[i];
    } else if (c.rope_scaling.enabled) {
      const RopeScaling& s = c.rope_scaling;
      const double wavelen = 2.0 * M_PI / f;
      const double orig = static_cast<double>(s.original_max_position);
      if (wavelen > orig / s.low_freq_factor) {
        f = f / s.factor;
      } else if (wavelen >= orig / s.high_freq_factor) {
        const double smooth =
            (orig / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0 - smooth) * f / s.factor + smooth * f;
      }
    }
    freq[i] = f;
  }
  return freq;
}

// Rotates x: [n][n_heads][head_dim], token t at position t.
void rope_ref(std::vector<double>& x, const LlamaConfig& c, int64_t n, int64_t n_heads) {
  const std::vector<double> freq = rope_freqs_ref(c);
  const int64_t half = c.head_dim / 2;
  const bool interleaved = c.rope_pairing == RopePairing::kInterleaved;
  for (int64_t t = 0; t < n; t++) {
    for (int64_t h = 0; h < n_heads; h++) {
      double* v = x.data() + (t * n_heads + h) * c.head_dim;
      for (int64_t i = 0; i < half; i++) {
        double& a = v[interleaved ? 2 * i : i];
        double& b = v[interleaved ? 2 * i + 1 : i + half];
        const std::complex<double> z = std::complex<double>(a, b) * std::polar(1.0, t * freq[i]);
        a = z.real();
        b = z.imag();
      }
    }
  }
}

// Logits [n][vocab] of the whole sequence, computed from scratch.
std::vector<double> reference_logits(const LlamaModel& m, const std::vector<int32_t>& tokens,
                                     const std::vector<bool>& skip = {}) {
  const LlamaConfig& c = m.config;
  const int64_t n = tokens.size(), dim = c.dim, hd = c.head_dim;
  const std::vector<double> emb = dequantize(m.weights.tok_embeddings);
  std::vector<double> x(n * dim);
  for (int64_t t = 0; t < n; t++) {
    for (int64_t i = 0; i < dim; i++) x[t * dim + i] = emb[tokens[t] * dim + i];
  }
  for (int64_t l = 0; l < c.n_layers; l++) {
    if (!skip.empty() && skip[l]) continue;
    const LlamaLayerWeights& lw = m.weights.layers[l];
    std::vector<double> xb = rmsnorm_ref(x, lw.attn_norm, n, dim, c.rms_norm_eps);
    std::vector<double> q = linear(xb, lw.wq, n);
    std::vector<double> k = linear(xb, lw.wk, n);
    std::vector<double> v = linear(xb, lw.wv, n);
    rope_ref(q, c, n, c.n_heads);
    rope_ref(k, c, n, c.n_kv_heads);
    std::vector<double> att(n * c.n_heads * hd, 0.0);
    for (int64_t h = 0; h < c.n_heads; h++) {
      const int64_t kvh = h * c.n_kv_heads / c.n_heads;
      for (int64_t t = 0; t < n; t++) {
        std::vector<double> p(t + 1);
        double z = 0.0, max_s = -1e300;
        for (int64_t s = 0; s <= t; s++) {
          double dot = 0.0;
          for (int64_t d = 0; d < hd; d++) {
            dot += q[(t * c.n_heads + h) * hd + d] * k[(s * c.n_kv_heads + kvh) * hd + d];
          }
          p[s] = dot / std::sqrt(static_cast<double>(hd));
          max_s = std::max(max_s, p[s]);
        }
        for (int64_t s = 0; s <= t; s++) z += (p[s] = std::exp(p[s] - max_s));
        for (int64_t s = 0; s <= t; s++) {
          for (int64_t d = 0; d < hd; d++) {
            att[(t * c.n_heads + h) * hd + d] += p[s] / z * v[(s * c.n_kv_heads + kvh) * hd + d];
          }
        }
      }
    }
    std::vector<double> o = linear(att, lw.wo, n);
    for (int64_t i = 0; i < n * dim; i++) x[i] += o[i];
    xb = rmsnorm_ref(x, lw.ffn_norm, n, dim, c.rms_norm_eps);
    std::vector<double> g = linear(xb, lw.w_gate, n);
    const std::vector<double> u = linear(xb, lw.w_up, n);
    for (size_t i = 0; i < g.size(); i++) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    std::vector<double> d = linear(g, lw.w_down, n);
    for (int64_t i = 0; i < n * dim; i++) x[i] += d[i];
  }
  return linear(rmsnorm_ref(x, m.weights.final_norm, n, dim, c.rms_norm_eps), m.weights.output, n);
}

// ---------------------------------------------------------------------------------------
// Test models and helpers.

// A tiny config that exercises GQA (4 heads over 2 kv heads), head_dim != dim / n_heads, and
// llama3 scaling in all three regimes (original_max_position 64 puts the boundaries at
// wavelengths 16 and 64, inside this head's 6.3 .. 35000 range). vocab is odd on purpose.
LlamaConfig tiny_config(bool tied, RopePairing pairing) {
  LlamaConfig c;
  c.vocab_size = 83;
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 32;
  c.max_seq_len = 64;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.rope_scaling.enabled = true;
  c.rope_scaling.factor = 8.0f;
  c.rope_scaling.low_freq_factor = 1.0f;
  c.rope_scaling.high_freq_factor = 4.0f;
  c.rope_scaling.original_max_position = 64;
  c.rope_pairing = pairing;
  c.tie_embeddings = tied;
  return c;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& v : t) v = static_cast<int32_t>(rng() % vocab);
  return t;
}

// Runs `tokens` through `runner` in the given chunk sizes; returns all logits [n][vocab].
std::vector<float> run_chunks(LlamaRunner& runner, const std::vector<int32_t>& tokens,
                              const std::vector<int64_t>& chunks) {
  std::vector<float> all;
  int64_t pos = 0;
  for (int64_t len : chunks) {
    const float* logits = runner.forward(tokens.data() + pos, len);
    all.insert(all.end(), logits, logits + len * runner.vocab());
    pos += len;
  }
  EXPECT_EQ(pos, static_cast<int64_t>(tokens.size()));
  return all;
}

// Returns the largest |got - ref| and fails on entries beyond atol + |ref| * rtol.
double expect_close(const std::vector<float>& got, const std::vector<double>& ref, double atol,
                    double rtol, const std::string& what) {
  EXPECT_EQ(got.size(), ref.size()) << what;
  double max_err = 0.0;
  int mismatches = 0;
  for (size_t i = 0; i < std::min(got.size(), ref.size()); i++) {
    const double err = std::fabs(got[i] - ref[i]);
    max_err = std::max(max_err, err);
    if (!(err <= atol + std::fabs(ref[i]) * rtol)) {
      if (mismatches++ < 5) {
        ADD_FAILURE() << what << ": logits[" << i << "] = " << got[i] << ", ref " << ref[i];
      }
    }
  }
  return max_err;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// ---------------------------------------------------------------------------------------
// (a) forward vs reference.

TEST(LlamaForward, MatchesReferenceAcrossDtypesTyingAndRope) {
  struct Case {
    DType dtype;
    bool tied;
    RopePairing pairing;
    bool freq_factors;  // explicit rope_freq_factors instead of llama3 scaling
  };
  const Case cases[] = {
      {DType::F32, false, RopePairing::kHalf, false},
      {DType::BF16, true, RopePairing::kInterleaved, false},
      {DType::F16, false, RopePairing::kInterleaved, true},
      {DType::Q8_0, false, RopePairing::kHalf, true},
      {DType::Q4_0, true, RopePairing::kHalf, false},
      {DType::Q4_1, true, RopePairing::kInterleaved, false},
  };
  for (const Case& tc : cases) {
    LlamaConfig config = tiny_config(tc.tied, tc.pairing);
    if (tc.freq_factors) {
      for (int64_t i = 0; i < config.head_dim / 2; i++) {
        config.rope_freq_factors.push_back(1.0f + 0.5f * i);
      }
    }
    auto model = llama_make_random(config, tc.dtype, 42);
    const std::vector<int32_t> tokens = random_tokens(11, config.vocab_size, 1);
    LlamaRunner runner(*model);
    const std::vector<float> got = run_chunks(runner, tokens, {4, 1, 6});
    const std::vector<double> ref = reference_logits(*model, tokens);
    // Both sides use the same dequantized weights; FP32 vs double arithmetic through two
    // layers on O(1) logits differs by ~1e-6. 1e-4 still catches any wrong rotation,
    // position, mask or head mapping (those move logits by 1e-2 and more).
    const double max_err =
        expect_close(got, ref, 1e-4, 1e-4, std::string("forward ") + dtype_name(tc.dtype));
    std::printf("forward %-5s tied=%d interleaved=%d factors=%d: max |err| %.2e\n",
                dtype_name(tc.dtype), tc.tied, tc.pairing == RopePairing::kInterleaved,
                tc.freq_factors, max_err);
  }
}

TEST(LlamaForward, LastOnlyReturnsTheLastRow) {
  auto model = llama_make_random(tiny_config(false, RopePairing::kHalf), DType::F32, 3);
  const std::vector<int32_t> tokens = random_tokens(5, model->config.vocab_size, 2);
  LlamaRunner all(*model), last(*model);
  const float* a = all.forward(tokens.data(), 5);
  const float* b = last.forward(tokens.data(), 5, /*last_only=*/true);
  const int64_t vocab = model->config.vocab_size;
  for (int64_t i = 0; i < vocab; i++) ASSERT_EQ(a[4 * vocab + i], b[i]) << i;
}

// ---------------------------------------------------------------------------------------
// (b) chunking does not change the result.

TEST(LlamaForward, TokenByTokenAndChunksEqualOneBatch) {
  auto model = llama_make_random(tiny_config(true, RopePairing::kHalf), DType::Q8_0, 5);
  const std::vector<int32_t> tokens = random_tokens(13, model->config.vocab_size, 3);
  LlamaRunner batch_runner(*model), single_runner(*model), chunk_runner(*model);
  const std::vector<float> batch = run_chunks(batch_runner, tokens, {13});
  const std::vector<float> single = run_chunks(single_runner, tokens, std::vector<int64_t>(13, 1));
  const std::vector<float> chunked = run_chunks(chunk_runner, tokens, {3, 5, 4, 1});
  expect_close(single, to_double(batch), 1e-4, 0.0, "token by token vs batch");
  expect_close(chunked, to_double(batch), 1e-4, 0.0, "chunks vs batch");
  // Stronger, by design of the kernels (batch-invariant sums, per-token ops): bit-identical.
  EXPECT_EQ(0, std::memcmp(single.data(), batch.data(), batch.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(chunked.data(), batch.data(), batch.size() * sizeof(float)));
}

// Every output is reduced by one thread in a fixed order, so the thread count cannot change
// a single bit of the logits.
TEST(LlamaForward, ThreadCountDoesNotChangeLogits) {
  auto model = llama_make_random(tiny_config(false, RopePairing::kHalf), DType::Q4_1, 15);
  const std::vector<int32_t> tokens = random_tokens(9, model->config.vocab_size, 16);
  threads_set(1);
  LlamaRunner one(*model);
  const std::vector<float> a = run_chunks(one, tokens, {5, 4});
  threads_set(2);
  LlamaRunner two(*model);
  const std::vector<float> b = run_chunks(two, tokens, {5, 4});
  threads_set(0);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

// ---------------------------------------------------------------------------------------
// (c) truncation: stale cache rows beyond n never influence later results.

TEST(LlamaForward, TruncateThenReappendIsBitIdenticalToAFreshRun) {
  auto model = llama_make_random(tiny_config(false, RopePairing::kInterleaved), DType::BF16, 6);
  const int64_t vocab = model->config.vocab_size;
  const std::vector<int32_t> tokens = random_tokens(9, vocab, 4);
  const std::vector<int32_t> rejected = random_tokens(7, vocab, 5);

  LlamaRunner fresh(*model);
  fresh.forward(tokens.data(), 5);
  const float* f = fresh.forward(tokens.data() + 5, 4);
  const std::vector<float> expected(f, f + 4 * vocab);

  LlamaRunner reused(*model);
  reused.forward(tokens.data(), 5);
  reused.forward(rejected.data(), 7);  // drafts that get rejected: cache rows 5..11
  reused.truncate(5);
  EXPECT_EQ(reused.n_past(), 5);
  const float* r = reused.forward(tokens.data() + 5, 4);
  EXPECT_EQ(reused.n_past(), 9);
  EXPECT_EQ(0, std::memcmp(r, expected.data(), expected.size() * sizeof(float)));

  // Truncating to 0 starts over.
  reused.truncate(0);
  reused.forward(tokens.data(), 5);
  r = reused.forward(tokens.data() + 5, 4);
  EXPECT_EQ(0, std::memcmp(r, expected.data(), expected.size() * sizeof(float)));
}

// ---------------------------------------------------------------------------------------
// (d) GGUF's permuted Q/K rows with interleaved pairing == HF rows with half pairing.

// llama.cpp's convert_hf_to_gguf permute: w.reshape(n_head, 2, hd/2, cols).swapaxes(1, 2):
// within each head, new row 2i is old row i and new row 2i + 1 is old row i + hd/2.
TensorView permute_rows_for_gguf(const TensorView& w, int64_t n_heads, int64_t head_dim,
                                 LlamaModel* owner) {
  const size_t row_bytes = dtype_row_bytes(w.dtype, w.cols());
  auto buf = std::shared_ptr<uint8_t[]>(new uint8_t[row_bytes * w.rows()]);
  for (int64_t h = 0; h < n_heads; h++) {
    for (int64_t i = 0; i < head_dim / 2; i++) {
      for (int64_t j = 0; j < 2; j++) {
        const int64_t new_row = h * head_dim + 2 * i + j;
        const int64_t old_row = h * head_dim + j * (head_dim / 2) + i;
        row_pairs_copy_rows(buf.get() + new_row * row_bytes, w, old_row, 1);
      }
    }
  }
  owner->storage.push_back(buf);
  TensorView out = w;
  out.data = buf.get();
  out.layout = RowLayout::kRows;  // (the permuted copy is plain rows whatever w's layout)
  return out;
}

TEST(LlamaForward, PermutedRowsWithInterleavedPairingEqualHalfPairing) {
  auto hf = llama_make_random(tiny_config(false, RopePairing::kHalf), DType::BF16, 7);
  LlamaModel gguf;
  gguf.config = hf->config;
  gguf.config.rope_pairing = RopePairing::kInterleaved;
  gguf.weights = hf->weights;
  gguf.storage = hf->storage;
  const LlamaConfig& c = hf->config;
  for (LlamaLayerWeights& lw : gguf.weights.layers) {
    lw.wq = permute_rows_for_gguf(lw.wq, c.n_heads, c.head_dim, &gguf);
    lw.wk = permute_rows_for_gguf(lw.wk, c.n_kv_heads, c.head_dim, &gguf);
  }
  const std::vector<int32_t> tokens = random_tokens(10, c.vocab_size, 8);
  LlamaRunner hf_runner(*hf), gguf_runner(gguf);
  const std::vector<float> a = run_chunks(hf_runner, tokens, {6, 4});
  const std::vector<float> b = run_chunks(gguf_runner, tokens, {6, 4});
  expect_close(b, to_double(a), 1e-4, 0.0, "gguf permutation");
  // And the permutation matters: with half pairing the permuted rows give other logits.
  gguf.config.rope_pairing = RopePairing::kHalf;
  LlamaRunner wrong_runner(gguf);
  const std::vector<float> wrong = run_chunks(wrong_runner, tokens, {6, 4});
  double max_diff = 0.0;
  for (size_t i = 0; i < a.size(); i++)
    max_diff = std::max<double>(max_diff, std::fabs(a[i] - wrong[i]));
  EXPECT_GT(max_diff, 1e-2);
}

// ---------------------------------------------------------------------------------------
// (e) skip_layers.

TEST(LlamaForward, SkipLayersMatchesReferenceWithThoseLayersRemoved) {
  LlamaConfig config = tiny_config(true, RopePairing::kHalf);
  config.n_layers = 3;
  auto model = llama_make_random(config, DType::F32, 9);
  const std::vector<int32_t> tokens = random_tokens(6, config.vocab_size, 10);
  for (const std::vector<bool>& skip :
       {std::vector<bool>{true, true, true}, std::vector<bool>{false, true, false}}) {
    LlamaRunner runner(*model, 0, skip);
    const std::vector<float> got = run_chunks(runner, tokens, {2, 4});
    const std::vector<double> ref = reference_logits(*model, tokens, skip);
    expect_close(got, ref, 1e-4, 1e-4, "skip layers");
    // Skipping changes the output (the test would notice a runner ignoring skip_layers).
    const std::vector<double> full = reference_logits(*model, tokens);
    double max_diff = 0.0;
    for (size_t i = 0; i < full.size(); i++)
      max_diff = std::max(max_diff, std::fabs(full[i] - ref[i]));
    EXPECT_GT(max_diff, 1e-2);
  }
}

// ---------------------------------------------------------------------------------------
// (f) bad input.

TEST(LlamaForward, ContextOverflowIsAnInputError) {
  auto model = llama_make_random(tiny_config(false, RopePairing::kHalf), DType::F32, 11);
  LlamaRunner runner(*model, /*max_ctx=*/8);
  EXPECT_EQ(runner.max_ctx(), 8);
  const std::vector<int32_t> tokens = random_tokens(9, model->config.vocab_size, 12);
  runner.forward(tokens.data(), 6);
  try {
    runner.forward(tokens.data() + 6, 3);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "context of 9 tokens exceeds the limit 8");
  }
  EXPECT_EQ(runner.n_past(), 6);  // unchanged by the failed call
  runner.forward(tokens.data() + 6, 2);
  EXPECT_EQ(runner.n_past(), 8);
}

TEST(LlamaForward, BadTokensAndSkipListsAreInputErrors) {
  auto model = llama_make_random(tiny_config(false, RopePairing::kHalf), DType::F32, 13);
  LlamaRunner runner(*model);
  EXPECT_EQ(runner.max_ctx(), 64);  // min(max_seq_len, 4096)
  const int32_t bad[] = {1, 83};
  EXPECT_THROW(runner.forward(bad, 2), InputError);
  const int32_t negative[] = {-1};
  EXPECT_THROW(runner.forward(negative, 1), InputError);
  EXPECT_EQ(runner.n_past(), 0);
  EXPECT_THROW(LlamaRunner(*model, 0, std::vector<bool>{true}), InputError);
}

}  // namespace
}  // namespace speclab
