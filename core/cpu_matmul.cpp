#include "core/cpu_matmul.h"

#include <cpuid.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/amx_tiles.h"
#include "core/error.h"
#include "core/matmul_amx.h"
#include "core/matmul_avx2.h"
#include "core/matmul_avx512.h"
#include "core/matmul_int8.h"
#include "core/matmul_vnni.h"
#include "core/row_pairs.h"

namespace speclab {
namespace {

// ---------------------------------------------------------------------------------------
// Generic path (x86-64 baseline / any compiler target): dequantize with the reference
// conversion, dot with 16 independent lanes so the compiler can vectorize without
// reassociating (-ffast-math is not used), then reduce the lanes in a fixed tree order.

float dot_generic(const float* a, const float* b, int64_t n) {
  float lanes[16] = {0};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; j++) lanes[j] += a[i + j] * b[i + j];
  }
  float tail = 0.0f;
  for (; i < n; i++) tail += a[i] * b[i];
  for (int width = 8; width >= 1; width /= 2) {
    for (int j = 0; j < width; j++) lanes[j] += lanes[j + width];
  }
  return lanes[0] + tail;
}

// rows: n_rows pointers to FP32 weight rows [n_in]; x: [n_tokens, n_in];
// out: columns [0, n_rows) of [n_tokens, n_out].
void block_generic(float* out, int64_t n_out, const float* const* rows, int n_rows, const float* x,
                   int64_t n_in, int64_t n_tokens) {
  for (int r = 0; r < n_rows; r++) {
    for (int64_t t = 0; t < n_tokens; t++) {
      out[t * n_out + r] = dot_generic(rows[r], x + t * n_in, n_in);
    }
  }
}

void row_to_f32_generic(float* dst, DType dtype, const void* src, int64_t n) {
  dtype_to_f32(dtype, src, dst, n);
}

// ---------------------------------------------------------------------------------------

struct Kernels {
  void (*row_to_f32)(float*, DType, const void*, int64_t);
  // Generic path: out[t, r] for the FP32 rows of one block: (out, n_out, rows, n_rows, x, n_in,
  // n_tokens). Null where `rows` is set.
  void (*block)(float*, int64_t, const float* const*, int, const float*, int64_t, int64_t);
  // AVX2 path (and the AVX-512 paths' fallback for dtypes they do not fuse): one work item of
  // matmul_avx2::kRowBlock rows straight from the stored rows (core/matmul_avx2.h).
  decltype(&matmul_avx2::rows) rows;
  // Dequantizes in registers (no FP32 row copy); null: `rows` or `block`.
  matmul_avx512::RowsFn (*fused)(DType, RowLayout, matmul_avx512::Streaming, SegmentPrefetch);
  bool bf16_dot;  // BF16 weights go through vdpbf16ps (activations rounded to BF16)
  bool int8_dot;  // Q8_0 / Q4_0 / Q4_1 / Q4_K / Q6_K weights: integer dots, int8 activations
  bool amx;       // BF16 weights of whole 32-column steps on AMX tiles (matmul_amx::fits)
  MatmulIsa id;
  const char* isa;
};

constexpr int kRowBlock = 4;  // weight rows per work item of the generic path
// Rows per work item of the fused (AVX-512) paths.
constexpr int kFusedRowBlock = matmul_avx512::kRowBlock;

const Kernels kGenericKernels{
    row_to_f32_generic,  block_generic, nullptr, nullptr, false, false, false,
    MatmulIsa::kGeneric, "generic"};
const Kernels kAvx2Kernels{
    matmul_avx2::row_to_f32, nullptr, matmul_avx2::rows, nullptr, false, false, false,
    MatmulIsa::kAvx2,        "avx2"};
const Kernels kAvx512Kernels{matmul_avx2::row_to_f32,
                             nullptr,
                             matmul_avx2::rows,
                             matmul_avx512::rows_fn,
                             false,
                             false,
                             false,
                             MatmulIsa::kAvx512,
                             "avx512"};
const Kernels kAvx512Bf16Kernels{matmul_avx2::row_to_f32,
                                 nullptr,
                                 matmul_avx2::rows,
                                 matmul_avx512::rows_fn,
                                 true,
                                 false,
                                 false,
                                 MatmulIsa::kAvx512Bf16,
                                 "avx512bf16"};
const Kernels kAvx512VnniKernels{matmul_avx2::row_to_f32,
                                 nullptr,
                                 matmul_avx2::rows,
                                 matmul_avx512::rows_fn,
                                 false,
                                 true,
                                 false,
                                 MatmulIsa::kAvx512Vnni,
                                 "avx512vnni"};
// As avx512bf16, with BF16 matrices of whole 32-column steps on AMX tiles (matmul_amx).
const Kernels kAmxBf16Kernels{
    matmul_avx2::row_to_f32, nullptr,  matmul_avx2::rows, matmul_avx512::rows_fn, true, false, true,
    MatmulIsa::kAmxBf16,     "amxbf16"};

// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does not know
// "f16c" (a compile error with CXX=clang++, as in the fuzz and sanitizer builds).
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

bool cpu_has(MatmulIsa isa) {
  __builtin_cpu_init();
  const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq");
  switch (isa) {
    case MatmulIsa::kBest:
    case MatmulIsa::kGeneric:
      return true;
    case MatmulIsa::kAvx2:
      return avx2;
    case MatmulIsa::kAvx512:
      return avx512;
    case MatmulIsa::kAvx512Bf16:
      return avx512 && __builtin_cpu_supports("avx512bf16");
    case MatmulIsa::kAvx512Vnni:
      return avx512 && __builtin_cpu_supports("avx512vnni");
    case MatmulIsa::kAmxBf16:
      return avx512 && __builtin_cpu_supports("avx512bf16") && amx_bf16_available();
  }
  return false;
}

// The paths a name can choose (SPECLAB_MATMUL_ISA, matmul_isa_parse), in the order the error
// lines list them.
constexpr const Kernels* kNamedKernels[] = {&kGenericKernels,    &kAvx2Kernels,
                                            &kAvx512Kernels,     &kAvx512Bf16Kernels,
                                            &kAvx512VnniKernels, &kAmxBf16Kernels};

// The default: the best of avx512, avx2, generic this CPU runs (why not the BF16 and int8
// paths: kernels_for).
MatmulIsa best_isa() {
  for (MatmulIsa best : {MatmulIsa::kAvx512, MatmulIsa::kAvx2}) {
    if (cpu_has(best)) return best;
  }
  return MatmulIsa::kGeneric;
}

