// Matrix-vector and small-batch matrix products against stored weights: out = x · Wᵀ.
//
// The weights dominate the bytes moved in decoding, so the kernel reads each weight row
// once per call however many tokens are batched: rows are the outer loop, a row is
// converted to FP32 into a small per-thread buffer, and dotted with every token's
// activations. Verifying k draft tokens therefore costs about one decode step of memory
// traffic, which is what makes speculative decoding pay on a memory-bound machine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/cache_line_vector.h"
#include "core/tensor_view.h"

namespace speclab {

// out[t, r] = sum_i x[t, i] * W[r, i]   (FP32 accumulation)
//   out: [n_tokens, n_out]   x: [n_tokens, n_in]   w: [n_out, n_in] in any DType
// Parallel over blocks of output rows (OpenMP, guided schedule). Each output is reduced by one
// thread in a fixed order that does not depend on n_tokens or the thread count, so a token's result
// is bit-identical whether it is computed alone or batched (batch invariance).
void matmul_weights(float* out, const float* x, const TensorView& w, int64_t n_tokens);

// The same products as work items that the threads of one parallel region share (the step
// team, core/step_team.h): every thread packs the activations it needs into its own
// MatmulActivations, then computes whichever items it is handed. An item is a block of
// matmul_item_rows(w) consecutive output rows for every token, computed by the same kernel
// call with the same packed activations as in matmul_weights, so each output is bit-identical
// to matmul_weights' whichever thread computes it. Decode-sized batches only:
// n_tokens <= kMatmulItemsMaxTokens (one chunk of packed activations).
constexpr int64_t kMatmulItemsMaxTokens = 16;

// One thread's activations for matmul_items: x [n_tokens, n_in], packed lazily for each kind of
// weights (FP32 in column order or even/odd, BF16 for vdpbf16ps, int8 blocks per weight dtype,
// matmul_vnni::record_kind) on first use and reused for every matrix of that kind until
// the next set(). x must not change meanwhile.
class MatmulActivations {
 public:
  void set(const float* x, int64_t n_tokens, int64_t n_in);

