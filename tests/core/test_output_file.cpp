// output_file_write_atomic under a full disk: RLIMIT_FSIZE in a forked child (SIGXFSZ
// ignored) makes write() fail with EFBIG exactly as ENOSPC would. The old file must stay
// whole, no temporary may be left, and the error is one InputError line naming the file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

// The InputError message of output_file_write_atomic(path, content), "" when it succeeded.
std::string write_error(const std::string& path, const std::string& content) {
  try {
    output_file_write_atomic(path, content);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(OutputFile, DirectoryInTheWayIsOneLineAndStays) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("tables.md/inside"));  // a directory in the way
  EXPECT_EQ(write_error(dir.file("tables.md"), "x"),
            dir.file("tables.md") + ": is a directory (expected a file path)");
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("tables.md/inside")));
}

// Seen: `--out` naming a dangling link said "File exists", a file in the way gave no reason.
TEST(OutputDir, WhatIsInTheWayIsNamed) {
  TempDir dir;
  auto error_of = [](const std::string& path) {
    try {
      output_dir_create(path, "results directory");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(created)");
  };
  testing::write_text(dir.file("afile"), "x");
  EXPECT_EQ(error_of(dir.file("afile")),
            dir.file("afile") + ": is a regular file, expected a folder for the results directory");
  ASSERT_EQ(::symlink(dir.file("nothing").c_str(), dir.file("dangling").c_str()), 0);
  EXPECT_EQ(error_of(dir.file("dangling")),
            dir.file("dangling") +
                ": is a symbolic link to nothing (expected a folder for the results directory)");
  EXPECT_EQ(error_of(dir.file("afile/below")),
            dir.file("afile/below") + ": cannot create the results directory (" +
                dir.file("afile") + " is a regular file, not a folder)");
  EXPECT_EQ(error_of(dir.file("dangling/sub")),
            dir.file("dangling/sub") + ": cannot create the results directory (" +
                dir.file("dangling") + " is a symbolic link to nothing)");
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("dangling")));
  EXPECT_EQ(error_of(dir.file("a/b/c")), "(created)");
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("a/b/c")));
  EXPECT_EQ(error_of(dir.file("a/b/c")), "(created)");  // already there: fine
}

TEST(OutputFile, PathEndingInASlashCreatesNothing) {
  TempDir dir;
  EXPECT_EQ(write_error(dir.file("new/"), "x"),
            dir.file("new/") + ": names a folder (expected a file path)");
  EXPECT_FALSE(std::filesystem::exists(dir.file("new")));
}

TEST(OutputFile, MissingFoldersAreRemovedAgainWhenTheWriteFails) {
  TempDir dir;
  const std::string path = dir.file("a/b/tables.md");
  const std::string msg =
      write_in_limited_child(path, std::string(10000, 'x'), 4096, dir.file("msg"));
  EXPECT_EQ(msg, path + ": cannot write (File too large)");
  EXPECT_FALSE(std::filesystem::exists(dir.file("a")));
}

TEST(OutputFile, SymbolicLinkIsWrittenThroughAndStays) {
  TempDir dir;
  testing::write_text(dir.file("real.md"), "old\n");
  std::filesystem::create_symlink(dir.file("real.md"), dir.file("link.md"));
  output_file_write_atomic(dir.file("link.md"), "new\n");
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("link.md")));
  EXPECT_EQ(slurp(dir.file("real.md")), "new\n");
  std::filesystem::create_symlink(dir.file("nothing.md"), dir.file("dangling.md"));
  EXPECT_EQ(write_error(dir.file("dangling.md"), "x")
                .find(dir.file("dangling.md") + ": is a symbolic link to a missing file"),
            0u);
  EXPECT_FALSE(std::filesystem::exists(dir.file("nothing.md")));
}

// A FIFO (like /dev/null or /dev/full, which a test must not risk replacing) is written in
// place: with a reader it gets the bytes and stays a FIFO; with none the write is refused at
// once instead of blocking, and the FIFO stays.
TEST(OutputFile, FifoIsWrittenInPlaceAndOneWithoutReaderIsRefusedAtOnce) {
  TempDir dir;
  const std::string fifo = dir.file("out.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(write_error(fifo, "x"),
            fifo +
                ": is a FIFO (named pipe) or socket that nothing reads (expected a file, or a "
                "reader on the FIFO)");
  EXPECT_EQ(std::filesystem::status(fifo).type(), std::filesystem::file_type::fifo);

  const pid_t reader = fork();
  if (reader == 0) {  // copies the FIFO into got.txt
    const std::string cmd = "cat '" + fifo + "' > '" + dir.file("got.txt") + "'";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string err = "no reader";
  for (int i = 0; i < 500 && !err.empty(); i++) {  // until the reader has opened its end
    err = write_error(fifo, "through the pipe\n");
    if (!err.empty()) usleep(10000);
  }
  EXPECT_EQ(err, "");
  if (!err.empty()) kill(reader, SIGKILL);  // a reader that never saw a writer would wait forever
  int status = 0;
  waitpid(reader, &status, 0);
  EXPECT_EQ(slurp(dir.file("got.txt")), "through the pipe\n");
  EXPECT_EQ(std::filesystem::status(fifo).type(), std::filesystem::file_type::fifo);
}

}  // namespace
}  // namespace speclab
