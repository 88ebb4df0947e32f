// llama_load: HF directories (config.json + safetensors), GGUF files, synthetic models.
//
// Every tensor is checked against the shape the config implies before a view of it is kept,
// so the forward pass can trust LlamaWeights: a mismatch is an InputError naming the file,
// the tensor, both shapes and where the expected one came from.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_input.h"
#include "core/mapped_file.h"
#include "core/memory_available.h"
#include "models/formats/gguf.h"
#include "models/formats/hf_hub_cache.h"
#include "models/formats/safetensors.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_synthetic.h"
#include "models/llama/weights_finite.h"
#include "models/llama/weights_layout.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {
namespace {

using json = nlohmann::json;

bool path_is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool path_is_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
// Something is at `p` (a file, a FIFO, a device, ...): the opener then says what it is
// rather than treating a FIFO config.json as absent.
bool path_exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool starts_with_gguf_magic(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {0, 0, 0, 0};
  f.read(magic, 4);
  return f.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); k++) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

// Hyperparameter sanity, one line each; `source` names the file the values came from.
// Upper limits keep products like vocab*dim and n_heads*head_dim far from overflow.
void llama_check_config(const LlamaConfig& c, const std::string& source) {
  auto in_range = [&](int64_t v, int64_t hi, const char* what) {
    SPECLAB_INPUT_CHECK(v >= 1 && v <= hi, source, ": ", what, " = ", v, ", expected 1..", hi);
  };
  in_range(c.vocab_size, 1 << 24, "vocab size");
  in_range(c.dim, 1 << 20, "model dim (hidden_size)");
  in_range(c.hidden_dim, 1 << 22, "FFN dim (intermediate_size)");
  in_range(c.n_layers, 1024, "layer count");
  in_range(c.n_heads, 4096, "attention head count");
  in_range(c.n_kv_heads, 4096, "KV head count");
  in_range(c.head_dim, 1 << 16, "head_dim");
  in_range(c.max_seq_len, 1 << 24, "context length (max_position_embeddings)");
  SPECLAB_INPUT_CHECK(c.n_heads % c.n_kv_heads == 0, source, ": ", c.n_heads,
                      " attention heads are not a multiple of ", c.n_kv_heads, " KV heads");
  SPECLAB_INPUT_CHECK(c.head_dim % 2 == 0, source, ": head_dim ", c.head_dim,
                      " is odd; RoPE rotates pairs of dimensions");
  // Real models: eps 1e-6 to 1e-5, theta 1e4 to 1e7, Llama 3's rope factor 8 or 32. The
  // bounds only refuse values no model could use: an eps that drowns the mean square, a theta
  // at or below 1 (every pair would turn at least once per position), an overflowing factor.
  SPECLAB_INPUT_CHECK(std::isfinite(c.rms_norm_eps) && c.rms_norm_eps > 0 && c.rms_norm_eps <= 1,
                      source, ": rms_norm_eps = ", c.rms_norm_eps, ", expected 0 < eps <= 1");
  SPECLAB_INPUT_CHECK(std::isfinite(c.rope_theta) && c.rope_theta > 1 && c.rope_theta <= 1e12,
                      source, ": rope_theta = ", c.rope_theta, ", expected 1 < theta <= 1e12");
  if (c.rope_scaling.enabled) {
    const RopeScaling& r = c.rope_scaling;
    SPECLAB_INPUT_CHECK(std::isfinite(r.factor) && r.factor >= 1 && r.factor <= 1e6, source,
                        ": rope_scaling.factor = ", r.factor, ", expected 1 <= factor <= 1e6");
    SPECLAB_INPUT_CHECK(std::isfinite(r.high_freq_factor) && r.low_freq_factor > 0 &&
                            r.high_freq_factor > r.low_freq_factor,
                        source, ": rope_scaling low_freq_factor ", r.low_freq_factor,
                        " / high_freq_factor ", r.high_freq_factor, ", expected 0 < low < high");
    SPECLAB_INPUT_CHECK(r.original_max_position > 0, source,
                        ": rope_scaling.original_max_position_embeddings = ",
                        r.original_max_position, ", expected > 0");
  }
  if (!c.rope_freq_factors.empty()) {
    SPECLAB_INPUT_CHECK(static_cast<int64_t>(c.rope_freq_factors.size()) == c.head_dim / 2, source,
                        ": rope_freqs has ", c.rope_freq_factors.size(),
                        " entries, expected head_dim/2 = ", c.head_dim / 2);
    for (float f : c.rope_freq_factors)
      SPECLAB_INPUT_CHECK(std::isfinite(f) && f > 0, source, ": rope_freqs entry ", f,
                          ", expected > 0");
  }
  SPECLAB_INPUT_CHECK(c.bos_token_id < c.vocab_size, source, ": BOS id ", c.bos_token_id,
                      " is outside the vocabulary (", c.vocab_size, ")");
  for (int64_t id : c.eos_token_ids)
    SPECLAB_INPUT_CHECK(id >= 0 && id < c.vocab_size, source, ": EOS id ", id,
                        " is outside the vocabulary (", c.vocab_size, ")");
}

