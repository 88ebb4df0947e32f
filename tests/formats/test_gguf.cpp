// GGUF reader: values read back exactly from files the test writes, a catalogue of bad
// files (each an InputError naming the file and the problem), truncation at every length,
// and the real SmolLM2 / Llama 2 vocabulary files when present.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <functional>

#include "core/mapped_file.h"
#include "models/formats/gguf.h"
#include "tests/external_test_data.h"
#include "tests/formats/expect_input_error.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using namespace testing;  // NOLINT: test helpers

std::vector<uint16_t> fp16_vec(const std::vector<float>& v) {
  std::vector<uint16_t> out;
  for (float x : v) out.push_back(f32_to_fp16(x));
  return out;
}

// Hand-made quant blocks with known values, so the test checks the block layout rather
// than comparing our dequantizer with our quantizer.
// Q8_0: d = 0.5, q[j] = j - 16          -> x[j] = 0.5 * (j - 16)
Bytes q8_0_block() {
  Bytes b;
  put<uint16_t>(b, f32_to_fp16(0.5f));
  for (int j = 0; j < 32; j++) put<int8_t>(b, static_cast<int8_t>(j - 16));
  return b;
}
float q8_0_expected(int j) { return 0.5f * (j - 16); }
// Q4_0: d = 0.25, byte j = lo (j) | hi (15 - j) -> x[j] = 0.25*(j-8), x[j+16] = 0.25*(7-j)
Bytes q4_0_block() {
  Bytes b;
  put<uint16_t>(b, f32_to_fp16(0.25f));
  for (int j = 0; j < 16; j++) put<uint8_t>(b, static_cast<uint8_t>(j | ((15 - j) << 4)));
  return b;
}
float q4_0_expected(int j) { return j < 16 ? 0.25f * (j - 8) : 0.25f * ((15 - (j - 16)) - 8); }
// Q4_1: d = 0.5, m = -1, byte j = lo (j) | hi (j/2) -> x[j] = 0.5*j - 1, x[j+16] = 0.5*(j/2) - 1
Bytes q4_1_block() {
  Bytes b;
  put<uint16_t>(b, f32_to_fp16(0.5f));
  put<uint16_t>(b, f32_to_fp16(-1.0f));
  for (int j = 0; j < 16; j++) put<uint8_t>(b, static_cast<uint8_t>(j | ((j / 2) << 4)));
  return b;
}
float q4_1_expected(int j) { return j < 16 ? 0.5f * j - 1.0f : 0.5f * ((j - 16) / 2) - 1.0f; }

// A valid file with every metadata type and every supported tensor type.
GgufWriter valid_writer() {
  GgufWriter w;
  w.str("general.architecture", "llama");
  w.scalar<uint8_t>("t.u8", kGgufU8, 200);
  w.scalar<int8_t>("t.i8", kGgufI8, -100);
  w.scalar<uint16_t>("t.u16", kGgufU16, 60000);
  w.scalar<int16_t>("t.i16", kGgufI16, -30000);
  w.u32("t.u32", 4000000000u);
  w.scalar<int32_t>("t.i32", kGgufI32, -2000000000);
  w.f32("t.f32", 0.125f);
  w.scalar<uint8_t>("t.bool", kGgufBool, 1);
  w.scalar<uint64_t>("t.u64", kGgufU64, 1ull << 40);
  w.scalar<int64_t>("t.i64", kGgufI64, -(1ll << 40));
  w.scalar<double>("t.f64", kGgufF64, 1e-300);
  w.str_array("t.strings", {"a", "", "héllo"});
  w.array<int32_t>("t.i32s", kGgufI32, {1, -2, 3});
  w.array<float>("t.f32s", kGgufF32, {0.5f, -1.5f});
  w.array<uint8_t>("t.bools", kGgufBool, {0, 1});

  std::vector<float> f32(2 * 32);
  for (int k = 0; k < 64; k++) f32[k] = 0.1f * k - 3.0f;
  w.tensor("f32", {32, 2}, kGgmlF32, as_bytes(f32));
  std::vector<float> halves = {1.0f, -2.0f, 0.5f, 65504.0f};
  std::vector<float> f16_values;
  for (int k = 0; k < 32; k++) f16_values.push_back(halves[k % 4]);
  w.tensor("f16", {32}, kGgmlF16, as_bytes(fp16_vec(f16_values)));
  std::vector<uint16_t> bf16;
  for (int k = 0; k < 32; k++) bf16.push_back(f32_to_bf16(static_cast<float>(k) - 16.0f));
  w.tensor("bf16", {32, 1}, kGgmlBF16, as_bytes(bf16));
  Bytes q8 = q8_0_block(), q8b = q8_0_block();
  q8.insert(q8.end(), q8b.begin(), q8b.end());
  w.tensor("q8_0", {64}, kGgmlQ8_0, q8);  // 2 blocks in one row
  w.tensor("q4_0", {32, 1, 1}, kGgmlQ4_0, q4_0_block());
  w.tensor("q4_1", {32, 1, 1, 1}, kGgmlQ4_1, q4_1_block());
  return w;
}

