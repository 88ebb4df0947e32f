// The fused kernels of the decode step against the unfused launches they replace, on the
// device (skip without one): cuda_matmul_swiglu against two cuda_matmul_weights and
// cuda_swiglu, cuda_matmul_weights3 (Q, K, V in one launch) against three products,
// cuda_matmul_weights_add against a product and cuda_add_inplace, cuda_rope_kv_write against
// cuda_rope_apply on q and k followed by copies into the cache, and cuda_attention_at (n_past in
// device memory, a caller's score buffer) against cuda_attention. Each fused kernel performs the
// unfused float operations in the same order, so the stated tolerance is 0 for every dtype: a
// mismatch means the fusion changed the arithmetic (the first ones are printed). The forward passes
// that use them are checked against the CPU runner per dtype in tests/cuda/test_cuda_forward.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_rope.h"
#include "core/cuda/cuda_attention.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_matmul.h"
#include "core/cuda/cuda_matmul_swiglu.h"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/cuda_rope.h"
#include "core/cuda/cuda_rope_kv.h"
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

CudaWeight device_weight(DType dtype, int64_t rows, int64_t cols, uint64_t seed) {
  const std::vector<float> f = random_floats(rows * cols, seed, 1.0f / std::sqrt(float(cols)));
  std::vector<uint8_t> bytes(rows * dtype_row_bytes(dtype, cols));
  dtype_from_f32(dtype, f.data(), bytes.data(), rows * cols);
  TensorView view;
  view.name = "w";
  view.dtype = dtype;
  view.shape = {rows, cols};
  view.data = bytes.data();
  view.nbytes = bytes.size();
  return cuda_weight_upload(view);
}

// BF16 with 1 to cuda_bf16_vec_token_limit() (8) tokens takes the fused kernel (one hidden row
// a warp up to 4 tokens, two from 5: hidden 100 then ends on a warp with a row past the end);
// 9 tokens and the other dtypes take the unfused fallback inside cuda_matmul_swiglu (checked
// equal too, and that it did not fuse).
// hidden 100 leaves a partial block of warps; hidden 512 x dim 256 is a whole number.
TEST(CudaFused, MatmulSwigluEqualsTheUnfusedProducts) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  struct Shape {
    int64_t hidden, dim;
  };
  for (DType dt : {DType::BF16, DType::F32, DType::Q8_0}) {
    for (const Shape sh : {Shape{100, 64}, Shape{512, 256}}) {
      const CudaWeight gate = device_weight(dt, sh.hidden, sh.dim, 11);
      const CudaWeight up = device_weight(dt, sh.hidden, sh.dim, 12);
      for (int64_t n = 1; n <= 9; n++) {
        const std::string what = std::string(dtype_name(dt)) + " hidden " +
                                 std::to_string(sh.hidden) + " n_tokens " + std::to_string(n);
        CudaBuffer<float> x = to_device(random_floats(n * sh.dim, 13 + n, 2.0f));
        CudaBuffer<float> g(n * sh.hidden), u(n * sh.hidden), fused(n * sh.hidden),
            scratch(n * sh.hidden);
        EXPECT_EQ(cuda_matmul_swiglu_fuses(x.data(), gate.view(), up.view(), n),
                  dt == DType::BF16 && n <= cuda_bf16_vec_token_limit())
            << what;
        cuda_matmul_weights(g.data(), x.data(), gate.view(), n, nullptr);
        cuda_matmul_weights(u.data(), x.data(), up.view(), n, nullptr);
        cuda_swiglu(g.data(), g.data(), u.data(), n * sh.hidden, nullptr);
        cuda_matmul_swiglu(fused.data(), x.data(), gate.view(), up.view(), scratch.data(), n,
                           nullptr);
        expect_close(to_host(fused, n * sh.hidden), to_host(g, n * sh.hidden), 0, 0, what);
      }
    }
  }
}

