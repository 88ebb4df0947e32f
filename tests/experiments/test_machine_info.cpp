#include <gtest/gtest.h>

#include "experiments/machine_info.h"
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
  const nlohmann::json j = m.to_json();
  for (const char* key : {"cpu_model", "cores", "threads", "memory_gb", "mem_read_gbps", "hostname",
                          "git_commit", "gpu"})
    EXPECT_TRUE(j.contains(key)) << key;
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

}  // namespace
}  // namespace speclab
