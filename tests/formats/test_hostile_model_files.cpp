// Model files built to hurt the reader: a shape nested 200,000 deep, a shard that is a FIFO,
// two tensors of one name. Each is one InputError line naming the file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/mapped_file.h"
#include "models/formats/safetensors.h"
#include "tests/formats/expect_input_error.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using namespace testing;  // NOLINT: test helpers

// Seen: a segfault (stack overflow) in the error message that dump()s the shape.
TEST(HostileModelFiles, SafetensorsShapeNestedDeepIsRefused) {
  TempDir dir;
  const std::string deep = std::string(200000, '[') + "2" + std::string(200000, ']');
  const std::string header =
      R"({"w": {"dtype": "F32", "shape": )" + deep + R"(, "data_offsets": [0, 8]}})";
  write_bytes(dir.file("model.safetensors"), safetensors_build_raw(header, Bytes(8, 0)));
  expect_input_error([&] { SafetensorsFile::open(dir.file("model.safetensors")); },
                     {dir.file("model.safetensors"), "JSON nested deeper than 256 levels"});
}

TEST(HostileModelFiles, ShardIndexNestedDeepIsRefused) {
  TempDir dir;
  const std::string index = dir.file("model.safetensors.index.json");
  write_text(index, R"({"weight_map": )" + std::string(100000, '[') + "}");
  expect_input_error([&] { SafetensorsSet::open_dir(dir.path()); },
                     {index, "JSON nested deeper than 256 levels"});
}

// Seen: open() of a FIFO named by the index blocked forever. Expected: refused before open.
TEST(HostileModelFiles, FifoShardIsRefusedWithoutBlocking) {
  TempDir dir;
  write_text(dir.file("model.safetensors.index.json"),
             R"({"weight_map": {"w": "shard.safetensors"}})");
  ASSERT_EQ(mkfifo(dir.file("shard.safetensors").c_str(), 0600), 0);
  expect_input_error(
      [&] { SafetensorsSet::open_dir(dir.path()); },
      {dir.file("shard.safetensors"), "is a FIFO (named pipe), expected a regular file"});
}

TEST(HostileModelFiles, CharacterDeviceIsNamedAsSuch) {
  expect_input_error([] { mapped_file_open("/dev/zero"); },
                     {"/dev/zero: is a character device, expected a regular file"});
}

// Seen: the last of two equal tensor names won silently.
TEST(HostileModelFiles, DuplicateTensorNamesAreRefused) {
  TempDir dir;
  const std::string header = R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                             R"( "v": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                             R"( "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})";
  write_bytes(dir.file("model.safetensors"), safetensors_build_raw(header, Bytes(8, 0)));
  expect_input_error([&] { SafetensorsFile::open(dir.file("model.safetensors")); },
                     {dir.file("model.safetensors"), "header names tensor 'w' twice"});
}

}  // namespace
}  // namespace speclab
