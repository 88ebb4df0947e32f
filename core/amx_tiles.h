// Intel AMX tiles (AMX-TILE, AMX-BF16) as the matmul kernel and the peak probe use them: eight
// tile registers of up to 16 rows x 64 bytes, shaped by ldtilecfg, loaded and stored with a
// stride, and tdpbf16ps, C[M][N] += A[M][K pairs] · B[K pairs][N] on BF16 pairs into FP32.
//
// The instructions are written as inline assembly (binutils' and LLVM's assemblers know them;
// the intrinsics differ between GCC and clang in how they take the tile number), each taking
// its tile numbers as literals; loads and stores clobber memory, since they read or write
// memory the compiler sees.
#pragma once

#include <cstdint>

namespace speclab {

// Whether this CPU has AMX-TILE and AMX-BF16, the OS enables their state (XCR0 bits 17 and 18),
// and Linux granted this process the tile data (arch_prctl ARCH_REQ_XCOMP_PERM, asked once:
// without it the first tile instruction is a SIGILL).
bool amx_bf16_available();

// The 64-byte operand of ldtilecfg (palette 1): bytes per row and rows of each tile.
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64, "ldtilecfg reads 64 bytes");

// Shapes the tiles (and zeroes them); the thread holds the tile state until amx_release.
inline void amx_configure(const AmxTileConfig& c) {
  asm volatile("ldtilecfg %0" ::"m"(c) : "memory");
}
inline void amx_release() { asm volatile("tilerelease" ::: "memory"); }

}  // namespace speclab

// Tile t <- rows of its configured width at ptr, stride bytes apart.
#define SPECLAB_TILE_LOAD(t, ptr, stride)                                                    \
  asm volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(ptr), "r"(static_cast<int64_t>(stride)) \
               : "memory")
// Rows of tile t -> ptr, stride bytes apart.
#define SPECLAB_TILE_STORE(t, ptr, stride)                                                       \
  asm volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(ptr), "r"(static_cast<int64_t>(stride)) \
               : "memory")
#define SPECLAB_TILE_ZERO(t) asm volatile("tilezero %%tmm" #t ::)
// Tile c += tile a · tile b (BF16 pairs, FP32 sums; AT&T operand order: b, a, c).
#define SPECLAB_TILE_DP(c, a, b) asm volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
