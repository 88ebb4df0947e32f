// A weight file's bytes: mapped, or copied into huge pages when the page cache holds the file
// in 4 KB folios (core/mapped_file.h). Either way the bytes are the file's; the copy is never
// made when SPECLAB_NO_THP asks for 4 KB pages, when the kernel grants no huge pages, or when
// the memory for it is not available. A file shorter than it claims to be is one InputError.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/input_file.h"
#include "core/large_buffer.h"
#include "core/mapped_file.h"
#include "tests/formats/expect_input_error.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using testing::expect_input_error;
using testing::TempDir;

// Sets (or, with nullptr, unsets) an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// 8 MB + 5 bytes of a known pattern, written just now (so the page cache holds it as the
// write left it, in the folios a copy is made for on the kernels seen).
std::vector<uint8_t> write_pattern(const std::string& path) {
  std::vector<uint8_t> bytes((size_t{8} << 20) + 5);
  for (size_t i = 0; i < bytes.size(); i++)
    bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  // In writes of 4 KB, as a copy tool's small buffers make them (one write of the whole file
  // may leave 2 MB folios, which the mapping then reads as huge pages).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (size_t at = 0; at < bytes.size(); at += 4096) {
    const size_t n = std::min<size_t>(4096, bytes.size() - at);
    if (::write(fd, bytes.data() + at, n) != static_cast<ssize_t>(n)) ADD_FAILURE() << "write";
  }
  ::close(fd);
  return bytes;
}

TEST(MappedFile, WeightBytesEqualTheFileWhereverTheyLive) {
  TempDir dir;
  const std::string path = dir.file("w.bin");
  const std::vector<uint8_t> bytes = write_pattern(path);
  for (FileBytes how : {FileBytes::kMapped, FileBytes::kHugePagesWhereGranted}) {
    const auto f = mapped_file_open(path, how);
    ASSERT_EQ(f->size(), bytes.size());
    EXPECT_EQ(std::memcmp(f->data(), bytes.data(), bytes.size()), 0);
    if (how == FileBytes::kMapped) {
      EXPECT_FALSE(f->copied());
    }
    if (f->copied()) {
      // A copy sits in huge-page memory: 2 MB aligned.
      EXPECT_EQ(reinterpret_cast<uintptr_t>(f->data()) % (size_t{2} << 20), 0u);
      EXPECT_TRUE(huge_pages_granted());
    }
  }
}

TEST(MappedFile, NoCopyWithSmallPagesAskedForOrNoMemoryForIt) {
  TempDir dir;
  const std::string path = dir.file("w.bin");
  const std::vector<uint8_t> bytes = write_pattern(path);
  {
    ScopedEnv no_thp("SPECLAB_NO_THP", "1");
    const auto f = mapped_file_open(path, FileBytes::kHugePagesWhereGranted);
    EXPECT_FALSE(f->copied());
    EXPECT_EQ(std::memcmp(f->data(), bytes.data(), bytes.size()), 0);
  }
  {
    ScopedEnv tight("SPECLAB_MEMORY_LIMIT", "1000000");  // 1 MB: less than the file + 1 GiB
    const auto f = mapped_file_open(path, FileBytes::kHugePagesWhereGranted);
    EXPECT_FALSE(f->copied());
    EXPECT_EQ(std::memcmp(f->data(), bytes.data(), bytes.size()), 0);
  }
}

TEST(MappedFile, HugePagesGrantedReadsTheKernelsSetting) {
  TempDir dir;
  auto setting = [&](const std::string& text) {
    const std::string p = dir.file("enabled");
    std::ofstream(p) << text;
    return huge_pages_granted(p.c_str());
  };
  EXPECT_TRUE(setting("always [madvise] never\n"));
  EXPECT_TRUE(setting("[always] madvise never\n"));
  EXPECT_FALSE(setting("always madvise [never]\n"));
  EXPECT_FALSE(setting(""));
  EXPECT_FALSE(huge_pages_granted(dir.file("absent").c_str()));
}

// The copy reads the whole file; one that is shorter than the size asked for (it shrank after
// its size was taken) is named with the byte where it ended.
TEST(InputFile, ReadExactlyNamesWhereAShortFileEnds) {
  TempDir dir;
  const std::string path = dir.file("short.bin");
  std::ofstream(path, std::ios::binary) << "0123456789";
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> dst(20);
  input_file_read_exactly(fd, dst.data(), 10, path, "file");
  EXPECT_EQ(std::string(dst.begin(), dst.begin() + 10), "0123456789");
  expect_input_error(
      [&] { input_file_read_exactly(fd, dst.data(), 20, path, "file"); },
      {path, ": file ends at byte 10, 20 expected (the file changed while it was read)"});
  ::close(fd);
  const int bad = -1;
  expect_input_error([&] { input_file_read_exactly(bad, dst.data(), 4, path, "file"); },
                     {path, ": cannot read file at byte 0 (Bad file descriptor)"});
}

}  // namespace
}  // namespace speclab
