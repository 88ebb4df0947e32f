#include "models/llama/llama_model.h"

#include <set>

namespace speclab {

int64_t LlamaModel::parameter_count() const {
  // Distinct storage only: a tied output matrix is the embedding table, counted once.
  std::set<const void*> seen;
  int64_t n = 0;
  llama_for_each_weight(weights, [&](const TensorView& t) {
    if (t.data != nullptr && !seen.insert(t.data).second) return;
    n += t.numel();
  });
  return n;
}

int64_t LlamaModel::weight_bytes_per_token() const {
  // One decode step reads every layer matrix and norm, the final norm and the whole output
  // matrix (the LM head; the embedding table itself when tied), but only one row of the
  // embedding table, which we leave out.
  int64_t bytes = 0;
  for (const LlamaLayerWeights& l : weights.layers) {
    for (const TensorView* t :
         {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down})
      bytes += static_cast<int64_t>(t->nbytes);
  }
  bytes += static_cast<int64_t>(weights.final_norm.nbytes);
  bytes += static_cast<int64_t>(weights.output.nbytes);
  return bytes;
}

}  // namespace speclab