std::string write_gguf(const TempDir& dir, const GgufWriter& w,
                       const std::string& name = "model.gguf") {
  write_bytes(dir.file(name), w.build());
  return dir.file(name);
}

std::vector<float> to_f32(const TensorView& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  dtype_to_f32(t.dtype, t.data, out.data(), t.numel());
  return out;
}

TEST(Gguf, MetadataReadsBackExactly) {
  TempDir dir;
  auto g = GgufFile::open(write_gguf(dir, valid_writer()));
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->get_string("general.architecture"), "llama");
  EXPECT_EQ(g->get_int("t.u8"), 200);
  EXPECT_EQ(g->get_int("t.i8"), -100);
  EXPECT_EQ(g->get_int("t.u16"), 60000);
  EXPECT_EQ(g->get_int("t.i16"), -30000);
  EXPECT_EQ(g->get_int("t.u32"), 4000000000ll);
  EXPECT_EQ(g->get_int("t.i32"), -2000000000ll);
  EXPECT_EQ(g->get_float("t.f32"), 0.125);
  EXPECT_EQ(g->get_float("t.u32"), 4e9);  // integers accepted where a number is wanted
  EXPECT_TRUE(g->get_bool("t.bool"));
  EXPECT_EQ(g->get_int("t.u64"), 1ll << 40);
  EXPECT_EQ(g->get_int("t.i64"), -(1ll << 40));
  EXPECT_EQ(g->get_float("t.f64"), 1e-300);
  EXPECT_EQ(g->get_string_array("t.strings"), (std::vector<std::string>{"a", "", "héllo"}));
  EXPECT_EQ(g->get_int_array("t.i32s"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(g->get_float_array("t.f32s"), (std::vector<double>{0.5, -1.5}));
  EXPECT_EQ(g->get_int_array("t.bools"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(g->get_int_or("absent", 7), 7);
  EXPECT_EQ(g->get_float_or("absent", 2.5), 2.5);
  EXPECT_EQ(g->get_int_or("t.i8", 7), -100);
}

TEST(Gguf, TensorsViewedInPlaceWithExactValues) {
  TempDir dir;
  auto g = GgufFile::open(write_gguf(dir, valid_writer()));
  ASSERT_EQ(g->tensors().size(), 6u);
  auto mapped = std::static_pointer_cast<MappedFile>(g->storage());
  for (const TensorView& t : g->tensors()) {  // no copies: every view points into the mmap
    const auto* p = static_cast<const uint8_t*>(t.data);
    EXPECT_TRUE(p >= mapped->data() && p + t.nbytes <= mapped->data() + mapped->size()) << t.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 32, 0u) << t.name;  // aligned data section
  }
  const TensorView* f32 = g->find_tensor("f32");
  ASSERT_NE(f32, nullptr);
  EXPECT_EQ(f32->shape, (std::vector<int64_t>{2, 32}));  // outermost first
  EXPECT_EQ(f32->dtype, DType::F32);
  auto v = to_f32(*f32);
  for (int k = 0; k < 64; k++) EXPECT_EQ(v[k], 0.1f * k - 3.0f);
  float row1[32];  // row_ptr(1) is the second row of the [2, 32] matrix
  dtype_to_f32(f32->dtype, f32->row_ptr(1), row1, 32);
  EXPECT_EQ(row1[0], 0.1f * 32 - 3.0f);

  const TensorView* f16 = g->find_tensor("f16");
  EXPECT_EQ(f16->shape, (std::vector<int64_t>{32}));
  v = to_f32(*f16);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 0.5f);
  EXPECT_EQ(v[3], 65504.0f);

  const TensorView* bf16 = g->find_tensor("bf16");
  EXPECT_EQ(bf16->shape, (std::vector<int64_t>{1, 32}));
  EXPECT_EQ(bf16->dtype, DType::BF16);
  v = to_f32(*bf16);
  for (int k = 0; k < 32; k++) EXPECT_EQ(v[k], k - 16.0f);

  const TensorView* q8 = g->find_tensor("q8_0");
  EXPECT_EQ(q8->dtype, DType::Q8_0);
  EXPECT_EQ(q8->nbytes, 68u);
  v = to_f32(*q8);
  for (int k = 0; k < 64; k++) EXPECT_EQ(v[k], q8_0_expected(k % 32)) << k;

  const TensorView* q40 = g->find_tensor("q4_0");
  EXPECT_EQ(q40->shape, (std::vector<int64_t>{1, 1, 32}));
  EXPECT_EQ(q40->dtype, DType::Q4_0);
  v = to_f32(*q40);
  for (int k = 0; k < 32; k++) EXPECT_EQ(v[k], q4_0_expected(k)) << k;

  const TensorView* q41 = g->find_tensor("q4_1");
  EXPECT_EQ(q41->shape, (std::vector<int64_t>{1, 1, 1, 32}));
  EXPECT_EQ(q41->dtype, DType::Q4_1);
  v = to_f32(*q41);
  for (int k = 0; k < 32; k++) EXPECT_EQ(v[k], q4_1_expected(k)) << k;
  EXPECT_EQ(g->find_tensor("absent"), nullptr);
}

// K-quant super-blocks (ggml types 12 and 14) built by hand, read in place with their values.
// Q4_K: d = 1, dmin = 0.5, sub-block j: scale j + 1, min 2; qs[k] = k % 16 | (15 - k % 16) << 4
//   -> x[e] = (j + 1) * q - 1 with j = e / 32, q = l % 16 (j even) or 15 - l % 16 (j odd).
// Q6_K: d = 0.5, scales[s] = s + 1, every 6-bit code 40 -> x[e] = 0.5 * (e / 16 + 1) * 8.
TEST(Gguf, ReadsQ4_KAndQ6_KSuperBlocks) {
  Bytes q4k;
  put<uint16_t>(q4k, f32_to_fp16(1.0f));
  put<uint16_t>(q4k, f32_to_fp16(0.5f));
  for (int j = 0; j < 4; j++) put<uint8_t>(q4k, static_cast<uint8_t>(j + 1));  // sc 0..3
  for (int j = 0; j < 4; j++) put<uint8_t>(q4k, 2);                            // m 0..3
  for (int j = 4; j < 8; j++) put<uint8_t>(q4k, static_cast<uint8_t>((j + 1) | (2 << 4)));
  for (int k = 0; k < 128; k++)
    put<uint8_t>(q4k, static_cast<uint8_t>(k % 16 | (15 - k % 16) << 4));
  ASSERT_EQ(q4k.size(), 144u);
  Bytes q6k(210, 0);
  for (int k = 0; k < 128; k++) q6k[k] = 0x88;    // low 4 bits of 40 = 8, both nibbles
  for (int k = 128; k < 192; k++) q6k[k] = 0xAA;  // high 2 bits of 40 = 2, all four groups
  for (int s = 0; s < 16; s++) q6k[192 + s] = static_cast<uint8_t>(s + 1);
  const uint16_t half = f32_to_fp16(0.5f);
  std::memcpy(&q6k[208], &half, 2);
  Bytes q4k2 = q4k, q6k2 = q6k;
  q4k2.insert(q4k2.end(), q4k.begin(), q4k.end());
  q6k2.insert(q6k2.end(), q6k.begin(), q6k.end());
  GgufWriter w;
  w.tensor("q4k", {512}, kGgmlQ4_K, q4k2);
  w.tensor("q6k", {256, 2}, kGgmlQ6_K, q6k2);
  TempDir dir;
  auto g = GgufFile::open(write_gguf(dir, w));
  const TensorView* a = g->find_tensor("q4k");
  EXPECT_EQ(a->dtype, DType::Q4_K);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{512}));
  EXPECT_EQ(a->nbytes, 288u);
  std::vector<float> v = to_f32(*a);
  for (int e = 0; e < 512; e++) {
    const int j = (e % 256) / 32, l = e % 32, q = j % 2 == 0 ? l % 16 : 15 - l % 16;
    ASSERT_EQ(v[e], static_cast<float>((j + 1) * q) - 1.0f) << e;
  }
  const TensorView* b = g->find_tensor("q6k");
  EXPECT_EQ(b->dtype, DType::Q6_K);
  EXPECT_EQ(b->shape, (std::vector<int64_t>{2, 256}));
  EXPECT_EQ(b->nbytes, 420u);
  v = to_f32(*b);
  for (int e = 0; e < 512; e++) ASSERT_EQ(v[e], 0.5f * ((e % 256) / 16 + 1) * 8) << e;
}

