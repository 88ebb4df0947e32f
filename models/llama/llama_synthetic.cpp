#include "models/llama/llama_synthetic.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/large_buffer.h"
#include "models/llama/weights_layout.h"

namespace speclab {
namespace {

// A counter-based generator: value i of tensor `stream` is a pure function of
// (seed, stream, i), so rows can be filled in parallel in any order with the same result.
inline uint64_t mix64(uint64_t z) {  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Approximately N(0, 1): the sum of four 16-bit uniforms (Irwin-Hall, variance 4/12) scaled
// to unit variance. Bounded at ±sqrt(12); plenty for timing and for tests. (Norm weights.)
inline float normal_at(uint64_t key, uint64_t i) {
  const uint64_t h = mix64(key + i * 0x9e3779b97f4a7c15ULL);
  const float u =
      static_cast<float>((h & 0xffff) + ((h >> 16) & 0xffff) + ((h >> 32) & 0xffff) + (h >> 48)) *
      (1.0f / 65536.0f);
  return (u - 2.0f) * 1.7320508f;  // sqrt(3)
}

// Matrices, billions of values, use a cheaper bell: four values per hash, each the sum of two
// uniform bytes minus their mean (triangular on [-255, 255], variance 2 * (256^2 - 1) / 12).
// values[0..4) of group g (elements 4g .. 4g + 3), scaled by `scale`.
constexpr float kTriangleStddev = 104.5108f;  // sqrt(2 * 65535 / 12)
inline void four_at(uint64_t key, uint64_t g, float scale, float* values) {
  const uint64_t h = mix64(key + g * 0x9e3779b97f4a7c15ULL);
  for (int j = 0; j < 4; j++) {
    const int a = static_cast<int>((h >> (16 * j)) & 0xff);
    const int b = static_cast<int>((h >> (16 * j + 8)) & 0xff);
    values[j] = static_cast<float>(a + b - 255) * scale;
  }
}

// f32_to_bf16 for finite values (round to nearest even), inline for the generator's loop.
inline uint16_t bf16_round(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

class SyntheticBuilder {
 public:
  SyntheticBuilder(LlamaModel* model, DType dtype, uint64_t seed)
      : model_(model), dtype_(dtype), seed_(seed) {}

  // A [rows, cols] matrix ~ N(0, 1/sqrt(cols)) in dtype_.
  TensorView matrix(const std::string& name, int64_t rows, int64_t cols) {
    SPECLAB_INPUT_CHECK(cols % dtype_block_size(dtype_) == 0, "synthetic tensor '", name,
                        "': ", cols, " columns are not a multiple of the ", dtype_name(dtype_),
                        " block size");
    const size_t row_bytes = dtype_row_bytes(dtype_, cols);
    TensorView v = allocate(name, dtype_, {rows, cols}, row_bytes * rows);
    uint8_t* base = static_cast<uint8_t*>(const_cast<void*>(v.data));
    const uint64_t key = mix64(seed_ ^ mix64(++stream_));
    const float scale = 1.0f / std::sqrt(static_cast<float>(cols)) / kTriangleStddev;
    // Rows are pure functions of (seed, tensor, row): filled in parallel, first touched by the
    // filling threads. BF16 (the real models' dtype, and the big ones) is written directly;
    // other dtypes go through an FP32 row and the reference conversion.
    const int64_t groups = (cols + 3) / 4;
    // bf16_of[p] = BF16 of four_at's value for the 16-bit piece p (128 KB, stays in L2).
    std::vector<uint16_t> bf16_of;
    if (dtype_ == DType::BF16) {
      bf16_of.resize(65536);
      for (int p = 0; p < 65536; p++)
        bf16_of[p] = bf16_round(static_cast<float>((p & 0xff) + (p >> 8) - 255) * scale);
    }
#pragma omp parallel
    {
      std::vector<float> row(groups * 4);  // [cols] FP32 values of one row (+ pad)
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; r++) {
        uint8_t* dst = base + r * row_bytes;
        const uint64_t g0 = static_cast<uint64_t>(r) * groups;
        if (dtype_ == DType::BF16) {
          // Each 16-bit piece of the hash indexes the BF16 value of its triangular draw.
          uint16_t* out = reinterpret_cast<uint16_t*>(dst);
          const int64_t full = cols / 4;
          for (int64_t g = 0; g < full; g++) {
            const uint64_t h = mix64(key + (g0 + g) * 0x9e3779b97f4a7c15ULL);
            out[4 * g + 0] = bf16_of[h & 0xffff];
            out[4 * g + 1] = bf16_of[(h >> 16) & 0xffff];
            out[4 * g + 2] = bf16_of[(h >> 32) & 0xffff];
            out[4 * g + 3] = bf16_of[h >> 48];
          }
          float four[4];
          if (full < groups) {
            four_at(key, g0 + full, scale, four);
            for (int64_t i = 4 * full; i < cols; i++) out[i] = bf16_round(four[i - 4 * full]);
          }
        } else {
          for (int64_t g = 0; g < groups; g++) four_at(key, g0 + g, scale, row.data() + 4 * g);
          dtype_from_f32(dtype_, row.data(), dst, cols);
        }
      }
    }
    return v;
  }

  // A [dim] F32 norm weight near 1 (1 ± ~0.05).
  TensorView norm(const std::string& name, int64_t dim) {
    TensorView v = allocate(name, DType::F32, {dim}, dim * sizeof(float));
    float* data = static_cast<float*>(const_cast<void*>(v.data));
    const uint64_t key = mix64(seed_ ^ mix64(++stream_));
    for (int64_t i = 0; i < dim; i++) data[i] = 1.0f + 0.05f * normal_at(key, i);
    return v;
  }

 private:
  TensorView allocate(const std::string& name, DType dtype, std::vector<int64_t> shape,
                      size_t nbytes) {
    // 64-byte aligned for vector loads; big tensors on 2 MB boundaries and transparent huge
    // pages where the kernel allows them (fewer page faults while filling, fewer TLB misses
    // while streaming; core/large_buffer.h). Pages are first touched by the filling threads.
    LargeBuffer buffer = large_buffer_alloc(nbytes, weights_page_size());
    if (!buffer) fail_input("synthetic model: cannot allocate ", nbytes, " bytes for ", name);
    void* p = buffer.get();
    model_->storage.emplace_back(buffer.release(), LargeBufferFree());
    TensorView v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    v.data = p;
    v.nbytes = nbytes;
    return v;
  }

  LlamaModel* model_;
  DType dtype_;
  uint64_t seed_;
  uint64_t stream_ = 0;  // one stream per tensor, in creation order
};

struct Shape {
  const char* name;
  LlamaConfig config;
};

LlamaConfig llama32_config(int64_t dim, int64_t n_layers, int64_t n_heads, int64_t head_dim) {
  LlamaConfig c;
  c.vocab_size = 128256;
  c.dim = dim;
  c.hidden_dim = 8192;
  c.n_layers = n_layers;
  c.n_heads = n_heads;
  c.n_kv_heads = 8;
  c.head_dim = head_dim;
  c.max_seq_len = 131072;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = 500000.0f;
  c.rope_scaling.enabled = true;
  c.rope_scaling.factor = 32.0f;
  c.rope_scaling.low_freq_factor = 1.0f;
  c.rope_scaling.high_freq_factor = 4.0f;
  c.rope_scaling.original_max_position = 8192;
  c.tie_embeddings = true;
  return c;
}

LlamaConfig smollm2_config(int64_t dim, int64_t hidden_dim, int64_t n_layers, int64_t n_heads,
                           int64_t n_kv_heads, float theta) {
  LlamaConfig c;
  c.vocab_size = 49152;
  c.dim = dim;
  c.hidden_dim = hidden_dim;
  c.n_layers = n_layers;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.head_dim = 64;
  c.max_seq_len = 8192;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = theta;
  c.tie_embeddings = true;
  return c;
}

LlamaConfig tiny_config() {
  LlamaConfig c;
  c.vocab_size = 256;
  c.dim = 64;
  c.hidden_dim = 128;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 32;  // explicit, != dim / n_heads
  c.max_seq_len = 2048;
  c.rope_theta = 10000.0f;
  c.tie_embeddings = false;  // exercises the separate output matrix
  return c;
}

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {"llama-3.2-1b", llama32_config(2048, 16, 32, 64)},
      {"llama-3.2-3b", llama32_config(3072, 28, 24, 128)},
      {"smollm2-135m", smollm2_config(576, 1536, 30, 9, 3, 100000.0f)},
      {"smollm2-360m", smollm2_config(960, 2560, 32, 15, 5, 100000.0f)},
      {"smollm2-1.7b", smollm2_config(2048, 8192, 24, 32, 32, 130000.0f)},
      {"tiny", tiny_config()},
  };
  return s;
}

}  // namespace

