// Bad model and drafter specs (the bad-input catalogue's rows that had no test): each is an
// InputError naming the spec and what was expected.
#include <gtest/gtest.h>

#include "models/drafters/drafter.h"
#include "models/llama/llama_model.h"
#include "tests/formats/expect_input_error.h"

namespace speclab {
namespace {

using testing::expect_input_error;

TEST(ModelSpecErrors, UnknownSyntheticShapeAndDtype) {
  expect_input_error([] { llama_load("synthetic:llama-9b"); },
                     {"unknown shape 'llama-9b'", "expected one of", "tiny"});
  expect_input_error([] { llama_load("synthetic:tiny:q9"); },
                     {"synthetic:tiny:q9", "unknown dtype 'q9'"});
  expect_input_error([] { llama_load("/nonexistent/model"); },
                     {"/nonexistent/model", "no such file or directory"});
}

TEST(ModelSpecErrors, BadDrafterSpecs) {
  auto target = llama_load("synthetic:tiny");  // 2 layers
  expect_input_error([&] { drafter_create("self:skip=5", *target, 64); },
                     {"drafter 'self:skip=5'", "outside 0..1"});
  expect_input_error([&] { drafter_create("self:skip=0-1", *target, 64); },
                     {"drafter 'self:skip=0-1'", "skips every layer"});
  expect_input_error([&] { drafter_create("self:layers=1", *target, 64); },
                     {"drafter 'self:layers=1'", "expected self:skip=A-B"});
  expect_input_error([&] { drafter_create("lookup:q=3", *target, 64); },
                     {"drafter 'lookup:q=3'", "unknown option 'q'"});
}

}  // namespace
}  // namespace speclab