// A tensor `name` of layer N ("<layer_prefix>N.") with N at or past the declared count would be
// read past without a word: the file disagrees with its own count (`count_is` says where it
// comes from, "llama.block_count is").
void check_layer_declared(const std::string& name, const std::string& layer_prefix,
                          int64_t n_layers, const std::string& file, const char* count_is) {
  if (name.compare(0, layer_prefix.size(), layer_prefix) != 0) return;
  const int64_t layer = std::strtoll(name.c_str() + layer_prefix.size(), nullptr, 10);
  SPECLAB_INPUT_CHECK(layer < n_layers, file, ": tensor '", name, "' belongs to layer ", layer,
                      " but ", count_is, " ", n_layers, " (expected layers 0..", n_layers - 1, ")");
}

// The tensors of one layer in LlamaLayerWeights order, with their expected shapes.
struct ExpectedTensor {
  TensorView LlamaLayerWeights::*field;
  const char* hf_name;    // after "model.layers.N."
  const char* gguf_name;  // after "blk.N."
  std::vector<int64_t> shape;
};
std::vector<ExpectedTensor> llama_layer_tensors(const LlamaConfig& c) {
  const int64_t q_rows = c.n_heads * c.head_dim, kv_rows = c.n_kv_heads * c.head_dim;
  return {
      {&LlamaLayerWeights::attn_norm, "input_layernorm.weight", "attn_norm.weight", {c.dim}},
      {&LlamaLayerWeights::wq, "self_attn.q_proj.weight", "attn_q.weight", {q_rows, c.dim}},
      {&LlamaLayerWeights::wk, "self_attn.k_proj.weight", "attn_k.weight", {kv_rows, c.dim}},
      {&LlamaLayerWeights::wv, "self_attn.v_proj.weight", "attn_v.weight", {kv_rows, c.dim}},
      {&LlamaLayerWeights::wo, "self_attn.o_proj.weight", "attn_output.weight", {c.dim, q_rows}},
      {&LlamaLayerWeights::ffn_norm, "post_attention_layernorm.weight", "ffn_norm.weight", {c.dim}},
      {&LlamaLayerWeights::w_gate,
       "mlp.gate_proj.weight",
       "ffn_gate.weight",
       {c.hidden_dim, c.dim}},
      {&LlamaLayerWeights::w_up, "mlp.up_proj.weight", "ffn_up.weight", {c.hidden_dim, c.dim}},
      {&LlamaLayerWeights::w_down,
       "mlp.down_proj.weight",
       "ffn_down.weight",
       {c.dim, c.hidden_dim}},
  };
}

// Checks a found tensor's shape. `file` holds it, `implied_by` names where the expectation
// came from ("config.json", "GGUF metadata").
TensorView checked_tensor(const TensorView* t, const std::string& name,
                          const std::vector<int64_t>& shape, const std::string& file,
                          const std::string& implied_by) {
  SPECLAB_INPUT_CHECK(t != nullptr, file, ": tensor '", name, "' missing");
  SPECLAB_INPUT_CHECK(t->shape == shape, file, ": tensor '", name, "' has shape ",
                      shape_str(t->shape), ", ", implied_by, " implies ", shape_str(shape));
  return *t;
}

// ---- HF directory ---------------------------------------------------------------------

json read_json_file(const std::string& path) {
  std::shared_ptr<MappedFile> f = mapped_file_open(path);
  try {
    return json_input_parse(std::string_view(reinterpret_cast<const char*>(f->data()), f->size()),
                            path);
  } catch (const json::exception& e) {
    fail_input(path, ": not valid JSON (", e.what(), ")");
  }
}