 private:
  friend void matmul_items(float*, MatmulActivations&, const TensorView&, int64_t, int64_t);
  static constexpr int kInt8Forms = 5;  // matmul_vnni::kRecordKinds
  enum Kind {
    kF32,
    kF32EvenOdd,
    kBf16,
    kAmx,
    kF32Segments,
    kF32EvenOddRows,
    kInt8,
    kKinds = kInt8 + kInt8Forms
  };
  const float* x_ = nullptr;
  int64_t n_tokens_ = 0;
  int64_t n_in_ = 0;
  bool packed_[kKinds] = {};
  CacheLineVector<float> f32_[2];              // matmul_avx512::pack_f32 layout, by StepOrder
  CacheLineVector<uint16_t> bf16_;             // matmul_avx512::pack_bf16 layout
  CacheLineVector<uint16_t> amx_;              // matmul_amx::pack layout
  CacheLineVector<uint8_t> int8_[kInt8Forms];  // matmul_vnni::pack layout, per record kind
  CacheLineVector<float> segments_[2];         // matmul_avx2::pack layouts: segments, even/odd rows
  CacheLineVector<float> rows_;                // scratch of the avx2 and generic work items
};

// Output rows per work item of w on the path in use (the last item may have fewer).
int64_t matmul_item_rows(const TensorView& w);
// Number of work items of w: ceil(rows / matmul_item_rows(w)).
int64_t matmul_item_count(const TensorView& w);
// Items [i0, i1) of out = x · Wᵀ with x from `a`: out[t * n_out + r] for their rows r and every
// token t (out: [n_tokens, n_out]).
void matmul_items(float* out, MatmulActivations& a, const TensorView& w, int64_t i0, int64_t i1);

// Plain reference: dequantizes W with dtype_to_f32 and accumulates in double. For tests.
void matmul_weights_ref(float* out, const float* x, const TensorView& w, int64_t n_tokens);

// Converts row r of w to FP32 (the fast path used by matmul_weights), dst: [w.cols()].
void weights_row_to_f32(float* dst, const TensorView& w, int64_t r);

// The kernel paths, chosen at run time from the CPU's features:
//   generic     compiler-vectorized baseline code (any x86-64)
//   avx2        AVX2 + FMA + F16C: a work item's rows converted to FP32 one L1-sized column
//               segment at a time, register tiles of up to 4 rows x 3 tokens over it
//               (core/matmul_avx2.cpp)
//   avx512      AVX-512 F/BW/VL/DQ: weights dequantized in registers, 4 rows x up to 4
//               tokens per register tile, FP32 activations, column segments kept in L1 and
//               software prefetch (core/matmul_avx512.cpp)
//   avx512bf16  as avx512, and BF16 weights dotted with vdpbf16ps against activations
//               rounded to BF16 (the other dtypes as avx512). Twice the arithmetic rate, but
//               not exact enough for the golden tests: only when asked for
//               (matmul_force_isa, or SPECLAB_MATMUL_ISA=avx512bf16 in the environment).
//   avx512vnni  as avx512, and Q8_0 / Q4_0 / Q4_1 weights dotted with vpdpbusd, Q4_K / Q6_K
//               with vpmaddubsw + vpmaddwd, against activations quantized to int8 per
//               32-value block (core/matmul_int8.h states the arithmetic and its error bound;
//               core/matmul_vnni.cpp). The other dtypes as avx512. Opt-in (matmul_force_isa,
//               SPECLAB_MATMUL_ISA=avx512vnni): int8 activations move real models' logits beyond
//               the golden tests' 1e-3.
//   amxbf16     as avx512bf16 (the activations rounded to BF16 the same way), and BF16
//               matrices whose rows are whole 32-column steps multiplied on AMX tiles
//               (tdpbf16ps: 16 rows x 16 tokens x 32 columns an instruction; core/matmul_amx.h):
//               verifying tens of tokens costs about what decoding one does. Needs AMX-TILE,
//               AMX-BF16 and Linux's grant of the tile state. Opt-in
//               (SPECLAB_MATMUL_ISA=amxbf16), for the reason avx512bf16 is.
// Default: the best of avx512, avx2, generic the CPU supports.
enum class MatmulIsa { kBest, kGeneric, kAvx2, kAvx512, kAvx512Bf16, kAvx512Vnni, kAmxBf16 };

// The path in use: "generic", "avx2", "avx512", "avx512bf16", "avx512vnni" or "amxbf16".
const char* matmul_isa();
// The path a name chooses, as SPECLAB_MATMUL_ISA, `generation.matmul_isa` and
// `generate --matmul-isa` spell it: one of the names above, or "best" (the best of avx512,
// avx2, generic this CPU runs, as that path: forced, it overrides SPECLAB_MATMUL_ISA, where
// kBest would read it again). Throws InputError naming `where` for any other name, and for a
// path whose instructions this CPU lacks (naming the paths it has): a run asked for a path
// must not report the default's figures under it.
MatmulIsa matmul_isa_parse(std::string_view name, std::string_view where);
// "best, generic, avx2, avx512, avx512bf16, avx512vnni or amxbf16": the names
// matmul_isa_parse takes, for error lines.
std::string matmul_isa_names();
// Whether `name` is one matmul_isa_parse knows, whatever this CPU runs (a config checked on
// one machine may run on another).
bool matmul_isa_name_known(std::string_view name);
// Checks the kernels' environment variables: SPECLAB_MATMUL_ISA as matmul_isa_parse does,
// SPECLAB_MATMUL_STREAM (rows | rows-ahead | segments), SPECLAB_MATMUL_PREFETCH (l1 | l2) and
// SPECLAB_MATMUL_LAYOUT (rows | pairs);
// unset or empty: nothing to check; anything else: InputError naming the variable. The kernels
// themselves read them leniently (an unknown value leaves the default), so the command line
// calls this before any verb runs: a misspelt setting must not time the default under its name.
void matmul_check_environment();
// For tests and comparisons: force a path (kBest: back to the best one the CPU supports).
// Returns false, changing nothing, if this CPU lacks the path's instructions. Not
// thread-safe: call it between kernel calls.
bool matmul_force_isa(MatmulIsa isa);
// matmul_force_isa(force ? kGeneric : kBest).
void matmul_force_generic(bool force);
// Whether matmul_weights on weights of `dtype` rounds the activations to BF16 on the path in
// use (avx512bf16 or amxbf16, and BF16 weights): tests compare against a reference fed the same
// rounding.
bool matmul_rounds_activations_to_bf16(DType dtype);
// Whether matmul_weights on weights of `dtype` quantizes the activations to int8 blocks on the
// path in use (avx512vnni and Q8_0 / Q4_0 / Q4_1 / Q4_K / Q6_K): such products equal
// matmul_weights_ref_int8 (core/matmul_int8.h) up to FP32 summation order.
bool matmul_quantizes_activations(DType dtype);
// How the avx512 paths read the weights in a product of one token (decoding, drafting):
//   kSegments   as for more tokens: 4-row register tiles, column segment by segment, the next
//               segment prefetched in software
//   kWholeRows  each row from its first column to its last, no software prefetch (one
//               sequential stream per row for the hardware prefetcher); FP32 activations: one
//               row at a time, rows whose activations exceed 16 KB a 12-row item at a time (6 for
//               the quantized formats); int8 activations (avx512vnni): one row at a time
//               (docs/cpu-kernels.md)
// No output changes a bit with it. Default (kDefault) where it was measured to stream faster:
// on AMD family 19h (Zen 4) kWholeRows for F32, F16, BF16 and Q8_0 weights with FP32
// activations and for every dtype with int8 ones; on AMD family 1Ah (Zen 5) kWholeRows for
// BF16 with FP32 activations (kWholeRowsAhead) and Q8_0, Q4_K and Q6_K with int8 ones;
// kSegments otherwise and on every other CPU.
// SPECLAB_MATMUL_STREAM=rows|rows-ahead|segments in the environment sets it for a whole run.
//   kWholeRowsAhead  as kWholeRows, rows read one at a time also prefetching in software 8 KB
//               ahead into L1 (FP32 activations; the int8 and vdpbf16ps kernels read it as
//               kWholeRows). Default for BF16 on Zen 5, where it kept up with a fast memory
//               state better (docs/cpu-kernels.md)
enum class MatmulStreaming { kDefault, kSegments, kWholeRows, kWholeRowsAhead };
// The default streaming of a one-token product (what kDefault resolves to): `dtype` weights in
// rows of n_in columns, with int8 activations or FP32 ones, on a CPU of AMD family amd_family
// (0x19 Zen 4, 0x1A Zen 5; 0: not AMD). Never kDefault.
MatmulStreaming matmul_default_streaming(DType dtype, bool int8_activations, int64_t n_in,
                                         unsigned amd_family);
// For tests and comparisons: force one streaming for every dtype (kDefault: back to the
// environment's or the default). Not thread-safe, like matmul_force_isa.
void matmul_force_streaming(MatmulStreaming streaming);
// The streaming of a one-token product of `dtype` weights in rows of n_in columns (it depends on
// the length for Q8_0 on Zen 4) on the path in use: "whole rows",
// "whole rows, prefetched ahead", "segments", "AMX tiles" (BF16 on amxbf16: 64-row items, four
// 16-row tiles a step, core/matmul_amx.h; a BF16 matrix whose rows are not whole 32-column steps
// streams as on avx512bf16), or "n/a" (the generic and avx2 paths).
const char* matmul_one_token_streaming(DType dtype, int64_t n_in);
// The same for the matrix w, whose layout may be row pairs (matmul_bf16_row_pairs): on the
// avx512 and avx512vnni paths "row pairs" and "row pairs, prefetched ahead" where plain rows read
// whole (a pair at a time), or "segments"; on the paths that read plain rows only (generic, avx2,
// avx512bf16, amxbf16) "rows copied out of their pairs". A plain matrix: as above.
const char* matmul_one_token_streaming(const TensorView& w);
// Where the avx512 paths' column segments prefetch the weights of the next segment in software
// (core/segment_prefetch.h): kToL1 (prefetcht0) or kToL2 (prefetcht1: L2 only, leaving the L1's
// miss buffers to the tile's own loads). No output changes a bit with it. Default (kDefault):
// kToL2 on AMD families 19h (Zen 4), where calls of several products per weight ran 10-28%
// faster with it, and 1Ah (Zen 5, 9% over the [8192, 3072] products of every dtype), kToL1 on
// every other CPU. SPECLAB_MATMUL_PREFETCH=l1|l2 in the environment sets it
// for a whole run.
enum class MatmulPrefetch { kDefault, kToL1, kToL2 };
// For tests and comparisons: force one target (kDefault: back to the environment's or the
// default). Not thread-safe, like matmul_force_isa.
void matmul_force_prefetch(MatmulPrefetch prefetch);
// The target on the path in use: "L1", "L2", or "n/a" (the generic and avx2 paths).
const char* matmul_segment_prefetch();
// How a model's BF16 matrices are stored once loaded (models/llama/llama_model.h): plain rows, or
// row pairs (core/row_pairs.h: rows 2p and 2p + 1 interleaved a 32-column step at a time), which
// the avx512 path's one-token product reads a pair at a time, two FMA chains from one stream
// (every path gives a paired matrix the bits it gives its plain rows; the paths other than
// avx512 and avx512vnni copy each work item's rows out of their pairs first). Decided once per
// model at load, so a path forced later meets the layout the load chose.
//   kDefault   matmul_default_bf16_row_pairs on this CPU
//   kRows, kRowPairs   as named
// SPECLAB_MATMUL_LAYOUT=rows|pairs in the environment sets it for a whole run.
enum class MatmulLayout { kDefault, kRows, kRowPairs };
// The default: row pairs on AMD family 1Ah (Zen 5) with the avx512 path, where a decode read
// closer to the memory's rate that way (docs/cpu-kernels.md "BF16 rows in pairs"); plain rows
// elsewhere (not measured).
bool matmul_default_bf16_row_pairs(unsigned amd_family, bool avx512);
// Whether models loaded now store BF16 matrices in row pairs (the forced layout, else
// SPECLAB_MATMUL_LAYOUT, else the default).
bool matmul_bf16_row_pairs();
// For tests and comparisons: force a layout for models loaded from now on (kDefault: back to the
// environment's or the default). Not thread-safe, like matmul_force_isa.
void matmul_force_layout(MatmulLayout layout);
// For comparisons against FP32-activation references (other backends, golden logits): the best
// path the CPU supports that keeps FP32 activations (avx512 rather than avx512vnni); false:
// back to the default. Not thread-safe, like matmul_force_isa.
void matmul_force_float_activations(bool force);

}  // namespace speclab
