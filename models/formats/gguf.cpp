#include "models/formats/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/mapped_file.h"

namespace speclab {
namespace {

// Hard limits, checked before anything is allocated. Real files are far below them
// (Llama 3 GGUFs: ~300 tensors, ~40 keys, 128k-entry vocab arrays, 280k merges).
constexpr uint64_t kMaxTensors = 65536;
constexpr uint64_t kMaxKv = 65536;
constexpr uint64_t kMaxStringBytes = 64ull << 20;
constexpr uint64_t kMaxArrayLength = 1ull << 26;
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kDefaultAlignment = 32;

using VType = GgufValue::Type;

const char* gguf_type_name(VType t) {
  switch (t) {
    case VType::U8:
      return "u8";
    case VType::I8:
      return "i8";
    case VType::U16:
      return "u16";
    case VType::I16:
      return "i16";
    case VType::U32:
      return "u32";
    case VType::I32:
      return "i32";
    case VType::F32:
      return "f32";
    case VType::BOOL:
      return "bool";
    case VType::STRING:
      return "string";
    case VType::ARRAY:
      return "array";
    case VType::U64:
      return "u64";
    case VType::I64:
      return "i64";
    case VType::F64:
      return "f64";
  }
  return "?";
}

bool is_int_type(VType t) {
  return t == VType::U8 || t == VType::I8 || t == VType::U16 || t == VType::I16 ||
         t == VType::U32 || t == VType::I32 || t == VType::U64 || t == VType::I64;
}
bool is_float_type(VType t) { return t == VType::F32 || t == VType::F64; }

// Bytes of a fixed-size scalar; 0 for STRING / ARRAY (variable size).
uint64_t scalar_bytes(VType t) {
  switch (t) {
    case VType::U8:
    case VType::I8:
    case VType::BOOL:
      return 1;
    case VType::U16:
    case VType::I16:
      return 2;
    case VType::U32:
    case VType::I32:
    case VType::F32:
      return 4;
    case VType::U64:
    case VType::I64:
    case VType::F64:
      return 8;
    default:
      return 0;
  }
}

// ggml type numbers we can use as stored; anything else is rejected by number.
bool ggml_type_to_dtype(uint32_t ggml_type, DType* out) {
  switch (ggml_type) {
    case 0:
      *out = DType::F32;
      return true;
    case 1:
      *out = DType::F16;
      return true;
    case 2:
      *out = DType::Q4_0;
      return true;
    case 3:
      *out = DType::Q4_1;
      return true;
    case 8:
      *out = DType::Q8_0;
      return true;
    case 12:
      *out = DType::Q4_K;
      return true;
    case 14:
      *out = DType::Q6_K;
      return true;
    case 30:
      *out = DType::BF16;
      return true;
    default:
      return false;
  }
}

// Bounds-checked little-endian reader over the mapped header. Every read names what it was
// reading so that a truncated or corrupt file says where it went wrong.
class Cursor {
 public:
  Cursor(const std::string& path, const uint8_t* data, uint64_t size)
      : path_(path), data_(data), size_(size) {}
  uint64_t offset() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  void need(uint64_t n, const char* what) const {
    SPECLAB_INPUT_CHECK(n <= remaining(), path_, ": offset ", pos_, ": truncated reading ", what,
                        " (need ", n, " bytes, ", remaining(), " left of the file's ", size_, ")");
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));  // files are little-endian, as is x86/arm64
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const char* what) {
    const uint64_t at = pos_;
    const uint64_t len = read<uint64_t>(what);
    SPECLAB_INPUT_CHECK(len <= kMaxStringBytes, path_, ": offset ", at, ": ", what, " length ", len,
                        " exceeds the limit of ", kMaxStringBytes, " bytes");
    need(len, what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  const std::string& path_;
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// Reads one integer scalar of type t, widened to int64 (U64 above INT64_MAX rejected).
int64_t read_int(Cursor& cur, VType t, const std::string& path, const std::string& key) {
  switch (t) {
    case VType::U8:
      return cur.read<uint8_t>("u8 value");
    case VType::I8:
      return cur.read<int8_t>("i8 value");
    case VType::U16:
      return cur.read<uint16_t>("u16 value");
    case VType::I16:
      return cur.read<int16_t>("i16 value");
    case VType::U32:
      return cur.read<uint32_t>("u32 value");
    case VType::I32:
      return cur.read<int32_t>("i32 value");
    case VType::I64:
      return cur.read<int64_t>("i64 value");
    case VType::U64: {
      const uint64_t at = cur.offset();
      const uint64_t v = cur.read<uint64_t>("u64 value");
      SPECLAB_INPUT_CHECK(v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), path,
                          ": offset ", at, ": metadata key '", key, "' u64 value ", v,
                          " exceeds INT64_MAX");
      return static_cast<int64_t>(v);
    }
    case VType::BOOL: {
      const uint64_t at = cur.offset();
      const uint8_t v = cur.read<uint8_t>("bool value");
      SPECLAB_INPUT_CHECK(v <= 1, path, ": offset ", at, ": metadata key '", key,
                          "' bool value is ", static_cast<int>(v), ", expected 0 or 1");
      return v;
    }
    default:
      SPECLAB_ASSERT(false);
  }
}

double read_float(Cursor& cur, VType t) {
  if (t == VType::F32) return cur.read<float>("f32 value");
  return cur.read<double>("f64 value");
}

VType read_value_type(Cursor& cur, const std::string& path, const std::string& key,
                      const char* what) {
  const uint64_t at = cur.offset();
  const uint32_t t = cur.read<uint32_t>(what);
  SPECLAB_INPUT_CHECK(t <= static_cast<uint32_t>(VType::F64), path, ": offset ", at,
                      ": metadata key '", key, "' has unknown value type ", t, ", expected 0..12");
  return static_cast<VType>(t);
}

GgufValue read_value(Cursor& cur, const std::string& path, const std::string& key) {
  GgufValue v;
  v.type = read_value_type(cur, path, key, "metadata value type");
  if (v.type == VType::STRING) {
    v.s = cur.read_string("metadata string value");
  } else if (is_float_type(v.type)) {
    v.f = read_float(cur, v.type);
  } else if (v.type != VType::ARRAY) {
    v.i = read_int(cur, v.type, path, key);
  } else {
    v.array_type = read_value_type(cur, path, key, "array element type");
    SPECLAB_INPUT_CHECK(v.array_type != VType::ARRAY, path, ": offset ", cur.offset() - 4,
                        ": metadata key '", key, "' is a nested array, which is not supported");
    const uint64_t at = cur.offset();
    const uint64_t n = cur.read<uint64_t>("array length");
    SPECLAB_INPUT_CHECK(n <= kMaxArrayLength, path, ": offset ", at, ": metadata key '", key,
                        "' array length ", n, " exceeds the limit of ", kMaxArrayLength);
    // Each element takes at least this many bytes (a string at least its u64 length), so a
    // length the rest of the file cannot hold is rejected before we reserve memory for it.
    const uint64_t min_elem = v.array_type == VType::STRING ? 8 : scalar_bytes(v.array_type);
    SPECLAB_INPUT_CHECK(n * min_elem <= cur.remaining(), path, ": offset ", at, ": metadata key '",
                        key, "' array of ", n, " ", gguf_type_name(v.array_type),
                        " does not fit in the remaining ", cur.remaining(), " bytes of the file");
    if (v.array_type == VType::STRING) {
      v.strings.reserve(n);
      for (uint64_t k = 0; k < n; k++) v.strings.push_back(cur.read_string("array string"));
    } else if (is_float_type(v.array_type)) {
      v.floats.reserve(n);
      for (uint64_t k = 0; k < n; k++) v.floats.push_back(read_float(cur, v.array_type));
    } else {
      v.ints.reserve(n);
      for (uint64_t k = 0; k < n; k++) v.ints.push_back(read_int(cur, v.array_type, path, key));
    }
  }
  return v;
}

}  // namespace

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path, FileBytes bytes) {
  std::shared_ptr<MappedFile> file = mapped_file_open(path, bytes);
  Cursor cur(path, file->data(), file->size());
  auto out = std::unique_ptr<GgufFile>(new GgufFile());
  out->path_ = path;

  cur.need(4, "magic");
  SPECLAB_INPUT_CHECK(std::memcmp(file->data(), "GGUF", 4) == 0, path,
                      ": offset 0: bad magic, expected \"GGUF\"");
  cur.read<uint32_t>("magic");
  out->version_ = cur.read<uint32_t>("version");
  SPECLAB_INPUT_CHECK(out->version_ == 2 || out->version_ == 3, path,
                      ": offset 4: unsupported GGUF version ", out->version_, ", expected 2 or 3");
  const uint64_t n_tensors = cur.read<uint64_t>("tensor count");
  SPECLAB_INPUT_CHECK(n_tensors <= kMaxTensors, path, ": offset 8: tensor count ", n_tensors,
                      " exceeds the limit of ", kMaxTensors);
  const uint64_t n_kv = cur.read<uint64_t>("metadata count");
  SPECLAB_INPUT_CHECK(n_kv <= kMaxKv, path, ": offset 16: metadata count ", n_kv,
                      " exceeds the limit of ", kMaxKv);

  for (uint64_t k = 0; k < n_kv; k++) {
    const uint64_t at = cur.offset();
    std::string key = cur.read_string("metadata key");
    SPECLAB_INPUT_CHECK(out->kv_.count(key) == 0, path, ": offset ", at, ": metadata key '", key,
                        "' appears twice");
    GgufValue v = read_value(cur, path, key);
    out->kv_.emplace(std::move(key), std::move(v));
  }

  uint64_t alignment = kDefaultAlignment;
  if (out->has("general.alignment")) {
    const int64_t a = out->get_int("general.alignment");
    // At least 8: a smaller alignment lets F16/BF16 rows and quantized blocks start at
    // addresses the kernels cannot load from (fuzzing found alignment 1 with an odd offset).
    SPECLAB_INPUT_CHECK(a >= 8 && (a & (a - 1)) == 0 && a <= (1 << 20), path,
                        ": metadata key 'general.alignment' = ", a,
                        ", expected a power of two from 8 to 2^20");
    alignment = static_cast<uint64_t>(a);
  }

  // Tensor infos; offsets are relative to the data section, which we only know afterwards.
  struct Info {
    uint64_t offset;
    uint64_t nbytes;
  };
  std::vector<Info> infos;
  std::set<std::string> names;
  for (uint64_t k = 0; k < n_tensors; k++) {
    TensorView view;
    view.name = cur.read_string("tensor name");
    const std::string& name = view.name;
    SPECLAB_INPUT_CHECK(names.insert(name).second, path, ": tensor '", name, "' appears twice");
    const uint64_t dims_at = cur.offset();
    const uint32_t n_dims = cur.read<uint32_t>("tensor n_dims");
    SPECLAB_INPUT_CHECK(n_dims >= 1 && n_dims <= kMaxDims, path, ": offset ", dims_at, ": tensor '",
                        name, "' has n_dims ", n_dims, ", expected 1..", kMaxDims);
    uint64_t ne[kMaxDims];  // innermost first, as stored
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
      ne[d] = cur.read<uint64_t>("tensor dimension");
      SPECLAB_INPUT_CHECK(ne[d] >= 1 && ne[d] <= static_cast<uint64_t>(INT64_MAX), path,
                          ": offset ", dims_at, ": tensor '", name, "' dimension ", d, " is ",
                          ne[d], ", expected >= 1");
      SPECLAB_INPUT_CHECK(!__builtin_mul_overflow(numel, ne[d], &numel) &&
                              numel <= static_cast<uint64_t>(INT64_MAX),
                          path, ": offset ", dims_at, ": tensor '", name,
                          "' element count overflows 64 bits");
    }
    const uint64_t type_at = cur.offset();
    const uint32_t ggml_type = cur.read<uint32_t>("tensor type");
    SPECLAB_INPUT_CHECK(
        ggml_type_to_dtype(ggml_type, &view.dtype), path, ": offset ", type_at, ": tensor '", name,
        "' has unsupported ggml type ", ggml_type,
        ", expected F32=0, F16=1, Q4_0=2, Q4_1=3, Q8_0=8, Q4_K=12, Q6_K=14 or BF16=30");
    const uint64_t block = static_cast<uint64_t>(dtype_block_size(view.dtype));
    SPECLAB_INPUT_CHECK(ne[0] % block == 0, path, ": tensor '", name, "' innermost dimension ",
                        ne[0], " is not a multiple of ", block, " as ", dtype_name(view.dtype),
                        " requires");
    uint64_t nbytes = 0;
    SPECLAB_INPUT_CHECK(
        !__builtin_mul_overflow(numel / block, static_cast<uint64_t>(dtype_block_bytes(view.dtype)),
                                &nbytes),
        path, ": tensor '", name, "' byte size overflows 64 bits");
    const uint64_t offset_at = cur.offset();
    const uint64_t offset = cur.read<uint64_t>("tensor data offset");
    SPECLAB_INPUT_CHECK(offset % alignment == 0, path, ": offset ", offset_at, ": tensor '", name,
                        "' data offset ", offset, " is not a multiple of the alignment ",
                        alignment);
    for (uint32_t d = 0; d < n_dims; d++)
      view.shape.push_back(static_cast<int64_t>(ne[n_dims - 1 - d]));
    view.nbytes = static_cast<size_t>(nbytes);
    out->tensors_.push_back(std::move(view));
    infos.push_back({offset, nbytes});
  }

  // The data section starts at the next multiple of the alignment after the header.
  const uint64_t header_end = cur.offset();
  const uint64_t data_start = (header_end + alignment - 1) / alignment * alignment;
  const uint64_t file_size = file->size();
  if (n_tensors > 0) {
    SPECLAB_INPUT_CHECK(data_start <= file_size, path, ": data section would start at offset ",
                        data_start, ", past the end of the file (", file_size, " bytes)");
  }
  const uint64_t data_size = data_start <= file_size ? file_size - data_start : 0;
  for (size_t k = 0; k < infos.size(); k++) {
    const Info& info = infos[k];
    SPECLAB_INPUT_CHECK(info.offset <= data_size && info.nbytes <= data_size - info.offset, path,
                        ": tensor '", out->tensors_[k].name, "' data [", info.offset, ", +",
                        info.nbytes, ") lies outside the data section (", data_size,
                        " bytes from file offset ", data_start, ")");
    out->tensors_[k].data = file->data() + data_start + info.offset;
  }
  // No two tensors may share bytes: sorted by offset, each starts at or after the previous end.
  std::vector<size_t> order(infos.size());
  for (size_t k = 0; k < order.size(); k++) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return infos[a].offset < infos[b].offset; });
  for (size_t k = 1; k < order.size(); k++) {
    const Info& prev = infos[order[k - 1]];
    const Info& cur_info = infos[order[k]];
    SPECLAB_INPUT_CHECK(cur_info.offset >= prev.offset + prev.nbytes, path, ": tensors '",
                        out->tensors_[order[k - 1]].name, "' [", prev.offset, ", ",
                        prev.offset + prev.nbytes, ") and '", out->tensors_[order[k]].name, "' [",
                        cur_info.offset, ", ", cur_info.offset + cur_info.nbytes, ") overlap");
  }
  out->storage_ = file;
  return out;
}

