// The RunContext of a cell_run on the tiny zoo behind a test's own target runner: the tests
// that measure a real cell exactly as `speclab run` does, with an engine they change (a slow
// plain step, a dearer device round), build it the same way.
#pragma once

#include <string>

#include "experiments/config/experiment_config.h"
#include "experiments/config/prompt_set.h"
#include "experiments/measure/cell_runner.h"
#include "models/llama/llama_model.h"
#include "models/llama/token_runner.h"

namespace speclab::testing_util {

// cfg's target model `model` run by `target`; the first n_prompts of the tiny in-domain
// prompts, encoded with the model's tokenizer. Reports 64 cores, so that the flags under test,
// not the test machine's load, decide what a row says.
inline RunContext tiny_cell_context(const ExperimentConfig& cfg, const LlamaModel& model,
                                    TokenRunner* target, size_t n_prompts) {
  RunContext ctx;
  ctx.config = &cfg;
  ctx.target_model = &model;
  ctx.target = target;
  ctx.machine.cores = 64;
  const std::string file =
      std::string(SPECLAB_SOURCE_DIR) + "/configs/prompts/tiny-in-domain.jsonl";
  for (const Prompt& p : prompt_set_load(file)) {
    if (ctx.prompts.size() == n_prompts) break;
    ctx.prompts.push_back({p.id, model.tokenizer->encode(p.text, /*add_bos=*/true), ""});
  }
  return ctx;
}

}  // namespace speclab::testing_util