const Kernels& kernels_for(MatmulIsa isa) {
  switch (isa) {
    case MatmulIsa::kGeneric:
      return kGenericKernels;
    case MatmulIsa::kAvx2:
      return kAvx2Kernels;
    case MatmulIsa::kAvx512:
      return kAvx512Kernels;
    case MatmulIsa::kAvx512Bf16:
      return kAvx512Bf16Kernels;
    case MatmulIsa::kAvx512Vnni:
      return kAvx512VnniKernels;
    case MatmulIsa::kAmxBf16:
      return kAmxBf16Kernels;
    case MatmulIsa::kBest:
      break;
  }
  // SPECLAB_MATMUL_ISA=generic|avx2|avx512|avx512bf16|avx512vnni|amxbf16 picks a path for a whole
  // run (as matmul_force_isa does for tests); unknown or unsupported: the default.
  if (const char* env = std::getenv("SPECLAB_MATMUL_ISA")) {
    for (const Kernels* k : kNamedKernels) {
      if (std::strcmp(env, k->isa) == 0 && cpu_has(k->id)) return *k;
    }
  }
  // avx512bf16 (and amxbf16, which rounds the activations the same way) is not the default:
  // BF16 activations move a BF16 model's logits by ~1e-2, beyond the golden tests' 1e-3 against
  // transformers (FP32), and change greedy outputs.
  // Nor is avx512vnni: int8 activation blocks move SmolLM2-135M Q4_1's logits by up to 1.1
  // and its greedy continuation leaves transformers' at a step whose top-2 margin is 0.04
  // (tests/llama/test_llama_golden.cpp): the default keeps FP32 activations, the reference's
  // arithmetic, however much faster int8 is (Q4_K about twice, docs/cpu-kernels.md).
  return kernels_for(best_isa());
}

const Kernels* g_kernels = nullptr;  // null: the best the CPU supports

// The CPU family of an AMD processor (0x19: Zen 3 and Zen 4, only Zen 4 with the AVX-512 that
// the fused paths need; 0x1A: Zen 5); 0 on any other vendor.
unsigned cpu_amd_family() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return 0;
  const bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
  return ((eax >> 8) & 0xf) + ((eax >> 20) & 0xff);
}

// The longest rows a one-token Q8_0 product with FP32 activations reads whole on Zen 4; longer
// ones go in segments. Measured on a 2-core Zen 4 guest, decodes pair by pair (docs/findings.md,
// 2026-12-03): the 3B Q8_0 file (3072- and 8192-column rows) took 0.86 of the time it took with
// whole rows everywhere, and 1.08 times as long again with its 8192-column down projection read
// whole; the 1B (2048-column rows, the down projection 8192) level with whole rows everywhere
// (1.03 and 1.01), and 1.04 times as long with its 2048-column rows in segments too (its head and
// [512, 2048] 10-15% slower that way in BM_MatmulShape1B).
constexpr int64_t kZen4Q8WholeRowsMaxCols = 2048;
// The same for Q8_0 with int8 activations (avx512vnni): the 8192-column down projections in
// segments, every other Zen 4 int8 product whole. Decodes pair by pair against whole rows
// everywhere (docs/findings.md, 2026-12-03): 1B Q8_0 0.87 and 0.90, 3B 0.95 and 0.95 (10 pairs
// each); all Q8_0 products in segments was unresolved (3B 0.88, then 1.07) and Q4_K_M 1.22-1.24
// slower.
constexpr int64_t kZen4Int8Q8WholeRowsMaxCols = 4096;
// The same for BF16 with FP32 activations (the exact default path): rows of up to 3072 columns
// whole, the 8192-column down projections in segments (their 32 KB of FP32 activations fill a
// Zen 4 L1 by themselves). Decoded token by token against whole rows everywhere, in one process
// (BM_DecodeStreamingPairs, 150 rounds, docs/findings.md 2026-12-03): whole rows everywhere took
// 1.027 and 1.037 times as long on the 3B BF16 file, 1.012 on the 1B; segments everywhere 1.031
// and 1.018 on the 3B, 1.23 on the 1B (its 2048-column rows are faster whole).
constexpr int64_t kZen4Bf16WholeRowsMaxCols = 3072;

// matmul_default_streaming on this CPU.
MatmulStreaming default_streaming(DType dtype, bool int8, int64_t n_in) {
  static const unsigned amd_family = cpu_amd_family();
  return matmul_default_streaming(dtype, int8, n_in, amd_family);
}

}  // namespace

// One-token products read rows whole (matmul_avx512::Streaming) for the dtypes and CPUs where
// that was measured to stream faster (docs/cpu-kernels.md "How a one-token product streams the
// rows"): on Zen 4 F32, F16, BF16 of up to kZen4Bf16WholeRowsMaxCols columns and Q8_0 of up to
// kZen4Q8WholeRowsMaxCols with FP32 activations, every dtype with int8 ones but Q8_0 rows longer
// than kZen4Int8Q8WholeRowsMaxCols (avx512vnni: Q4_K twice as fast there, Q4_1 0-15% faster); on
// Zen 5 BF16 with FP32 activations (Q8_0 slower that way there; F32 and F16 not measured at the
// decode), Q8_0, Q4_K and Q6_K with int8 ones (Q4_1 20% slower). Elsewhere (an Intel Xeon was tuned
// with segments; not measured with whole rows) and for the other formats, segments.
MatmulStreaming matmul_default_streaming(DType dtype, bool int8, int64_t n_in,
                                         unsigned amd_family) {
  constexpr MatmulStreaming kWhole = MatmulStreaming::kWholeRows;
  constexpr MatmulStreaming kSegments = MatmulStreaming::kSegments;
  if (amd_family == 0x19) {  // Zen 4
    if (int8)
      return dtype == DType::Q8_0 && n_in > kZen4Int8Q8WholeRowsMaxCols ? kSegments : kWhole;
    const bool whole = dtype == DType::F32 || dtype == DType::F16 ||
                       (dtype == DType::BF16 && n_in <= kZen4Bf16WholeRowsMaxCols) ||
                       (dtype == DType::Q8_0 && n_in <= kZen4Q8WholeRowsMaxCols);
    return whole ? kWhole : kSegments;
  }
  if (amd_family == 0x1A) {  // Zen 5
    // BF16 also prefetches each row kWholeRowAheadBytes ahead (matmul_avx512.cpp rows_whole:
    // faster there in the fast memory state, level in the slow one).
    if (!int8) return dtype == DType::BF16 ? MatmulStreaming::kWholeRowsAhead : kSegments;
    const bool whole = dtype == DType::Q8_0 || dtype == DType::Q4_K || dtype == DType::Q6_K;
    return whole ? kWhole : kSegments;
  }
  return kSegments;
}