namespace {
[[noreturn]] void fail_type(const std::string& path, const std::string& key, const GgufValue& v,
                            const char* expected) {
  if (v.type == VType::ARRAY)
    fail_input(path, ": metadata key '", key, "' has type array of ", gguf_type_name(v.array_type),
               ", expected ", expected);
  fail_input(path, ": metadata key '", key, "' has type ", gguf_type_name(v.type), ", expected ",
             expected);
}
}  // namespace

#define SPECLAB_GGUF_LOOKUP(key)                                                      \
  auto it_ = kv_.find(key);                                                           \
  SPECLAB_INPUT_CHECK(it_ != kv_.end(), path_, ": metadata key '", key, "' missing"); \
  const GgufValue& v = it_->second

std::string GgufFile::get_string(const std::string& key) const {
  SPECLAB_GGUF_LOOKUP(key);
  if (v.type != VType::STRING) fail_type(path_, key, v, "string");
  return v.s;
}

int64_t GgufFile::get_int(const std::string& key) const {
  SPECLAB_GGUF_LOOKUP(key);
  if (!is_int_type(v.type)) fail_type(path_, key, v, "an integer");
  return v.i;
}

double GgufFile::get_float(const std::string& key) const {
  SPECLAB_GGUF_LOOKUP(key);
  if (is_float_type(v.type)) return v.f;
  if (is_int_type(v.type)) return static_cast<double>(v.i);
  fail_type(path_, key, v, "a number");
}

