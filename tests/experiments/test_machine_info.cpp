#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>

#include "core/amx_tiles.h"
#include "core/large_buffer.h"
#include "experiments/measure/compute_peak_probe.h"
#include "experiments/measure/machine_info.h"
#include "experiments/measure/read_bandwidth_probe.h"
#include "experiments_test_util.h"

namespace speclab {
namespace {

TEST(MachineInfo, CollectsTheMachine) {
  const MachineInfo m = machine_info_collect(1, SPECLAB_SOURCE_DIR, /*measure_bandwidth=*/false);
  EXPECT_FALSE(m.cpu_model.empty());
  EXPECT_GE(m.cores, 1);
  EXPECT_EQ(m.threads, 1);
  EXPECT_GT(m.memory_bytes, int64_t{1} << 26);
  EXPECT_FALSE(m.hostname.empty());
  EXPECT_EQ(m.mem_read_gbps, 0);
  EXPECT_FALSE(m.git_commit.empty());
  // The device a row was measured on: "none" unless this build has CUDA and sees a device.
  EXPECT_FALSE(m.gpu.empty());
#ifndef SPECLAB_HAVE_CUDA
  EXPECT_EQ(m.gpu, "none");
#endif
  EXPECT_EQ(machine_info_collect(0, SPECLAB_SOURCE_DIR, false).threads, m.cores);
}

TEST(MachineInfo, GitCommitOrUnknown) {
  const std::string commit = machine_git_commit(SPECLAB_SOURCE_DIR);
  // The source tree is a git repository: a short hex hash.
  EXPECT_GE(commit.size(), 4u);
  EXPECT_EQ(commit.find_first_not_of("0123456789abcdef"), std::string::npos) << commit;
  testing_util::ScratchDir not_a_repo;
  EXPECT_EQ(machine_git_commit(not_a_repo.path.string()), "unknown");
  EXPECT_EQ(machine_git_commit("/nonexistent/dir"), "unknown");
}

TEST(MachineInfo, MeasuresAPlausibleReadBandwidth) {
  // 32 MiB for 0.1 s keeps the test fast; the real measurement uses 512 MiB for 0.5 s.
  const double gbps = machine_measure_read_bandwidth(size_t{32} << 20, 0.1, 0);
  EXPECT_GT(gbps, 0.1);     // slower than 100 MB/s would be a broken loop
  EXPECT_LT(gbps, 2000.0);  // faster than 2 TB/s would mean the loop was optimized away
}

// Every probe must read every word: a probe that skipped part of the buffer (a wrong stride,
// a lost tail, a thread range that ends early) would report a bandwidth it never moved.
// Buffer sizes cover ranges that are not a multiple of the vector loop nor split evenly
// between threads, and the two-stream probe's uneven halves.
TEST(ReadBandwidthProbe, EveryProbeSumsEveryWord) {
  for (const int64_t n :
       {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{1000}, int64_t{4099}, int64_t{100003}}) {
    std::unique_ptr<uint64_t, decltype(&std::free)> buf(
        static_cast<uint64_t*>(std::aligned_alloc(64, (n * 8 + 63) / 64 * 64)), &std::free);
    uint64_t expected = 0;
    for (int64_t i = 0; i < n; i++) {
      buf.get()[i] = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
      expected += buf.get()[i];
    }
    for (const ReadProbe probe : read_probe_all()) {
      for (const int threads : {1, 2, 3}) {
        EXPECT_EQ(read_probe_pass(probe, buf.get(), n, threads), expected)
            << read_probe_name(probe) << " n=" << n << " threads=" << threads;
      }
    }
  }
}

// The same over several ranges of odd lengths at once (a decode step's matrices in turn).
TEST(ReadBandwidthProbe, EveryProbeSumsEveryWordOfEveryRange) {
  const int64_t lengths[] = {1, 7, 64, 4099, 100003};
  std::vector<std::unique_ptr<uint64_t, decltype(&std::free)>> bufs;
  std::vector<ReadRange> ranges;
  uint64_t expected = 0;
  for (const int64_t n : lengths) {
    bufs.emplace_back(static_cast<uint64_t*>(std::aligned_alloc(64, (n * 8 + 63) / 64 * 64)),
                      &std::free);
    for (int64_t i = 0; i < n; i++) {
      bufs.back().get()[i] = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1 + n);
      expected += bufs.back().get()[i];
    }
    ranges.push_back({bufs.back().get(), n});
  }
  for (const ReadProbe probe : read_probe_all()) {
    for (const int threads : {1, 2, 3}) {
      EXPECT_EQ(read_probe_ranges(probe, ranges, threads), expected)
          << read_probe_name(probe) << " threads=" << threads;
    }
  }
}

TEST(ReadBandwidthProbe, TheLimitIsTheBestProbe) {
  const ReadBandwidth bw = read_bandwidth_measure(size_t{16} << 20, 0.05, 0);
  ASSERT_EQ(bw.probes.size(), 2 * read_probe_all().size());  // 4 KB pages, then huge pages
  double best = 0;
  for (const ReadProbeFigure& f : bw.probes) {
    EXPECT_GE(f.passes, 2) << read_probe_name(f.probe);
    EXPECT_GT(f.gbps, 0.1) << read_probe_name(f.probe);
    best = std::max(best, f.gbps);
  }
  EXPECT_EQ(bw.best_gbps, best);
  EXPECT_STRNE(read_probe_name(bw.best.probe), "?");
  EXPECT_EQ(bw.best.gbps, bw.best_gbps);
  EXPECT_STRNE(read_probe_isa(), "?");
}

// Each probe is run on both page sizes and recorded under its own label.
TEST(ReadBandwidthProbe, EveryProbeRunsOnBothPageSizes) {
  const ReadBandwidth bw = read_bandwidth_measure(size_t{4} << 20, 0.02, 2);
  std::set<std::string> labels;
  for (const ReadProbeFigure& f : bw.probes) labels.insert(read_probe_label(f));
  EXPECT_EQ(labels.size(), 2 * read_probe_all().size());
  EXPECT_TRUE(labels.count("four-streams.thp")) << "four-streams on huge pages";
  EXPECT_TRUE(labels.count("scalar-sum.4k")) << "the plain sum on 4 KB pages";
}

// A large buffer is aligned as asked, rounded up to whole huge pages when it is large, and
// writable end to end on either page size.
TEST(LargeBuffer, AlignedRoundedAndWritable) {
  for (const PageSize pages : {PageSize::kSmall, PageSize::kHuge}) {
    for (const size_t n : {size_t{100}, size_t{2} << 20, (size_t{5} << 20) + 3}) {
      LargeBuffer b = large_buffer_alloc(n, pages);
      ASSERT_TRUE(b) << n;
      const size_t align = n >= (size_t{2} << 20) ? (size_t{2} << 20) : 64;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % align, 0u) << n;
      EXPECT_GE(large_buffer_rounded(n), n);
      EXPECT_EQ(large_buffer_rounded(n) % align, 0u) << n;
      std::memset(b.get(), 0xAB, large_buffer_rounded(n));
      EXPECT_EQ(static_cast<unsigned char*>(b.get())[large_buffer_rounded(n) - 1], 0xAB);
    }
  }
  EXPECT_STREQ(page_size_name(PageSize::kHuge), "thp");
  EXPECT_STREQ(page_size_name(PageSize::kSmall), "4k");
}

