// Every CUDA kernel against its CPU specification, as a table of cases per op, with the
// tolerance of each dtype stated where it is used. Skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_attention.h"
#include "core/cpu_matmul.h"
#include "core/cpu_ops.h"
#include "core/cpu_rope.h"
#include "core/cuda/cuda_attention.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_matmul.h"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/cuda_rope.h"
#include "core/cuda/cuda_sampling.h"
#include "core/cuda/cuda_verify.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "tests/cuda/cuda_test_util.h"

namespace speclab {
namespace {

std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// A weight matrix [rows, cols] in dtype, with its host bytes.
struct HostWeight {
  std::vector<uint8_t> bytes;
  TensorView view;
};
HostWeight make_weight(DType dtype, int64_t rows, int64_t cols, uint64_t seed) {
  const std::vector<float> f = random_floats(rows * cols, seed, 1.0f / std::sqrt(float(cols)));
  HostWeight w;
  w.bytes.resize(rows * dtype_row_bytes(dtype, cols));
  dtype_from_f32(dtype, f.data(), w.bytes.data(), rows * cols);
  w.view.name = "w";
  w.view.dtype = dtype;
  w.view.shape = {rows, cols};
  w.view.data = w.bytes.data();
  w.view.nbytes = w.bytes.size();
  return w;
}

TEST(CudaKernels, MatmulWeightsAllDtypes) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  // Tolerances: F32 and the dequant kernel differ from the CPU only in summation order;
  // F16/BF16 go through cuBLAS with x rounded to 16 bits (BF16: 8 mantissa bits), except BF16
  // with 1..8 tokens (a vectorized kernel on FP32 activations).
  struct Case {
    DType dtype;
    int64_t n_out, n_in, n_tokens;
    double atol, rtol;
  };
  const Case cases[] = {
      {DType::F32, 96, 64, 1, 1e-5, 1e-4},
      {DType::F32, 1000, 256, 9, 1e-5, 1e-4},
      {DType::F16, 96, 64, 3, 2e-3, 2e-3},
      {DType::F16, 513, 512, 9, 2e-3, 2e-3},
      {DType::BF16, 96, 64, 1, 1e-2, 1e-2},
      {DType::BF16, 513, 512, 17, 1e-2, 1e-2},
      // 1..8 tokens, n_in % 8 == 0: the vectorized BF16 kernel, FP32 activations, so as
      // close to the CPU's FP32-activation path as F32 (the GemmEx path rounds x to BF16 and
      // would miss 1e-4).
      {DType::BF16, 300, 520, 4, 1e-4, 1e-4},
      {DType::BF16, 77, 2048, 2, 1e-4, 1e-4},
      {DType::BF16, 1000, 64, 3, 1e-4, 1e-4},
      {DType::BF16, 64, 3072, 1, 1e-4, 1e-4},
      {DType::BF16, 301, 520, 7, 1e-4, 1e-4},  // 5-8 tokens: four rows a warp
      {DType::BF16, 64, 2048, 8, 1e-4, 1e-4},
      {DType::Q8_0, 96, 64, 1, 1e-5, 1e-4},
      {DType::Q8_0, 1000, 512, 9, 1e-5, 1e-4},
      {DType::Q4_0, 33, 128, 5, 1e-5, 1e-4},
      {DType::Q4_1, 1000, 256, 9, 1e-5, 1e-4},
      {DType::Q4_K, 100, 512, 5, 1e-5, 1e-4},
      {DType::Q6_K, 77, 768, 9, 1e-5, 1e-4},
  };
  for (const Case& c : cases) {
    const HostWeight w = make_weight(c.dtype, c.n_out, c.n_in, 7);
    const std::vector<float> x = random_floats(c.n_tokens * c.n_in, 11);
    std::vector<float> ref(c.n_tokens * c.n_out);
    matmul_weights(ref.data(), x.data(), w.view, c.n_tokens);
    const CudaWeight dw = cuda_weight_upload(w.view);
    CudaBuffer<float> dx = to_device(x);
    CudaBuffer<float> dout(ref.size());
    cuda_matmul_weights(dout.data(), dx.data(), dw.view(), c.n_tokens, nullptr);
    expect_close(to_host(dout, ref.size()), ref, c.atol, c.rtol,
                 std::string("matmul ") + dtype_name(c.dtype));
    cuda_matmul_weights_kernel(dout.data(), dx.data(), dw.view(), c.n_tokens, nullptr);
    expect_close(to_host(dout, ref.size()), ref, 1e-5, 1e-4,
                 std::string("matmul kernel ") + dtype_name(c.dtype));
  }
}

// The vectorized BF16 kernel's register tiles (one row a warp at 1 token, two at 2-4, four at
// 5-8) give every token's outputs the bits of that token's product alone: a row's sum runs
// in an order fixed by n_in (batch invariance, as the batched runner and the speculative
// verify rely on). 301 rows end on a warp with rows past the last. At 9 tokens (GemmEx, the
// activations rounded to BF16) the rows differ: the comparison can tell.
TEST(CudaKernels, Bf16VecRowsDoNotDependOnTheTokenCount) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const int64_t n_out = 301, n_in = 520, max_t = 9;
  const HostWeight w = make_weight(DType::BF16, n_out, n_in, 9);
  const CudaWeight dw = cuda_weight_upload(w.view);
  const std::vector<float> x = random_floats(max_t * n_in, 19);
  CudaBuffer<float> dx = to_device(x), one(n_out), many(max_t * n_out);
  std::vector<std::vector<float>> alone(max_t);
  for (int64_t t = 0; t < max_t; t++) {
    cuda_matmul_weights(one.data(), dx.data() + t * n_in, dw.view(), 1, nullptr);
    alone[t] = to_host(one, n_out);
  }
  for (int64_t n = 2; n <= max_t; n++) {
    cuda_matmul_weights(many.data(), dx.data(), dw.view(), n, nullptr);
    const std::vector<float> got = to_host(many, n * n_out);
    int differ = 0;
    for (int64_t t = 0; t < n; t++)
      differ += std::memcmp(got.data() + t * n_out, alone[t].data(), n_out * sizeof(float)) != 0;
    if (n <= cuda_bf16_vec_token_limit()) {
      EXPECT_EQ(differ, 0) << n << " tokens: rows differ from the tokens alone";
    } else {
      EXPECT_GT(differ, 0) << n << " tokens through GemmEx: the same bits as the vectorized kernel";
    }
  }
}

