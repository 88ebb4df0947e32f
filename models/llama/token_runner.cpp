#include "models/llama/token_runner.h"

#include <algorithm>

#include "core/error.h"
#include "models/llama/llama_model.h"

namespace speclab {

int64_t token_runner_check_setup(const LlamaModel& model, int64_t max_ctx,
                                 std::vector<bool>* skip_layers) {
  const LlamaConfig& c = model.config;
  SPECLAB_INPUT_CHECK(c.n_kv_heads > 0 && c.n_heads % c.n_kv_heads == 0, model.path, ": n_heads ",
                      c.n_heads, " is not a multiple of n_kv_heads ", c.n_kv_heads);
  SPECLAB_INPUT_CHECK(c.head_dim > 0 && c.head_dim % 2 == 0, model.path, ": head_dim ", c.head_dim,
                      " must be even");
  SPECLAB_INPUT_CHECK(static_cast<int64_t>(model.weights.layers.size()) == c.n_layers, model.path,
                      ": ", model.weights.layers.size(), " layers of weights for n_layers ",
                      c.n_layers);
  if (skip_layers->empty()) skip_layers->assign(static_cast<size_t>(c.n_layers), false);
  SPECLAB_INPUT_CHECK(static_cast<int64_t>(skip_layers->size()) == c.n_layers, "skip_layers has ",
                      skip_layers->size(), " entries, the model has ", c.n_layers, " layers");
  const int64_t ctx = max_ctx > 0 ? max_ctx : std::min<int64_t>(c.max_seq_len, 4096);
  SPECLAB_INPUT_CHECK(ctx > 0, model.path, ": no context length (max_seq_len ", c.max_seq_len, ")");
  return ctx;
}

const float* TokenRunner::forward_tree(const int32_t*, const int32_t*, int64_t) {
  fail_input("tree speculation: this backend has no tree attention (use generation.backend: cpu)");
}

void TokenRunner::keep_path(int64_t, const int32_t*, int64_t) {
  fail_input("tree speculation: this backend has no tree attention (use generation.backend: cpu)");
}

void TokenRunner::download_draft_rows(int, float*) {
  fail_input("download_draft_rows: this runner drafts on the host and keeps no device rows");
}

}  // namespace speclab
