// Refusals before work starts: a synthetic model larger than the available memory.
#include <gtest/gtest.h>

#include <cstdlib>

#include "models/llama/llama_model.h"
#include "tests/formats/expect_input_error.h"

namespace speclab {
namespace {

struct MemoryLimit {  // sets SPECLAB_MEMORY_LIMIT for one test
  explicit MemoryLimit(const char* bytes) { setenv("SPECLAB_MEMORY_LIMIT", bytes, 1); }
  ~MemoryLimit() { unsetenv("SPECLAB_MEMORY_LIMIT"); }
};

TEST(LoadLimits, SyntheticModelLargerThanAvailableMemoryIsRefused) {
  MemoryLimit limit("100000");  // synthetic:tiny's BF16 weights take ~240 kB
  testing::expect_input_error([] { llama_load("synthetic:tiny"); },
                              {"synthetic:tiny", "the weights need",
                               "bytes of memory are available", "SPECLAB_MEMORY_LIMIT"});
  // F32 weights take twice the bytes of BF16: the dtype is counted.
  MemoryLimit roomy("400000");
  EXPECT_NO_THROW(llama_load("synthetic:tiny"));
  testing::expect_input_error([] { llama_load("synthetic:tiny:f32"); }, {"synthetic:tiny:f32"});
}

TEST(LoadLimits, RealSizedSyntheticShapesAreCheckedBeforeAllocation) {
  MemoryLimit limit("1000000000");  // 1 GB: llama-3.2-3b in BF16 needs ~6.4 GB
  testing::expect_input_error([] { llama_load("synthetic:llama-3.2-3b"); },
                              {"synthetic:llama-3.2-3b", "the weights need"});
}

}  // namespace
}  // namespace speclab
