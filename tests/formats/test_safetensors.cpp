// safetensors reader: exact values from files the test writes, sharded directories, and a
// catalogue of bad files, each an InputError naming the file and the problem.
#include <gtest/gtest.h>

#include "core/mapped_file.h"
#include "models/formats/safetensors.h"
#include "tests/formats/expect_input_error.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using namespace testing;  // NOLINT: test helpers

std::vector<SafetensorsTensor> valid_tensors() {
  std::vector<float> f32 = {1.5f, -2.25f, 3.0f, 1e-30f, -0.0f, 7.0f};  // [2, 3]
  std::vector<uint16_t> f16 = {f32_to_fp16(0.5f), f32_to_fp16(-65504.0f), f32_to_fp16(3.0f),
                               f32_to_fp16(0.0f)};  // [4]
  std::vector<uint16_t> bf16;
  for (int k = 0; k < 6; k++) bf16.push_back(f32_to_bf16(static_cast<float>(k * k) - 4.0f));
  return {{"a.f32", "F32", {2, 3}, as_bytes(f32)},
          {"b.f16", "F16", {4}, as_bytes(f16)},
          {"c.bf16", "BF16", {3, 1, 2}, as_bytes(bf16)}};
}

std::vector<float> to_f32(const TensorView& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  dtype_to_f32(t.dtype, t.data, out.data(), t.numel());
  return out;
}

TEST(Safetensors, ValuesReadBackExactlyInPlace) {
  TempDir dir;
  write_bytes(dir.file("model.safetensors"), safetensors_build(valid_tensors()));
  auto f = SafetensorsFile::open(dir.file("model.safetensors"));
  ASSERT_EQ(f->tensors().size(), 3u);
  const TensorView* a = f->find_tensor("a.f32");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::F32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->nbytes, 24u);
  EXPECT_EQ(to_f32(*a), (std::vector<float>{1.5f, -2.25f, 3.0f, 1e-30f, -0.0f, 7.0f}));
  const TensorView* b = f->find_tensor("b.f16");
  EXPECT_EQ(b->dtype, DType::F16);
  EXPECT_EQ(to_f32(*b), (std::vector<float>{0.5f, -65504.0f, 3.0f, 0.0f}));
  const TensorView* c = f->find_tensor("c.bf16");
  EXPECT_EQ(c->dtype, DType::BF16);
  EXPECT_EQ(c->shape, (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(to_f32(*c), (std::vector<float>{-4, -3, 0, 5, 12, 21}));
  EXPECT_EQ(f->find_tensor("__metadata__"), nullptr);
  EXPECT_EQ(f->find_tensor("absent"), nullptr);
  auto mapped = std::static_pointer_cast<MappedFile>(f->storage());
  for (const TensorView& t : f->tensors()) {
    const auto* p = static_cast<const uint8_t*>(t.data);
    EXPECT_TRUE(p >= mapped->data() && p + t.nbytes <= mapped->data() + mapped->size()) << t.name;
  }
}

TEST(Safetensors, SingleFileDirectory) {
  TempDir dir;
  write_bytes(dir.file("model.safetensors"), safetensors_build(valid_tensors()));
  auto set = SafetensorsSet::open_dir(dir.path());
  EXPECT_EQ(set->all_tensors().size(), 3u);
  EXPECT_EQ(set->storage().size(), 1u);
  ASSERT_NE(set->find_tensor("b.f16"), nullptr);
  EXPECT_EQ(to_f32(*set->find_tensor("b.f16"))[1], -65504.0f);
  EXPECT_EQ(set->file_of("b.f16"), dir.file("model.safetensors"));
}

TEST(Safetensors, ShardedDirectory) {
  TempDir dir;
  auto t = valid_tensors();
  write_bytes(dir.file("model-00001-of-00002.safetensors"), safetensors_build({t[0], t[1]}));
  write_bytes(dir.file("model-00002-of-00002.safetensors"), safetensors_build({t[2]}));
  write_text(dir.file("model.safetensors.index.json"),
             R"({"metadata": {"total_size": 44}, "weight_map": {
                 "a.f32": "model-00001-of-00002.safetensors",
                 "b.f16": "model-00001-of-00002.safetensors",
                 "c.bf16": "model-00002-of-00002.safetensors"}})");
  auto set = SafetensorsSet::open_dir(dir.path());
  EXPECT_EQ(set->all_tensors().size(), 3u);
  EXPECT_EQ(set->storage().size(), 2u);
  EXPECT_EQ(to_f32(*set->find_tensor("c.bf16"))[5], 21.0f);
  EXPECT_EQ(to_f32(*set->find_tensor("a.f32"))[0], 1.5f);
  EXPECT_EQ(set->file_of("c.bf16"), dir.file("model-00002-of-00002.safetensors"));
}

