// Writing output files (tables, merged results, baselines, n-gram tables) so that a full
// disk, a quota or a file-size limit never leaves a truncated or empty file in place of a
// good one, and never goes unnoticed.
//
// output_file_write_atomic writes <path>.tmp.<pid> in the same directory, checks every
// write(), fsync() and close(), then rename()s it over <path>: a reader sees the old file or
// the whole new one. Any failure removes the temporary file and throws InputError
//   "<path>: cannot write (No space left on device)"
// which the CLI reports as one line with exit code 2.
#pragma once

#include <string>

namespace speclab {

void output_file_write_atomic(const std::string& path, const std::string& content);

// write() all of `data` to `fd`, retrying short writes and EINTR. Returns 0, or the errno
// of the failed write (ENOSPC, EFBIG under RLIMIT_FSIZE, EDQUOT, EIO).
int output_write_all(int fd, const char* data, size_t size);

}  // namespace speclab
