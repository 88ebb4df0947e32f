// A read-only memory mapping of a whole file.
//
// Model readers (safetensors, GGUF) view tensors in place through the mapping; they hand out
// the shared_ptr (as std::shared_ptr<void>) so that the views stay valid for as long as any
// model holds the storage. Pages are loaded lazily by the OS, so opening a multi-GB file is
// cheap and only the tensors actually read cost memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace speclab {

class MappedFile {
 public:
  MappedFile(const std::string& path, const uint8_t* data, size_t size)
      : path_(path), data_(data), size_(size) {}
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::string path_;
  const uint8_t* data_;  // [size_] bytes, PROT_READ
  size_t size_;
};

// Maps `path` read-only. A missing file, a directory, an empty file or one that cannot be
// read throws InputError "<path>: ..." (one line).
std::shared_ptr<MappedFile> mapped_file_open(const std::string& path);

}  // namespace speclab
