// mapped_file_open: contents visible through the mapping; each bad path is an InputError.
#include <gtest/gtest.h>

#include "core/mapped_file.h"
#include "tests/formats/expect_input_error.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using testing::expect_input_error;
using testing::TempDir;

TEST(MappedFile, MapsWholeFile) {
  TempDir dir;
  testing::write_bytes(dir.file("a.bin"), {1, 2, 3, 250});
  auto f = mapped_file_open(dir.file("a.bin"));
  ASSERT_EQ(f->size(), 4u);
  EXPECT_EQ(f->data()[0], 1);
  EXPECT_EQ(f->data()[3], 250);
  EXPECT_EQ(f->path(), dir.file("a.bin"));
}

TEST(MappedFile, MissingFile) {
  TempDir dir;
  expect_input_error([&] { mapped_file_open(dir.file("nope.gguf")); },
                     {dir.file("nope.gguf"), "cannot open"});
}

TEST(MappedFile, Directory) {
  TempDir dir;
  expect_input_error([&] { mapped_file_open(dir.path()); }, {dir.path(), "is a directory"});
}

TEST(MappedFile, EmptyFile) {
  TempDir dir;
  testing::write_bytes(dir.file("empty.bin"), {});
  expect_input_error([&] { mapped_file_open(dir.file("empty.bin")); },
                     {dir.file("empty.bin"), "empty"});
}

// A device cannot be mapped as a model file. (Permission-denied files are not tested: the
// tests run as root in CI, where permission bits do not stop reads.)
TEST(MappedFile, NotARegularFile) {
  expect_input_error([] { mapped_file_open("/dev/null"); },
                     {"/dev/null", "is a character device, expected a regular file"});
}

}  // namespace
}  // namespace speclab