TEST(CudaKernels, EmbeddingRmsnormSwigluAdd) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const int64_t vocab = 50, dim = 96, n = 4;
  for (DType dt : {DType::F32, DType::BF16, DType::Q8_0}) {
    const HostWeight emb = make_weight(dt, vocab, dim, 3);
    const std::vector<int32_t> tokens = {0, 49, 7, 7};
    std::vector<float> ref(n * dim);
    for (int64_t t = 0; t < n; t++) weights_row_to_f32(ref.data() + t * dim, emb.view, tokens[t]);
    const CudaWeight d = cuda_weight_upload(emb.view);
    CudaBuffer<int32_t> dt_ids = to_device(tokens);
    CudaBuffer<float> dout(n * dim);
    cuda_embedding_lookup(dout.data(), dt_ids.data(), d.view(), n, nullptr);
    expect_close(to_host(dout, n * dim), ref, 0, 0, std::string("embedding ") + dtype_name(dt));
  }
  const std::vector<float> x = random_floats(n * dim, 5, 3.0f), wn = random_floats(dim, 6);
  std::vector<float> ref(n * dim);
  rmsnorm(ref.data(), x.data(), wn.data(), n, dim, 1e-5f);
  CudaBuffer<float> dx = to_device(x), dw = to_device(wn), dout(n * dim);
  cuda_rmsnorm(dout.data(), dx.data(), dw.data(), n, dim, 1e-5f, nullptr);
  expect_close(to_host(dout, n * dim), ref, 1e-6, 1e-5, "rmsnorm");
  cuda_rmsnorm(dx.data(), dx.data(), dw.data(), n, dim, 1e-5f, nullptr);  // aliasing
  expect_close(to_host(dx, n * dim), ref, 1e-6, 1e-5, "rmsnorm in place");

  const std::vector<float> g = random_floats(1000, 8, 4.0f), u = random_floats(1000, 9);
  std::vector<float> sw(1000);
  swiglu(sw.data(), g.data(), u.data(), 1000);
  CudaBuffer<float> dg = to_device(g), du = to_device(u);
  cuda_swiglu(dg.data(), dg.data(), du.data(), 1000, nullptr);
  expect_close(to_host(dg, 1000), sw, 1e-6, 1e-5, "swiglu");
  std::vector<float> sum = g;
  add_inplace(sum.data(), u.data(), 1000);
  CudaBuffer<float> dg2 = to_device(g);
  cuda_add_inplace(dg2.data(), du.data(), 1000, nullptr);
  expect_close(to_host(dg2, 1000), sum, 0, 0, "add_inplace");
}

