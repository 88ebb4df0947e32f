// A llama GGUF whose matrices are Q4_K and Q6_K (as llama.cpp's Q4_K_M files mix them) loads
// and runs: its logits equal those of the same model written with the dequantized weights in
// F32 (summation order aside), on every kernel path the CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/dtype.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "models/llama/weights_finite.h"
#include "tests/formats/expect_input_error.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using testing::Bytes;
using testing::GgufWriter;

// dim 256, hidden 512, 4 heads of 64 (2 kv heads), vocab 256: every row a whole number of
// 256-value super-blocks. Matrix m (0-based, in writing order) is Q6_K when m % 3 == 0, else
// Q4_K; `dequantized`: the same values written as F32 instead.
GgufWriter kquant_gguf(bool dequantized) {
  GgufWriter w;
  w.str("general.architecture", "llama");
  w.u32("llama.context_length", 512);
  w.u32("llama.embedding_length", 256);
  w.u32("llama.block_count", 2);
  w.u32("llama.feed_forward_length", 512);
  w.u32("llama.attention.head_count", 4);
  w.u32("llama.attention.head_count_kv", 2);
  w.f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.f32("llama.rope.freq_base", 10000.0f);
  std::mt19937 rng(2024);
  int index = 0;
  auto matrix = [&](const std::string& name, uint64_t rows, uint64_t cols) {
    const DType dtype = index++ % 3 == 0 ? DType::Q6_K : DType::Q4_K;
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
    std::vector<float> values(rows * cols);
    for (float& v : values) v = normal(rng);
    Bytes q(dtype_row_bytes(dtype, cols) * rows);
    dtype_from_f32(dtype, values.data(), q.data(), static_cast<int64_t>(rows * cols));
    if (dequantized) {
      dtype_to_f32(dtype, q.data(), values.data(), static_cast<int64_t>(rows * cols));
      w.tensor(name, {cols, rows}, testing::kGgmlF32, testing::as_bytes(values));
    } else {
      w.tensor(name, {cols, rows}, dtype == DType::Q4_K ? testing::kGgmlQ4_K : testing::kGgmlQ6_K,
               q);
    }
  };
  auto ones = [](uint64_t n) { return testing::as_bytes(std::vector<float>(n, 1.0f)); };
  matrix("token_embd.weight", 256, 256);
  for (int l = 0; l < 2; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    w.tensor(p + "attn_norm.weight", {256}, testing::kGgmlF32, ones(256));
    matrix(p + "attn_q.weight", 256, 256);
    matrix(p + "attn_k.weight", 128, 256);
    matrix(p + "attn_v.weight", 128, 256);
    matrix(p + "attn_output.weight", 256, 256);
    w.tensor(p + "ffn_norm.weight", {256}, testing::kGgmlF32, ones(256));
    matrix(p + "ffn_gate.weight", 512, 256);
    matrix(p + "ffn_up.weight", 512, 256);
    matrix(p + "ffn_down.weight", 256, 512);
  }
  w.tensor("output_norm.weight", {256}, testing::kGgmlF32, ones(256));
  matrix("output.weight", 256, 256);
  return w;
}

TEST(LlamaKQuants, GgufModelRunsAndMatchesItsDequantizedTwin) {
  testing::TempDir dir;
  testing::write_bytes(dir.file("k.gguf"), kquant_gguf(false).build());
  testing::write_bytes(dir.file("f32.gguf"), kquant_gguf(true).build());
  auto kq = llama_load(dir.file("k.gguf"));
  auto f32 = llama_load(dir.file("f32.gguf"));
  EXPECT_EQ(kq->weights.tok_embeddings.dtype, DType::Q6_K);
  EXPECT_EQ(kq->weights.layers[0].wq.dtype, DType::Q4_K);
  EXPECT_EQ(kq->weights.layers[1].w_down.dtype, DType::Q4_K);
  EXPECT_EQ(kq->weights.layers[1].w_down.shape, (std::vector<int64_t>{256, 512}));
  EXPECT_EQ(f32->weights.layers[0].wq.dtype, DType::F32);
  const std::vector<int32_t> tokens = {3, 141, 59, 26, 5, 35, 89, 79, 32, 38, 46};
  const int64_t vocab = 256, n = static_cast<int64_t>(tokens.size());
  for (MatmulIsa isa : {MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512}) {
    if (!matmul_force_isa(isa)) continue;
    LlamaRunner a(*kq), b(*f32);
    const float* la = a.forward(tokens.data(), n);
    std::vector<float> got(la, la + n * vocab);
    const float* lb = b.forward(tokens.data(), n);
    double max_err = 0, max_abs = 0;
    for (int64_t i = 0; i < n * vocab; i++) {
      ASSERT_NEAR(got[i], lb[i], 1e-4 + 1e-4 * std::fabs(lb[i])) << matmul_isa() << " " << i;
      max_err = std::max(max_err, static_cast<double>(std::fabs(got[i] - lb[i])));
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(lb[i])));
    }
    std::printf("%s: Q4_K/Q6_K vs F32 twin, max |diff| %.2e (max |logit| %.2f)\n", matmul_isa(),
                max_err, max_abs);
  }
  matmul_force_isa(MatmulIsa::kBest);
}