TEST(Gguf, AcceptsVersion2AndCustomAlignment) {
  TempDir dir;
  GgufWriter w = valid_writer();
  w.version = 2;
  w.alignment = 64;
  w.u32("general.alignment", 64);
  auto g = GgufFile::open(write_gguf(dir, w));
  EXPECT_EQ(g->version(), 2u);
  for (const TensorView& t : g->tensors())
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 64, 0u) << t.name;
  EXPECT_EQ(to_f32(*g->find_tensor("q8_0"))[5], q8_0_expected(5));
}

TEST(Gguf, ViewsOutliveTheReader) {
  TempDir dir;
  std::shared_ptr<void> storage;
  TensorView view;
  {
    auto g = GgufFile::open(write_gguf(dir, valid_writer()));
    storage = g->storage();
    view = *g->find_tensor("bf16");
  }
  EXPECT_EQ(to_f32(view)[31], 15.0f);
}

TEST(Gguf, GetterErrorsNameKeyAndTypes) {
  TempDir dir;
  auto g = GgufFile::open(write_gguf(dir, valid_writer()));
  const std::string path = dir.file("model.gguf");
  expect_input_error([&] { g->get_int("llama.block_count"); },
                     {path, "'llama.block_count'", "missing"});
  expect_input_error([&] { g->get_int("general.architecture"); },
                     {path, "'general.architecture'", "type string", "integer"});
  expect_input_error([&] { g->get_string("t.u8"); }, {path, "'t.u8'", "type u8", "string"});
  expect_input_error([&] { g->get_float("t.strings"); }, {"array of string", "number"});
  expect_input_error([&] { g->get_bool("t.i8"); }, {"'t.i8'", "bool"});
  expect_input_error([&] { g->get_string_array("t.i32s"); }, {"array of i32", "array of string"});
  expect_input_error([&] { g->get_int_array("t.f32s"); }, {"array of f32"});
  expect_input_error([&] { g->get_float_array("t.strings"); }, {"array of string"});
  expect_input_error([&] { g->get_int_or("general.architecture", 1); }, {"type string"});
}

