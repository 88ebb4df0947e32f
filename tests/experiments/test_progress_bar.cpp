#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "experiments/measure/progress_bar.h"
#include "experiments_test_util.h"

namespace speclab {
namespace {

TEST(ProgressBar, FormatsDurations) {
  EXPECT_EQ(progress_format_duration(0), "0s");
  EXPECT_EQ(progress_format_duration(42.4), "42s");
  EXPECT_EQ(progress_format_duration(64), "1m04s");
  EXPECT_EQ(progress_format_duration(7380), "2h03m");
  EXPECT_EQ(progress_format_duration(-1), "--");
}

TEST(ProgressBar, FormatsBarAndLogLines) {
  EXPECT_EQ(progress_format(18, 36, 64, 20, "draft-2m g=4 T=0"),
            "[##########..........]  18/36 cells  elapsed 1m04s  ETA 1m04s  draft-2m g=4 T=0");
  EXPECT_EQ(progress_format(0, 36, 3, 10, ""), "[..........]  0/36 cells  elapsed 3s  ETA --");
  EXPECT_EQ(progress_format(36, 36, 100, 10, ""),
            "[##########]  36/36 cells  elapsed 1m40s  ETA 0s");
  EXPECT_EQ(progress_format(1, 4, 10, 0, "lookup g=2"), "[1/4] elapsed 10s  ETA 30s  lookup g=2");
}

TEST(ProgressBar, WritesOnePlainLinePerUpdateWhenNotATerminal) {
  testing_util::ScratchDir dir;
  const std::string path = dir.file("log.txt");
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  {
    ProgressBar bar(3, f);
    bar.update(1, "a");
    bar.update(2, "b");
    bar.finish();
  }
  std::fclose(f);
  std::ifstream in(path);
  std::string l1, l2, rest;
  std::getline(in, l1);
  std::getline(in, l2);
  std::getline(in, rest);
  EXPECT_EQ(l1.rfind("[1/3] elapsed 0s  ETA 0s  a", 0), 0u) << l1;
  EXPECT_EQ(l2.rfind("[2/3] elapsed ", 0), 0u) << l2;
  EXPECT_TRUE(rest.empty());
  EXPECT_TRUE(in.eof());
}

}  // namespace
}  // namespace speclab