TEST(Safetensors, ShardedDirectoryErrors) {
  TempDir dir;
  auto t = valid_tensors();
  write_bytes(dir.file("s1.safetensors"), safetensors_build({t[0]}));
  const std::string index = dir.file("model.safetensors.index.json");
  write_text(index, R"({"weight_map": {"b.f16": "s1.safetensors"}})");
  expect_input_error([&] { SafetensorsSet::open_dir(dir.path()); },
                     {index, "'b.f16'", "does not contain it"});
  write_text(index, R"({"weight_map": {"a.f32": "missing.safetensors"}})");
  expect_input_error([&] { SafetensorsSet::open_dir(dir.path()); },
                     {dir.file("missing.safetensors"), "cannot open"});
  write_text(index, R"({"weight_map": {"a.f32": "../s1.safetensors"}})");
  expect_input_error([&] { SafetensorsSet::open_dir(dir.path()); },
                     {index, "not a plain file name"});
  write_text(index, R"({"weight_map": {"a.f32": 3}})");
  expect_input_error([&] { SafetensorsSet::open_dir(dir.path()); }, {index, "'a.f32'"});
  write_text(index, R"({"weights": {}})");
  expect_input_error([&] { SafetensorsSet::open_dir(dir.path()); }, {index, "'weight_map'"});
  write_text(index, R"({"weight_map": )");
  expect_input_error([&] { SafetensorsSet::open_dir(dir.path()); }, {index, "not valid JSON"});
}

TEST(Safetensors, EmptyDirectory) {
  TempDir dir;
  expect_input_error([&] { SafetensorsSet::open_dir(dir.path()); },
                     {dir.path(), "no model.safetensors"});
}

// A header that replaces one field of tensor "w" (F32 [2, 2], 16 bytes of data).
std::string header_with(const std::string& dtype, const std::string& shape,
                        const std::string& offsets) {
  return R"({"w": {"dtype": ")" + dtype + R"(", "shape": )" + shape + R"(, "data_offsets": )" +
         offsets + "}}";
}

struct BadHeader {
  const char* name;
  std::string header;
  std::vector<std::string> needles;
};

TEST(Safetensors, BadFilesCatalogue) {
  const Bytes data(16, 0);
  const std::vector<BadHeader> cases = {
      {"bad JSON", R"({"w": {"dtype": )", {"not valid JSON"}},
      {"JSON not an object", "[1, 2]", {"expected an object"}},
      {"tensor entry not an object", R"({"w": 3})", {"'w'", "expected an object"}},
      {"unsupported dtype",
       header_with("I64", "[2, 1]", "[0, 16]"),
       {"'w'", "unsupported dtype 'I64'"}},
      {"missing dtype", R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", {"'w'", "'dtype'"}},
      {"missing offsets", R"({"w": {"dtype": "F32", "shape": [2]}})", {"'w'", "data_offsets"}},
      {"offsets outside the file",
       header_with("F32", "[2, 2]", "[16, 32]"),
       {"'w'", "[16, 32]", "outside"}},
      {"begin after end", header_with("F32", "[0]", "[8, 4]"), {"'w'", "begin > end"}},
      {"size != numel * element size",
       header_with("F32", "[2, 3]", "[0, 16]"),
       {"'w'", "16 bytes", "needs 24"}},
      {"negative dim", header_with("F32", "[-2, 2]", "[0, 16]"), {"'w'", "non-negative"}},
      {"negative offset", header_with("F32", "[2, 2]", "[-16, 0]"), {"'w'", "non-negative"}},
      {"shape overflow",
       header_with("F32", "[4294967296, 4294967296]", "[0, 16]"),
       {"'w'", "overflows"}},
      {"overlapping tensors",
       R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
           "v": {"dtype": "F16", "shape": [4], "data_offsets": [8, 16]}})",
       {"'w'", "'v'", "overlap"}},
  };
  for (const BadHeader& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    const std::string path = dir.file("bad.safetensors");
    write_bytes(path, safetensors_build_raw(c.header, data));
    std::vector<std::string> needles = c.needles;
    needles.push_back(path);
    expect_input_error([&] { SafetensorsFile::open(path); }, needles);
  }
}

TEST(Safetensors, HeaderLengthChecks) {
  TempDir dir;
  const std::string path = dir.file("h.safetensors");
  Bytes b = safetensors_build(valid_tensors());
  const uint64_t too_long = b.size();  // longer than the file minus its 8-byte prefix
  std::memcpy(b.data(), &too_long, 8);
  write_bytes(path, b);
  expect_input_error([&] { SafetensorsFile::open(path); },
                     {path, "header length", "longer than the rest of the file"});
  const uint64_t absurd = 1ull << 40;
  std::memcpy(b.data(), &absurd, 8);
  write_bytes(path, b);
  expect_input_error([&] { SafetensorsFile::open(path); }, {path, "exceeds the limit"});
  write_bytes(path, {1, 0, 0});
  expect_input_error([&] { SafetensorsFile::open(path); }, {path, "too short"});
}

// Every prefix of a valid file fails cleanly (the last tensor ends at the end of the file).
TEST(Safetensors, TruncationAtEveryLengthThrows) {
  TempDir dir;
  const Bytes full = safetensors_build(valid_tensors());
  const std::string path = dir.file("cut.safetensors");
  for (size_t len = 0; len < full.size(); len++) {
    write_bytes(path, Bytes(full.begin(), full.begin() + static_cast<ptrdiff_t>(len)));
    EXPECT_THROW(SafetensorsFile::open(path), InputError) << "prefix of " << len << " bytes";
  }
}

}  // namespace
}  // namespace speclab
