// A whole file's bytes in memory, read-only: mapped in place, or (model weights) copied into
// anonymous 2 MB pages.
//
// Model readers (safetensors, GGUF) view tensors in place in these bytes; they hand out the
// shared_ptr (as std::shared_ptr<void>) so that the views stay valid for as long as any model
// holds the storage.
//
// Why weights are copied: a mapping reads the page cache's folios as they are, and a file the
// cache holds in 4 KB folios (one written or copied moments ago: `cp` leaves a GGUF wholly in
// them) is mapped with 4 KB page-table entries, one TLB miss every 4 KB of a multi-GB stream.
// On the Zen 4 guest a decode read such a file 1.04x as long as one the cache held in 2 MB
// folios (median of 10 pairs, 16% at the fastest tokens), the head's 788 MB of the 3B file
// 15% slower per byte than its layers (docs/findings.md, 2026-12-04). A copy in transparent
// huge pages reads the same whatever the cache holds, and on the pages the read probes measure
// (core/large_buffer.h). It costs one pass over the file at load and the file's size in
// anonymous memory (the page cache's copy stays reclaimable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/large_buffer.h"

namespace speclab {

enum class FileBytes {
  kMapped,                 // mapped in place: pages load lazily, only what is read costs memory
  kHugePagesWhereGranted,  // copied into MADV_HUGEPAGE memory when the kernel grants THP and
                           // weights_page_size() is kHuge (SPECLAB_NO_THP unset); else mapped
};

class MappedFile {
 public:
  MappedFile(const std::string& path, const uint8_t* data, size_t size)
      : path_(path), data_(data), size_(size) {}
  MappedFile(const std::string& path, LargeBuffer copy, size_t size)
      : path_(path),
        data_(static_cast<const uint8_t*>(copy.get())),
        size_(size),
        copy_(std::move(copy)) {}
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // True when the bytes are a copy in huge-page memory, false when mapped.
  bool copied() const { return copy_ != nullptr; }

 private:
  std::string path_;
  const uint8_t* data_;  // [size_] bytes, read-only
  size_t size_;
  LargeBuffer copy_;  // owns data_ when copied; empty when data_ is a mapping
};

// The bytes of `path`. A missing file, a directory, an empty file or one that cannot be read
// throws InputError "<path>: ..." (one line); a file that shrinks while it is copied too.
// kHugePagesWhereGranted falls back to the mapping when the copy's memory cannot be had.
std::shared_ptr<MappedFile> mapped_file_open(const std::string& path,
                                             FileBytes bytes = FileBytes::kMapped);

}  // namespace speclab
