// When CudaLlamaRunner captures, replays or launches plainly (CudaGraphBook), and the
// SPECLAB_CUDA_GRAPHS switch: host logic, runs without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cuda/cuda_graph_book.h"
#include "core/error.h"

namespace speclab {
namespace {

CudaGraphPolicy on() {
  CudaGraphPolicy p;
  p.enabled = true;
  return p;
}

// The actions of a run of keys, as a string ("p" plain, "c" capture, "r" replay), reporting
// every capture as a success.
std::string run(CudaGraphBook& book, const std::vector<CudaGraphKey>& keys) {
  std::string out;
  for (const CudaGraphKey& k : keys) {
    const CudaGraphAction a = book.next(k);
    out += cuda_graph_action_name(a)[0];
    if (a == CudaGraphAction::kCapture) book.captured(k);
  }
  return out;
}

TEST(CudaGraphBook, OffMeansPlainAlways) {
  CudaGraphBook book;  // default policy: off
  EXPECT_EQ(run(book, {{1, true}, {1, true}, {1, true}}), "ppp");
  EXPECT_EQ(book.stats().plain, 3);
  EXPECT_EQ(book.n_graphs(), 0u);
}

TEST(CudaGraphBook, WarmUpOnceThenCaptureOnceThenReplay) {
  CudaGraphBook book(on());
  EXPECT_EQ(run(book, {{1, true}, {1, true}, {1, true}, {1, true}}), "pcrr");
  EXPECT_EQ(book.stats().captures, 1);
  EXPECT_EQ(book.stats().replays, 2);
  EXPECT_EQ(book.stats().plain, 1);
}

TEST(CudaGraphBook, OneGraphPerTokenCountAndLastOnly) {
  // A speculative round: draft steps (1 token, last row), the target's verification
  // (k + 1 tokens, every row), per gamma; each shape is its own graph.
  CudaGraphBook book(on());
  const std::vector<CudaGraphKey> round = {{1, true}, {1, true}, {5, false}};
  EXPECT_EQ(run(book, round), "pcp");  // draft warms and captures; verify warms
  EXPECT_EQ(run(book, round), "rrc");
  EXPECT_EQ(run(book, round), "rrr");
  EXPECT_EQ(run(book, {{5, true}, {5, true}}), "pc");  // same n, other head: other graph
  EXPECT_EQ(book.n_graphs(), 3u);
}

// CudaGraphs.LogitsBitIdenticalToPlainLaunches's schedule (tests/cuda/test_cuda_graphs.cpp)
// with the runner's rule that a step of more tokens than the buffers hold reallocates them
// and invalidates every graph (CudaLlamaRunner::ensure_batch_capacity): the counts that the
// device test expects, worked out by the book itself.
TEST(CudaGraphBook, RunnerScheduleOfTheDeviceTest) {
  CudaGraphBook book(on());
  int64_t capacity = 0;
  std::string actions;
  auto step = [&](int64_t n, bool last_only) {
    if (n > capacity) {
      book.invalidate();
      capacity = n;
    }
    actions += run(book, {{n, last_only}});
  };
  step(7, false);  // the prompt
  for (int rep = 0; rep < 4; rep++) {
    for (int64_t n : {1, 1, 2, 4, 5, 9}) {
      for (bool last_only : {true, false}) step(n, last_only);
    }
    actions += '|';
  }
  // Rep 0's 9-token step drops the 1-token graphs captured earlier in rep 0.
  EXPECT_EQ(actions,
            "p"
            "ppccpppppppp|"
            "ppccppppppcc|"
            "rrrrccccccrr|"
            "rrrrrrrrrrrr|");
  EXPECT_EQ(book.stats().plain, 19);
  EXPECT_EQ(book.stats().captures, 12);
  EXPECT_EQ(book.stats().replays, 18);
  EXPECT_EQ(book.stats().invalidations, 1);
}

TEST(CudaGraphBook, LongStepsStayPlain) {
  CudaGraphPolicy p = on();
  p.max_tokens = 8;
  CudaGraphBook book(p);
  EXPECT_EQ(run(book, {{9, false}, {9, false}, {9, false}}), "ppp");
  EXPECT_EQ(run(book, {{8, false}, {8, false}}), "pc");
  EXPECT_EQ(run(book, {{0, false}}), "p");
}

TEST(CudaGraphBook, InvalidateDropsEveryGraphAndWarmsAgain) {
  CudaGraphBook book(on());
  EXPECT_EQ(run(book, {{1, true}, {1, true}, {1, true}}), "pcr");
  book.invalidate();  // the activations were reallocated for a longer step
  EXPECT_EQ(book.n_graphs(), 0u);
  EXPECT_EQ(book.stats().invalidations, 1);
  EXPECT_EQ(run(book, {{1, true}, {1, true}, {1, true}}), "pcr");
  EXPECT_EQ(book.stats().captures, 2);
}

TEST(CudaGraphBook, FailedCaptureStaysPlain) {
  CudaGraphBook book(on());
  EXPECT_EQ(book.next({2, false}), CudaGraphAction::kPlain);
  EXPECT_EQ(book.next({2, false}), CudaGraphAction::kCapture);
  book.capture_failed({2, false});
  EXPECT_EQ(run(book, {{2, false}, {2, false}}), "pp");
  EXPECT_EQ(book.stats().failures, 1);
  EXPECT_EQ(book.n_graphs(), 0u);
  EXPECT_EQ(run(book, {{3, false}, {3, false}}), "pc");  // other shapes still capture
}

TEST(CudaGraphBook, GraphLimitThenPlain) {
  CudaGraphPolicy p = on();
  p.max_graphs = 2;
  p.warmup_calls = 0;
  CudaGraphBook book(p);
  EXPECT_EQ(run(book, {{1, true}, {2, true}, {3, true}, {3, true}, {1, true}}), "ccppr");
  EXPECT_EQ(book.n_graphs(), 2u);
}

TEST(CudaGraphBook, SwitchingOffAndOn) {
  CudaGraphBook book(on());
  EXPECT_EQ(run(book, {{1, true}, {1, true}}), "pc");
  book.set_enabled(false);
  EXPECT_EQ(run(book, {{1, true}}), "p");
  book.set_enabled(true);
  EXPECT_EQ(run(book, {{1, true}}), "r");  // the runner drops its graphs with invalidate()
}

TEST(CudaGraphEnv, ParsesZeroOneAndUnset) {
  EXPECT_FALSE(cuda_graphs_env_value(nullptr, false));
  EXPECT_TRUE(cuda_graphs_env_value(nullptr, true));
  EXPECT_FALSE(cuda_graphs_env_value("", false));
  EXPECT_FALSE(cuda_graphs_env_value("0", true));
  EXPECT_TRUE(cuda_graphs_env_value("1", false));
  for (const char* bad : {"yes", "on", "2", " 1"}) {
    try {
      cuda_graphs_env_value(bad, false);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("SPECLAB_CUDA_GRAPHS must be 0 or 1, got '") + bad + "'");
    }
  }
}

}  // namespace
}  // namespace speclab
