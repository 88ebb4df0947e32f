#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/input_file.h"

namespace speclab {

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
}

std::shared_ptr<MappedFile> mapped_file_open(const std::string& path) {
  uint64_t file_size = 0;
  const int fd = input_file_open(path, "file", &file_size);
  if (file_size == 0) {
    ::close(fd);
    fail_input(path, ": file is empty");
  }
  const size_t size = static_cast<size_t>(file_size);
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  if (p == MAP_FAILED)
    fail_input(path, ": cannot mmap ", size, " bytes (", std::strerror(err), ")");
  return std::make_shared<MappedFile>(path, static_cast<const uint8_t*>(p), size);
}

}  // namespace speclab
