// speclab inspect PATH [--json]: what a model is (architecture, shapes, rope, dtypes, size,
// bytes read per token, tokenizer and its special tokens), without running it.
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/error.h"
#include "experiments/cli/commands.h"
#include "models/llama/llama_model.h"
#include "models/llama/weights_layout.h"

namespace speclab {

namespace {

using json = nlohmann::json;

const char* rope_pairing_name(RopePairing p) {
  return p == RopePairing::kInterleaved ? "interleaved" : "half";
}

// Per dtype: number of distinct weight tensors and their bytes (a tied output counted once).
struct DTypeStats {
  int64_t n_tensors = 0;
  int64_t bytes = 0;
};
std::map<std::string, DTypeStats> inspect_dtype_stats(const LlamaWeights& w) {
  std::map<std::string, DTypeStats> out;
  std::set<const void*> seen;
  auto add = [&](const TensorView& t) {
    if (t.data != nullptr && !seen.insert(t.data).second) return;
    DTypeStats& s = out[dtype_name(t.dtype)];
    s.n_tensors++;
    s.bytes += static_cast<int64_t>(t.nbytes);
  };
  llama_for_each_weight(w, add);
  return out;
}

// A token's text made printable on one line: control bytes as \n, \t, \xNN.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    if (ch == '\n')
      out += "\\n";
    else if (ch == '\t')
      out += "\\t";
    else if (ch == '\r')
      out += "\\r";
    else if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

std::string token_text(const Tokenizer* tok, int64_t id) {
  if (tok == nullptr || id < 0 || id >= tok->vocab_size()) return "";
  return tok->piece(static_cast<int32_t>(id));
}

std::string human_count(int64_t n) {
  char buf[32];
  if (n >= 1000000000)
    std::snprintf(buf, sizeof(buf), "%.2fB", n / 1e9);
  else if (n >= 1000000)
    std::snprintf(buf, sizeof(buf), "%.1fM", n / 1e6);
  else if (n >= 1000)
    std::snprintf(buf, sizeof(buf), "%.1fK", n / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(n));
  return buf;
}
std::string human_bytes(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f MiB", n / (1024.0 * 1024.0));
  return buf;
}

json inspect_to_json(const LlamaModel& m) {
  const LlamaConfig& c = m.config;
  json j;
  j["path"] = m.path;
  j["format"] = m.format;
  j["architecture"] = "llama";
  j["parameters"] = m.parameter_count();
  j["vocab_size"] = c.vocab_size;
  j["dim"] = c.dim;
  j["hidden_dim"] = c.hidden_dim;
  j["n_layers"] = c.n_layers;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim;
  j["context_length"] = c.max_seq_len;
  // Through its shortest decimal form, so 1e-5f prints as 1e-05, not 9.999999747378752e-06.
  j["rms_norm_eps"] = std::stod(str_cat(c.rms_norm_eps));
  j["tie_embeddings"] = c.tie_embeddings;
  json rope;
  rope["theta"] = c.rope_theta;
  rope["pairing"] = rope_pairing_name(c.rope_pairing);
  if (!c.rope_freq_factors.empty()) {
    rope["scaling"] = "freq_factors";
    rope["freq_factors"] = c.rope_freq_factors;
  } else if (c.rope_scaling.enabled) {
    rope["scaling"] = "llama3";
    rope["factor"] = c.rope_scaling.factor;
    rope["low_freq_factor"] = c.rope_scaling.low_freq_factor;
    rope["high_freq_factor"] = c.rope_scaling.high_freq_factor;
    rope["original_max_position"] = c.rope_scaling.original_max_position;
  } else {
    rope["scaling"] = "none";
  }
  j["rope"] = rope;
  json dtypes = json::object();
  for (const auto& kv : inspect_dtype_stats(m.weights))
    dtypes[kv.first] = {{"tensors", kv.second.n_tensors}, {"bytes", kv.second.bytes}};
  j["dtypes"] = dtypes;
  j["weight_bytes_per_token"] = m.weight_bytes_per_token();
  // How its BF16 matrices lie for the CPU kernels once loaded (SPECLAB_MATMUL_LAYOUT).
  j["weights_layout"] = llama_weights_layout(m);
  const Tokenizer* tok = m.tokenizer.get();
  j["tokenizer"] = tok ? json(tok->kind()) : json(nullptr);
  j["tokenizer_vocab_size"] = tok ? json(tok->vocab_size()) : json(nullptr);
  j["bos"] = {{"id", c.bos_token_id}, {"text", token_text(tok, c.bos_token_id)}};
  json eos = json::array();
  for (int64_t id : c.eos_token_ids) eos.push_back({{"id", id}, {"text", token_text(tok, id)}});
  j["eos"] = eos;
  json special = json::array();
  if (tok != nullptr)
    for (int32_t id = 0; id < tok->vocab_size(); id++)
      if (tok->is_special(id)) special.push_back({{"id", id}, {"text", tok->piece(id)}});
  j["special_tokens"] = special;
  return j;
}

void inspect_print_text(const LlamaModel& m) {
  const LlamaConfig& c = m.config;
  std::printf("path:          %s\n", m.path.c_str());
  std::printf("format:        %s\n", m.format.c_str());
  std::printf("architecture:  llama\n");
  const int64_t n_params = m.parameter_count();
  std::printf("parameters:    %lld (%s)\n", static_cast<long long>(n_params),
              human_count(n_params).c_str());
  std::printf(
      "dim %lld, layers %lld, heads %lld, kv heads %lld, head_dim %lld, hidden %lld, "
      "context %lld, vocab %lld\n",
      static_cast<long long>(c.dim), static_cast<long long>(c.n_layers),
      static_cast<long long>(c.n_heads), static_cast<long long>(c.n_kv_heads),
      static_cast<long long>(c.head_dim), static_cast<long long>(c.hidden_dim),
      static_cast<long long>(c.max_seq_len), static_cast<long long>(c.vocab_size));
  std::printf("rms_norm_eps:  %g\n", c.rms_norm_eps);
  std::printf("rope:          theta %g, pairing %s, ", c.rope_theta,
              rope_pairing_name(c.rope_pairing));
  if (!c.rope_freq_factors.empty())
    std::printf("scaling by %zu frequency factors (rope_freqs)\n", c.rope_freq_factors.size());
  else if (c.rope_scaling.enabled)
    std::printf("scaling llama3 (factor %g, low %g, high %g, original context %lld)\n",
                c.rope_scaling.factor, c.rope_scaling.low_freq_factor,
                c.rope_scaling.high_freq_factor,
                static_cast<long long>(c.rope_scaling.original_max_position));
  else
    std::printf("no scaling\n");
  std::printf("embeddings:    %s\n",
              c.tie_embeddings ? "tied (LM head = token embeddings)" : "separate LM head");
  for (const auto& kv : inspect_dtype_stats(m.weights))
    std::printf("dtype %-5s    %lld tensors, %s\n", kv.first.c_str(),
                static_cast<long long>(kv.second.n_tensors), human_bytes(kv.second.bytes).c_str());
  const int64_t per_token = m.weight_bytes_per_token();
  std::printf("weight bytes per token: %lld (%s)\n", static_cast<long long>(per_token),
              human_bytes(per_token).c_str());
  std::printf("BF16 layout:   %s (for the CPU kernels; SPECLAB_MATMUL_LAYOUT)\n",
              llama_weights_layout(m).c_str());
  const Tokenizer* tok = m.tokenizer.get();
  if (tok == nullptr) {
    std::printf("tokenizer:     none\n");
  } else {
    std::printf("tokenizer:     %s, vocabulary %lld\n", tok->kind().c_str(),
                static_cast<long long>(tok->vocab_size()));
  }
  std::printf("bos:           %lld \"%s\"\n", static_cast<long long>(c.bos_token_id),
              printable(token_text(tok, c.bos_token_id)).c_str());
  for (int64_t id : c.eos_token_ids)
    std::printf("eos:           %lld \"%s\"\n", static_cast<long long>(id),
                printable(token_text(tok, id)).c_str());
  if (tok != nullptr) {
    // Llama 3 has 256 reserved specials: show the first few, the count says the rest.
    constexpr int kShown = 24;
    int n_special = 0;
    std::string shown;
    for (int32_t id = 0; id < tok->vocab_size(); id++) {
      if (!tok->is_special(id)) continue;
      if (n_special++ < kShown)
        shown += str_cat("  ", id, " \"", printable(tok->piece(id)), "\"\n");
    }
    std::printf("special tokens: %d%s\n%s", n_special,
                n_special > kShown ? str_cat(" (first ", kShown, " shown)").c_str() : "",
                shown.c_str());
  }
}

}  // namespace

void register_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Summarize a model: shapes, dtypes, size, tokenizer");
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("path", *path, "HF model directory, .gguf file, or synthetic:<shape>[:dtype]")
      ->required();
  cmd->add_flag("--json", *as_json, "print one JSON object");
  cmd->callback([path, as_json] {
    std::unique_ptr<LlamaModel> model = llama_load(*path);
    if (*as_json) {
      // Token texts may hold partial UTF-8 (byte tokens): replace rather than throw.
      std::cout << inspect_to_json(*model).dump(-1, ' ', false, json::error_handler_t::replace)
                << "\n";
    } else {
      inspect_print_text(*model);
    }
  });
}

}  // namespace speclab
