// Hostile inputs at the lowest level: JSON nested deeper than any real file, special files
// where a regular file is expected, and error messages quoting bytes that are not printable
// UTF-8. Each is one InputError line, never a stack overflow, a hang or a read that never ends.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_input.h"
#include "core/mapped_file.h"
#include "tests/formats/expect_input_error.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using testing::expect_input_error;
using testing::TempDir;

std::string nested_array(int depth) {
  return std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']');
}

// Seen: nlohmann's dump(), operator== and copies recurse per level; a value nested 200,000
// deep overflowed the stack. Expected: refused before parsing, naming the source and limit.
TEST(JsonInput, NestingBeyondTheLimitIsRefused) {
  expect_input_error([] { json_input_parse(nested_array(200000), "deep.json"); },
                     {"deep.json", "JSON nested deeper than 256 levels", "byte 256"});
  expect_input_error(
      [&] { json_input_check_depth(R"({"a":)" + nested_array(300) + "}", "o.json"); },
      {"o.json", "nested deeper than 256"});
}

TEST(JsonInput, NestingAtTheLimitParses) {
  const nlohmann::json j = json_input_parse(nested_array(kJsonMaxDepth), "ok.json");
  EXPECT_TRUE(j.is_array());
  EXPECT_EQ(j.dump().size(), static_cast<size_t>(2 * kJsonMaxDepth));
}

TEST(JsonInput, BracketsInsideStringsDoNotCount) {
  const std::string many = std::string(1000, '[');
  const nlohmann::json j = json_input_parse(R"({"k": ")" + many + R"(\" [[[ \\"})", "s.json");
  EXPECT_EQ(j["k"].get<std::string>(), many + "\" [[[ \\");
}

// Seen: nlohmann keeps the last of a key written twice, without a word. Expected: refused,
// at any depth; the same key in two objects is fine.
TEST(JsonInput, AKeyTwiceInOneObjectIsRefused) {
  expect_input_error([] { json_input_parse(R"({"a": 1, "b": 2, "a": 3})", "k.json"); },
                     {"k.json: key \"a\" appears twice in one object (expected each once)"});
  expect_input_error([] { json_input_parse(R"([{"x": {"y": 1, "y": 2}}])", "n.json"); },
                     {"n.json: key \"y\" appears twice"});
  const nlohmann::json j = json_input_parse(R"([{"a": 1}, {"a": 2, "b": {"a": 3}}])", "ok.json");
  EXPECT_EQ(j[1]["b"]["a"], 3);
}

TEST(JsonInput, SyntaxErrorsStayNlohmannErrorsForTheCallerToWord) {
  EXPECT_THROW(json_input_parse("{\"a\": ", "x.json"), nlohmann::json::parse_error);
}

// A FIFO with no writer blocks open() forever; /dev/zero never ends; a directory is no file.
TEST(InputFile, SpecialFilesAreNamedAndRefused) {
  TempDir dir;
  const std::string fifo = dir.file("shard.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_input_error([&] { input_file_read(fifo, "prompt file", 1 << 20); },
                     {fifo, "is a FIFO (named pipe), expected a regular file (prompt file)"});
  expect_input_error([] { input_file_read("/dev/zero", "config file", 1 << 20); },
                     {"/dev/zero: is a character device, expected a regular file (config file)"});
  expect_input_error([&] { input_file_read(dir.path(), "trace file", 1 << 20); },
                     {dir.path(), "is a directory, expected a regular file"});
  expect_input_error([&] { input_file_read(dir.file("absent"), "trace file", 1 << 20); },
                     {dir.file("absent"), "cannot open trace file (no such file)"});
  expect_input_error([&] { input_dir_require(fifo, "model directory"); },
                     {fifo, "is a FIFO (named pipe), expected a directory (model directory)"});
}

TEST(InputFile, SizeIsBoundedBeforeReading) {
  TempDir dir;
  testing::write_text(dir.file("big.jsonl"), std::string(4096, 'x'));
  expect_input_error([&] { input_file_read(dir.file("big.jsonl"), "prompt file", 4095); },
                     {dir.file("big.jsonl"), "prompt file has 4096 bytes", "limit of 4095"});
  EXPECT_EQ(input_file_read(dir.file("big.jsonl"), "prompt file", 4096).size(), 4096u);
}

// Seen: /proc and /sys files stat as 0 bytes; read up to st_size they came back empty (a
// corpus of 0 tokens, exit 0). Expected: read to the end, and the limit still holds on what is
// read (so a generated file cannot fill memory).
TEST(InputFile, KernelGeneratedFilesAreReadToTheirEnd) {
  struct stat st {};
  ASSERT_EQ(::stat("/proc/self/status", &st), 0);
  ASSERT_EQ(st.st_size, 0) << "the test needs a procfs file whose stat size is 0";
  const std::string text = input_file_read("/proc/self/status", "corpus file", 1 << 20);
  EXPECT_NE(text.find("Name:"), std::string::npos) << text.size() << " bytes read";
  expect_input_error([] { input_file_read("/proc/self/status", "corpus file", 16); },
                     {"/proc/self/status: corpus file has more than the limit of 16 bytes"});
}

// A mapped file (config.json, weights) cannot map what has no bytes on disk; "file is empty"
// for /proc/self/status (through a link named config.json) was wrong.
TEST(MappedFile, KernelGeneratedFileIsNamedNotCalledEmpty) {
  TempDir dir;
  const std::string link = dir.file("config.json");
  ASSERT_EQ(::symlink("/proc/self/status", link.c_str()), 0);
  expect_input_error([&] { mapped_file_open(link); },
                     {link, "reports a size of 0 bytes but has content", "/proc or /sys"});
  testing::write_text(dir.file("empty.json"), "");
  expect_input_error([&] { mapped_file_open(dir.file("empty.json")); },
                     {dir.file("empty.json"), ": file is empty"});
}

// Seen: invalid UTF-8 from the input quoted raw in the error line. Expected: escaped as \xNN
// (like control bytes), valid multi-byte UTF-8 kept.
TEST(ErrorMessage, InvalidUtf8AndControlBytesAreEscaped) {
  const InputError e(
      std::string("name '\xff\xfe' tab\t nl\n ok \xc3\xa9 \xe2\x82\xac cut \xe2\x82"));
  EXPECT_EQ(std::string(e.what()),
            "name '\\xff\\xfe' tab\\x09 nl\\n ok \xc3\xa9 \xe2\x82\xac cut \\xe2\\x82");
  // Overlong encodings and UTF-16 surrogates are not UTF-8 either.
  EXPECT_EQ(detail::one_line("\xc0\xaf \xed\xa0\x80"), "\\xc0\\xaf \\xed\\xa0\\x80");
  EXPECT_EQ(detail::one_line("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
}

}  // namespace
}  // namespace speclab