// Typed access to config.json keys with errors "<path>: key 'x' ...".
struct ConfigJson {
  std::string path;
  json j;

  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  int64_t get_int(const char* key) const {
    SPECLAB_INPUT_CHECK(has(key), path, ": key '", key, "' missing");
    SPECLAB_INPUT_CHECK(j[key].is_number_integer(), path, ": key '", key, "' is ", j[key].dump(),
                        ", expected an integer");
    return j[key].get<int64_t>();
  }
  int64_t get_int_or(const char* key, int64_t def) const { return has(key) ? get_int(key) : def; }
  double get_float_or(const char* key, double def) const {
    if (!has(key)) return def;
    SPECLAB_INPUT_CHECK(j[key].is_number(), path, ": key '", key, "' is ", j[key].dump(),
                        ", expected a number");
    return j[key].get<double>();
  }
  bool get_bool_or(const char* key, bool def) const {
    if (!has(key)) return def;
    SPECLAB_INPUT_CHECK(j[key].is_boolean(), path, ": key '", key, "' is ", j[key].dump(),
                        ", expected true or false");
    return j[key].get<bool>();
  }
  // eos_token_id: an integer or a list of integers.
  std::vector<int64_t> get_id_list(const char* key) const {
    std::vector<int64_t> out;
    if (!has(key)) return out;
    const json& v = j[key];
    if (v.is_number_integer()) return {v.get<int64_t>()};
    SPECLAB_INPUT_CHECK(v.is_array(), path, ": key '", key, "' is ", v.dump(),
                        ", expected an integer or a list of integers");
    for (const json& e : v) {
      SPECLAB_INPUT_CHECK(e.is_number_integer(), path, ": key '", key, "' is ", v.dump(),
                          ", expected an integer or a list of integers");
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
};

void add_unique(std::vector<int64_t>* ids, int64_t id) {
  for (int64_t x : *ids)
    if (x == id) return;
  ids->push_back(id);
}

LlamaConfig llama_parse_hf_config(const ConfigJson& cj) {
  const std::string& path = cj.path;
  SPECLAB_INPUT_CHECK(cj.j.is_object(), path, ": expected a JSON object");
  // Architecture: a config that says what it is must say Llama.
  SPECLAB_INPUT_CHECK(cj.has("architectures") || cj.has("model_type"), path,
                      ": neither 'architectures' nor 'model_type' given; expected a Llama config");
  if (cj.has("model_type")) {
    const json& mt = cj.j["model_type"];
    SPECLAB_INPUT_CHECK(mt.is_string() && mt.get<std::string>() == "llama", path,
                        ": key 'model_type' is ", mt.dump(), ", only \"llama\" is supported");
  }
  if (cj.has("architectures")) {
    const json& arch = cj.j["architectures"];
    bool found = false;
    if (arch.is_array())
      for (const json& a : arch) found = found || (a.is_string() && a == "LlamaForCausalLM");
    SPECLAB_INPUT_CHECK(found, path, ": key 'architectures' is ", arch.dump(),
                        ", expected it to contain \"LlamaForCausalLM\"");
  }

  LlamaConfig c;
  c.vocab_size = cj.get_int("vocab_size");
  c.dim = cj.get_int("hidden_size");
  c.hidden_dim = cj.get_int("intermediate_size");
  c.n_layers = cj.get_int("num_hidden_layers");
  c.n_heads = cj.get_int("num_attention_heads");
  SPECLAB_INPUT_CHECK(c.n_heads > 0, path, ": key 'num_attention_heads' is ", c.n_heads,
                      ", expected > 0");
  c.n_kv_heads = cj.get_int_or("num_key_value_heads", c.n_heads);
  c.head_dim = cj.get_int_or("head_dim", c.dim / c.n_heads);
  c.max_seq_len = cj.get_int("max_position_embeddings");
  c.rms_norm_eps = static_cast<float>(cj.get_float_or("rms_norm_eps", 1e-6));
  c.rope_theta = static_cast<float>(cj.get_float_or("rope_theta", 10000.0));
  c.tie_embeddings = cj.get_bool_or("tie_word_embeddings", false);
  // Llama settings speclab's forward pass does not implement: another activation, biases in
  // the projections. Read past, the model would run as SiLU without biases.
  if (cj.has("hidden_act")) {
    const json& act = cj.j["hidden_act"];
    SPECLAB_INPUT_CHECK(act.is_string() && act.get<std::string>() == "silu", path,
                        ": key 'hidden_act' is ", act.dump(),
                        ", only \"silu\" is supported (the SwiGLU of Llama)");
  }
  for (const char* key : {"attention_bias", "mlp_bias"}) {
    SPECLAB_INPUT_CHECK(!cj.get_bool_or(key, false), path, ": key '", key,
                        "' is true, expected false (projections with biases are not supported)");
  }
  if (cj.has("rope_scaling")) {
    const json& rs = cj.j["rope_scaling"];
    SPECLAB_INPUT_CHECK(rs.is_object(), path, ": key 'rope_scaling' is ", rs.dump(),
                        ", expected an object or null");
    ConfigJson sub{path + " rope_scaling", rs};
    std::string type;
    const char* type_key = sub.has("rope_type") ? "rope_type" : "type";
    SPECLAB_INPUT_CHECK(sub.has(type_key) && rs[type_key].is_string(), path,
                        ": key 'rope_scaling.rope_type' missing or not a string");
    type = rs[type_key].get<std::string>();
    if (type == "llama3") {
      RopeScaling& r = c.rope_scaling;
      r.enabled = true;
      auto need = [&](const char* key) {
        SPECLAB_INPUT_CHECK(sub.has(key) && rs[key].is_number(), path, ": key 'rope_scaling.", key,
                            "' missing or not a number");
        return rs[key].get<double>();
      };
      r.factor = static_cast<float>(need("factor"));
      r.low_freq_factor = static_cast<float>(need("low_freq_factor"));
      r.high_freq_factor = static_cast<float>(need("high_freq_factor"));
      SPECLAB_INPUT_CHECK(sub.has("original_max_position_embeddings") &&
                              rs["original_max_position_embeddings"].is_number_integer(),
                          path,
                          ": key 'rope_scaling.original_max_position_embeddings' missing or not "
                          "an integer");
      r.original_max_position = rs["original_max_position_embeddings"].get<int64_t>();
    } else {
      SPECLAB_INPUT_CHECK(type == "default", path, ": rope_scaling type '", type,
                          "' is not supported (expected \"llama3\" or \"default\")");
    }
  }
  c.bos_token_id = cj.get_int_or("bos_token_id", -1);
  c.eos_token_ids = cj.get_id_list("eos_token_id");
  c.rope_pairing = RopePairing::kHalf;  // HF rotate_half layout
  return c;
}

[[noreturn]] void fail_no_weights(const std::string& dir) {
  fail_input(dir,
             ": no model.safetensors, model.safetensors.index.json or .gguf file (expected "
             "safetensors weights beside config.json, or exactly one .gguf file)");
}

bool has_safetensors(const std::string& dir) {
  return path_exists(dir + "/model.safetensors") ||
         path_exists(dir + "/model.safetensors.index.json");
}

std::unique_ptr<LlamaModel> llama_load_hf_dir(const std::string& dir) {
  auto model = std::make_unique<LlamaModel>();
  model->path = dir;
  model->format = "hf";
  const std::string config_path = dir + "/config.json";
  SPECLAB_INPUT_CHECK(path_exists(config_path), dir, ": not a model directory (no config.json)");
  ConfigJson cj{config_path, read_json_file(config_path)};
  LlamaConfig& c = model->config;
  c = llama_parse_hf_config(cj);
  // Instruct models list their end-of-turn ids in generation_config.json.
  const std::string gen_path = dir + "/generation_config.json";
  if (path_exists(gen_path)) {
    ConfigJson gen{gen_path, read_json_file(gen_path)};
    if (gen.j.is_object()) {
      for (int64_t id : gen.get_id_list("eos_token_id")) add_unique(&c.eos_token_ids, id);
      if (c.bos_token_id < 0) c.bos_token_id = gen.get_int_or("bos_token_id", -1);
    }
  }
  llama_check_config(c, config_path);

  if (!has_safetensors(dir)) fail_no_weights(dir);
  std::unique_ptr<SafetensorsSet> set =
      SafetensorsSet::open_dir(dir, FileBytes::kHugePagesWhereGranted);
  auto tensor = [&](const std::string& name, const std::vector<int64_t>& shape) {
    const TensorView* t = set->find_tensor(name);
    const std::string file = t ? set->file_of(name) : dir + "/model.safetensors";
    return checked_tensor(t, name, shape, file, "config.json");
  };
  LlamaWeights& w = model->weights;
  w.tok_embeddings = tensor("model.embed_tokens.weight", {c.vocab_size, c.dim});
  const auto layer_tensors = llama_layer_tensors(c);
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; l++) {
    const std::string prefix = "model.layers." + std::to_string(l) + ".";
    for (const ExpectedTensor& e : layer_tensors)
      w.layers[l].*e.field = tensor(prefix + e.hf_name, e.shape);
  }
  for (const TensorView* t : set->all_tensors())
    check_layer_declared(t->name, "model.layers.", c.n_layers, set->file_of(t->name),
                         "config.json has num_hidden_layers");
  w.final_norm = tensor("model.norm.weight", {c.dim});
  if (set->find_tensor("lm_head.weight") != nullptr) {
    // Some tied checkpoints still store lm_head (a copy); use it as stored.
    w.output = tensor("lm_head.weight", {c.vocab_size, c.dim});
  } else {
    SPECLAB_INPUT_CHECK(c.tie_embeddings, dir,
                        ": tensor 'lm_head.weight' missing and config.json's "
                        "tie_word_embeddings is not true (an untied model needs its own head)");
    w.output = w.tok_embeddings;
  }
  model->storage = set->storage();
  model->weights_copied = set->copied();
  llama_check_finite_weights(w, [&](const std::string& name) {
    const std::string file = set->file_of(name);
    return file.empty() ? dir : file;
  });

  if (path_exists(dir + "/tokenizer.json")) {
    model->tokenizer = tokenizer_load_hf_json(dir + "/tokenizer.json");
  } else if (path_exists(dir + "/tokenizer.model")) {
    model->tokenizer = tokenizer_load_sentencepiece(dir + "/tokenizer.model");
  }
  if (model->tokenizer) {
    // Ids past the embedding table would index outside it; a padded table (more rows than
    // tokens) is fine.
    SPECLAB_INPUT_CHECK(model->tokenizer->vocab_size() <= c.vocab_size, dir, ": tokenizer has ",
                        model->tokenizer->vocab_size(), " tokens but config.json vocab_size is ",
                        c.vocab_size);
    if (c.bos_token_id < 0) c.bos_token_id = model->tokenizer->bos_id();
    if (c.eos_token_ids.empty() && model->tokenizer->eos_id() >= 0)
      c.eos_token_ids.push_back(model->tokenizer->eos_id());
  }
  llama_weights_apply_layout(*model);  // after the finiteness scan, which names elements
  return model;
}

// ---- GGUF -------------------------------------------------------------------------------

std::unique_ptr<LlamaModel> llama_load_gguf(const std::string& path) {
  std::unique_ptr<GgufFile> g = GgufFile::open(path, FileBytes::kHugePagesWhereGranted);
  const std::string arch = g->get_string("general.architecture");
  SPECLAB_INPUT_CHECK(arch == "llama", path, ": general.architecture is '", arch,
                      "', only 'llama' is supported");
  auto model = std::make_unique<LlamaModel>();
  model->path = path;
  model->format = "gguf";
  LlamaConfig& c = model->config;
  c.dim = g->get_int("llama.embedding_length");
  c.n_layers = g->get_int("llama.block_count");
  c.hidden_dim = g->get_int("llama.feed_forward_length");
  c.n_heads = g->get_int("llama.attention.head_count");
  SPECLAB_INPUT_CHECK(c.n_heads > 0, path, ": llama.attention.head_count is ", c.n_heads,
                      ", expected > 0");
  c.n_kv_heads = g->get_int_or("llama.attention.head_count_kv", c.n_heads);
  c.head_dim = g->get_int_or("llama.attention.key_length", c.dim / c.n_heads);
  const int64_t value_length = g->get_int_or("llama.attention.value_length", c.head_dim);
  SPECLAB_INPUT_CHECK(value_length == c.head_dim, path, ": llama.attention.value_length ",
                      value_length, " differs from key_length ", c.head_dim,
                      "; expected equal head sizes");
  const int64_t rope_dims = g->get_int_or("llama.rope.dimension_count", c.head_dim);
  SPECLAB_INPUT_CHECK(rope_dims == c.head_dim, path, ": llama.rope.dimension_count ", rope_dims,
                      " != head_dim ", c.head_dim, "; partial rotary embeddings are not supported");
  c.max_seq_len = g->get_int("llama.context_length");
  c.rms_norm_eps =
      static_cast<float>(g->get_float_or("llama.attention.layer_norm_rms_epsilon", 1e-5));
  c.rope_theta = static_cast<float>(g->get_float_or("llama.rope.freq_base", 10000.0));
  if (g->has("llama.rope.scaling.type")) {
    const std::string type = g->get_string("llama.rope.scaling.type");
    SPECLAB_INPUT_CHECK(type == "none", path, ": llama.rope.scaling.type '", type,
                        "' is not supported (llama3 scaling comes as rope_freqs.weight)");
  }
  // HF-to-GGUF conversion permuted the Q/K rows so RoPE pairs are adjacent; we keep the rows
  // as stored and rotate (2i, 2i+1).
  c.rope_pairing = RopePairing::kInterleaved;

  const TensorView* emb = g->find_tensor("token_embd.weight");
  SPECLAB_INPUT_CHECK(emb != nullptr, path, ": tensor 'token_embd.weight' missing",
                      " (a vocabulary-only GGUF is not a model)");
  SPECLAB_INPUT_CHECK(emb->shape.size() == 2, path, ": tensor 'token_embd.weight' has shape ",
                      shape_str(emb->shape), ", expected [vocab, dim]");
  c.vocab_size = emb->shape[0];
  if (g->has("llama.vocab_size")) {
    const int64_t v = g->get_int("llama.vocab_size");
    SPECLAB_INPUT_CHECK(v == c.vocab_size, path, ": llama.vocab_size ", v,
                        " != token_embd.weight rows ", c.vocab_size);
  }
  if (const TensorView* rf = g->find_tensor("rope_freqs.weight")) {
    checked_tensor(rf, "rope_freqs.weight", {c.head_dim / 2}, path, "GGUF metadata");
    c.rope_freq_factors.resize(static_cast<size_t>(rf->numel()));
    dtype_to_f32(rf->dtype, rf->data, c.rope_freq_factors.data(), rf->numel());
  }
  c.bos_token_id = g->get_int_or("tokenizer.ggml.bos_token_id", -1);
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    if (g->has(key)) add_unique(&c.eos_token_ids, g->get_int(key));
  }