namespace {

// A per-run setting named in the environment variable `var`: the setting of the first of
// `names` equal to its value; unset or anything else: Setting::kDefault (the command line
// refuses anything else before it runs: env_setting_check).
template <class Setting, size_t N>
Setting env_setting(const char* var, const std::pair<const char*, Setting> (&names)[N]) {
  const char* env = std::getenv(var);
  if (env == nullptr) return Setting::kDefault;
  for (const auto& [name, setting] : names) {
    if (std::strcmp(env, name) == 0) return setting;
  }
  return Setting::kDefault;
}

// Throws InputError when `var` is set to something other than one of `names` (or empty).
template <class Setting, size_t N>
void env_setting_check(const char* var, const std::pair<const char*, Setting> (&names)[N]) {
  const char* env = std::getenv(var);
  if (env == nullptr || *env == '\0') return;
  std::string expected;
  for (size_t i = 0; i < N; i++) {
    if (std::strcmp(env, names[i].first) == 0) return;
    expected += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + names[i].first;
  }
  fail_input(var, ": unknown value '", env, "' (expected ", expected, ")");
}

// SPECLAB_MATMUL_STREAM=rows|rows-ahead|segments sets the streaming of one-token products for a
// whole run (as matmul_force_streaming does for tests); unset: the default per dtype.
constexpr std::pair<const char*, MatmulStreaming> kStreamingNames[] = {
    {"rows", MatmulStreaming::kWholeRows},
    {"rows-ahead", MatmulStreaming::kWholeRowsAhead},
    {"segments", MatmulStreaming::kSegments}};
MatmulStreaming env_streaming() { return env_setting("SPECLAB_MATMUL_STREAM", kStreamingNames); }

MatmulStreaming g_streaming = MatmulStreaming::kDefault;  // set by matmul_force_streaming

MatmulStreaming streaming_for(DType dtype, bool int8, int64_t n_in) {
  static const MatmulStreaming from_env = env_streaming();
  const MatmulStreaming s = g_streaming != MatmulStreaming::kDefault ? g_streaming : from_env;
  return s != MatmulStreaming::kDefault ? s : default_streaming(dtype, int8, n_in);
}

// Where the avx512 kernels' column segments prefetch the next segment's weights
// (core/segment_prefetch.h): into L2 only on AMD families 19h (Zen 4) and 1Ah (Zen 5), where
// that was measured to be faster whenever a call does several products per weight and no slower
// otherwise on Zen 4, and 9% faster over the [8192, 3072] products of every dtype and token count
// on Zen 5 (a 13% faster Q4_1 decode, the 32-row forward level; Q6_K at 8 and 32 tokens 9-18%
// slower) (docs/cpu-kernels.md "Software prefetch into L1 or L2"); into L1 on every other CPU
// (the Intel Xeon was tuned with it; not measured with L2).
SegmentPrefetch default_prefetch() {
  static const unsigned family = cpu_amd_family();
  const bool l2_cpu = family == 0x19 || family == 0x1A;
  return l2_cpu ? SegmentPrefetch::kToL2 : SegmentPrefetch::kToL1;
}

// SPECLAB_MATMUL_PREFETCH=l1|l2 sets it for a whole run (as matmul_force_prefetch does for
// tests); unset: the default.
constexpr std::pair<const char*, MatmulPrefetch> kPrefetchNames[] = {{"l1", MatmulPrefetch::kToL1},
                                                                     {"l2", MatmulPrefetch::kToL2}};
MatmulPrefetch env_prefetch() { return env_setting("SPECLAB_MATMUL_PREFETCH", kPrefetchNames); }

MatmulPrefetch g_prefetch = MatmulPrefetch::kDefault;  // set by matmul_force_prefetch

// SPECLAB_MATMUL_LAYOUT=rows|pairs: how models loaded in this run store their BF16 matrices (as
// matmul_force_layout does for tests); unset: matmul_default_bf16_row_pairs.
constexpr std::pair<const char*, MatmulLayout> kLayoutNames[] = {
    {"rows", MatmulLayout::kRows}, {"pairs", MatmulLayout::kRowPairs}};
MatmulLayout g_layout = MatmulLayout::kDefault;  // set by matmul_force_layout

SegmentPrefetch segment_prefetch() {
  static const MatmulPrefetch from_env = env_prefetch();
  const MatmulPrefetch p = g_prefetch != MatmulPrefetch::kDefault ? g_prefetch : from_env;
  if (p == MatmulPrefetch::kToL1) return SegmentPrefetch::kToL1;
  if (p == MatmulPrefetch::kToL2) return SegmentPrefetch::kToL2;
  return default_prefetch();
}

// The int8-activation kernel for weights of dtype (matmul_vnni).
matmul_vnni::RowsFn int8_kernel(const TensorView& w) {
  return matmul_vnni::rows_fn(w.dtype,
                              streaming_for(w.dtype, true, w.cols()) != MatmulStreaming::kSegments,
                              segment_prefetch());
}

// The avx512 kernels' streaming for a resolved (not kDefault) setting.
matmul_avx512::Streaming kernel_streaming(MatmulStreaming s) {
  switch (s) {
    case MatmulStreaming::kWholeRows:
      return matmul_avx512::Streaming::kWholeRows;
    case MatmulStreaming::kWholeRowsAhead:
      return matmul_avx512::Streaming::kWholeRowsAhead;
    default:
      return matmul_avx512::Streaming::kSegments;
  }
}

// The fused kernel for w on path k (null: the path does not fuse this dtype).
matmul_avx512::RowsFn fused_kernel(const Kernels& k, const TensorView& w) {
  if (k.fused == nullptr) return nullptr;
  return k.fused(w.dtype, w.layout, kernel_streaming(streaming_for(w.dtype, false, w.cols())),
                 segment_prefetch());
}

// How the vdpbf16ps kernel (avx512bf16 on BF16 weights) streams a one-token product: as the
// FP32 kernel of BF16 weights would (rows_bf16dot reads kWholeRowsAhead as plain whole rows).
matmul_avx512::Streaming bf16dot_streaming() {
  return kernel_streaming(streaming_for(DType::BF16, false, 0));  // BF16's: any row length
}

const Kernels& kernels() {
  static const Kernels& best = kernels_for(MatmulIsa::kBest);
  return g_kernels != nullptr ? *g_kernels : best;
}

// Tokens per chunk of packed activations on the fused and int8 paths: the chunk's packed
// activations fit in L2 (~256 KB). Prompts reread the weights once per chunk; a call of at most
// 16 tokens is one chunk, which matmul_items relies on (its packing equals matmul_weights').
int64_t token_chunk(int64_t n_in) {
  return std::max<int64_t>(16, std::min<int64_t>(64, (int64_t{1} << 16) / n_in));
}

// Tokens per chunk of the fused avx512 path, for a call of n_tokens: the fewest chunks whose
// packed FP32 activations take at most ~512 KB each (half of a 1 MB L2, beside the weights
// streaming through; 16 to 64 tokens), of about equal size: a batch of 32 rows of 3072 columns
// is one chunk (the weights read from memory once), where token_chunk's 21 tokens made it
// 21 + 11 (the weights read twice, passes of 12 + 9 and 11); 8192 columns stay 16 + 16. Measured
// on the Zen 5 machine: docs/findings.md "Many-token products".
int64_t fused_token_chunk(int64_t n_tokens, int64_t n_in) {
  const int64_t most = std::max<int64_t>(16, std::min<int64_t>(64, (int64_t{1} << 17) / n_in));
  return std::max<int64_t>(1, matmul_avx512::balanced_part(n_tokens, most));
}

void check_shapes(const TensorView& w) {
  SPECLAB_ASSERT(w.shape.size() == 2);
  SPECLAB_ASSERT(w.data != nullptr);
  SPECLAB_ASSERT(w.cols() % dtype_block_size(w.dtype) == 0);
}

// Rows per work item of the unfused paths (avx2, generic).
int64_t unfused_item_rows(const Kernels& k) {
  return k.rows != nullptr ? matmul_avx2::kRowBlock : kRowBlock;
}

// Floats of per-thread scratch an unfused work item needs.
size_t unfused_scratch_floats(const Kernels& k, int64_t n_in) {
  return k.rows != nullptr ? matmul_avx2::scratch_floats(n_in)
                           : static_cast<size_t>(kRowBlock * n_in);
}

// The unfused paths' work item b: rows [b * R, +R) of w (R = unfused_item_rows) multiplied by
// the activations of n_tokens tokens into out [n_tokens, n_out]. avx2: matmul_avx2::rows on x
// packed by matmul_avx2::pack; generic: x [n_tokens, n_in], the rows converted to FP32 (F32
// rows used in place), then `block`.
//   scratch: unfused_scratch_floats(k, n_in) floats of the calling thread
void row_block_product(const Kernels& k, float* out, const TensorView& w, int64_t b, const float* x,
                       int64_t n_tokens, float* scratch) {
  const int64_t n_out = w.rows(), n_in = w.cols();
  const size_t row_bytes = dtype_row_bytes(w.dtype, n_in);
  const int64_t item_rows = unfused_item_rows(k);
  const int64_t r0 = b * item_rows;
  const int n_rows = static_cast<int>(std::min<int64_t>(item_rows, n_out - r0));
  // Row pairs: these paths read plain rows, so the item's rows are copied out of their pairs
  // (the same values, so the same bits as the plain matrix's); the next item is not there to
  // prefetch.
  const uint8_t* item = row_pairs_plain_rows(w, r0, n_rows);
  if (k.rows != nullptr) {
    const int n_next = w.layout != RowLayout::kRows
                           ? 0
                           : static_cast<int>(std::min<int64_t>(item_rows, n_out - r0 - n_rows));
    k.rows(out + r0, n_out, item, row_bytes, n_rows, n_next, w.dtype, x, n_in, n_tokens, scratch);
    return;
  }
  const float* rows[kRowBlock];
  for (int j = 0; j < n_rows; j++) {
    const void* src = item + static_cast<size_t>(j) * row_bytes;
    if (w.dtype == DType::F32) {
      rows[j] = static_cast<const float*>(src);
    } else {
      float* dst = scratch + j * n_in;
      k.row_to_f32(dst, w.dtype, src, n_in);
      rows[j] = dst;
    }
  }
  k.block(out + r0, n_out, rows, n_rows, x, n_in, n_tokens);
}

// The driver of the paths that pack the activations once per call (int8, amxbf16): the tokens
// in chunks of `chunk` (prompts reread the weights once per chunk), packed as the path's kernel
// reads them, then row blocks of `row_block` rows shared by the threads in a guided schedule,
// a chunk at a time.
//   packed layout: chunk c at c * chunk * n_steps * step_units elements of T (step_units: a
//     token's elements in one step of the kernel's columns)
//   pack(dst, s0, s1): writes steps [s0, s1) of every token into dst in that layout
//   rows(o, r0, n_rows, xc, n_chunk): rows [r0, +n_rows) of the weights times the n_chunk tokens
//     packed at xc, into o = out + t0 * n_out + r0 (t0 the chunk's first token)
template <typename T, typename Pack, typename Rows>
void packed_row_blocks(float* out, int64_t n_out, int64_t n_tokens, int64_t n_steps,
                       int64_t step_units, int64_t chunk, int64_t row_block, bool parallel,
                       const Pack& pack, const Rows& rows) {
  const int64_t n_chunks = (n_tokens + chunk - 1) / chunk;
  const size_t packed = static_cast<size_t>(n_chunks * chunk * n_steps * step_units);
  thread_local CacheLineVector<T> buffer;  // packed activations (per thread when private)
  if (buffer.size() < packed) buffer.resize(packed);
  T* shared = buffer.data();
  const int64_t n_blocks = (n_out + row_block - 1) / row_block;
  // One chunk (decode, verification): every thread packs all of it (no barrier needed).
  const bool private_pack = n_chunks == 1;
#pragma omp parallel if (parallel)
  {
    T* mine = shared;
    if (private_pack) {
      if (buffer.size() < packed) buffer.resize(packed);
      mine = buffer.data();  // this thread's buffer (thread_local)
      pack(mine, int64_t{0}, n_steps);
    } else {
#pragma omp for schedule(static)
      for (int64_t s = 0; s < n_steps; s += 8) {
        pack(shared, s, std::min(n_steps, s + 8));
      }  // (barrier: every thread reads all of it)
    }
    for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
      const int64_t n_chunk = std::min(chunk, n_tokens - t0);
      const T* xc = mine + t0 * n_steps * step_units;
#pragma omp for schedule(guided) nowait
      for (int64_t b = 0; b < n_blocks; b++) {
        const int64_t r0 = b * row_block;
        const int n_rows = static_cast<int>(std::min<int64_t>(row_block, n_out - r0));
        rows(out + t0 * n_out + r0, r0, n_rows, xc, n_chunk);
      }
    }
  }
}