bool GgufFile::get_bool(const std::string& key) const {
  SPECLAB_GGUF_LOOKUP(key);
  if (v.type != VType::BOOL) fail_type(path_, key, v, "bool");
  return v.i != 0;
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  SPECLAB_GGUF_LOOKUP(key);
  if (v.type != VType::ARRAY || v.array_type != VType::STRING)
    fail_type(path_, key, v, "array of string");
  return v.strings;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  SPECLAB_GGUF_LOOKUP(key);
  if (v.type != VType::ARRAY || !(is_int_type(v.array_type) || v.array_type == VType::BOOL))
    fail_type(path_, key, v, "array of integers");
  return v.ints;
}

std::vector<double> GgufFile::get_float_array(const std::string& key) const {
  SPECLAB_GGUF_LOOKUP(key);
  if (v.type != VType::ARRAY) fail_type(path_, key, v, "array of numbers");
  if (is_float_type(v.array_type)) return v.floats;
  if (is_int_type(v.array_type)) return std::vector<double>(v.ints.begin(), v.ints.end());
  fail_type(path_, key, v, "array of numbers");
}

#undef SPECLAB_GGUF_LOOKUP

int64_t GgufFile::get_int_or(const std::string& key, int64_t def) const {
  return has(key) ? get_int(key) : def;
}

double GgufFile::get_float_or(const std::string& key, double def) const {
  return has(key) ? get_float(key) : def;
}

const TensorView* GgufFile::find_tensor(const std::string& name) const {
  for (const TensorView& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace speclab