// A K-quant tensor whose rows are not whole super-blocks, or whose data the file does not
// hold, is rejected naming the file and the tensor.
TEST(LlamaKQuants, BadTensorsNameFileAndTensor) {
  testing::TempDir dir;
  const std::string path = dir.file("bad.gguf");
  GgufWriter shape = kquant_gguf(false);
  for (auto& t : shape.tensors)
    if (t.name == "blk.0.attn_k.weight") t.ne = {320, 100};
  testing::write_bytes(path, shape.build());
  testing::expect_input_error(
      [&] { llama_load(path); },
      {path,
       "tensor 'blk.0.attn_k.weight' innermost dimension 320 is not a multiple of 256 as "
       "Q4_K requires"});
  GgufWriter truncated = kquant_gguf(false);
  truncated.tensors.back().data.resize(truncated.tensors.back().data.size() - 100);
  testing::write_bytes(path, truncated.build());
  testing::expect_input_error([&] { llama_load(path); }, {path, "tensor 'output.weight' data",
                                                          "lies outside the data section"});
}

// synthetic:<shape>:Q4_K / Q6_K: shapes whose rows are whole super-blocks build (the 1B and
// 3B shapes; tested through the CLI in docs/cpu-kernels.md's command), the others are refused.
TEST(LlamaKQuants, SyntheticShapesNeedWholeSuperBlocks) {
  for (const char* spec : {"tiny:Q4_K", "smollm2-135m:Q6_K"}) {
    testing::expect_input_error(
        [&] { llama_make_synthetic(spec); },
        {"synthetic tensor 'tok_embeddings'", "not a multiple of the", "block size"});
  }
}

// The load-time scan for non-finite weights reads the K-quants' fp16 scales where they are:
// Q4_K d and dmin at the start of a super-block, Q6_K d at its end (byte 208).
TEST(LlamaKQuants, NonFiniteScalesAreFound) {
  auto view = [](DType dtype, const Bytes& bytes) {
    TensorView t;
    t.name = "t";
    t.dtype = dtype;
    t.shape = {static_cast<int64_t>(bytes.size() / dtype_block_bytes(dtype) * 256)};
    t.data = bytes.data();
    t.nbytes = bytes.size();
    return t;
  };
  const uint16_t one = f32_to_fp16(1.0f), inf = 0x7c00, nan = 0x7e00;
  Bytes q4k(3 * 144, 0xff);  // codes 0xff everywhere: only the scales can be non-finite
  for (int b = 0; b < 3; b++) {
    std::memcpy(&q4k[144 * b], &one, 2);
    std::memcpy(&q4k[144 * b + 2], &one, 2);
  }
  EXPECT_EQ(tensor_find_non_finite(view(DType::Q4_K, q4k)), -1);
  std::memcpy(&q4k[144 * 2 + 2], &inf, 2);  // dmin of super-block 2
  EXPECT_EQ(tensor_find_non_finite(view(DType::Q4_K, q4k)), 512);
  Bytes q6k(2 * 210, 0xff);
  for (int b = 0; b < 2; b++) std::memcpy(&q6k[210 * b + 208], &one, 2);
  EXPECT_EQ(tensor_find_non_finite(view(DType::Q6_K, q6k)), -1);
  std::memcpy(&q6k[210 + 208], &nan, 2);  // d of super-block 1
  EXPECT_EQ(tensor_find_non_finite(view(DType::Q6_K, q6k)), 256);
}

}  // namespace
}  // namespace speclab
