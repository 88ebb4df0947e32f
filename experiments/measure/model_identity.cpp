#include "experiments/measure/model_identity.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/error.h"
#include "models/formats/hf_hub_cache.h"

namespace speclab {

namespace {

struct EvpFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::string hash_files(const std::vector<std::string>& paths) {
  std::unique_ptr<EVP_MD_CTX, EvpFree> ctx(EVP_MD_CTX_new());
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  for (const auto& p : paths) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(p.c_str(), "rb"), &std::fclose);
    SPECLAB_INPUT_CHECK(f != nullptr, p, ": cannot open for hashing");
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0)
      EVP_DigestUpdate(ctx.get(), buf.data(), n);
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  std::string hex;
  char two[3];
  for (unsigned int i = 0; i < len; i++) {
    std::snprintf(two, sizeof two, "%02x", md[i]);
    hex += two;
  }
  return hex;
}

}  // namespace

std::string file_sha256(const std::string& path) { return hash_files({path}); }

ModelIdentity model_identity(const std::string& spec, const std::string& path_as_resolved,
                             const LlamaModel& model) {
  const std::string resolved_path = hf_resolve_model_path(path_as_resolved);  // org/name ids
  static std::map<std::string, std::string> cache;  // resolved path -> sha256
  namespace fs = std::filesystem;
  std::string sha = "synthetic";
  if (model.format != "synthetic") {
    auto it = cache.find(resolved_path);
    if (it != cache.end()) {
      sha = it->second;
    } else {
      std::vector<std::string> files;
      if (model.format == "gguf") {
        // A directory holding one .gguf loads that file (model.path): hash it, so the
        // directory and the file itself give the same identity.
        files.push_back(model.path);
      } else if (fs::is_directory(resolved_path)) {
        for (const auto& e : fs::directory_iterator(resolved_path))
          if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
        std::sort(files.begin(), files.end());
      } else {
        files.push_back(resolved_path);
      }
      sha = hash_files(files);
      cache[resolved_path] = sha;
    }
  }
  std::map<std::string, int64_t> dtypes;
  auto count = [&](const TensorView& t) {
    if (t.data) dtypes[dtype_name(t.dtype)]++;
  };
  count(model.weights.tok_embeddings);
  for (const auto& l : model.weights.layers) {
    for (const TensorView* t :
         {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down})
      count(*t);
  }
  count(model.weights.final_norm);
  if (!model.config.tie_embeddings) count(model.weights.output);
  ModelIdentity id;
  id.spec = spec;
  id.format = model.format;
  id.sha256 = sha;
  id.parameters = static_cast<int64_t>(model.parameter_count());
  id.weight_bytes_per_token = static_cast<int64_t>(model.weight_bytes_per_token());
  id.dtypes = dtypes;
  id.layers = model.config.n_layers;
  id.dim = model.config.dim;
  id.vocab = model.config.vocab_size;
  return id;
}

}  // namespace speclab
