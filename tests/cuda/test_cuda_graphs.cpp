// CUDA graphs of CudaLlamaRunner's forward pass (set_cuda_graphs / SPECLAB_CUDA_GRAPHS)
// against the plain launches, on the device (skip without one). The graph replays the
// same kernels with the step's ids and n_past read from device memory, so the logits must
// be equal bit for bit (tolerance 0, first mismatches printed) at every step shape, after
// rollbacks, and after a long prefill reallocates the buffers (every graph recaptured); and
// whole speculative requests (greedy and sampled with the same keys) must give the same
// tokens and round records. The bookkeeping itself is tested on the host
// (tests/cuda/test_cuda_graph_book.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "models/decode/speculative_decoder.h"
#include "models/drafters/model_drafter.h"
#include "models/llama/cuda/cuda_llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/cuda/cuda_test_util.h"

namespace speclab {
namespace {

std::vector<float> step(CudaLlamaRunner& r, const std::vector<int32_t>& tokens, bool last_only) {
  const float* p = r.forward(tokens.data(), static_cast<int64_t>(tokens.size()), last_only);
  const size_t rows = last_only ? 1 : tokens.size();
  return std::vector<float>(p, p + rows * static_cast<size_t>(r.vocab()));
}

// One forward pass of each runner on the same tokens; logits equal bit for bit.
void expect_same_step(CudaLlamaRunner& plain, CudaLlamaRunner& graph,
                      const std::vector<int32_t>& tokens, bool last_only, const std::string& what) {
  const std::vector<float> a = step(plain, tokens, last_only);
  const std::vector<float> b = step(graph, tokens, last_only);
  expect_close(b, a, 0, 0, what);
  EXPECT_EQ(graph.n_past(), plain.n_past()) << what;
}

// BF16 takes the vectorized and fused kernels at 1-8 tokens and cuBLAS GemmEx (with its
// stream-ordered workspace, captured as a memory node) beyond (the 9-token steps); F32 takes
// cublasSgemm; Q8_0 the dequantizing kernel: every product path is captured.
TEST(CudaGraphs, LogitsBitIdenticalToPlainLaunches) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  for (const char* spec : {"tiny:BF16", "tiny:F32", "tiny:Q8_0"}) {
    SCOPED_TRACE(spec);
    const auto model = llama_make_synthetic(spec, 42);
    CudaLlamaRunner plain(*model, 256), graph(*model, 256);
    plain.set_cuda_graphs(false);
    graph.set_cuda_graphs(true);
    ASSERT_TRUE(graph.cuda_graphs());
    const int32_t V = static_cast<int32_t>(plain.vocab());
    expect_same_step(plain, graph, {1, 5, 9, 2, 7, 3, 11}, false, "prompt");
    // Shapes of speculative rounds (draft steps of one token, verification of k + 1), each
    // several times so that they warm up, capture and replay at moving positions.
    int32_t t = 3;
    for (int rep = 0; rep < 4; rep++) {
      for (int64_t n : {1, 1, 2, 4, 5, 9}) {
        std::vector<int32_t> toks;
        for (int64_t i = 0; i < n; i++) toks.push_back(t = (t * 31 + 7) % V);
        for (bool last_only : {true, false}) {
          expect_same_step(plain, graph, toks, last_only,
                           std::string(spec) + " rep " + std::to_string(rep) + " n " +
                               std::to_string(n) + (last_only ? " last" : " all"));
          // Roll back all but one token of the step: positions are reused.
          plain.truncate(plain.n_past() - n + 1);
          graph.truncate(graph.n_past() - n + 1);
        }
      }
    }
    const CudaGraphStats s = graph.cuda_graph_stats();
    // The counts follow from the policy (one plain warm-up call per key, then a capture,
    // then replays) and the buffers: the prompt sized them for 7 tokens, so rep 0's first
    // 9-token step grows them and drops the two graphs rep 0 had captured (the 1-token keys).
    // Rep 0: 10 plain, 2 captures; rep 1 (every key fresh but the 9-token ones): 8 plain,
    // 4 captures; rep 2: the 1- and 9-token keys replay (6), the 2/4/5-token keys capture
    // (6); rep 3: 12 replays. With the prompt: 19 plain, 12 captures, 18 replays, one
    // invalidation (CudaGraphBook.RunnerScheduleOfTheDeviceTest replays the same schedule on
    // the host).
    EXPECT_EQ(s.failures, 0) << graph.cuda_graph_failure();
    EXPECT_EQ(s.captures, 12);
    EXPECT_EQ(s.replays, 18);
    EXPECT_EQ(s.plain, 19);
    EXPECT_EQ(s.invalidations, 1);
    EXPECT_EQ(plain.cuda_graph_stats().captures, 0);

    // A long step (over the graphs' 32 tokens: plain, its own score buffer) reallocates the
    // activations: every graph is dropped and recaptured, and still equals the plain path.
    std::vector<int32_t> long_step(40);
    for (int32_t& x : long_step) x = t = (t * 31 + 7) % V;
    expect_same_step(plain, graph, long_step, false, std::string(spec) + " long step");
    EXPECT_GE(graph.cuda_graph_stats().invalidations, 1);
    for (int rep = 0; rep < 3; rep++) {
      expect_same_step(plain, graph, {t = (t * 31 + 7) % V}, true,
                       std::string(spec) + " after reallocation, rep " + std::to_string(rep));
    }
    EXPECT_EQ(graph.cuda_graph_stats().failures, 0) << graph.cuda_graph_failure();
  }
}

TokenRunnerFactory graph_factory(bool graphs) {
  return [graphs](const LlamaModel& m, int64_t ctx, std::vector<bool> skip) {
    auto r = std::make_unique<CudaLlamaRunner>(m, ctx, std::move(skip));
    r->set_cuda_graphs(graphs);
    return std::unique_ptr<TokenRunner>(std::move(r));
  };
}

// Whole requests, the draft and the target on the device with graphs on and off: the same
// tokens, draft calls and round records, greedy (T 0) and sampled (T 1, same keys: the
// device's sampling reads bit-identical logits, so it draws the same ids). BF16 exercises the
// fused kernels and both product paths (draft steps of 1 token, verification of gamma + 1).
TEST(CudaGraphs, SpeculativeRequestsEqualPlainLaunches) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto target = llama_make_synthetic("tiny:BF16", 7);
  const auto draft = llama_make_synthetic("tiny:BF16", 8);
  for (float temperature : {0.0f, 1.0f}) {
    for (int gamma : {1, 4, 7}) {
      SCOPED_TRACE("T " + std::to_string(temperature) + " gamma " + std::to_string(gamma));
      CudaLlamaRunner plain_target(*target, 128), graph_target(*target, 128);
      plain_target.set_cuda_graphs(false);
      graph_target.set_cuda_graphs(true);
      ModelDrafter plain_drafter(*draft, "draft", 128, {}, graph_factory(false));
      ModelDrafter graph_drafter(*draft, "draft", 128, {}, graph_factory(true));
      SpeculativeConfig cfg;
      cfg.gamma = gamma;
      cfg.draft_sampling.temperature = temperature;
      for (uint64_t seed = 0; seed < 3; seed++) {
        const GenerationRequest req = decoder_request(temperature, seed);
        const GenerationResult a = generate_speculative(plain_target, plain_drafter, req, cfg);
        const GenerationResult b = generate_speculative(graph_target, graph_drafter, req, cfg);
        EXPECT_EQ(b.tokens, a.tokens) << "seed " << seed;
        EXPECT_EQ(b.n_draft_calls, a.n_draft_calls) << "seed " << seed;
        ASSERT_EQ(b.rounds.size(), a.rounds.size()) << "seed " << seed;
        for (size_t r = 0; r < a.rounds.size(); r++) {
          EXPECT_EQ(b.rounds[r].drafted, a.rounds[r].drafted) << "seed " << seed << " round " << r;
          EXPECT_EQ(b.rounds[r].n_accepted, a.rounds[r].n_accepted)
              << "seed " << seed << " round " << r;
        }
      }
      EXPECT_GT(graph_target.cuda_graph_stats().replays, 0);
      EXPECT_EQ(graph_target.cuda_graph_stats().failures, 0) << graph_target.cuda_graph_failure();
    }
  }
}

