#include "models/llama/weights_layout.h"

#include <map>

#include "core/cpu_matmul.h"
#include "core/row_pairs.h"

namespace speclab {

int llama_weights_store_row_pairs(LlamaModel& model) {
  if (model.format != "synthetic" && !model.weights_copied) return 0;
  // Each distinct matrix once (a tied output shares the embedding table's bytes): repacked on
  // first sight, every later view of the same bytes marked.
  std::map<const void*, bool> paired;
  int repacked = 0;
  llama_for_each_weight(model.weights, [&](TensorView& t) {
    if (t.data == nullptr || t.shape.size() != 2) return;  // (norms are vectors)
    auto it = paired.find(t.data);
    if (it == paired.end()) {
      const bool fits = row_pairs_fit(t);
      // The bytes are the model's own anonymous memory (synthetic buffers, or the copy of the
      // weight files): writable, though the views hold them as const.
      if (fits) row_pairs_pack(const_cast<void*>(t.data), t.rows(), t.cols());
      it = paired.emplace(t.data, fits).first;
      repacked += fits ? 1 : 0;
    }
    if (it->second) t.layout = RowLayout::kRowPairs;
  });
  return repacked;
}

void llama_weights_apply_layout(LlamaModel& model) {
  if (matmul_bf16_row_pairs()) llama_weights_store_row_pairs(model);
}

std::string llama_weights_layout(const LlamaModel& model) {
  int rows = 0, pairs = 0;
  llama_for_each_weight(model.weights, [&](const TensorView& t) {
    if (t.data == nullptr || t.dtype != DType::BF16 || t.shape.size() != 2) return;
    (t.layout == RowLayout::kRowPairs ? pairs : rows)++;
  });
  if (pairs == 0) return "rows";
  return rows == 0 ? "row pairs" : "rows and row pairs";
}

}  // namespace speclab