// The avx512vnni path for Q8_0 / Q4_0 / Q4_1 / Q4_K / Q6_K weights: activations quantized to int8
// blocks and packed (matmul_vnni::pack), then row blocks of kFusedRowBlock rows.
void matmul_weights_int8(float* out, const float* x, const TensorView& w, int64_t n_tokens,
                         bool parallel) {
  const int64_t n_out = w.rows();
  const int64_t n_in = w.cols();
  const size_t row_bytes = dtype_row_bytes(w.dtype, n_in);
  const uint8_t* base = static_cast<const uint8_t*>(w.data);
  SPECLAB_ASSERT(w.layout == RowLayout::kRows);  // row pairs are BF16, never int8-dotted
  const matmul_vnni::RowsFn kernel = int8_kernel(w);
  const int64_t chunk = token_chunk(n_in);
  const int64_t values = matmul_vnni::record_values(w.dtype);
  const int64_t bytes = matmul_vnni::record_bytes(w.dtype);  // a token's record in one step
  const int64_t n_steps = (n_in + values - 1) / values;
  const DType dtype = w.dtype;
  packed_row_blocks<uint8_t>(
      out, n_out, n_tokens, n_steps, bytes, chunk, kFusedRowBlock, parallel,
      [&](uint8_t* dst, int64_t s0, int64_t s1) {
        matmul_vnni::pack(dst, x, n_tokens, n_in, chunk, s0, s1, dtype);
      },
      [&](float* o, int64_t r0, int n_rows, const uint8_t* xc, int64_t n_chunk) {
        kernel(o, n_out, base + static_cast<size_t>(r0) * row_bytes, row_bytes, n_rows, xc,
               n_chunk * bytes, n_in, n_chunk);
      });
}

