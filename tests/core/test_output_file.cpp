// output_file_write_atomic under a full disk: RLIMIT_FSIZE in a forked child (SIGXFSZ
// ignored) makes write() fail with EFBIG exactly as ENOSPC would. The old file must stay
// whole, no temporary may be left, and the error is one InputError line naming the file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/output_file.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using testing::TempDir;

std::string slurp(const std::string& path) {
  const auto b = testing::read_bytes(path);
  return std::string(b.begin(), b.end());
}

// Runs output_file_write_atomic(path, content) in a child limited to max_bytes per file;
// returns the child's InputError message ("" when it succeeded).
std::string write_in_limited_child(const std::string& path, const std::string& content,
                                   rlim_t max_bytes, const std::string& msg_file) {
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    const struct rlimit lim = {max_bytes, max_bytes};
    setrlimit(RLIMIT_FSIZE, &lim);
    std::string msg;
    try {
      output_file_write_atomic(path, content);
    } catch (const InputError& e) {
      msg = e.what();
    }
    // The message is short: it fits under the limit.
    testing::write_text(msg_file, msg);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return slurp(msg_file);
}

TEST(OutputFile, WritesAndReplaces) {
  TempDir dir;
  output_file_write_atomic(dir.file("sub/t.md"), "one\n");
  EXPECT_EQ(slurp(dir.file("sub/t.md")), "one\n");
  output_file_write_atomic(dir.file("sub/t.md"), "two\n");
  EXPECT_EQ(slurp(dir.file("sub/t.md")), "two\n");
}

TEST(OutputFile, FullDiskKeepsTheOldFileAndNamesTheNewOne) {
  TempDir dir;
  const std::string path = dir.file("tables.md");
  testing::write_text(path, "old tables\n");
  const std::string msg =
      write_in_limited_child(path, std::string(10000, 'x'), 4096, dir.file("msg"));
  EXPECT_EQ(msg, path + ": cannot write (File too large)");
  EXPECT_EQ(slurp(path), "old tables\n");
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find("tables.md.tmp"), std::string::npos) << e.path();
}

TEST(OutputFile, UnwritablePlaceIsOneLine) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("tables.md"));  // a directory in the way
  try {
    output_file_write_atomic(dir.file("tables.md"), "x");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find(dir.file("tables.md") + ": cannot write ("), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace speclab