// Each bad file: a writer change, and the words its error must contain.
struct BadCase {
  const char* name;
  std::function<void(GgufWriter&)> mutate;
  std::vector<std::string> needles;
};

void run_bad_case(const BadCase& c) {
  SCOPED_TRACE(c.name);
  TempDir dir;
  GgufWriter w = valid_writer();
  c.mutate(w);
  const std::string path = write_gguf(dir, w, "bad.gguf");
  std::vector<std::string> needles = c.needles;
  needles.push_back(path);
  expect_input_error([&] { GgufFile::open(path); }, needles);
}

TEST(Gguf, BadFilesCatalogue) {
  const std::vector<BadCase> cases = {
      {"unknown version", [](GgufWriter& w) { w.version = 4; }, {"version 4", "expected 2 or 3"}},
      {"version 1", [](GgufWriter& w) { w.version = 1; }, {"version 1"}},
      {"unsupported ggml type (Q5_K)",
       [](GgufWriter& w) { w.tensor("blk.0.q5k", {256}, 13, Bytes(176)); },
       {"'blk.0.q5k'", "ggml type 13"}},
      {"Q4_K innermost not a multiple of 256",
       [](GgufWriter& w) {
         w.tensor("q4k", {320, 2}, kGgmlQ4_K, Bytes(2 * 144));
       },
       {"'q4k'", "innermost dimension 320", "multiple of 256 as Q4_K requires"}},
      {"Q6_K innermost not a multiple of 256",
       [](GgufWriter& w) { w.tensor("q6k", {32}, kGgmlQ6_K, Bytes(210)); },
       {"'q6k'", "innermost dimension 32", "multiple of 256 as Q6_K requires"}},
      {"Q6_K data truncated",
       [](GgufWriter& w) {
         w.tensor("q6k", {256, 4}, kGgmlQ6_K, Bytes(3 * 210));
       },
       {"'q6k'", "[", "+840)", "outside the data section"}},
      {"n_dims 0",
       [](GgufWriter& w) { w.tensor("scalar", {}, kGgmlF32, Bytes(4)); },
       {"'scalar'", "n_dims 0"}},
      {"n_dims 5",
       [](GgufWriter& w) {
         w.tensor("t5", {32, 1, 1, 1, 1}, kGgmlF32, Bytes(128));
       },
       {"'t5'", "n_dims 5"}},
      {"zero dim",
       [](GgufWriter& w) {
         w.tensor("z", {32, 0}, kGgmlF32, Bytes());
       },
       {"'z'", "dimension 1 is 0"}},
      {"block type innermost not a multiple of 32",
       [](GgufWriter& w) {
         w.tensor("q", {16, 2}, kGgmlQ8_0, Bytes(34));
       },
       {"'q'", "innermost dimension 16", "multiple of 32"}},
      {"dims overflow",
       [](GgufWriter& w) {
         w.tensor("huge", {1ull << 32, 1ull << 32, 1ull << 32}, kGgmlF32, Bytes(4));
       },
       {"'huge'", "overflows"}},
      {"offset outside the file",
       [](GgufWriter& w) { w.tensors[0].offset_override = 1 << 20; },
       {"'f32'", "outside the data section"}},
      {"tensor data runs past the end",
       [](GgufWriter& w) {
         w.tensors.back().ne = {32, 4};
       },
       {"'q4_1'", "outside the data section"}},
      {"overlapping tensors",
       [](GgufWriter& w) { w.tensors[1].offset_override = 0; },
       {"'f32'", "'f16'", "overlap"}},
      {"misaligned offset",
       [](GgufWriter& w) { w.tensors[1].offset_override = 260; },
       {"'f16'", "offset 260", "alignment 32"}},
      {"duplicate tensor", [](GgufWriter& w) { w.tensors[1].name = "f32"; }, {"'f32'", "twice"}},
      {"duplicate key", [](GgufWriter& w) { w.u32("t.u8", 1); }, {"'t.u8'", "twice"}},
      {"bad alignment",
       [](GgufWriter& w) { w.u32("general.alignment", 3); },
       {"general.alignment", "power of two"}},
      {"alignment too small for 16-bit rows",
       [](GgufWriter& w) { w.u32("general.alignment", 1); },
       {"general.alignment", "from 8"}},
      {"alignment of wrong type",
       [](GgufWriter& w) { w.str("general.alignment", "32"); },
       {"general.alignment", "type string"}},
      {"nested array",
       [](GgufWriter& w) {
         Bytes p;
         put<uint32_t>(p, kGgufArray);
         put<uint64_t>(p, 1);
         w.kvs.push_back({"t.nested", kGgufArray, p});
       },
       {"'t.nested'", "nested array"}},
      {"unknown value type",
       [](GgufWriter& w) {
         w.kvs.push_back({"t.weird", 13, Bytes(8)});
       },
       {"'t.weird'", "unknown value type 13"}},
      {"unknown array element type",
       [](GgufWriter& w) {
         Bytes p;
         put<uint32_t>(p, 99);
         put<uint64_t>(p, 0);
         w.kvs.push_back({"t.arr", kGgufArray, p});
       },
       {"'t.arr'", "unknown value type 99"}},
      {"u64 above INT64_MAX",
       [](GgufWriter& w) { w.scalar<uint64_t>("t.big", kGgufU64, ~0ull); },
       {"'t.big'", "exceeds INT64_MAX"}},
      {"u64 array element above INT64_MAX",
       [](GgufWriter& w) {
         w.array<uint64_t>("t.bigs", kGgufU64, {1, ~0ull});
       },
       {"'t.bigs'", "exceeds INT64_MAX"}},
      {"bool not 0/1",
       [](GgufWriter& w) { w.scalar<uint8_t>("t.b2", kGgufBool, 2); },
       {"'t.b2'", "expected 0 or 1"}},
      {"absurd string length",
       [](GgufWriter& w) {
         Bytes p;
         put<uint64_t>(p, 1ull << 40);
         w.kvs.push_back({"t.s", kGgufString, p});
       },
       {"length 1099511627776", "exceeds the limit"}},
      {"string longer than the file",
       [](GgufWriter& w) {
         Bytes p;
         put<uint64_t>(p, 1000000);
         w.kvs.push_back({"t.s", kGgufString, p});
       },
       {"truncated", "metadata string value"}},
      {"absurd array length",
       [](GgufWriter& w) {
         Bytes p;
         put<uint32_t>(p, kGgufU8);
         put<uint64_t>(p, (1ull << 26) + 1);
         w.kvs.push_back({"t.a", kGgufArray, p});
       },
       {"'t.a'", "array length 67108865", "exceeds the limit"}},
      {"array longer than the file",
       [](GgufWriter& w) {
         Bytes p;
         put<uint32_t>(p, kGgufString);
         put<uint64_t>(p, 1 << 20);
         w.kvs.push_back({"t.a", kGgufArray, p});
       },
       {"'t.a'", "does not fit"}},
  };
  for (const BadCase& c : cases) run_bad_case(c);
}