  const TensorView* output = g->find_tensor("output.weight");
  c.tie_embeddings = output == nullptr;
  llama_check_config(c, path);

  auto tensor = [&](const std::string& name, const std::vector<int64_t>& shape) {
    return checked_tensor(g->find_tensor(name), name, shape, path, "GGUF metadata");
  };
  LlamaWeights& w = model->weights;
  w.tok_embeddings = tensor("token_embd.weight", {c.vocab_size, c.dim});
  const auto layer_tensors = llama_layer_tensors(c);
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; l++) {
    const std::string prefix = "blk." + std::to_string(l) + ".";
    for (const ExpectedTensor& e : layer_tensors)
      w.layers[l].*e.field = tensor(prefix + e.gguf_name, e.shape);
  }
  for (const TensorView& t : g->tensors())
    check_layer_declared(t.name, "blk.", c.n_layers, path, "llama.block_count is");
  w.final_norm = tensor("output_norm.weight", {c.dim});
  w.output = output ? tensor("output.weight", {c.vocab_size, c.dim}) : w.tok_embeddings;
  model->storage.push_back(g->storage());
  model->weights_copied = g->copied();
  llama_check_finite_weights(w, [&](const std::string&) { return path; });
  if (g->has("tokenizer.ggml.model")) {
    model->tokenizer = tokenizer_from_gguf(*g);
    SPECLAB_INPUT_CHECK(model->tokenizer->vocab_size() <= c.vocab_size, path,
                        ": tokenizer.ggml.tokens has ", model->tokenizer->vocab_size(),
                        " tokens but token_embd.weight has ", c.vocab_size, " rows");
  }
  llama_weights_apply_layout(*model);  // after the finiteness scan, which names elements
  return model;
}

