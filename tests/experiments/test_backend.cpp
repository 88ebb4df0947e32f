// Backend selection: cpu works; cuda without the backend or without a device is bad input
// (exit 2, one line naming the setting and the reason); an unknown backend is refused.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "experiments/measure/backend.h"
#include "models/llama/batched_llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

TEST(Backend, CpuRunnerRuns) {
  auto model = llama_make_synthetic("tiny");
  auto runner = backend_create_runner("cpu", *model, 32, "test");
  const int32_t tok = 3;
  runner->forward(&tok, 1);
  EXPECT_EQ(runner->n_past(), 1);
  EXPECT_EQ(runner->vocab(), model->config.vocab_size);
}

TEST(Backend, UnknownBackendIsInputError) {
  auto model = llama_make_synthetic("tiny");
  EXPECT_THROW(backend_create_runner("tpu", *model, 32, "generation.backend"), InputError);
}

TEST(Backend, CudaWithoutDeviceOrBuildExitsTwo) {
  const auto r = testing_util::run_speclab(
      "generate --target synthetic:tiny --prompt-ids 1,2 "
      "--backend cuda");
  // This machine has no GPU: either the build lacks the backend or the device is missing.
  // (On a machine with a GPU and a CUDA build this would run; the CUDA device tests cover it.)
  if (r.exit_code == 0) GTEST_SKIP() << "a CUDA device is present: nothing to refuse";
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_TRUE(r.err.find("no CUDA device") != std::string::npos ||
              r.err.find("no CUDA backend") != std::string::npos)
      << r.err;
  // Seen: "no CUDA device found (...)" named neither the flag nor the config key.
  EXPECT_NE(r.err.find("speclab: --backend: 'cuda' requested but"), std::string::npos) << r.err;
  testing_util::ScratchDir dir;
  const auto run = testing_util::run_speclab(
      "run '" + std::string(SPECLAB_SOURCE_DIR) + "/configs/gate.yaml' --out '" + dir.file("o") +
      "' --no-plots --set generation.backend=cuda --set 'sweep.drafter=[lookup]'");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(run.one_line_error()) << run.err;
  EXPECT_NE(run.err.find("generation.backend: 'cuda' requested but"), std::string::npos) << run.err;
}

// The row's run_cuda_graphs: "none" on cpu; on cuda the SPECLAB_CUDA_GRAPHS switch of the
// one-request runners, "off" for batched cells. A build without the CUDA backend says "none"
// for cuda too (its cuda cells are refused before any row is written).
TEST(Backend, CudaGraphsAsRecordedInRows) {
  const char* saved = std::getenv("SPECLAB_CUDA_GRAPHS");
  const std::string restore = saved ? saved : "";
  EXPECT_EQ(backend_cuda_graphs("cpu", false), "none");
  EXPECT_EQ(backend_cuda_graphs("cpu", true), "none");
  setenv("SPECLAB_CUDA_GRAPHS", "1", 1);
  const bool cuda_build = backend_cuda_graphs("cuda", true) != "none";
  if (cuda_build) {
    EXPECT_EQ(backend_cuda_graphs("cuda", false), "on");
    EXPECT_EQ(backend_cuda_graphs("cuda", true), "off");  // the batched runners capture none
    setenv("SPECLAB_CUDA_GRAPHS", "0", 1);
    EXPECT_EQ(backend_cuda_graphs("cuda", false), "off");
    unsetenv("SPECLAB_CUDA_GRAPHS");
    EXPECT_EQ(backend_cuda_graphs("cuda", false), "on");  // the default
    setenv("SPECLAB_CUDA_GRAPHS", "yes", 1);
    try {
      backend_cuda_graphs("cuda", false);
      ADD_FAILURE() << "SPECLAB_CUDA_GRAPHS=yes accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("SPECLAB_CUDA_GRAPHS must be 0 or 1, got 'yes'"),
                std::string::npos)
          << e.what();
    }
  } else {
    EXPECT_EQ(backend_cuda_graphs("cuda", false), "none");
  }
  if (saved) {
    setenv("SPECLAB_CUDA_GRAPHS", restore.c_str(), 1);
  } else {
    unsetenv("SPECLAB_CUDA_GRAPHS");
  }
}

