#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace speclab {

std::string input_file_kind(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO (named pipe)";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "not a regular file";
  }
}

namespace {

[[noreturn]] void fail_open(const std::string& path, const char* what, int err) {
  if (err == ENOENT) fail_input(path, ": cannot open ", what, " (no such file)");
  fail_input(path, ": cannot open ", what, " (", std::strerror(err), ")");
}

[[noreturn]] void fail_kind(const std::string& path, const char* what, unsigned mode,
                            const char* expected) {
  fail_input(path, ": is ", input_file_kind(mode), ", expected ", expected, " (", what, ")");
}

}  // namespace

int input_file_open(const std::string& path, const char* what, uint64_t* size) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail_open(path, what, errno);
  if (!S_ISREG(st.st_mode)) fail_kind(path, what, st.st_mode, "a regular file");
  // O_NONBLOCK: a FIFO swapped in after the stat must not block the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail_open(path, what, errno);
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const unsigned mode = st.st_mode;
    ::close(fd);
    fail_kind(path, what, mode, "a regular file");
  }
  // Regular files ignore O_NONBLOCK, but clear it so later reads never see EAGAIN.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

std::string input_file_read(const std::string& path, const char* what, uint64_t max_bytes) {
  uint64_t size = 0;
  const int fd = input_file_open(path, what, &size);
  if (size > max_bytes) {
    ::close(fd);
    fail_input(path, ": ", what, " has ", size, " bytes, more than the limit of ", max_bytes);
  }
  // Read to the end, not to st_size: files the kernel generates (/proc, /sys) report a size
  // of 0 and still have content, and a file may grow while it is read. The bound holds on
  // what is read, so such a file cannot fill memory either.
  std::string out(static_cast<size_t>(size < 4096 ? 4096 : size + 1), '\0');
  size_t done = 0;
  while (true) {
    if (done == out.size()) {
      if (done > max_bytes) break;
      out.resize(out.size() * 2 > max_bytes + 1 ? static_cast<size_t>(max_bytes + 1)
                                                : out.size() * 2);
    }
    const ssize_t n = ::read(fd, &out[done], out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail_input(path, ": cannot read ", what, " (", std::strerror(err), ")");
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done > max_bytes)
    fail_input(path, ": ", what, " has more than the limit of ", max_bytes, " bytes");
  out.resize(done);
  return out;
}

void input_file_read_exactly(int fd, uint8_t* dst, uint64_t n, const std::string& path,
                             const char* what) {
  constexpr uint64_t kChunk = uint64_t{64} << 20;  // one read() at most, so EINTR costs little
  uint64_t done = 0;
  while (done < n) {
    const uint64_t want = n - done < kChunk ? n - done : kChunk;
    const ssize_t got =
        ::pread(fd, dst + done, static_cast<size_t>(want), static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      fail_input(path, ": cannot read ", what, " at byte ", done, " (", std::strerror(errno), ")");
    if (got == 0)
      fail_input(path, ": ", what, " ends at byte ", done, ", ", n,
                 " expected (the file changed while it was read)");
    done += static_cast<uint64_t>(got);
  }
}

void input_dir_require(const std::string& path, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) fail_input(path, ": cannot open ", what, " (no such directory)");
    fail_input(path, ": cannot open ", what, " (", std::strerror(errno), ")");
  }
  if (!S_ISDIR(st.st_mode)) fail_kind(path, what, st.st_mode, "a directory");
}

}  // namespace speclab