std::unique_ptr<LlamaModel> llama_make_random(const LlamaConfig& config, DType dtype,
                                              uint64_t seed) {
  auto model = std::make_unique<LlamaModel>();
  model->format = "synthetic";
  model->config = config;
  const LlamaConfig& c = model->config;
  SyntheticBuilder b(model.get(), dtype, seed);
  LlamaWeights& w = model->weights;
  w.tok_embeddings = b.matrix("tok_embeddings", c.vocab_size, c.dim);
  w.layers.resize(c.n_layers);
  for (int64_t l = 0; l < c.n_layers; l++) {
    const std::string p = "layers." + std::to_string(l) + ".";
    LlamaLayerWeights& lw = w.layers[l];
    lw.attn_norm = b.norm(p + "attn_norm", c.dim);
    lw.wq = b.matrix(p + "wq", c.n_heads * c.head_dim, c.dim);
    lw.wk = b.matrix(p + "wk", c.n_kv_heads * c.head_dim, c.dim);
    lw.wv = b.matrix(p + "wv", c.n_kv_heads * c.head_dim, c.dim);
    lw.wo = b.matrix(p + "wo", c.dim, c.n_heads * c.head_dim);
    lw.ffn_norm = b.norm(p + "ffn_norm", c.dim);
    lw.w_gate = b.matrix(p + "w_gate", c.hidden_dim, c.dim);
    lw.w_up = b.matrix(p + "w_up", c.hidden_dim, c.dim);
    lw.w_down = b.matrix(p + "w_down", c.dim, c.hidden_dim);
  }
  w.final_norm = b.norm("final_norm", c.dim);
  w.output = c.tie_embeddings ? w.tok_embeddings : b.matrix("output", c.vocab_size, c.dim);
  llama_weights_apply_layout(*model);
  return model;
}

LlamaConfig llama_synthetic_config(const std::string& shape) {
  std::string known;
  for (const Shape& s : shapes()) {
    if (shape == s.name) return s.config;
    known += (known.empty() ? "" : ", ") + std::string(s.name);
  }
  fail_input("synthetic: unknown shape '", shape, "', expected one of ", known);
}

std::unique_ptr<LlamaModel> llama_make_synthetic(const std::string& spec, uint64_t seed) {
  const size_t colon = spec.find(':');
  const std::string shape = spec.substr(0, colon);
  DType dtype = DType::BF16;
  if (colon != std::string::npos) {
    const std::string dtype_str = spec.substr(colon + 1);
    SPECLAB_INPUT_CHECK(dtype_from_name(dtype_str, &dtype), "synthetic:", spec, ": unknown dtype '",
                        dtype_str, "', expected one of bf16, f16, f32, q8_0, q4_0, q4_1");
  }
  auto model = llama_make_random(llama_synthetic_config(shape), dtype, seed);
  model->path = "synthetic:" + spec;
  return model;
}

}  // namespace speclab