TEST(CudaKernels, RopeBothPairingsWithLlama3Scaling) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const int64_t n = 5, heads = 3, hd = 64;
  std::vector<float> inv_freq(hd / 2);
  rope_inv_freq(inv_freq.data(), hd, 500000.0f);
  rope_scale_llama3(inv_freq.data(), hd / 2, 32.0f, 1.0f, 4.0f, 8192);
  CudaBuffer<float> dfreq = to_device(inv_freq);
  for (bool interleaved : {false, true}) {
    for (int64_t pos0 : {int64_t{0}, int64_t{100000}}) {
      std::vector<float> x = random_floats(n * heads * hd, 21);
      CudaBuffer<float> dx = to_device(x);
      rope_apply(x.data(), n, heads, hd, pos0, inv_freq.data(), interleaved);
      cuda_rope_apply(dx.data(), n, heads, hd, pos0, dfreq.data(), interleaved, nullptr);
      expect_close(to_host(dx, x.size()), x, 1e-5, 1e-5,
                   interleaved ? "rope interleaved" : "rope half");
    }
  }
}

TEST(CudaKernels, AttentionGqaOverCache) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  struct Case {
    int64_t n_tokens, n_past, heads, kv_heads, hd;
  };
  for (const Case c : {Case{1, 0, 4, 4, 16}, Case{1, 37, 8, 2, 64}, Case{9, 100, 32, 8, 64},
                       Case{4, 3000, 6, 3, 128}}) {
    const int64_t ctx = c.n_past + c.n_tokens;
    const std::vector<float> q = random_floats(c.n_tokens * c.heads * c.hd, 1);
    const std::vector<float> k = random_floats(ctx * c.kv_heads * c.hd, 2);
    const std::vector<float> v = random_floats(ctx * c.kv_heads * c.hd, 3);
    std::vector<float> ref(q.size());
    attention(ref.data(), q.data(), k.data(), v.data(), c.n_tokens, c.n_past, c.heads, c.kv_heads,
              c.hd);
    CudaBuffer<float> dq = to_device(q), dk = to_device(k), dv = to_device(v), dout(q.size());
    cuda_attention(dout.data(), dq.data(), dk.data(), dv.data(), c.n_tokens, c.n_past, c.heads,
                   c.kv_heads, c.hd, nullptr);
    expect_close(to_host(dout, q.size()), ref, 1e-5, 1e-4,
                 "attention n_past=" + std::to_string(c.n_past));
  }
}

// sampling_standardize of each of the rows [rows, vocab].
std::vector<float> standardize_rows_on_the_cpu(const std::vector<float>& logits, int64_t rows,
                                               int64_t vocab, const SamplingParams& sp) {
  std::vector<float> ref(rows * vocab);
  for (int64_t r = 0; r < rows; r++)
    sampling_standardize(ref.data() + r * vocab, logits.data() + r * vocab, vocab, sp);
  return ref;
}

TEST(CudaKernels, SamplingStandardizeTable) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const int64_t vocab = 3000, rows = 3;
  std::vector<float> logits = random_floats(rows * vocab, 4, 3.0f);
  logits[5] = logits[6] = 20.0f;  // a tie at the top: lower id first
  logits[vocab + 9] = -INFINITY;  // masked id
  struct Case {
    float t;
    int k;
    float p;
  };
  for (const Case c : {Case{0, 0, 1}, Case{1, 0, 1}, Case{0.7f, 0, 1}, Case{1, 1, 1},
                       Case{1, 40, 1}, Case{1, 0, 0.9f}, Case{0.8f, 50, 0.5f}, Case{2, 0, 0.05f}}) {
    SamplingParams sp;
    sp.temperature = c.t;
    sp.top_k = c.k;
    sp.top_p = c.p;
    const std::vector<float> ref = standardize_rows_on_the_cpu(logits, rows, vocab, sp);
    CudaBuffer<float> dl = to_device(logits), dp(rows * vocab);
    cuda_sampling_standardize(dp.data(), dl.data(), rows, vocab, sp, nullptr);
    expect_close(to_host(dp, ref.size()), ref, 1e-7, 1e-5,
                 "standardize T=" + std::to_string(c.t) + " k=" + std::to_string(c.k) +
                     " p=" + std::to_string(c.p));
  }
}