// SPECLAB_CUDA_GRAPHS sets the constructor's default (unset: on); set_cuda_graphs(false) drops the
// graphs and later steps run plain.
TEST(CudaGraphs, EnvironmentDefaultAndSwitchingOff) {
  SPECLAB_REQUIRE_CUDA_DEVICE();
  const auto model = llama_make_synthetic("tiny:F32", 1);
  setenv("SPECLAB_CUDA_GRAPHS", "1", 1);
  CudaLlamaRunner on(*model, 64);
  setenv("SPECLAB_CUDA_GRAPHS", "0", 1);
  CudaLlamaRunner off(*model, 64);
  unsetenv("SPECLAB_CUDA_GRAPHS");
  CudaLlamaRunner by_default(*model, 64);
  EXPECT_TRUE(on.cuda_graphs());
  EXPECT_FALSE(off.cuda_graphs());
  EXPECT_TRUE(by_default.cuda_graphs());
  const int32_t tok = 3;
  for (int i = 0; i < 3; i++) on.forward(&tok, 1, true);
  EXPECT_EQ(on.cuda_graph_stats().captures, 1);
  EXPECT_EQ(on.cuda_graph_stats().replays, 1);
  on.set_cuda_graphs(false);
  on.forward(&tok, 1, true);
  EXPECT_EQ(on.cuda_graph_stats().replays, 1);
  EXPECT_EQ(on.cuda_graph_stats().invalidations, 1);
}

}  // namespace
}  // namespace speclab
