// Hyperparameters of a Llama-architecture decoder (Llama 2/3/3.2, SmolLM2, our zoo).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace speclab {

// Llama 3 "llama3" RoPE frequency scaling (HF rope_scaling with rope_type == "llama3").
struct RopeScaling {
  bool enabled = false;
  float factor = 1.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int64_t original_max_position = 8192;
};

// How RoPE pairs the dimensions of a head.
//  kHalf:        (i, i + head_dim/2)  -- HF transformers' rotate_half layout
//  kInterleaved: (2i, 2i + 1)         -- the layout of Q/K rows after HF-to-GGUF
//                                        conversion permuted them (llama.cpp's "normal" rope)
// Loading a GGUF keeps its permuted Q/K rows as stored and sets kInterleaved, so both
// file formats compute the same attention scores without copying weights.
enum class RopePairing : uint8_t { kHalf, kInterleaved };

struct LlamaConfig {
  int64_t vocab_size = 0;
  int64_t dim = 0;         // hidden_size
  int64_t hidden_dim = 0;  // intermediate_size (SwiGLU)
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;   // GQA: n_heads % n_kv_heads == 0
  int64_t head_dim = 0;     // usually dim / n_heads; explicit in Llama 3.2 configs
  int64_t max_seq_len = 0;  // max_position_embeddings / context_length
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  RopePairing rope_pairing = RopePairing::kHalf;
  // Optional per-frequency divisors, [head_dim/2]: inv_freq_i = theta^(-2i/head_dim) / f_i.
  // GGUF files of Llama 3.x carry llama3 scaling this way (tensor rope_freqs.weight); when
  // non-empty it replaces rope_scaling.
  std::vector<float> rope_freq_factors;
  bool tie_embeddings = false;  // no lm_head: logits use the token embedding matrix

  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;  // generation stops at any of these
};

}  // namespace speclab