// A model directory holds its weights as safetensors (model.safetensors, or the shards of
// model.safetensors.index.json) or as one GGUF file (the zoo ships quantized drafts that
// way, beside their cards). "" = load it as an HF directory; otherwise the .gguf to load.
// Safetensors win when both are present so a directory that loaded before loads the same.
std::string model_dir_gguf(const std::string& dir) {
  if (has_safetensors(dir)) return "";
  std::vector<std::string> ggufs, not_files;  // .gguf names: regular files, and anything else
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!ends_with(name, ".gguf")) continue;
    (path_is_file(e.path().string()) ? ggufs : not_files).push_back(name);
  }
  SPECLAB_INPUT_CHECK(!ec, dir, ": cannot list the directory (", ec.message(), ")");
  std::sort(ggufs.begin(), ggufs.end());
  std::sort(not_files.begin(), not_files.end());
  if (ggufs.size() == 1) return dir + "/" + ggufs[0];
  if (ggufs.empty()) {
    // With a config.json, llama_load_hf_dir reports its errors first, then the missing weights.
    if (path_exists(dir + "/config.json")) return "";
    if (!not_files.empty()) {
      // A .gguf that is no file (a dangling link, a directory, a FIFO): named, not "no .gguf".
      const std::string p = dir + "/" + not_files[0];
      std::error_code link_ec;
      SPECLAB_INPUT_CHECK(!std::filesystem::is_symlink(p, link_ec) || path_exists(p), p,
                          ": a symbolic link to a missing file (expected a GGUF file)");
      uint64_t size = 0;
      ::close(input_file_open(p, "model file", &size));  // says what it is
    }
    fail_no_weights(dir);
  }
  std::string names;
  for (const std::string& g : ggufs) names += (names.empty() ? "" : ", ") + g;
  fail_input(dir, ": ", ggufs.size(), " .gguf files (", names,
             ") and no model.safetensors; expected exactly one, or name the file itself");
}