// Segment boundaries inside a block of 8 warps (rows 100 + 20 + 20) and the Llama shapes'
// ratio (q 4x the kv rows). BF16 with 1-8 tokens fuses; the rest is the fallback.
TEST(CudaFused, QkvProductsEqualThreeProducts) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  struct Shape {
    int64_t q_rows, kv_rows, dim;
  };
  for (DType dt : {DType::BF16, DType::F32, DType::Q8_0}) {
    // 37 and 11 rows: odd segments, so from 2 tokens on (two rows a warp) warps straddle two
    // segments and the last warp has a row past the end.
    for (const Shape sh : {Shape{100, 20, 64}, Shape{256, 64, 256}, Shape{37, 11, 64}}) {
      const CudaWeight wq = device_weight(dt, sh.q_rows, sh.dim, 21);
      const CudaWeight wk = device_weight(dt, sh.kv_rows, sh.dim, 22);
      const CudaWeight wv = device_weight(dt, sh.kv_rows, sh.dim, 23);
      const CudaWeightView w[3] = {wq.view(), wk.view(), wv.view()};
      const int64_t rows[3] = {sh.q_rows, sh.kv_rows, sh.kv_rows};
      for (int64_t n = 1; n <= 9; n++) {
        const std::string what = std::string(dtype_name(dt)) + " q rows " +
                                 std::to_string(sh.q_rows) + " n_tokens " + std::to_string(n);
        CudaBuffer<float> x = to_device(random_floats(n * sh.dim, 30 + n, 2.0f));
        EXPECT_EQ(cuda_matmul_weights3_fuses(x.data(), w, n),
                  dt == DType::BF16 && n <= cuda_bf16_vec_token_limit())
            << what;
        CudaBuffer<float> ref[3], got[3];
        for (int s = 0; s < 3; s++) {
          ref[s].resize(n * rows[s]);
          got[s].resize(n * rows[s]);
          cuda_matmul_weights(ref[s].data(), x.data(), w[s], n, nullptr);
        }
        float* const out[3] = {got[0].data(), got[1].data(), got[2].data()};
        cuda_matmul_weights3(out, x.data(), w, n, nullptr);
        for (int s = 0; s < 3; s++) {
          expect_close(to_host(got[s], n * rows[s]), to_host(ref[s], n * rows[s]), 0, 0,
                       what + " segment " + std::to_string(s));
        }
      }
    }
  }
}

TEST(CudaFused, MatmulAddEqualsMatmulThenAdd) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  for (DType dt : {DType::BF16, DType::F32, DType::Q8_0}) {
    const int64_t n_out = 100, n_in = 128;
    const CudaWeight w = device_weight(dt, n_out, n_in, 41);
    for (int64_t n = 1; n <= 9; n++) {
      const std::string what = std::string(dtype_name(dt)) + " n_tokens " + std::to_string(n);
      const std::vector<float> x0 = random_floats(n * n_out, 42 + n, 3.0f);
      CudaBuffer<float> in = to_device(random_floats(n * n_in, 50 + n, 2.0f));
      CudaBuffer<float> ref = to_device(x0), got = to_device(x0), prod(n * n_out),
                        scratch(n * n_out);
      cuda_matmul_weights(prod.data(), in.data(), w.view(), n, nullptr);
      cuda_add_inplace(ref.data(), prod.data(), n * n_out, nullptr);
      cuda_matmul_weights_add(got.data(), in.data(), w.view(), n, scratch.data(), nullptr);
      expect_close(to_host(got, n * n_out), to_host(ref, n * n_out), 0, 0, what);
    }
  }
}