// Whether w goes on the AMX tiles on path k (amxbf16, BF16 weights of whole 32-column steps).
bool uses_amx(const Kernels& k, const TensorView& w) {
  return k.amx && w.dtype == DType::BF16 && matmul_amx::fits(w.cols());
}

// The amxbf16 path for BF16 weights (uses_amx): activations rounded to BF16 and packed as tile
// operands (matmul_amx::pack: 32 BF16 values of a token a step), then work items of
// matmul_amx::kRowBlock rows.
void matmul_weights_amx(float* out, const float* x, const TensorView& w, int64_t n_tokens,
                        bool parallel) {
  const int64_t n_out = w.rows();
  const int64_t n_in = w.cols();
  const size_t row_bytes = dtype_row_bytes(w.dtype, n_in);
  const int64_t chunk = token_chunk(n_in);
  packed_row_blocks<uint16_t>(
      out, n_out, n_tokens, n_in / 32, 32, chunk, matmul_amx::kRowBlock, parallel,
      [&](uint16_t* dst, int64_t s0, int64_t s1) {
        matmul_amx::pack(dst, x, n_tokens, n_in, chunk, s0, s1);
      },
      [&](float* o, int64_t r0, int n_rows, const uint16_t* xc, int64_t n_chunk) {
        // (row pairs: the item's rows copied out of their pairs, row_pairs_plain_rows)
        matmul_amx::rows(o, n_out, row_pairs_plain_rows(w, r0, n_rows), row_bytes, n_rows, xc, n_in,
                         n_chunk);
      });
}

}  // namespace

const char* matmul_isa() { return kernels().isa; }

std::string matmul_isa_names() {
  std::string names = "best";
  for (const Kernels* k : kNamedKernels) {
    names += std::string(k == kNamedKernels[std::size(kNamedKernels) - 1] ? " or " : ", ") + k->isa;
  }
  return names;
}

MatmulIsa matmul_isa_parse(std::string_view name, std::string_view where) {
  // The concrete path, not kBest: forced, it must not fall back to SPECLAB_MATMUL_ISA.
  if (name == "best") return best_isa();
  std::string runs;  // the named paths this CPU runs, for the error line
  for (const Kernels* k : kNamedKernels) {
    if (cpu_has(k->id)) runs += std::string(", ") + k->isa;
  }
  for (const Kernels* k : kNamedKernels) {
    if (name != k->isa) continue;
    SPECLAB_INPUT_CHECK(cpu_has(k->id), where, ": this CPU lacks the instructions of the '", name,
                        "' kernel path (it runs: best", runs, ")");
    return k->id;
  }
  fail_input(where, ": unknown kernel path '", name, "' (expected ", matmul_isa_names(), ")");
}

bool matmul_isa_name_known(std::string_view name) {
  if (name == "best") return true;
  for (const Kernels* k : kNamedKernels) {
    if (name == k->isa) return true;
  }
  return false;
}

void matmul_check_environment() {
  const char* env = std::getenv("SPECLAB_MATMUL_ISA");
  if (env != nullptr && *env != '\0') matmul_isa_parse(env, "SPECLAB_MATMUL_ISA");
  env_setting_check("SPECLAB_MATMUL_STREAM", kStreamingNames);
  env_setting_check("SPECLAB_MATMUL_PREFETCH", kPrefetchNames);
  env_setting_check("SPECLAB_MATMUL_LAYOUT", kLayoutNames);
}

bool matmul_default_bf16_row_pairs(unsigned amd_family, bool avx512) {
  return amd_family == 0x1A && avx512;
}

bool matmul_bf16_row_pairs() {
  static const MatmulLayout from_env = env_setting("SPECLAB_MATMUL_LAYOUT", kLayoutNames);
  const MatmulLayout l = g_layout != MatmulLayout::kDefault ? g_layout : from_env;
  if (l != MatmulLayout::kDefault) return l == MatmulLayout::kRowPairs;
  static const bool by_cpu =
      matmul_default_bf16_row_pairs(cpu_amd_family(), cpu_has(MatmulIsa::kAvx512));
  return by_cpu;
}

void matmul_force_layout(MatmulLayout layout) { g_layout = layout; }

bool matmul_force_isa(MatmulIsa isa) {
  if (!cpu_has(isa)) return false;
  g_kernels = isa == MatmulIsa::kBest ? nullptr : &kernels_for(isa);
  return true;
}

