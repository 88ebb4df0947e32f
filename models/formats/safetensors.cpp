#include "models/formats/safetensors.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/json_input.h"
#include "core/mapped_file.h"

namespace speclab {
namespace {

using json = nlohmann::json;

// A header this large is not a real model (Llama 3 405B shards have ~100 KB headers);
// the limit keeps a corrupt length from making us parse gigabytes of "JSON".
constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;

bool parse_safetensors_dtype(const std::string& s, DType* out) {
  if (s == "F32")
    *out = DType::F32;
  else if (s == "F16")
    *out = DType::F16;
  else if (s == "BF16")
    *out = DType::BF16;
  else
    return false;
  return true;
}

// A JSON value that must be a non-negative integer that fits in int64.
bool json_to_u63(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
  } else if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < 0) return false;
    *out = static_cast<uint64_t>(i);
  } else {
    return false;
  }
  return *out <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path, FileBytes held_as) {
  std::shared_ptr<MappedFile> file = mapped_file_open(path, held_as);
  const uint8_t* bytes = file->data();
  const uint64_t file_size = file->size();
  SPECLAB_INPUT_CHECK(file_size >= 8, path, ": file has ", file_size,
                      " bytes, too short for the 8-byte safetensors header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; i--) header_len = (header_len << 8) | bytes[i];  // little-endian u64
  SPECLAB_INPUT_CHECK(header_len <= kMaxHeaderBytes, path, ": header length ", header_len,
                      " at offset 0 exceeds the limit of ", kMaxHeaderBytes, " bytes");
  SPECLAB_INPUT_CHECK(header_len <= file_size - 8, path, ": header length ", header_len,
                      " at offset 0 is longer than the rest of the file (", file_size - 8,
                      " bytes)");

  json header;
  try {
    const std::string_view text(reinterpret_cast<const char*>(bytes) + 8, header_len);
    json_input_check_depth(text, path);
    // JSON objects keep the last of two equal keys; two tensors of one name are a broken
    // file, not a choice for us to make silently.
    std::set<std::string> names;
    std::string duplicate;
    const json::parser_callback_t refuse_duplicates = [&](int depth, json::parse_event_t event,
                                                          json& parsed) {
      if (depth == 1 && event == json::parse_event_t::key &&
          !names.insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    };
    header = json::parse(text.begin(), text.end(), refuse_duplicates);
    SPECLAB_INPUT_CHECK(duplicate.empty(), path, ": header names tensor '", duplicate,
                        "' twice, expected unique tensor names");
  } catch (const json::exception& e) {
    fail_input(path, ": header is not valid JSON (", e.what(), ")");
  }
  SPECLAB_INPUT_CHECK(header.is_object(), path, ": header JSON is a ", header.type_name(),
                      ", expected an object of tensors");

  auto out = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  out->path_ = path;
  // Data section: bytes [8 + header_len, file_size); tensor offsets are relative to it.
  const uint8_t* data_begin = bytes + 8 + header_len;
  const uint64_t data_size = file_size - 8 - header_len;
  struct Extent {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Extent> extents;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") continue;  // free-form string map; we have no use for it
    const json& info = it.value();
    SPECLAB_INPUT_CHECK(info.is_object(), path, ": tensor '", name, "' entry is a ",
                        info.type_name(), ", expected an object");
    SPECLAB_INPUT_CHECK(info.contains("dtype") && info["dtype"].is_string(), path, ": tensor '",
                        name, "' has no string 'dtype'");
    SPECLAB_INPUT_CHECK(info.contains("shape") && info["shape"].is_array(), path, ": tensor '",
                        name, "' has no array 'shape'");
    SPECLAB_INPUT_CHECK(info.contains("data_offsets") && info["data_offsets"].is_array() &&
                            info["data_offsets"].size() == 2,
                        path, ": tensor '", name, "' has no 'data_offsets' [begin, end]");
    const std::string dtype_str = info["dtype"].get<std::string>();
    TensorView view;
    view.name = name;
    SPECLAB_INPUT_CHECK(parse_safetensors_dtype(dtype_str, &view.dtype), path, ": tensor '", name,
                        "' has unsupported dtype '", dtype_str, "', expected F32, F16 or BF16");
    // numel with overflow checks: a corrupt shape must not wrap around to a small size.
    uint64_t numel = 1;
    for (const json& d : info["shape"]) {
      uint64_t dim = 0;
      SPECLAB_INPUT_CHECK(json_to_u63(d, &dim), path, ": tensor '", name, "' shape ",
                          info["shape"].dump(), " has an entry that is not a non-negative integer");
      SPECLAB_INPUT_CHECK(!__builtin_mul_overflow(numel, dim, &numel), path, ": tensor '", name,
                          "' shape ", info["shape"].dump(), " overflows 64 bits");
      view.shape.push_back(static_cast<int64_t>(dim));
    }
    uint64_t expected_bytes = 0;
    SPECLAB_INPUT_CHECK(
        !__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_block_bytes(view.dtype)),
                                &expected_bytes),
        path, ": tensor '", name, "' byte size overflows 64 bits");
    uint64_t begin = 0, end = 0;
    SPECLAB_INPUT_CHECK(
        json_to_u63(info["data_offsets"][0], &begin) && json_to_u63(info["data_offsets"][1], &end),
        path, ": tensor '", name, "' data_offsets ", info["data_offsets"].dump(),
        " are not non-negative integers");
    SPECLAB_INPUT_CHECK(begin <= end, path, ": tensor '", name, "' data offsets [", begin, ", ",
                        end, "] have begin > end");
    SPECLAB_INPUT_CHECK(end <= data_size, path, ": tensor '", name, "' data offsets [", begin, ", ",
                        end, "] lie outside the data section (", data_size, " bytes)");
    SPECLAB_INPUT_CHECK(end - begin == expected_bytes, path, ": tensor '", name, "' data offsets [",
                        begin, ", ", end, "] span ", end - begin, " bytes, but shape ",
                        info["shape"].dump(), " of ", dtype_str, " needs ", expected_bytes);
    view.data = data_begin + begin;
    view.nbytes = static_cast<size_t>(expected_bytes);
    extents.push_back({begin, end, name});
    out->tensors_.push_back(std::move(view));
  }
  // Overlap check: sorted by begin, each non-empty tensor must start at or after the
  // previous one's end.
  std::sort(extents.begin(), extents.end(),
            [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
  const Extent* prev = nullptr;
  for (const Extent& e : extents) {
    if (e.begin == e.end) continue;
    if (prev != nullptr) {
      SPECLAB_INPUT_CHECK(e.begin >= prev->end, path, ": tensors '", prev->name, "' [", prev->begin,
                          ", ", prev->end, ") and '", e.name, "' [", e.begin, ", ", e.end,
                          ") overlap");
    }
    prev = &e;
  }
  out->storage_ = file;
  return out;
}

const TensorView* SafetensorsFile::find_tensor(const std::string& name) const {
  for (const TensorView& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

std::unique_ptr<SafetensorsSet> SafetensorsSet::open_dir(const std::string& dir, FileBytes bytes) {
  auto out = std::unique_ptr<SafetensorsSet>(new SafetensorsSet());
  const std::string index_path = dir + "/model.safetensors.index.json";
  const std::string single_path = dir + "/model.safetensors";
  if (!file_exists(index_path)) {
    SPECLAB_INPUT_CHECK(file_exists(single_path), dir,
                        ": no model.safetensors or model.safetensors.index.json");
    out->files_.push_back(SafetensorsFile::open(single_path, bytes));
    for (const TensorView& t : out->files_.back()->tensors()) {
      out->by_name_[t.name] = &t;
      out->file_of_[t.name] = single_path;
    }
    return out;
  }

  std::shared_ptr<MappedFile> index_file = mapped_file_open(index_path);
  json index;
  try {
    index = json_input_parse(
        std::string_view(reinterpret_cast<const char*>(index_file->data()), index_file->size()),
        index_path);
  } catch (const json::exception& e) {
    fail_input(index_path, ": not valid JSON (", e.what(), ")");
  }
  SPECLAB_INPUT_CHECK(
      index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(),
      index_path, ": key 'weight_map' missing or not an object");
  std::map<std::string, SafetensorsFile*> shard_by_name;
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
    SPECLAB_INPUT_CHECK(it.value().is_string(), index_path, ": weight_map['", it.key(),
                        "'] is not a string file name");
    const std::string shard = it.value().get<std::string>();
    // Shards live beside the index; a path elsewhere is not a checkpoint we made sense of.
    SPECLAB_INPUT_CHECK(
        !shard.empty() && shard.find('/') == std::string::npos && shard != ".." && shard != ".",
        index_path, ": weight_map['", it.key(), "'] = '", shard,
        "' is not a plain file name in the model directory");
    auto found = shard_by_name.find(shard);
    if (found == shard_by_name.end()) {
      out->files_.push_back(SafetensorsFile::open(dir + "/" + shard, bytes));
      found = shard_by_name.emplace(shard, out->files_.back().get()).first;
    }
    const TensorView* t = found->second->find_tensor(it.key());
    SPECLAB_INPUT_CHECK(t != nullptr, index_path, ": tensor '", it.key(), "' is mapped to '", shard,
                        "' but that file does not contain it");
    out->by_name_[it.key()] = t;
    out->file_of_[it.key()] = dir + "/" + shard;
  }
  return out;
}

const TensorView* SafetensorsSet::find_tensor(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::string SafetensorsSet::file_of(const std::string& name) const {
  auto it = file_of_.find(name);
  return it == file_of_.end() ? std::string() : it->second;
}

std::vector<const TensorView*> SafetensorsSet::all_tensors() const {
  std::vector<const TensorView*> out;
  for (const auto& kv : by_name_) out.push_back(kv.second);
  return out;
}

bool SafetensorsSet::copied() const {
  for (const auto& f : files_)
    if (!f->copied()) return false;
  return !files_.empty();
}

std::vector<std::shared_ptr<void>> SafetensorsSet::storage() const {
  std::vector<std::shared_ptr<void>> out;
  for (const auto& f : files_) out.push_back(f->storage());
  return out;
}

}  // namespace speclab
