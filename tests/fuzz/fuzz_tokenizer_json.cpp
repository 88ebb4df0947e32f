// libFuzzer target: HF tokenizer.json loading (model, merges, added tokens, pre-tokenizer,
// post-processor), then a short encode/decode round with the loaded tokenizer.
#include <string>
#include <vector>

#include "models/tokenizer/tokenizer_factory.h"
#include "tests/fuzz/fuzz_util.h"

using namespace speclab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::fuzz_write("tokenizer.json", data, size);
  fuzz::fuzz_expect_ok_or_input_error([&] {
    auto tok = tokenizer_load_hf_json(path);
    std::vector<int32_t> ids = tok->encode("Hello world, <|eot_id|> 12 h\xc3\xa9llo \xff", true);
    tok->decode(ids);
    tok->decode(ids, true);
    for (int32_t id = 0; id < tok->vocab_size() && id < 64; ++id) tok->piece(id);
  });
  return 0;
}