void matmul_force_generic(bool force) {
  matmul_force_isa(force ? MatmulIsa::kGeneric : MatmulIsa::kBest);
}

void matmul_force_streaming(MatmulStreaming streaming) { g_streaming = streaming; }

void matmul_force_prefetch(MatmulPrefetch prefetch) { g_prefetch = prefetch; }

const char* matmul_segment_prefetch() {
  if (kernels().fused == nullptr) return "n/a";
  return segment_prefetch() == SegmentPrefetch::kToL2 ? "L2" : "L1";
}

const char* matmul_one_token_streaming(DType dtype, int64_t n_in) {
  const bool int8 = matmul_quantizes_activations(dtype);
  if (kernels().fused == nullptr) return "n/a";
  if (kernels().amx && dtype == DType::BF16) return "AMX tiles";
  switch (streaming_for(dtype, int8, n_in)) {
    case MatmulStreaming::kWholeRows:
      return "whole rows";
    case MatmulStreaming::kWholeRowsAhead:
      // The int8 and vdpbf16ps kernels read it as whole rows without the prefetch.
      return int8 || matmul_rounds_activations_to_bf16(dtype) ? "whole rows"
                                                              : "whole rows, prefetched ahead";
    default:
      return "segments";
  }
}

const char* matmul_one_token_streaming(const TensorView& w) {
  const char* plain = matmul_one_token_streaming(w.dtype, w.cols());
  if (w.layout != RowLayout::kRowPairs) return plain;
  // The paths that read plain rows only (generic, avx2, vdpbf16ps, AMX) copy each item's rows
  // out of their pairs; the FP32-activation avx512 kernel reads the pairs themselves.
  const bool native = fused_kernel(kernels(), w) != nullptr && !kernels().bf16_dot;
  if (!native) return "rows copied out of their pairs";
  if (std::strcmp(plain, "whole rows") == 0) return "row pairs";
  if (std::strcmp(plain, "whole rows, prefetched ahead") == 0) return "row pairs, prefetched ahead";
  return plain;
}

bool matmul_rounds_activations_to_bf16(DType dtype) {
  return dtype == DType::BF16 && kernels().bf16_dot;
}

bool matmul_quantizes_activations(DType dtype) {
  return kernels().int8_dot && dtype_has_int8_dot(dtype);
}

void matmul_force_float_activations(bool force) {
  matmul_force_isa(MatmulIsa::kBest);
  if (force && kernels().int8_dot) {
    for (MatmulIsa isa : {MatmulIsa::kAvx512, MatmulIsa::kAvx2, MatmulIsa::kGeneric}) {
      if (matmul_force_isa(isa)) return;
    }
  }
}

void weights_row_to_f32(float* dst, const TensorView& w, int64_t r) {
  kernels().row_to_f32(dst, w.dtype, row_pairs_plain_rows(w, r, 1), w.cols());
}

void matmul_weights(float* out, const float* x, const TensorView& w, int64_t n_tokens) {
  check_shapes(w);
  const Kernels& k = kernels();
  const int64_t n_out = w.rows();
  const int64_t n_in = w.cols();
  const size_t row_bytes = dtype_row_bytes(w.dtype, n_in);
  const uint8_t* base = static_cast<const uint8_t*>(w.data);
  // Small products (tiny drafts, test models) stay on one thread: a parallel region costs a
  // few microseconds, and far more when the machine is oversubscribed and a thread waits at
  // the barrier. Each output is computed the same way either way (no result depends on it).
  const bool parallel = n_out * n_in * n_tokens >= (int64_t{1} << 18);
  if (k.int8_dot && dtype_has_int8_dot(w.dtype)) {
    matmul_weights_int8(out, x, w, n_tokens, parallel);
    return;
  }
  if (uses_amx(k, w)) {
    matmul_weights_amx(out, x, w, n_tokens, parallel);
    return;
  }
  const matmul_avx512::RowsFn fused = fused_kernel(k, w);
  if (fused != nullptr) {
    // Prompts (hundreds of tokens) go in chunks of tokens whose packed activations fit in L2
    // (~256 KB), rereading the weights once per chunk; a decode or verification call
    // (<= 16 tokens) is one chunk and reads each weight once. The chunking changes no sum.
    const bool bf16_dot = k.bf16_dot && w.dtype == DType::BF16;
    const matmul_avx512::Streaming bf16_streaming = bf16dot_streaming();
    const SegmentPrefetch bf16_prefetch = segment_prefetch();
    const matmul_avx512::StepOrder order = matmul_avx512::step_order(w.dtype);
    const int64_t chunk = fused_token_chunk(n_tokens, n_in);
    const int64_t n_steps = (n_in + 31) / 32;
    const int64_t n_chunks = (n_tokens + chunk - 1) / chunk;
    const size_t packed = static_cast<size_t>(n_chunks * chunk * n_steps * 32);
    // Packed activations: FP32, or BF16 for vdpbf16ps (rounded once per call).
    thread_local CacheLineVector<float> xf;
    thread_local CacheLineVector<uint16_t> xb;
    if (bf16_dot && xb.size() < packed) xb.resize(packed);
    if (!bf16_dot && xf.size() < packed) xf.resize(packed);
    float* xfp = xf.data();
    uint16_t* xbp = xb.data();
    const int64_t n_fused_blocks = (n_out + kFusedRowBlock - 1) / kFusedRowBlock;
    // One chunk (decode, verification): every thread packs all of it into its own buffer
    // (k * n_in values, a few microseconds), so the threads need no barrier between packing
    // and the products, only the one at the end of the call. Prompts: the threads share the
    // packing, then wait for each other.
    const bool private_pack = n_chunks == 1;
#pragma omp parallel if (parallel)
    {
      float* xfp_t = xfp;  // the packed activations this thread reads
      uint16_t* xbp_t = xbp;
      if (private_pack) {
        if (bf16_dot) {
          if (xb.size() < packed) xb.resize(packed);
          xbp_t = xb.data();  // this thread's buffer (thread_local)
          matmul_avx512::pack_bf16(xbp_t, x, n_tokens, n_in, chunk, 0, n_steps);
        } else {
          if (xf.size() < packed) xf.resize(packed);
          xfp_t = xf.data();
          matmul_avx512::pack_f32(xfp_t, x, n_tokens, n_in, chunk, 0, n_steps, order);
        }
      } else {
#pragma omp for schedule(static)
        for (int64_t s = 0; s < n_steps; s += 8) {
          const int64_t s1 = std::min(n_steps, s + 8);
          if (bf16_dot) {
            matmul_avx512::pack_bf16(xbp, x, n_tokens, n_in, chunk, s, s1);
          } else {
            matmul_avx512::pack_f32(xfp, x, n_tokens, n_in, chunk, s, s1, order);
          }
        }  // (barrier: every thread reads all of it)
      }
      for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t n_chunk = std::min(chunk, n_tokens - t0);
        const int64_t offset = t0 * n_steps * 32, xs = n_chunk * 32;
        // Row blocks handed out in shrinking contiguous runs (guided): on a machine shared with
        // other jobs one thread is often descheduled, and a static split made the call wait for
        // it (3B Q8_0 decode: 122 ms a token while the main thread computed for 61). Which
        // thread computes a block changes no bit of it. Chunks do not depend on each other
        // (the packed activations are only read), so no barrier is needed between them.
#pragma omp for schedule(guided) nowait
        for (int64_t b = 0; b < n_fused_blocks; b++) {
          const int64_t r0 = b * kFusedRowBlock;
          const int n_rows = static_cast<int>(std::min<int64_t>(kFusedRowBlock, n_out - r0));
          const uint8_t* row0 = base + static_cast<size_t>(r0) * row_bytes;
          float* o = out + t0 * n_out + r0;
          if (bf16_dot) {
            // (row pairs: the item's rows copied out of their pairs, row_pairs_plain_rows)
            matmul_avx512::rows_bf16dot(o, n_out, row_pairs_plain_rows(w, r0, n_rows), row_bytes,
                                        n_rows, xbp_t + offset, xs, n_in, n_chunk, bf16_streaming,
                                        bf16_prefetch);
          } else {
            fused(o, n_out, row0, row_bytes, n_rows, xfp_t + offset, xs, n_in, n_chunk);
          }
        }
      }
    }
    return;
  }
  const int64_t item_rows = unfused_item_rows(k);
  const int64_t n_blocks = (n_out + item_rows - 1) / item_rows;
  const size_t scratch_floats = unfused_scratch_floats(k, n_in);
  // avx2 on more than 8 tokens, or BF16 weights: the activations packed as matmul_avx2::rows
  // reads them (matmul_avx2::pack). Up to one chunk of tokens (decode, verification, a batch of
  // requests), every thread packs all of them into its own buffer (n_tokens * n_in floats,
  // microseconds), so no thread waits for another before its first item; prompts: the threads
  // share the packing, then wait for each other.
  const bool packs_x = k.rows != nullptr && matmul_avx2::packs_activations(n_tokens, w.dtype);
  const int64_t n_segments = matmul_avx2::n_segments(n_in);
  const size_t packed = packs_x ? matmul_avx2::packed_floats(n_tokens, n_in) : 0;
  const bool private_pack = n_tokens <= matmul_avx2::kTokenChunk;
  thread_local CacheLineVector<float> xp;  // packed activations (per thread when private)
  if (xp.size() < packed) xp.resize(packed);
  float* shared = xp.data();
