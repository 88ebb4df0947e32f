// Writing output files (tables, merged results, baselines, n-gram tables) so that a full
// disk, a quota or a file-size limit never leaves a truncated or empty file in place of a
// good one, and never goes unnoticed.
//
// output_file_write_atomic writes <path>.tmp.<pid> in the same directory, checks every
// write(), fsync() and close(), then rename()s it over <path>: a reader sees the old file or
// the whole new one. Any failure removes the temporary file and throws InputError
//   "<path>: cannot write (No space left on device)"
// which the CLI reports as one line with exit code 2.
//
// What is already at <path> decides how it is written (output_target_resolve):
//   nothing         the missing folders above it are created (and removed again on failure)
//   a regular file  replaced atomically as above
//   a symbolic link written through: the file it names is replaced, the link stays
//   a device, FIFO  written in place, never replaced or removed (/dev/null discards, /dev/full
//                   fails with ENOSPC); a FIFO that nothing reads is refused at once, not waited on
//   a directory     refused, as is a path ending in '/'
#pragma once

#include <string>

namespace speclab {

void output_file_write_atomic(const std::string& path, const std::string& content);

// Where an output named `path` goes: path (a symbolic link resolved) and what is there now.
// InputError naming `path` for a directory, a path ending in '/', a link to nothing.
struct OutputTarget {
  enum class Kind { kNew, kRegular, kSpecial };
  std::string path;
  Kind kind = Kind::kNew;
};
OutputTarget output_target_resolve(const std::string& path);

// Creates the folder `dir` (and the missing ones above it) for outputs; InputError naming
// `dir` and why when it cannot: something else is there ("is a regular file, expected a
// folder (results directory)"), a symbolic link to nothing, or the system's reason.
void output_dir_create(const std::string& dir, const char* what);

// Opens a device or FIFO at `path` for writing without creating, truncating or blocking on it
// (a FIFO with no reader: InputError naming `shown`). Returns the descriptor (blocking again).
int output_special_open(const std::string& path, const std::string& shown);

// write() all of `data` to `fd`, retrying short writes and EINTR. Returns 0, or the errno
// of the failed write (ENOSPC, EFBIG under RLIMIT_FSIZE, EDQUOT, EIO).
int output_write_all(int fd, const char* data, size_t size);

}  // namespace speclab
