#include "models/llama/weights_finite.h"

#include <cstddef>
#include <cstring>
#include <set>

#include "core/error.h"

namespace speclab {

namespace {

template <typename Bits>
int64_t first_all_ones(const uint8_t* p, int64_t n, size_t stride, Bits mask) {
  for (int64_t i = 0; i < n; ++i) {
    Bits v;
    std::memcpy(&v, p + static_cast<size_t>(i) * stride, sizeof v);
    if ((v & mask) == mask) return i;
  }
  return -1;
}

// Blocks of `block_bytes` with f16 fields at byte offsets [0, n_f16 * 2).
int64_t first_bad_block(const uint8_t* p, int64_t n_blocks, size_t block_bytes, int n_f16) {
  for (int k = 0; k < n_f16; ++k) {
    const int64_t b = first_all_ones<uint16_t>(p + 2 * k, n_blocks, block_bytes, 0x7c00);
    if (b >= 0) return b;
  }
  return -1;
}

}  // namespace

int64_t tensor_find_non_finite(const TensorView& t) {
  const auto* p = static_cast<const uint8_t*>(t.data);
  if (p == nullptr) return -1;
  const int64_t n = t.numel();
  constexpr int64_t kBlock = 32;
  switch (t.dtype) {
    case DType::F32:
      return first_all_ones<uint32_t>(p, n, 4, 0x7f800000u);
    case DType::F16:
      return first_all_ones<uint16_t>(p, n, 2, 0x7c00);
    case DType::BF16:
      return first_all_ones<uint16_t>(p, n, 2, 0x7f80);
    case DType::Q8_0: {  // {f16 d; int8 q[32]}
      const int64_t b = first_bad_block(p, n / kBlock, 34, 1);
      return b < 0 ? -1 : b * kBlock;
    }
    case DType::Q4_0: {  // {f16 d; uint8 q[16]}
      const int64_t b = first_bad_block(p, n / kBlock, 18, 1);
      return b < 0 ? -1 : b * kBlock;
    }
    case DType::Q4_1: {  // {f16 d; f16 m; uint8 q[16]}
      const int64_t b = first_bad_block(p, n / kBlock, 20, 2);
      return b < 0 ? -1 : b * kBlock;
    }
    case DType::Q4_K: {  // {f16 d; f16 dmin; uint8 scales[12]; uint8 qs[128]}
      const int64_t b = first_bad_block(p, n / kSuperBlock, sizeof(BlockQ4_K), 2);
      return b < 0 ? -1 : b * kSuperBlock;
    }
    case DType::Q6_K: {  // {uint8 ql[128]; uint8 qh[64]; int8 scales[16]; f16 d}
      const int64_t b = first_all_ones<uint16_t>(p + offsetof(BlockQ6_K, d), n / kSuperBlock,
                                                 sizeof(BlockQ6_K), 0x7c00);
      return b < 0 ? -1 : b * kSuperBlock;
    }
  }
  return -1;
}

void llama_check_finite_weights(const LlamaWeights& w,
                                const std::function<std::string(const std::string&)>& file_of) {
  std::set<const void*> seen;  // tied embeddings: one scan
  auto check = [&](const TensorView& t) {
    if (!seen.insert(t.data).second) return;
    const int64_t at = tensor_find_non_finite(t);
    SPECLAB_INPUT_CHECK(at < 0, file_of(t.name), ": tensor '", t.name,
                        "' holds a non-finite value (NaN or infinity) at element ", at,
                        "; the weights are corrupt");
  };
  llama_for_each_weight(w, check);
}

}  // namespace speclab