#pragma omp parallel if (parallel)
  {
    // Per thread: avx2, the converted segment of an item's rows and its parked accumulators
    // (matmul_avx2::scratch_floats); generic, FP32 copies of a block's rows [kRowBlock, n_in].
    thread_local CacheLineVector<float> scratch;
    if (scratch.size() < scratch_floats) scratch.resize(scratch_floats);
    const float* xk = x;  // the activations as the path reads them
    if (packs_x && private_pack) {
      if (xp.size() < packed) xp.resize(packed);
      matmul_avx2::pack(xp.data(), x, n_tokens, n_in, 0, n_segments, w.dtype);
      xk = xp.data();  // this thread's buffer (thread_local)
    } else if (packs_x) {
#pragma omp for schedule(static)
      for (int64_t s = 0; s < n_segments; s++)
        matmul_avx2::pack(shared, x, n_tokens, n_in, s, s + 1, w.dtype);
      xk = shared;  // (the barrier above: every thread reads all of it)
    }
    // Guided, as on the fused path: a descheduled thread does not hold the call up; which
    // thread computes an item changes no bit of it.
#pragma omp for schedule(guided)
    for (int64_t b = 0; b < n_blocks; b++)
      row_block_product(k, out, w, b, xk, n_tokens, scratch.data());
  }
}

void MatmulActivations::set(const float* x, int64_t n_tokens, int64_t n_in) {
  SPECLAB_ASSERT(n_tokens >= 1 && n_tokens <= kMatmulItemsMaxTokens);
  x_ = x;
  n_tokens_ = n_tokens;
  n_in_ = n_in;
  for (bool& p : packed_) p = false;
}

int64_t matmul_item_rows(const TensorView& w) {
  const Kernels& k = kernels();
  if (k.int8_dot && dtype_has_int8_dot(w.dtype)) return kFusedRowBlock;
  if (uses_amx(k, w)) return matmul_amx::kRowBlock;
  if (fused_kernel(k, w) != nullptr) return kFusedRowBlock;
  return unfused_item_rows(k);
}

int64_t matmul_item_count(const TensorView& w) {
  const int64_t r = matmul_item_rows(w);
  return (w.rows() + r - 1) / r;
}