// Counts beyond the hard limits are rejected from the fixed header alone.
TEST(Gguf, AbsurdCounts) {
  TempDir dir;
  Bytes b = valid_writer().build();
  Bytes many_tensors = b;
  const uint64_t n = 65537;
  std::memcpy(many_tensors.data() + 8, &n, 8);
  write_bytes(dir.file("t.gguf"), many_tensors);
  expect_input_error([&] { GgufFile::open(dir.file("t.gguf")); },
                     {dir.file("t.gguf"), "tensor count 65537", "limit"});
  Bytes many_kv = b;
  const uint64_t huge = 1ull << 62;
  std::memcpy(many_kv.data() + 16, &huge, 8);
  write_bytes(dir.file("k.gguf"), many_kv);
  expect_input_error([&] { GgufFile::open(dir.file("k.gguf")); },
                     {dir.file("k.gguf"), "metadata count", "limit"});
}

TEST(Gguf, BadMagic) {
  TempDir dir;
  Bytes b = valid_writer().build();
  b[0] = 'X';
  write_bytes(dir.file("m.gguf"), b);
  expect_input_error([&] { GgufFile::open(dir.file("m.gguf")); },
                     {dir.file("m.gguf"), "bad magic"});
  write_text(dir.file("short.gguf"), "GG");
  expect_input_error([&] { GgufFile::open(dir.file("short.gguf")); },
                     {dir.file("short.gguf"), "truncated", "magic"});
}