// The Llama-3 vocabulary (31 chunks of 4,096 logits and a partial one of 1,280), 5 rows
// standardized in one call: each row equals the CPU's, the argmax takes the lowest id of a
// tie that spans chunks, and each row is bit for bit what a call of that row alone gives
// (the reductions run in a fixed order that ignores the other rows). The tolerance is shown
// to discriminate: the CPU's distribution at a temperature 5% off lies outside it.
TEST(CudaKernels, SamplingStandardizeRowsInChunks) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const int64_t vocab = 128256, rows = 5;
  std::vector<float> logits = random_floats(rows * vocab, 11, 3.0f);
  logits[4095] = logits[4096] = logits[100000] = 25.0f;  // row 0: a tie across chunks
  logits[1 * vocab + vocab - 1] = 30.0f;                 // row 1: the maximum in the last id
  logits[2 * vocab + 124000] = 28.0f;                    // row 2: in the partial chunk
  for (int64_t i = 0; i < vocab; i += 7) logits[3 * vocab + i] = -INFINITY;  // row 3: masked ids
  for (const float t : {0.0f, 1.0f, 0.7f}) {
    SamplingParams sp;
    sp.temperature = t;
    const std::vector<float> ref = standardize_rows_on_the_cpu(logits, rows, vocab, sp);
    CudaBuffer<float> dl = to_device(logits), dp(rows * vocab), one(vocab);
    cuda_sampling_standardize(dp.data(), dl.data(), rows, vocab, sp, nullptr);
    const std::vector<float> got = to_host(dp, ref.size());
    const std::string what = "rows in chunks, T=" + std::to_string(t);
    expect_close(got, ref, 1e-7, 1e-5, what);
    if (t == 0.0f) {
      EXPECT_EQ(got[4095], 1.0f) << what;
      EXPECT_EQ(got[4096], 0.0f) << what;
      EXPECT_EQ(got[1 * vocab + vocab - 1], 1.0f) << what;
      EXPECT_EQ(got[2 * vocab + 124000], 1.0f) << what;
    }
    for (int64_t r = 0; r < rows; r++) {
      cuda_sampling_standardize(one.data(), dl.data() + r * vocab, 1, vocab, sp, nullptr);
      const std::vector<float> alone = to_host(one, vocab);
      EXPECT_EQ(std::memcmp(alone.data(), got.data() + r * vocab, vocab * sizeof(float)), 0)
          << what << ": row " << r << " alone differs from the same row among " << rows;
    }
    if (t == 1.0f) {
      SamplingParams off = sp;
      off.temperature = 1.05f;
      std::vector<float> wrong(vocab);
      // Row 4 (no planted maximum: its mass is spread, so the temperature shows).
      sampling_standardize(wrong.data(), logits.data() + 4 * vocab, vocab, off);
      double worst = 0.0;
      for (int64_t i = 0; i < vocab; i++)
        worst = std::max(worst, std::abs(static_cast<double>(got[4 * vocab + i]) - wrong[i]) /
                                    (1e-7 + 1e-5 * std::abs(static_cast<double>(wrong[i]))));
      EXPECT_GT(worst, 1.0) << "the tolerance does not tell T 1 from T 1.05";
    }
  }
}

