// libFuzzer target: the whole GGUF reader (header, metadata, tensor infos, data offsets),
// then the first row of every tensor dequantized through dtype_to_f32 (so a view that
// promises more bytes than the mapping holds is an ASan report), then the tokenizer built
// from the metadata (tokenizer_from_gguf), which reads the vocabulary arrays.
#include <vector>

#include "core/dtype.h"
#include "models/formats/gguf.h"
#include "models/tokenizer/tokenizer_factory.h"
#include "tests/fuzz/fuzz_util.h"

using namespace speclab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::fuzz_write("model.gguf", data, size);
  std::unique_ptr<GgufFile> gguf;
  fuzz::fuzz_expect_ok_or_input_error([&] { gguf = GgufFile::open(path); });
  if (!gguf) return 0;
  std::vector<float> row;
  for (const TensorView& t : gguf->tensors()) {
    const int64_t cols = t.cols();
    if (t.shape.empty() || cols <= 0 || t.numel() == 0) continue;
    if (cols % dtype_block_size(t.dtype) != 0) abort();  // the reader must have rejected it
    row.resize(static_cast<size_t>(cols));
    dtype_to_f32(t.dtype, t.row_ptr(0), row.data(), cols);
    // and the last row, which ends at the last byte the view promises
    const int64_t rows = t.rows();
    dtype_to_f32(t.dtype, t.row_ptr(rows - 1), row.data(), cols);
  }
  fuzz::fuzz_expect_ok_or_input_error([&] {
    auto tok = tokenizer_from_gguf(*gguf);
    std::vector<int32_t> ids = tok->encode("Hello world, <s> 12 héllo", true);
    tok->decode(ids);
    for (int32_t id = 0; id < tok->vocab_size() && id < 64; ++id) tok->piece(id);
  });
  return 0;
}
