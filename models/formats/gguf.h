// GGUF v3 reader (llama.cpp's model file format), mmap-backed, bounds-checked.
//
// File layout: magic "GGUF", u32 version (3; 2 also accepted), u64 n_tensors, u64 n_kv,
// n_kv metadata key/values, n_tensors tensor infos (name, n_dims, dims innermost-first,
// ggml type, offset relative to the data section), padding to general.alignment (32),
// then the data section. Every length, count, offset and size is checked against the
// file size and hard limits before anything is allocated; a violation throws InputError
// naming the file, the byte offset or key, and what was expected.
//
// Tensor views are returned with shapes outermost-first (GGUF stores them innermost-first),
// so a GGUF "blk.0.attn_q.weight" with ne = {dim, n_heads*head_dim} becomes shape
// {n_heads*head_dim, dim}, matching the HF layout of LlamaWeights.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor_view.h"

namespace speclab {

// One metadata value. Arrays keep their element type; scalars are stored widened.
struct GgufValue {
  enum class Type : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12
  };
  Type type = Type::U8;
  Type array_type = Type::U8;  // element type when type == ARRAY
  int64_t i = 0;               // integer and bool scalars (U64 values above INT64_MAX are rejected)
  double f = 0;                // float scalars
  std::string s;               // string scalars
  std::vector<int64_t> ints;   // integer/bool arrays
  std::vector<double> floats;  // float arrays
  std::vector<std::string> strings;  // string arrays
};

class GgufFile {
 public:
  // Opens and validates the whole header. Throws InputError. `bytes`: how the file is held
  // (core/mapped_file.h; a model's weights are loaded with kHugePagesWhereGranted).
  static std::unique_ptr<GgufFile> open(const std::string& path,
                                        FileBytes bytes = FileBytes::kMapped);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  const std::map<std::string, GgufValue>& metadata() const { return kv_; }
  bool has(const std::string& key) const { return kv_.count(key) != 0; }

  // Typed getters: throw InputError "<file>: metadata key '<key>' missing" or
  // "... has type X, expected Y".
  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;   // any integer type
  double get_float(const std::string& key) const;  // F32/F64 (integers accepted)
  bool get_bool(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;
  std::vector<double> get_float_array(const std::string& key) const;
  // Getters with a default for optional keys (still throw on a wrong type).
  int64_t get_int_or(const std::string& key, int64_t def) const;
  double get_float_or(const std::string& key, double def) const;

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find_tensor(const std::string& name) const;  // null if absent

  // The bytes the tensor views point into; keep them alive while they are used.
  std::shared_ptr<void> storage() const { return storage_; }
  // Whether those bytes are a copy in huge pages rather than the mapping (core/mapped_file.h).
  bool copied() const { return storage_->copied(); }

 private:
  std::string path_;
  uint32_t version_ = 0;
  std::map<std::string, GgufValue> kv_;
  std::vector<TensorView> tensors_;
  std::shared_ptr<MappedFile> storage_;
};

}  // namespace speclab
