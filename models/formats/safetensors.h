// safetensors reader, mmap-backed, bounds-checked.
//
// Layout: u64 little-endian header length N, N bytes of JSON
// {"name": {"dtype": "BF16", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the data section; offsets are relative to its start. We check: N fits in the file
// and under a hard limit, the JSON parses, dtypes are supported (F32/F16/BF16), begin <= end,
// end inside the file, end - begin == numel * element size (with overflow-safe arithmetic),
// and tensors do not overlap. Violations throw InputError naming the file and the tensor.
//
// Sharded checkpoints: model.safetensors.index.json {"weight_map": {"name": "file", ...}}
// opened with SafetensorsSet::open_dir.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor_view.h"

namespace speclab {

class SafetensorsFile {
 public:
  // Throws InputError. `bytes`: how the file is held (core/mapped_file.h).
  static std::unique_ptr<SafetensorsFile> open(const std::string& path,
                                               FileBytes bytes = FileBytes::kMapped);
  const std::string& path() const { return path_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find_tensor(const std::string& name) const;
  std::shared_ptr<void> storage() const { return storage_; }
  // Whether the bytes are a copy in huge pages rather than the mapping (core/mapped_file.h).
  bool copied() const { return storage_->copied(); }

 private:
  std::string path_;
  std::vector<TensorView> tensors_;
  std::shared_ptr<MappedFile> storage_;
};

// All tensors of an HF model directory: model.safetensors, or the shards named by
// model.safetensors.index.json (every tensor in the weight map must be found in its shard).
class SafetensorsSet {
 public:
  // Throws InputError; every shard held as `bytes` says.
  static std::unique_ptr<SafetensorsSet> open_dir(const std::string& dir,
                                                  FileBytes bytes = FileBytes::kMapped);
  const TensorView* find_tensor(const std::string& name) const;  // null if absent
  std::vector<const TensorView*> all_tensors() const;
  std::vector<std::shared_ptr<void>> storage() const;
  bool copied() const;  // every file's bytes copied into huge pages
  // Path of the file holding tensor `name` ("" if absent), for error messages.
  std::string file_of(const std::string& name) const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> by_name_;
  std::map<std::string, std::string> file_of_;
};

}  // namespace speclab