TEST(Gguf, MissingFile) {
  expect_input_error([] { GgufFile::open("/nonexistent/x.gguf"); }, {"/nonexistent/x.gguf"});
}

// Cutting a valid file at any length must give InputError, never a crash or a silent success:
// the file ends exactly at the last tensor's end, so every prefix is missing something.
TEST(Gguf, TruncationAtEveryLengthThrows) {
  TempDir dir;
  const Bytes full = valid_writer().build();
  const std::string path = dir.file("cut.gguf");
  write_bytes(path, full);
  ASSERT_NO_THROW(GgufFile::open(path));
  int n_thrown = 0;
  for (size_t len = 0; len < full.size(); len++) {
    write_bytes(path, Bytes(full.begin(), full.begin() + static_cast<ptrdiff_t>(len)));
    try {
      GgufFile::open(path);
      ADD_FAILURE() << "prefix of " << len << " bytes opened without error";
    } catch (const InputError& e) {
      n_thrown++;
      ASSERT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(n_thrown, static_cast<int>(full.size()));
  // Seen: "need 4 bytes, file has 4" for a file cut after its magic. Expected: what is left.
  write_bytes(path, Bytes(full.begin(), full.begin() + 4));
  try {
    GgufFile::open(path);
    ADD_FAILURE() << "4 bytes opened";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("offset 4: truncated reading version (need 4 bytes, 0 "
                                         "left of the file's 4)"),
              std::string::npos)
        << e.what();
  }
}

// Corrupting any single header byte (xor 0xff, then +1) either still parses or gives
// InputError; never a crash or an out-of-bounds read (run under -DSPECLAB_SANITIZE=ON).
TEST(Gguf, CorruptingAnyHeaderByteIsCaught) {
  TempDir dir;
  const Bytes full = valid_writer().build();
  const std::string path = dir.file("flip.gguf");
  write_bytes(path, full);
  size_t first_tensor_data = 0;  // file offset of the data section: everything before is header
  {
    auto g = GgufFile::open(path);
    auto mapped = std::static_pointer_cast<MappedFile>(g->storage());
    first_tensor_data =
        static_cast<size_t>(static_cast<const uint8_t*>(g->tensors()[0].data) - mapped->data());
  }
  ASSERT_GT(first_tensor_data, 100u);
  ASSERT_LT(first_tensor_data, full.size());
  int n_rejected = 0;
  for (size_t at = 0; at < first_tensor_data; at++) {
    for (uint8_t delta : {uint8_t{0xff}, uint8_t{1}}) {
      Bytes bad = full;
      bad[at] =
          delta == 0xff ? static_cast<uint8_t>(bad[at] ^ 0xff) : static_cast<uint8_t>(bad[at] + 1);
      write_bytes(path, bad);
      try {
        GgufFile::open(path);
      } catch (const InputError&) {
        n_rejected++;
      }
    }
  }
  // Most header bytes are structural (lengths, types, counts, offsets): most flips are caught.
  EXPECT_GT(n_rejected, static_cast<int>(first_tensor_data) / 2);
}

TEST(Gguf, RealSmolLM2File) {
  const std::string path = "/root/.cache/speclab/SmolLM2-135M-Instruct.Q4_1.gguf";
  struct stat st;
  if (stat(path.c_str(), &st) != 0) GTEST_SKIP() << path << " absent (fetched by .ci/install)";
  auto g = GgufFile::open(path);
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->get_string("general.architecture"), "llama");
  EXPECT_EQ(g->get_int("llama.block_count"), 30);
  EXPECT_EQ(g->get_int("llama.embedding_length"), 576);
  EXPECT_EQ(g->get_int("llama.attention.head_count_kv"), 3);
  EXPECT_FLOAT_EQ(static_cast<float>(g->get_float("llama.rope.freq_base")), 100000.0f);
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens").size(), 49152u);
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.merges").size(), 48900u);
  EXPECT_EQ(g->tensors().size(), 272u);
  const TensorView* emb = g->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{49152, 576}));
  EXPECT_EQ(emb->dtype, DType::Q8_0);
  EXPECT_EQ(emb->nbytes, 30081024u);
  const TensorView* k = g->find_tensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->shape, (std::vector<int64_t>{192, 576}));
  EXPECT_EQ(k->dtype, DType::Q4_1);
  EXPECT_EQ(g->find_tensor("output.weight"), nullptr);  // tied embeddings
  // Dequantized weights of a trained model are finite and small.
  std::vector<float> row(576);
  dtype_to_f32(k->dtype, k->row_ptr(191), row.data(), 576);
  for (float x : row) EXPECT_TRUE(std::isfinite(x) && std::fabs(x) < 10.0f) << x;
}

TEST(Gguf, RealLlama2VocabOnlyFile) {
  const std::string path = testing::external_data("llama2-spm-vocab/ggml-vocab-llama-spm.gguf");
  if (path.empty())
    GTEST_SKIP() << testing::external_data_skip_reason(
        "llama2-spm-vocab/ggml-vocab-llama-spm.gguf");
  auto g = GgufFile::open(path);
  EXPECT_EQ(g->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens").size(), 32000u);
  EXPECT_EQ(g->get_float_array("tokenizer.ggml.scores").size(), 32000u);
  EXPECT_EQ(g->get_int_array("tokenizer.ggml.token_type").size(), 32000u);
  EXPECT_TRUE(g->tensors().empty());
}

}  // namespace
}  // namespace speclab