// Top-k and top-p without a sort (core/cuda/cuda_top_set.h) on the Llama-3 vocabulary, 5 rows
// in one call, each built so that a boundary crosses chunks: ties on a grid of 0.25 (both
// boundaries inside groups of equal logits that span chunks), a tie at the top across
// chunks, one logit for every id (top-k and top-p keep the lowest ids, ranked across all 32
// chunks), masked ids, plain random logits. Each row keeps the CPU's set with the CPU's
// probabilities (1e-7 + 1e-5 relative; the kept mass is summed in id order, not sorted order)
// and is bit for bit what the row alone gives. The comparison is shown to discriminate: the
// CPU's set with one id more (top-k + 1) is rejected.
TEST(CudaKernels, SamplingTopSetRowsInChunks) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const int64_t vocab = 128256, rows = 5;
  std::vector<float> logits = random_floats(rows * vocab, 12, 3.0f);
  for (int64_t i = 0; i < vocab; i++) logits[i] = std::round(logits[i] * 4.0f) / 4.0f;
  logits[vocab + 4095] = logits[vocab + 4096] = logits[vocab + 90000] = 25.0f;
  for (int64_t i = 0; i < vocab; i++) logits[2 * vocab + i] = 0.5f;
  for (int64_t i = 0; i < vocab; i += 7) logits[3 * vocab + i] = -INFINITY;
  struct Case {
    float t;
    int k;
    float p;
  };
  for (const Case c : {Case{1, 50, 1}, Case{1, 0, 0.9f}, Case{0.7f, 40, 0.5f}, Case{2, 0, 0.05f},
                       Case{1, 3, 1}, Case{1, 20000, 0.3f}}) {
    SamplingParams sp;
    sp.temperature = c.t;
    sp.top_k = c.k;
    sp.top_p = c.p;
    const std::string what = "top set T=" + std::to_string(c.t) + " k=" + std::to_string(c.k) +
                             " p=" + std::to_string(c.p);
    const std::vector<float> ref = standardize_rows_on_the_cpu(logits, rows, vocab, sp);
    CudaBuffer<float> dl = to_device(logits), dp(rows * vocab), one(vocab);
    cuda_sampling_standardize(dp.data(), dl.data(), rows, vocab, sp, nullptr);
    const std::vector<float> got = to_host(dp, ref.size());
    expect_close(got, ref, 1e-7, 1e-5, what);
    int64_t set_differs = 0;
    for (size_t i = 0; i < ref.size(); i++) set_differs += (got[i] > 0.0f) != (ref[i] > 0.0f);
    EXPECT_EQ(set_differs, 0) << what << ": ids kept by one side only";
    for (int64_t r = 0; r < rows; r++) {
      cuda_sampling_standardize(one.data(), dl.data() + r * vocab, 1, vocab, sp, nullptr);
      const std::vector<float> alone = to_host(one, vocab);
      EXPECT_EQ(std::memcmp(alone.data(), got.data() + r * vocab, vocab * sizeof(float)), 0)
          << what << ": row " << r << " alone differs from the same row among " << rows;
    }
    if (c.k > 0 && c.p == 1.0f) {
      SamplingParams more = sp;
      more.top_k = c.k + 1;
      std::vector<float> wrong(vocab);
      sampling_standardize(wrong.data(), logits.data() + 4 * vocab, vocab, more);
      int64_t seen = 0;
      for (int64_t i = 0; i < vocab; i++) seen += (got[4 * vocab + i] > 0.0f) != (wrong[i] > 0.0f);
      EXPECT_EQ(seen, 1) << what << ": the set of top-k + 1 is not told apart";
    }
  }
}

TEST(CudaKernels, VerifyMatchesCpuWithTheSameKeys) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const int64_t vocab = 500;
  const int gamma = 4;
  SamplingParams sp;
  sp.temperature = 1.0f;
  std::vector<float> p((gamma + 1) * vocab), q(gamma * vocab);
  const std::vector<float> lp = random_floats(p.size(), 31, 2.0f),
                           lq = random_floats(q.size(), 32, 2.0f);
  for (int i = 0; i <= gamma; i++)
    sampling_standardize(p.data() + i * vocab, lp.data() + i * vocab, vocab, sp);
  for (int i = 0; i < gamma; i++)
    sampling_standardize(q.data() + i * vocab, lq.data() + i * vocab, vocab, sp);
  CudaBuffer<float> dp = to_device(p), dq = to_device(q);
  int n_checked = 0;
  for (uint64_t seed = 0; seed < 40; seed++) {
    std::vector<int32_t> draft(gamma);
    for (int i = 0; i < gamma; i++) {
      draft[i] = sampling_draw(q.data() + i * vocab, vocab,
                               rng_uniform(RngKey{seed, 0, uint64_t(i), kRngDraftSample, 0}));
    }
    CudaBuffer<int32_t> dd = to_device(draft);
    for (bool greedy : {false, true}) {
      for (bool one_hot : {false, true}) {
        for (double l : {1.0, 0.5}) {
          VerifyConfig cfg;
          cfg.greedy = greedy;
          cfg.lenience = l;
          const RngKey base{seed, 2, 100, 0, 0};
          // p_raw = p: p here is not one-hot, and the device applies greedy lenience to p.
          const VerifyOutcome ref =
              speculative_verify(VerifyRound{gamma, draft.data(), one_hot ? nullptr : q.data(),
                                             p.data(), vocab, p.data()},
                                 cfg, base);
          const VerifyOutcome got = cuda_speculative_verify(
              CudaVerifyRound{gamma, dd.data(), one_hot ? nullptr : dq.data(), dp.data(), vocab,
                              draft.data()},
              cfg, base, nullptr);
          EXPECT_EQ(got.n_accepted, ref.n_accepted) << seed;
          EXPECT_EQ(got.next_token, ref.next_token) << seed;
          EXPECT_EQ(got.bonus, ref.bonus) << seed;
          expect_close(got.p_draft, ref.p_draft, 0, 0, "p_draft");
          expect_close(got.q_draft, ref.q_draft, 0, 0, "q_draft");
          expect_close(got.beta, ref.beta, 1e-6, 1e-5, "beta");
          n_checked++;
        }
      }
    }
  }
  EXPECT_EQ(n_checked, 320);
}

}  // namespace
}  // namespace speclab
