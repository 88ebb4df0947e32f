// BF16 weights multiplied on AMX tiles (tdpbf16ps; core/amx_tiles.h), the kernels of the opt-in
// "amxbf16" path of matmul_weights (core/cpu_matmul.h), internal to core/cpu_matmul.cpp. Called
// only when amx_bf16_available().
//
// Arithmetic: the activations rounded to BF16 (round to nearest even, as the avx512bf16 path
// rounds them) and each output accumulated in FP32 over the row's 32-column steps in order,
// each step's 16 column pairs in the order tdpbf16ps adds them. The order depends on nothing
// but the row's length: a token's outputs are bit-identical whether it is computed alone or in
// a batch of any size, in any tile arrangement, on any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace speclab {
namespace matmul_amx {

// Output rows per work item: four 16-row tiles.
constexpr int kRowBlock = 64;

// Whether a matrix of n_in columns goes on the tiles: whole 32-column steps only (a tile row is
// 32 BF16 weights and must not read past a row). Other BF16 matrices take the avx512bf16 kernel;
// the choice depends on the shape alone, so batch invariance holds for every matrix.
inline bool fits(int64_t n_in) { return n_in > 0 && n_in % 32 == 0; }

// Activations rounded to BF16 and packed as the B operand of tdpbf16ps: per 32-column step s,
// 16 column pairs j, and for each pair every token's two values side by side.
//   dst: [n_chunks][n_steps][16][n_c][2]   x: [n_tokens, n_in]
// Chunk c (tokens [c * chunk, ...), n_c of them) starts at c * n_steps * chunk * 32 and its step
// s at + s * n_c * 32; the values of token t of the chunk for pair j at + j * n_c * 2 + 2 t.
// Steps [s0, s1) of every token, so that threads can share the packing.
void pack(uint16_t* dst, const float* x, int64_t n_tokens, int64_t n_in, int64_t chunk, int64_t s0,
          int64_t s1);

// One work item: out[t * n_out + j] for rows j < n_rows (<= kRowBlock) starting at row0 (stored
// rows row_bytes apart, each n_in BF16 weights, fits(n_in)) and tokens t < n_tokens of one
// chunk packed by pack (xb: the chunk's first step).
void rows(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes, int n_rows,
          const uint16_t* xb, int64_t n_in, int64_t n_tokens);

}  // namespace matmul_amx
}  // namespace speclab