// The arithmetic peaks: a loop the compiler had removed would report an impossible rate, a
// wrong FLOP count per instruction a rate off by its factor. Both are caught by bounding the
// instructions per second of one thread: at most 4 vector FMAs per cycle at 6 GHz, and at least
// one every 30 ns (any machine that runs the test at all).
TEST(ComputePeakProbe, RatesArePlausibleInstructionRates) {
  const int lanes = fp32_fma_widest_lanes();
  if (lanes == 0) GTEST_SKIP() << "no FMA on this CPU";
  for (const int w : {8, lanes}) {
    const double flops = fp32_fma_peak_flops(1, w, 0.02);
    const double instr_per_s = flops / (2.0 * w);
    EXPECT_GT(instr_per_s, 3e7) << w << " lanes";
    EXPECT_LT(instr_per_s, 4 * 6e9) << w << " lanes";
  }
  EXPECT_EQ(fp32_fma_peak_flops(1, 4, 0.01), 0.0) << "no 4-lane FP32 FMA path";
  const double bf16 = bf16_dot_peak_flops(1, 0.02);
  if (__builtin_cpu_supports("avx512bf16")) {
    EXPECT_GT(bf16 / 64.0, 3e7);
    EXPECT_LT(bf16 / 64.0, 4 * 6e9);
  } else {
    EXPECT_EQ(bf16, 0.0);
  }
  // tdpbf16ps: 16,384 FLOP an instruction; at most one a cycle at 6 GHz (one issues every 16
  // cycles on Sapphire Rapids), at least one every 30 ns.
  const double amx = amx_bf16_peak_flops(1, 0.02);
  if (amx_bf16_available()) {
    EXPECT_GT(amx / 16384.0, 3e7);
    EXPECT_LT(amx / 16384.0, 6e9);
  } else {
    EXPECT_EQ(amx, 0.0);
  }
}

}  // namespace
}  // namespace speclab
