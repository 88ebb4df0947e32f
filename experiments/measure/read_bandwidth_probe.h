// The machine's streaming read bandwidth, measured several ways: the memory-bound limit every
// decode figure is compared with.
//
// A single probe understates the limit: a plain summing loop leaves bandwidth on the table
// that a kernel with wider loads, more independent streams or software prefetch reaches (a
// fast engine has been seen streaming weights faster than one simple two-thread probe read
// in the same minutes). So the limit quoted beside a figure is the best of several probes,
// run interleaved so that load drift affects them alike, and each probe's own figure is
// reported too.
//
// Every probe reads the whole buffer and returns the wrapping 64-bit sum of its words, so a
// test can check that no probe skips data (a probe that reads half the buffer would report
// twice the bandwidth).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/large_buffer.h"

namespace speclab {

enum class ReadProbe {
  kScalarSum,        // uint64 sum in a plain loop (what the compiler vectorizes by itself)
  kVector4,          // 4 independent vector accumulators, aligned 512- (or 256-) bit loads
  kVector4Prefetch,  // as kVector4, plus a software prefetch 2 KB ahead of each stream
  kVectorStream,     // as kVector4 with non-temporal loads (MOVNTDQA) where AVX-512 is present
  kTwoStreams,       // each thread reads two halves of its range at once (two DRAM pages open)
  kFourStreams,      // four quarters at once, a line of each in turn (as a 4-row matmul tile)
};

// "scalar-sum", "vector4", "vector4-prefetch", "vector-nt", "two-streams", "four-streams".
const char* read_probe_name(ReadProbe probe);
// All probes, in the order they are run.
std::vector<ReadProbe> read_probe_all();
// "avx512" or "avx2" or "generic": the instructions the vector probes use on this CPU.
const char* read_probe_isa();

// One pass of `probe` over words [0, n) of buf with `threads` OpenMP threads (each thread a
// contiguous range); buf must be 64-byte aligned. Returns the wrapping sum of the words.
uint64_t read_probe_pass(ReadProbe probe, const uint64_t* buf, int64_t n, int threads);

// One word range to read: `words` 64-bit words from a 64-byte-aligned `data`.
struct ReadRange {
  const uint64_t* data = nullptr;
  int64_t words = 0;
};
// One pass of `probe` over every range in turn, in one parallel region of `threads` threads
// (each thread its contiguous share of each range, with no barrier between ranges): how a
// decode step's team reads its matrices one after another, without a region per matrix.
// Returns the wrapping sum of all the words.
uint64_t read_probe_ranges(ReadProbe probe, const std::vector<ReadRange>& ranges, int threads);

struct ReadProbeFigure {
  ReadProbe probe = ReadProbe::kScalarSum;
  PageSize pages = PageSize::kSmall;  // the pages of the buffer it read
  double gbps = 0;                    // best pass, 1e9 bytes/s
  int passes = 0;
};
// "<probe>.<pages>", e.g. "four-streams.thp": the name a figure is recorded under.
std::string read_probe_label(const ReadProbeFigure& f);

struct ReadBandwidth {
  std::vector<ReadProbeFigure> probes;  // 4 KB pages then huge pages, read_probe_all() order each
  double best_gbps = 0;                 // the limit: the best probe's figure
  ReadProbeFigure best;                 // the probe and pages that set it
};

// Runs every probe over a `bytes` buffer of 4 KB pages and over one of transparent huge pages
// (core/large_buffer.h: the weights' own pages unless SPECLAB_NO_THP; real models are mapped
// files on 4 KB pages), each first touched by the reading threads, round robin for about
// `seconds` in all and at least two passes each; each probe's best pass counts. threads <= 0:
// all cores. 512 MB defeats every cache level.
ReadBandwidth read_bandwidth_measure(size_t bytes, double seconds, int threads);

}  // namespace speclab
