// Where a model drafter runs: drafter_create hands draft models and self-speculation to the
// runner factory it is given (the target's backend), keeps model-free drafters off it, and a
// drafter on a factory-made runner proposes exactly what the default CPU runner proposes.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "models/drafters/drafter.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"

namespace speclab {
namespace {

struct FactoryLog {
  int calls = 0;
  std::vector<bool> last_skip;
  int64_t last_max_ctx = 0;
};

// A factory that makes CPU runners and records what it was asked for.
TokenRunnerFactory counting_factory(FactoryLog* log) {
  return [log](const LlamaModel& model, int64_t max_ctx, std::vector<bool> skip) {
    log->calls++;
    log->last_skip = skip;
    log->last_max_ctx = max_ctx;
    return std::unique_ptr<TokenRunner>(std::make_unique<LlamaRunner>(model, max_ctx, skip));
  };
}

TEST(DrafterBackend, ModelDraftersRunOnTheGivenBackend) {
  auto target = llama_make_synthetic("tiny");
  FactoryLog log;
  auto self = drafter_create("self:skip=1", *target, 64, counting_factory(&log));
  EXPECT_EQ(log.calls, 1);
  EXPECT_EQ(log.last_max_ctx, 64);
  ASSERT_EQ(log.last_skip.size(), static_cast<size_t>(target->config.n_layers));
  EXPECT_TRUE(log.last_skip[1]);
  EXPECT_FALSE(log.last_skip[0]);

  auto model = drafter_create("synthetic:tiny", *target, 64, counting_factory(&log));
  EXPECT_EQ(log.calls, 2);
  for (bool s : log.last_skip) EXPECT_FALSE(s);  // a draft model skips nothing

  auto lookup = drafter_create("lookup:n=3", *target, 64, counting_factory(&log));
  EXPECT_EQ(log.calls, 2);  // model-free: no runner
}

TEST(DrafterBackend, AFactoryRunnerProposesWhatTheCpuRunnerProposes) {
  auto target = llama_make_synthetic("tiny");
  FactoryLog log;
  auto on_factory = drafter_create("self:skip=1", *target, 64, counting_factory(&log));
  auto on_default = drafter_create("self:skip=1", *target, 64);
  const std::vector<int32_t> context = {1, 5, 9, 2, 7};
  SamplingParams params;
  params.temperature = 1.0f;
  const RngKey key{42, 3, 0};
  DraftProposal a, b;
  on_factory->propose(context, 4, params, {}, key, &a);
  on_default->propose(context, 4, params, {}, key, &b);
  ASSERT_EQ(a.tokens.size(), 4u);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.q, b.q);
}

}  // namespace
}  // namespace speclab