TEST(CudaFused, RopeKvWriteEqualsRopeThenCacheCopy) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  struct Case {
    int64_t n_tokens, n_past, heads, kv_heads, hd;
  };
  for (const Case c : {Case{1, 0, 4, 4, 16}, Case{1, 37, 8, 2, 64}, Case{5, 3000, 24, 8, 128},
                       Case{9, 100, 32, 8, 64}}) {
    std::vector<float> inv_freq(c.hd / 2);
    rope_inv_freq(inv_freq.data(), c.hd, 500000.0f);
    rope_scale_llama3(inv_freq.data(), c.hd / 2, 32.0f, 1.0f, 4.0f, 8192);
    CudaBuffer<float> dfreq = to_device(inv_freq);
    const int64_t kv_dim = c.kv_heads * c.hd, ctx = c.n_past + c.n_tokens + 3;
    for (bool interleaved : {false, true}) {
      const std::string what = "n_tokens " + std::to_string(c.n_tokens) + " n_past " +
                               std::to_string(c.n_past) + (interleaved ? " interleaved" : " half");
      const std::vector<float> q = random_floats(c.n_tokens * c.heads * c.hd, 1);
      const std::vector<float> k = random_floats(c.n_tokens * kv_dim, 2);
      const std::vector<float> v = random_floats(c.n_tokens * kv_dim, 3);
      const std::vector<float> cache0(ctx * kv_dim, 7.0f);  // rows outside must stay 7
      // Unfused: rotate q and k, copy k and v to cache rows n_past + t.
      CudaBuffer<float> rq = to_device(q), rk = to_device(k), rkc = to_device(cache0),
                        rvc = to_device(cache0);
      CudaBuffer<float> dv = to_device(v);
      cuda_rope_apply(rq.data(), c.n_tokens, c.heads, c.hd, c.n_past, dfreq.data(), interleaved,
                      nullptr);
      cuda_rope_apply(rk.data(), c.n_tokens, c.kv_heads, c.hd, c.n_past, dfreq.data(), interleaved,
                      nullptr);
      const size_t bytes = sizeof(float) * c.n_tokens * kv_dim;
      SPECLAB_CUDA_CHECK(
          cudaMemcpy(rkc.data() + c.n_past * kv_dim, rk.data(), bytes, cudaMemcpyDeviceToDevice),
          "copy");
      SPECLAB_CUDA_CHECK(
          cudaMemcpy(rvc.data() + c.n_past * kv_dim, dv.data(), bytes, cudaMemcpyDeviceToDevice),
          "copy");
      // Fused, n_past from device memory.
      CudaBuffer<float> fq = to_device(q), fk = to_device(k), fkc = to_device(cache0),
                        fvc = to_device(cache0);
      CudaBuffer<int32_t> n_past = to_device(std::vector<int32_t>{int32_t(c.n_past)});
      CudaRopeKvShape shape;
      shape.n_tokens = c.n_tokens;
      shape.n_heads = c.heads;
      shape.n_kv_heads = c.kv_heads;
      shape.head_dim = c.hd;
      shape.interleaved = interleaved;
      cuda_rope_kv_write(fq.data(), fk.data(), dv.data(), fkc.data(), fvc.data(), n_past.data(),
                         dfreq.data(), shape, nullptr);
      expect_close(to_host(fq, q.size()), to_host(rq, q.size()), 0, 0, what + " q");
      expect_close(to_host(fkc, cache0.size()), to_host(rkc, cache0.size()), 0, 0,
                   what + " key cache");
      expect_close(to_host(fvc, cache0.size()), to_host(rvc, cache0.size()), 0, 0,
                   what + " value cache");
      expect_close(to_host(fk, k.size()), k, 0, 0, what + " k scratch untouched");
    }
  }
}

TEST(CudaFused, AttentionAtEqualsAttention) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  struct Case {
    int64_t n_tokens, n_past, heads, kv_heads, hd, max_ctx;
  };
  for (const Case c : {Case{1, 0, 4, 4, 16, 64}, Case{1, 37, 8, 2, 64, 512},
                       Case{9, 100, 32, 8, 64, 4096}, Case{4, 3000, 6, 3, 128, 3004}}) {
    const int64_t ctx = c.n_past + c.n_tokens;
    const std::vector<float> q = random_floats(c.n_tokens * c.heads * c.hd, 1);
    const std::vector<float> k = random_floats(ctx * c.kv_heads * c.hd, 2);
    const std::vector<float> v = random_floats(ctx * c.kv_heads * c.hd, 3);
    CudaBuffer<float> dq = to_device(q), dk = to_device(k), dv = to_device(v), ref(q.size()),
                      got(q.size()), scores(c.n_tokens * c.heads * c.max_ctx);
    CudaBuffer<int32_t> n_past = to_device(std::vector<int32_t>{int32_t(c.n_past)});
    cuda_attention(ref.data(), dq.data(), dk.data(), dv.data(), c.n_tokens, c.n_past, c.heads,
                   c.kv_heads, c.hd, nullptr);
    cuda_attention_at(got.data(), dq.data(), dk.data(), dv.data(), c.n_tokens, n_past.data(),
                      c.heads, c.kv_heads, c.hd, scores.data(), c.max_ctx, nullptr);
    expect_close(to_host(got, q.size()), to_host(ref, q.size()), 0, 0,
                 "attention_at n_past " + std::to_string(c.n_past));
  }
}

}  // namespace
}  // namespace speclab
