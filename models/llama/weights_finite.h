// Non-finite weights (NaN, +-inf) found at load, naming the tensor and the file.
//
// A corrupt or badly converted checkpoint with one NaN otherwise surfaces much later as
// "sampling: logits have no finite maximum", naming nothing. The scan reads each weight once
// (memory bound, about 1 s for a 2 GB model) and tests exponent bits only: all ones is NaN
// or infinity in f32 (0x7f800000), f16 (0x7c00) and bf16 (0x7f80). Block-quantized tensors
// (Q8_0, Q4_0, Q4_1) hold integer codes and f16 scales (and Q4_1 mins): only those are tested.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/tensor_view.h"
#include "models/llama/llama_model.h"

namespace speclab {

// Index of the first non-finite element of `t` (for block dtypes: of the first block with a
// non-finite scale or min, times the block size), or -1.
int64_t tensor_find_non_finite(const TensorView& t);

// Throws InputError "<file>: tensor '<name>' holds a non-finite value (NaN or infinity) at
// element <i>" for the first such weight. file_of(tensor name) gives the file to name.
void llama_check_finite_weights(const LlamaWeights& w,
                                const std::function<std::string(const std::string&)>& file_of);

}  // namespace speclab