// Synthetic weights are allocated and written (mapped files are paged in on demand and
// need no such check): refuse a shape that does not fit before allocating anything.
void synthetic_check_memory(const std::string& spec) {
  const size_t colon = spec.find(':');
  const LlamaConfig c = llama_synthetic_config(spec.substr(0, colon));
  DType dtype = DType::BF16;
  if (colon != std::string::npos && !dtype_from_name(spec.substr(colon + 1), &dtype))
    return;  // llama_make_synthetic names the bad dtype
  auto matrix = [&](int64_t rows, int64_t cols) {
    return static_cast<double>(rows) * static_cast<double>(dtype_row_bytes(dtype, cols));
  };
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  double bytes = matrix(c.vocab_size, c.dim) * (c.tie_embeddings ? 1 : 2) + 4.0 * c.dim;
  bytes += static_cast<double>(c.n_layers) *
           (matrix(q_dim, c.dim) + 2 * matrix(kv_dim, c.dim) + matrix(c.dim, q_dim) +
            2 * matrix(c.hidden_dim, c.dim) + matrix(c.dim, c.hidden_dim) + 8.0 * c.dim);
  const int64_t avail = memory_available_bytes();
  SPECLAB_INPUT_CHECK(avail < 0 || bytes <= static_cast<double>(avail), "synthetic:", spec,
                      ": the weights need ", static_cast<int64_t>(bytes), " bytes but only ", avail,
                      " bytes of memory are available (MemAvailable",
                      std::getenv("SPECLAB_MEMORY_LIMIT") ? ", SPECLAB_MEMORY_LIMIT" : "", ")");
}

}  // namespace

