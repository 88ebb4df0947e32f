// The machine's arithmetic peaks, measured: the limits that many-row matmul figures (a verify
// of b requests x k tokens, a prefill) are compared with, as read_bandwidth_probe.h measures
// the limit of one-row decode.
//
// Each thread runs kPeakChains independent accumulator chains, more than the FMA latency times
// the FMAs issued per cycle (4 x 2 on Zen 3/4 and Skylake-SP), so that no chain waits for
// another, and no memory operand: what is left is the issue rate of the instruction. A
// thread's rate is taken over its own CPU time (a thread the OS deschedules for a moment on a
// machine shared with other jobs does not lower it); the figure is the sum over the threads,
// the best of three passes.
#pragma once

namespace speclab {

constexpr int kPeakChains = 12;

// FP32 FLOP/s of vfmadd (2 per lane) on `threads` threads, with vectors of `lanes` FP32 lanes:
// 8 (AVX2 + FMA) or 16 (AVX-512F). 0 when the CPU lacks the instructions. `seconds` per pass
// per thread, about.
double fp32_fma_peak_flops(int threads, int lanes, double seconds = 0.2);

// FLOP/s of vdpbf16ps (AVX512-BF16: 16 lanes x 2 products, 2 FLOP each) on `threads`
// threads; 0 when the CPU has no AVX512-BF16.
double bf16_dot_peak_flops(int threads, double seconds = 0.2);

// FLOP/s of tdpbf16ps (AMX-BF16: 16 x 16 outputs x 32 products, 2 FLOP each) on `threads`
// threads, four accumulator tiles in flight and no memory operand; 0 when the CPU lacks AMX or
// Linux did not grant the tile state (core/amx_tiles.h).
double amx_bf16_peak_flops(int threads, double seconds = 0.2);

// The widest FP32 vector this CPU runs FMAs on: 16, 8, or 0 (no FMA).
int fp32_fma_widest_lanes();

// The calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID): the clock the probes
// time themselves by.
double thread_cpu_seconds();

}  // namespace speclab
