#include "core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/input_file.h"

namespace speclab {

int output_write_all(int fd, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

OutputTarget output_target_resolve(const std::string& path) {
  if (path.empty()) fail_input("output path is empty (expected a file path)");
  if (path.back() == '/') fail_input(path, ": names a folder (expected a file path)");
  OutputTarget t;
  t.path = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) fail_input(path, ": cannot write (", std::strerror(errno), ")");
    t.kind = OutputTarget::Kind::kNew;
    return t;
  }
  if (S_ISLNK(st.st_mode)) {
    // A symbolic link is written through: the file it names changes, the link stays.
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) {
      fail_input(path, ": is a symbolic link to a missing file (", std::strerror(errno),
                 "; expected a file path)");
    }
    t.path = buf;
    if (::stat(t.path.c_str(), &st) != 0)
      fail_input(path, ": cannot write (", std::strerror(errno), ")");
  }
  if (S_ISDIR(st.st_mode)) fail_input(path, ": is a directory (expected a file path)");
  t.kind = S_ISREG(st.st_mode) ? OutputTarget::Kind::kRegular : OutputTarget::Kind::kSpecial;
  return t;
}

void output_dir_create(const std::string& dir, const char* what) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode) && ::stat(dir.c_str(), &st) != 0)
      fail_input(dir, ": is a symbolic link to nothing (expected a folder for the ", what, ")");
    if (!S_ISDIR(st.st_mode))
      fail_input(dir, ": is ", input_file_kind(st.st_mode), ", expected a folder for the ", what);
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && std::filesystem::is_directory(dir, ec)) return;
  // Name what is in the way: the nearest path above that is there but is no folder (a file,
  // a link to nothing).
  for (std::filesystem::path p = std::filesystem::path(dir).parent_path(); !p.empty();
       p = p.parent_path()) {
    if (::lstat(p.c_str(), &st) != 0) {
      if (p == p.parent_path()) break;
      continue;
    }
    if (S_ISLNK(st.st_mode) && ::stat(p.c_str(), &st) != 0)
      fail_input(dir, ": cannot create the ", what, " (", p.string(),
                 " is a symbolic link to nothing)");
    if (!S_ISDIR(st.st_mode))
      fail_input(dir, ": cannot create the ", what, " (", p.string(), " is ",
                 input_file_kind(st.st_mode), ", not a folder)");
    break;
  }
  fail_input(dir, ": cannot create the ", what, " (",
             ec ? ec.message() : std::string("something else is in the way"), ")");
}

int output_special_open(const std::string& path, const std::string& shown) {
  // O_NONBLOCK: a FIFO that nothing reads fails at once (ENXIO) instead of blocking the open;
  // no O_CREAT or O_TRUNC: a device or FIFO is written, never replaced.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 && errno == ENXIO) {
    fail_input(shown,
               ": is a FIFO (named pipe) or socket that nothing reads (expected a file, "
               "or a reader on the FIFO)");
  }
  if (fd < 0) fail_input(shown, ": cannot write (", std::strerror(errno), ")");
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);  // block on a full pipe, as cat does
  return fd;
}

namespace {

// The missing folders above `path`, outermost first, created; the caller removes them (deepest
// first, if still empty) when the write fails, so that a failure leaves nothing behind.
std::vector<std::filesystem::path> create_missing_parents(const std::string& path) {
  std::vector<std::filesystem::path> created;
  std::filesystem::path p = std::filesystem::path(path).parent_path();
  std::vector<std::filesystem::path> missing;
  std::error_code ec;
  while (!p.empty() && !std::filesystem::exists(p, ec)) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (!std::filesystem::create_directory(*it, ec) || ec) break;
    created.push_back(*it);
  }
  return created;
}

void remove_created(const std::vector<std::filesystem::path>& created) {
  std::error_code ec;
  for (auto it = created.rbegin(); it != created.rend(); ++it) std::filesystem::remove(*it, ec);
}

void write_special(const std::string& path, const std::string& shown, const std::string& content) {
  const int fd = output_special_open(path, shown);
  int err = output_write_all(fd, content.data(), content.size());
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) fail_input(shown, ": cannot write (", std::strerror(err), ")");
}

}  // namespace

void output_file_write_atomic(const std::string& path, const std::string& content) {
  const OutputTarget t = output_target_resolve(path);
  if (t.kind == OutputTarget::Kind::kSpecial) {
    write_special(t.path, path, content);
    return;
  }
  const std::vector<std::filesystem::path> created = t.kind == OutputTarget::Kind::kNew
                                                         ? create_missing_parents(t.path)
                                                         : std::vector<std::filesystem::path>{};
  const std::string tmp = t.path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    remove_created(created);
    fail_input(path, ": cannot write (", std::strerror(err), ")");
  }
  int err = output_write_all(fd, content.data(), content.size());
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), t.path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    remove_created(created);
    fail_input(path, ": cannot write (", std::strerror(err), ")");
  }
}

}  // namespace speclab
