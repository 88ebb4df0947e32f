#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/input_file.h"
#include "core/memory_available.h"

namespace speclab {

MappedFile::~MappedFile() {
  if (copy_ == nullptr && data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
}

namespace {

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif

constexpr size_t kHugePage = size_t{2} << 20;

// A copy needs the file's size in new memory: with less than that and 1 GiB to spare
// (memory_available_bytes, which counts the page cache's reclaimable copy of the file) the
// file stays mapped.
bool copy_wanted(FileBytes bytes, uint64_t size) {
  if (bytes != FileBytes::kHugePagesWhereGranted || weights_page_size() != PageSize::kHuge ||
      !huge_pages_granted())
    return false;
  const int64_t avail = memory_available_bytes();
  return avail >= 0 && static_cast<uint64_t>(avail) >= size + (uint64_t{1} << 30);
}

// The share of the mapping [p, p + size) that page-table entries of 2 MB map
// (/proc/self/smaps' FilePmdMapped of the mapping's entry over its size; 0 when unknown).
double pmd_mapped_share(const void* p, size_t size) {
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return 0.0;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  char line[512];
  bool ours = false;
  double share = 0.0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2) {  // an entry's first line: "start-end ..."
      ours = lo == start;
      continue;
    }
    unsigned long kb = 0;
    if (ours && std::sscanf(line, "FilePmdMapped: %lu kB", &kb) == 1) {
      share = static_cast<double>(kb) * 1024.0 / static_cast<double>(size);
      break;
    }
  }
  std::fclose(f);
  return share;
}

// A copy of the file in huge-page memory, or null when its memory cannot be had. The pages
// are faulted in (one write per 2 MB) before the read: pread into unfaulted huge pages took
// 4.6 s for 2.4 GB on the Zen 4 guest, faulting first and then reading 2.4 s.
LargeBuffer huge_page_copy(int fd, uint64_t size, const std::string& path) {
  LargeBuffer copy = large_buffer_alloc(static_cast<size_t>(size), PageSize::kHuge);
  if (copy == nullptr) return copy;
  auto* dst = static_cast<uint8_t*>(copy.get());
  for (uint64_t i = 0; i < size; i += kHugePage) dst[i] = 0;
  input_file_read_exactly(fd, dst, size, path, "file");
  return copy;
}

}  // namespace

std::shared_ptr<MappedFile> mapped_file_open(const std::string& path, FileBytes bytes) {
  uint64_t file_size = 0;
  const int fd = input_file_open(path, "file", &file_size);
  if (file_size == 0) {
    // A file the kernel generates (/proc, /sys) stats as 0 bytes and still reads: it has
    // no bytes to map, and calling it empty would mislead.
    char probe = 0;
    const ssize_t got = ::read(fd, &probe, 1);
    ::close(fd);
    if (got > 0)
      fail_input(path,
                 ": reports a size of 0 bytes but has content (a file the kernel generates, "
                 "as under /proc or /sys), expected a regular file with its bytes on disk");
    fail_input(path, ": file is empty");
  }
  const size_t size = static_cast<size_t>(file_size);
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  if (p == MAP_FAILED) {
    ::close(fd);
    fail_input(path, ": cannot mmap ", size, " bytes (", std::strerror(err), ")");
  }
  // Weights: keep the mapping when the page cache holds the file in 2 MB folios (read from
  // disk, readahead makes them; the mapping then reads as huge pages do), copy it into huge
  // pages when it holds 4 KB ones (a file written moments ago). Populating the mapping reads
  // what a first forward pass would read anyway.
  if (size >= kHugePage && copy_wanted(bytes, file_size)) {
    madvise(p, size, MADV_POPULATE_READ);  // advice: on failure the share below reads low
    if (pmd_mapped_share(p, size) < 0.9) {
      LargeBuffer copy;
      try {
        copy = huge_page_copy(fd, file_size, path);
      } catch (...) {
        munmap(p, size);
        ::close(fd);
        throw;
      }
      if (copy != nullptr) {
        munmap(p, size);
        ::close(fd);
        return std::make_shared<MappedFile>(path, std::move(copy), size);
      }
    }
  }
  ::close(fd);  // the mapping keeps its own reference to the file
  return std::make_shared<MappedFile>(path, static_cast<const uint8_t*>(p), size);
}

}  // namespace speclab