std::unique_ptr<LlamaModel> llama_load(const std::string& path_as_written) {
  const std::string synthetic_prefix = "synthetic:";
  if (path_as_written.compare(0, synthetic_prefix.size(), synthetic_prefix) == 0) {
    synthetic_check_memory(path_as_written.substr(synthetic_prefix.size()));
    return llama_make_synthetic(path_as_written.substr(synthetic_prefix.size()));
  }
  // "org/name" that is not a local path: the snapshot in the Hugging Face cache.
  const std::string path = hf_resolve_model_path(path_as_written);
  if (path_is_dir(path)) {
    const std::string gguf = model_dir_gguf(path);
    return gguf.empty() ? llama_load_hf_dir(path) : llama_load_gguf(gguf);
  }
  SPECLAB_INPUT_CHECK(path_exists(path), path,
                      ": no such file or directory (expected an HF model directory, a .gguf "
                      "file or synthetic:<shape>)");
  if (!path_is_file(path)) {  // a FIFO, a device, ...: says which, and never blocks
    uint64_t size = 0;
    ::close(input_file_open(path, "model file", &size));
  }
  if (ends_with(path, ".gguf") || starts_with_gguf_magic(path)) return llama_load_gguf(path);
  fail_input(path,
             ": not a model (expected an HF model directory with config.json, a GGUF file, or "
             "synthetic:<shape>)");
}

}  // namespace speclab
