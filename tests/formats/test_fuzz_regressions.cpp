// Inputs that crashed tests/fuzz/fuzz_gguf, kept as regression tests: the reader
// refuses each with a one-line InputError or reads it (those then fail in the tokenizer:
// tests/tokenizer/test_fuzz_regressions.cpp). Fuzzing found GGUF key and tensor names
// holding newlines echoed verbatim into messages; core/error.h now escapes them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "models/formats/gguf.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

std::vector<std::string> regression_inputs(const std::string& target) {
  std::vector<std::string> out;
  const std::string dir = std::string(SPECLAB_SOURCE_DIR) + "/tests/fuzz/regressions/" + target;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().string());
  return out;
}

TEST(FuzzRegressions, GgufCrashInputsAreOneLineInputErrors) {
  const auto inputs = regression_inputs("fuzz_gguf");
  ASSERT_FALSE(inputs.empty());
  for (const std::string& path : inputs) {
    SCOPED_TRACE(path);
    try {
      // What the fuzz target does with a file the reader accepts: convert the first and the
      // last row of every tensor (misaligned or short rows show up under the sanitizers).
      auto gguf = GgufFile::open(path);
      std::vector<float> row;
      for (const TensorView& t : gguf->tensors()) {
        const int64_t cols = t.cols();
        if (t.shape.empty() || cols <= 0 || t.numel() == 0) continue;
        row.resize(static_cast<size_t>(cols));
        dtype_to_f32(t.dtype, t.row_ptr(0), row.data(), cols);
        dtype_to_f32(t.dtype, t.row_ptr(t.rows() - 1), row.data(), cols);
      }
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
}

TEST(FuzzRegressions, InputErrorMessagesEscapeControlBytes) {
  const InputError e(std::string("key 'a\nb\tc\x7f' bad"));
  EXPECT_STREQ(e.what(), "key 'a\\nb\\x09c\\x7f' bad");
  // A GGUF whose metadata key holds a newline: named in the message, escaped.
  testing::GgufWriter w;
  w.kvs.push_back({"bad\nkey", 99, {}});
  testing::TempDir dir;
  testing::write_bytes(dir.file("k.gguf"), w.build());
  try {
    GgufFile::open(dir.file("k.gguf"));
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("'bad\\nkey'"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace speclab