// The per-item work of matmul_weights for one chunk of tokens (n_tokens <= 16 <= chunk): the
// same kernel calls with the same arguments and the same packed activations (packing does not
// depend on the chunk size when every token lies in the first chunk).
void matmul_items(float* out, MatmulActivations& a, const TensorView& w, int64_t i0, int64_t i1) {
  check_shapes(w);
  SPECLAB_ASSERT(a.x_ != nullptr && w.cols() == a.n_in_);
  const Kernels& k = kernels();
  const int64_t n_out = w.rows();
  const int64_t n_in = w.cols();
  const int64_t n_tokens = a.n_tokens_;
  const size_t row_bytes = dtype_row_bytes(w.dtype, n_in);
  const uint8_t* base = static_cast<const uint8_t*>(w.data);
  const int64_t chunk = token_chunk(n_in);
  if (k.int8_dot && dtype_has_int8_dot(w.dtype)) {
    static_assert(MatmulActivations::kInt8Forms == matmul_vnni::kRecordKinds);
    const int kind = matmul_vnni::record_kind(w.dtype);
    CacheLineVector<uint8_t>& xq = a.int8_[kind];
    const int64_t values = matmul_vnni::record_values(w.dtype);
    const int64_t bytes = matmul_vnni::record_bytes(w.dtype);
    const int64_t n_steps = (n_in + values - 1) / values;
    if (!a.packed_[MatmulActivations::kInt8 + kind]) {
      const size_t packed = static_cast<size_t>(chunk * n_steps * bytes);
      if (xq.size() < packed) xq.resize(packed);
      matmul_vnni::pack(xq.data(), a.x_, n_tokens, n_in, chunk, 0, n_steps, w.dtype);
      a.packed_[MatmulActivations::kInt8 + kind] = true;
    }
    SPECLAB_ASSERT(w.layout == RowLayout::kRows);  // row pairs are BF16, never int8-dotted
    const matmul_vnni::RowsFn rows = int8_kernel(w);
    for (int64_t b = i0; b < i1; b++) {
      const int64_t r0 = b * kFusedRowBlock;
      const int n_rows = static_cast<int>(std::min<int64_t>(kFusedRowBlock, n_out - r0));
      rows(out + r0, n_out, base + static_cast<size_t>(r0) * row_bytes, row_bytes, n_rows,
           xq.data(), n_tokens * bytes, n_in, n_tokens);
    }
    return;
  }
  if (uses_amx(k, w)) {
    const int64_t n_steps = n_in / 32;
    if (!a.packed_[MatmulActivations::kAmx]) {
      const size_t packed = static_cast<size_t>(chunk * n_steps * 32);
      if (a.amx_.size() < packed) a.amx_.resize(packed);
      matmul_amx::pack(a.amx_.data(), a.x_, n_tokens, n_in, chunk, 0, n_steps);
      a.packed_[MatmulActivations::kAmx] = true;
    }
    for (int64_t b = i0; b < i1; b++) {
      const int64_t r0 = b * matmul_amx::kRowBlock;
      const int n_rows = static_cast<int>(std::min<int64_t>(matmul_amx::kRowBlock, n_out - r0));
      matmul_amx::rows(out + r0, n_out, row_pairs_plain_rows(w, r0, n_rows), row_bytes, n_rows,
                       a.amx_.data(), n_in, n_tokens);
    }
    return;
  }
  const matmul_avx512::RowsFn fused = fused_kernel(k, w);
  if (fused != nullptr) {
    const bool bf16_dot = k.bf16_dot && w.dtype == DType::BF16;
    const matmul_avx512::Streaming bf16_streaming = bf16dot_streaming();
    const SegmentPrefetch bf16_prefetch = segment_prefetch();
    const int64_t n_steps = (n_in + 31) / 32;
    const size_t packed = static_cast<size_t>(chunk * n_steps * 32);
    if (bf16_dot && !a.packed_[MatmulActivations::kBf16]) {
      if (a.bf16_.size() < packed) a.bf16_.resize(packed);
      matmul_avx512::pack_bf16(a.bf16_.data(), a.x_, n_tokens, n_in, chunk, 0, n_steps);
      a.packed_[MatmulActivations::kBf16] = true;
    }
    const matmul_avx512::StepOrder order = matmul_avx512::step_order(w.dtype);
    const bool even_odd = order == matmul_avx512::StepOrder::kEvenOdd;
    CacheLineVector<float>& f32 = a.f32_[even_odd ? 1 : 0];
    const auto kind = even_odd ? MatmulActivations::kF32EvenOdd : MatmulActivations::kF32;
    if (!bf16_dot && !a.packed_[kind]) {
      if (f32.size() < packed) f32.resize(packed);
      matmul_avx512::pack_f32(f32.data(), a.x_, n_tokens, n_in, chunk, 0, n_steps, order);
      a.packed_[kind] = true;
    }
    for (int64_t b = i0; b < i1; b++) {
      const int64_t r0 = b * kFusedRowBlock;
      const int n_rows = static_cast<int>(std::min<int64_t>(kFusedRowBlock, n_out - r0));
      const uint8_t* row0 = base + static_cast<size_t>(r0) * row_bytes;
      if (bf16_dot) {
        matmul_avx512::rows_bf16dot(out + r0, n_out, row_pairs_plain_rows(w, r0, n_rows), row_bytes,
                                    n_rows, a.bf16_.data(), n_tokens * 32, n_in, n_tokens,
                                    bf16_streaming, bf16_prefetch);
      } else {
        fused(out + r0, n_out, row0, row_bytes, n_rows, f32.data(), n_tokens * 32, n_in, n_tokens);
      }
    }
    return;
  }
  const size_t scratch_floats = unfused_scratch_floats(k, n_in);
  if (a.rows_.size() < scratch_floats) a.rows_.resize(scratch_floats);
  const float* xk = a.x_;
  // As matmul_weights.
  if (k.rows != nullptr && matmul_avx2::packs_activations(n_tokens, w.dtype)) {
    const bool even_odd = matmul_avx2::reads_even_odd(w.dtype);
    const int kind =
        even_odd ? MatmulActivations::kF32EvenOddRows : MatmulActivations::kF32Segments;
    CacheLineVector<float>& packed_x = a.segments_[even_odd ? 1 : 0];
    if (!a.packed_[kind]) {
      const size_t packed = matmul_avx2::packed_floats(n_tokens, n_in);
      if (packed_x.size() < packed) packed_x.resize(packed);
      matmul_avx2::pack(packed_x.data(), a.x_, n_tokens, n_in, 0, matmul_avx2::n_segments(n_in),
                        w.dtype);
      a.packed_[kind] = true;
    }
    xk = packed_x.data();
  }
  for (int64_t b = i0; b < i1; b++) row_block_product(k, out, w, b, xk, n_tokens, a.rows_.data());
}

void matmul_weights_ref(float* out, const float* x, const TensorView& w, int64_t n_tokens) {
  check_shapes(w);
  const int64_t n_out = w.rows();
  const int64_t n_in = w.cols();
  std::vector<float> row(n_in);
  std::vector<uint8_t> stored(dtype_row_bytes(w.dtype, n_in));
  for (int64_t r = 0; r < n_out; r++) {
    row_pairs_copy_rows(stored.data(), w, r, 1);  // the row in the plain layout
    dtype_to_f32(w.dtype, stored.data(), row.data(), n_in);
    for (int64_t t = 0; t < n_tokens; t++) {
      double sum = 0.0;
      for (int64_t i = 0; i < n_in; i++) sum += static_cast<double>(row[i]) * x[t * n_in + i];
      out[t * n_out + r] = static_cast<float>(sum);
    }
  }
}

}  // namespace speclab