TEST(Backend, ConfigKeyIsValidated) {
  const auto r = testing_util::run_speclab(std::string("run '") + SPECLAB_SOURCE_DIR +
                                           "/configs/gate.yaml' --set generation.backend=gpu "
                                           "--out /tmp/speclab-backend-test-never-written");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("generation.backend: expected cpu or cuda"), std::string::npos) << r.err;
}

TEST(Backend, CpuBatchedRunnerRunsAndUnknownIsInputError) {
  auto model = llama_make_synthetic("tiny");
  auto runner = backend_create_batched_runner("cpu", *model, 2, 16, "test");
  runner->forward_batch({{0, 3}, {1, 4}, {1, 5}});
  EXPECT_EQ(runner->n_slots(), 2);
  EXPECT_EQ(runner->n_past(1), 2);
  EXPECT_FALSE(backend_batched_runner_factory("cpu", "test"));  // the drafter's default
  EXPECT_THROW(backend_create_batched_runner("tpu", *model, 2, 16, "--backend"), InputError);
  EXPECT_THROW(backend_batched_runner_factory("tpu", "--backend"), InputError);
#ifndef SPECLAB_HAVE_CUDA
  try {
    backend_batched_runner_factory("cuda", "--backend");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "--backend: 'cuda' requested but this build has no CUDA backend"),
              std::string::npos)
        << e.what();
  }
#endif
}

// On cuda, self-speculation cannot join the batched loop (one CPU drafter per slot); every
// other spec can, and on cpu everything can.
TEST(Backend, SelfSpeculationAtConcurrencyIsRefusedOnCudaOnly) {
  EXPECT_THROW(backend_check_batched_drafter("cuda", "self:skip=1", "sweep.concurrency"),
               InputError);
  backend_check_batched_drafter("cuda", "lookup", "x");
  backend_check_batched_drafter("cuda", "ngram:3", "x");
  backend_check_batched_drafter("cuda", "models/zoo/tiny-draft-2m", "x");
  backend_check_batched_drafter("cpu", "self:skip=1", "x");
}

// The bytes a concurrency-N run allocates: the KV caches on cpu; on cuda the weights of each
// batched runner too. SPECLAB_MEMORY_LIMIT caps both backends' memory.
TEST(Backend, BatchedBytesAndMemoryPerBackend) {
  auto target = llama_make_synthetic("tiny");
  auto draft = llama_make_synthetic("tiny", 7);
  const size_t kv = BatchedLlamaRunner::kv_cache_bytes_for(target->config, 4, 64);
  EXPECT_EQ(backend_batched_bytes("cpu", *target, nullptr, 4, 64), kv);
  EXPECT_EQ(backend_batched_bytes("cpu", *target, draft.get(), 4, 64),
            kv + BatchedLlamaRunner::kv_cache_bytes_for(draft->config, 4, 64));
  const size_t cuda_bytes = backend_batched_bytes("cuda", *target, nullptr, 4, 64);
  EXPECT_GE(cuda_bytes, kv + static_cast<size_t>(target->weight_bytes_per_token()));
  EXPECT_GT(backend_batched_bytes("cuda", *target, draft.get(), 4, 64), cuda_bytes);

  const char* old = std::getenv("SPECLAB_MEMORY_LIMIT");
  const std::string saved = old ? old : "";
  setenv("SPECLAB_MEMORY_LIMIT", "12345", 1);
  EXPECT_EQ(backend_memory("cpu").available, 12345);
  EXPECT_EQ(backend_memory("cpu").source, "MemAvailable");
  EXPECT_EQ(backend_memory("cuda").available, 12345);  // no device here, or a larger one
  EXPECT_EQ(backend_memory("cuda").source, "free device memory");
  if (old) {
    setenv("SPECLAB_MEMORY_LIMIT", saved.c_str(), 1);
  } else {
    unsetenv("SPECLAB_MEMORY_LIMIT");
  }
}

}  // namespace
}  // namespace speclab
