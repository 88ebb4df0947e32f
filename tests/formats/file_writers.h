// Tiny writers of safetensors and GGUF files for tests (header-only, test code only).
//
// They write exactly the byte layouts that models/formats/*.cpp parse, and they let a test
// break one thing at a time (a wrong offset, a bad type number) to check the error path.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace speclab {
namespace testing {

using Bytes = std::vector<uint8_t>;

inline void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}
inline Bytes read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "speclab-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

template <typename T>
void put(Bytes& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}
inline void put_str(Bytes& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}
template <typename T>
Bytes as_bytes(const std::vector<T>& v) {
  Bytes out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// [u64 little-endian size][bytes]: the safetensors header layout. Written into a buffer of the
// final size rather than grown by put + insert, where GCC 12 reports a false -Warray-bounds
// in vector::insert's reallocation of the 8-byte prefix.
inline Bytes length_prefixed(const std::string& text) {
  Bytes out(sizeof(uint64_t) + text.size());
  const uint64_t size = text.size();
  std::memcpy(out.data(), &size, sizeof size);
  if (!text.empty()) std::memcpy(out.data() + sizeof size, text.data(), text.size());
  return out;
}

// safetensors: tensors packed in order; header = JSON built from the entries (or raw).
struct SafetensorsTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", or anything for error tests
  std::vector<int64_t> shape;
  Bytes data;
};
inline Bytes safetensors_build(const std::vector<SafetensorsTensor>& tensors,
                               nlohmann::json* header_out = nullptr) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  if (header_out) *header_out = header;
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');  // keeps the data 8-aligned, as HF does
  Bytes out = length_prefixed(text);
  for (const auto& t : tensors) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}
// A file from a raw header string and data bytes (for malformed headers).
inline Bytes safetensors_build_raw(const std::string& header, const Bytes& data) {
  Bytes out = length_prefixed(header);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// GGUF: metadata as pre-encoded (type, payload) pairs, tensors with innermost-first dims.
enum GgufType : uint32_t {
  kGgufU8 = 0,
  kGgufI8 = 1,
  kGgufU16 = 2,
  kGgufI16 = 3,
  kGgufU32 = 4,
  kGgufI32 = 5,
  kGgufF32 = 6,
  kGgufBool = 7,
  kGgufString = 8,
  kGgufArray = 9,
  kGgufU64 = 10,
  kGgufI64 = 11,
  kGgufF64 = 12
};
enum GgmlType : uint32_t {
  kGgmlF32 = 0,
  kGgmlF16 = 1,
  kGgmlQ4_0 = 2,
  kGgmlQ4_1 = 3,
  kGgmlQ8_0 = 8,
  kGgmlQ4_K = 12,
  kGgmlQ6_K = 14,
  kGgmlBF16 = 30
};

struct GgufWriter {
  struct Kv {
    std::string key;
    uint32_t type;
    Bytes payload;
  };
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;  // innermost first, as GGUF stores it
    uint32_t type;
    Bytes data;
    int64_t offset_override = -1;  // write this offset instead of the packed one
  };
  uint32_t version = 3;
  uint64_t alignment = 32;
  std::vector<Kv> kvs;
  std::vector<Tensor> tensors;

  template <typename T>
  void scalar(const std::string& key, uint32_t type, T v) {
    Bytes p;
    put<T>(p, v);
    kvs.push_back({key, type, p});
  }
  void u32(const std::string& key, uint32_t v) { scalar(key, kGgufU32, v); }
  void f32(const std::string& key, float v) { scalar(key, kGgufF32, v); }
  void str(const std::string& key, const std::string& v) {
    Bytes p;
    put_str(p, v);
    kvs.push_back({key, kGgufString, p});
  }
  void str_array(const std::string& key, const std::vector<std::string>& v) {
    Bytes p;
    put<uint32_t>(p, kGgufString);
    put<uint64_t>(p, v.size());
    for (const auto& s : v) put_str(p, s);
    kvs.push_back({key, kGgufArray, p});
  }
  template <typename T>
  void array(const std::string& key, uint32_t elem_type, const std::vector<T>& v) {
    Bytes p;
    put<uint32_t>(p, elem_type);
    put<uint64_t>(p, v.size());
    for (const T& x : v) put<T>(p, x);
    kvs.push_back({key, kGgufArray, p});
  }
  void tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, Bytes data) {
    tensors.push_back({name, std::move(ne), type, std::move(data)});
  }

  // Header, padding to the alignment, then tensors each at an aligned offset. The file
  // ends exactly at the end of the last tensor (no trailing padding).
  Bytes build() const {
    Bytes out = {'G', 'G', 'U', 'F'};
    put<uint32_t>(out, version);
    put<uint64_t>(out, tensors.size());
    put<uint64_t>(out, kvs.size());
    for (const auto& kv : kvs) {
      put_str(out, kv.key);
      put<uint32_t>(out, kv.type);
      out.insert(out.end(), kv.payload.begin(), kv.payload.end());
    }
    std::vector<uint64_t> offsets;
    uint64_t offset = 0;
    for (const auto& t : tensors) {
      offset = (offset + alignment - 1) / alignment * alignment;
      offsets.push_back(t.offset_override >= 0 ? static_cast<uint64_t>(t.offset_override) : offset);
      offset += t.data.size();
    }
    for (size_t k = 0; k < tensors.size(); k++) {
      const auto& t = tensors[k];
      put_str(out, t.name);
      put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne) put<uint64_t>(out, d);
      put<uint32_t>(out, t.type);
      put<uint64_t>(out, offsets[k]);
    }
    if (tensors.empty()) return out;
    const size_t data_start = (out.size() + alignment - 1) / alignment * alignment;
    out.resize(data_start, 0);
    uint64_t packed = 0;
    for (const auto& t : tensors) {
      packed = (packed + alignment - 1) / alignment * alignment;
      out.resize(data_start + packed, 0);
      out.insert(out.end(), t.data.begin(), t.data.end());
      packed += t.data.size();
    }
    return out;
  }
};

}  // namespace testing
}  // namespace speclab
