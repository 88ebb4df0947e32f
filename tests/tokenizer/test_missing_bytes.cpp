// A byte-level vocabulary that lacks some bytes and has no byte fallback or unknown token
// (SmolLM2's tokenizer.json, as transformers exports it; here its first 512 tokens and the 260
// merges among them, tests/data/smollm2-tokenizer-512) loads; encoding text that contains such a
// byte is an InputError naming the byte, and any other text encodes normally.
#include <gtest/gtest.h>

#include "core/error.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {
namespace {

TEST(MissingBytes, LoadsAndRefusesOnlyTextWithTheMissingByte) {
  const std::string path =
      std::string(SPECLAB_SOURCE_DIR) + "/tests/data/smollm2-tokenizer-512/tokenizer.json";
  auto tok = tokenizer_load_hf_json(path);
  EXPECT_EQ(tok->vocab_size(), 512);
  const std::string text = "Call me Ishmael.";
  EXPECT_EQ(tok->decode(tok->encode(text, false)), text);
  try {
    tok->encode(std::string("a\x04z"), false);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("byte 0x4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace speclab
