#include "experiments/measure/experiment_session.h"

#include <algorithm>
#include <cstdlib>

#include "core/cpu_matmul.h"
#include "core/error.h"
#include "core/threads.h"
#include "experiments/config/chat_template.h"
#include "experiments/config/prompt_set.h"
#include "experiments/measure/backend.h"
#include "experiments/measure/concurrent_cell_runner.h"
#include "experiments/measure/machine_info.h"
#include "experiments/measure/model_identity.h"
#include "experiments/measure/run_conditions.h"
#include "experiments/predict/batched_cost_profile.h"
#include "models/decode/decode_steps.h"
#include "models/drafters/batch_drafter.h"
#include "models/tokenizer/tokenizer_factory.h"

#ifndef SPECLAB_SOURCE_DIR
#define SPECLAB_SOURCE_DIR "."
#endif

namespace speclab {

namespace {

// A model drafter must speak the target's language: the same vocabulary (decode checks that
// too, but only when the drafter's first cell runs) and, when both carry a tokenizer, the
// same token ids for the same text (two tokenizers of one vocabulary size can still differ).
void session_check_drafter(const Drafter& drafter, const LlamaModel& target,
                           const TokenRunner& target_runner) {
  decode_check_drafter(drafter, target_runner);
  const LlamaModel* draft_model = drafter.model();
  if (draft_model == nullptr || draft_model == &target || !draft_model->tokenizer ||
      !target.tokenizer)
    return;
  const std::string probe = "The quick brown fox, 1234 jumps over the lazy dog.\n";
  const auto target_ids = target.tokenizer->encode(probe, /*add_bos=*/false);
  const auto draft_ids = draft_model->tokenizer->encode(probe, /*add_bos=*/false);
  SPECLAB_INPUT_CHECK(target_ids == draft_ids, "draft '", drafter.name(),
                      "': its tokenizer gives other token ids than the target's (",
                      draft_ids.size(), " vs ", target_ids.size(), " tokens for the same text)");
}

}  // namespace

ExperimentSession::ExperimentSession(const ExperimentConfig& cfg, std::atomic<bool>* interrupted,
                                     bool measure_bandwidth, bool measure_cost_curve)
    : config_(cfg) {
  SPECLAB_INPUT_CHECK(cfg.target.has_value(), cfg.file,
                      ": no target (simulator-only configs run with `speclab simulate`)");
  if (cfg.generation.threads > 0)
    threads_set(cfg.generation.threads, cfg.where("generation.threads"));
  // Before the models load: the kernel path in use from the first product on (the result
  // rows record it as run_matmul_isa).
  if (!cfg.generation.matmul_isa.empty()) {
    matmul_force_isa(
        matmul_isa_parse(cfg.generation.matmul_isa, cfg.where("generation.matmul_isa")));
  }
  ctx_.config = &cfg;
  ctx_.interrupted = interrupted;
  target_model_ = llama_load(cfg.target->path);
  // Positions past the model's trained context are garbage (RoPE never saw them): refuse
  // before any work rather than measure nonsense.
  const int64_t model_ctx = target_model_->config.max_seq_len;
  SPECLAB_INPUT_CHECK(model_ctx <= 0 || cfg.generation.ctx <= model_ctx, cfg.file,
                      ": generation.ctx = ", cfg.generation.ctx,
                      " exceeds the target's context length ", model_ctx, " (", cfg.target->spec,
                      ")");
  // A top-k beyond the vocabulary keeps every token: it would run as top_k 0 under another
  // cell id.
  if (cfg.sweep) {
    const std::vector<nlohmann::json>& top_ks = cfg.sweep->values("top_k");
    for (size_t i = 0; i < top_ks.size(); ++i)
      SPECLAB_INPUT_CHECK(top_ks[i].get<int64_t>() <= target_model_->config.vocab_size,
                          cfg.where("sweep.top_k"), ": sweep.top_k[", i,
                          "] = ", top_ks[i].get<int64_t>(), " exceeds the target's vocabulary of ",
                          target_model_->config.vocab_size, " tokens (", cfg.target->spec, ")");
  }
  target_ = backend_create_runner(cfg.generation.backend, *target_model_, cfg.generation.ctx,
                                  cfg.where("generation.backend"));
  ctx_.target_model = target_model_.get();
  ctx_.target = target_.get();
  ctx_.target_identity = model_identity(cfg.target->spec, cfg.target->path, *target_model_);
  ctx_.stop_ids = target_model_->config.eos_token_ids;
  ctx_.machine = machine_info_collect(threads_get(), SPECLAB_SOURCE_DIR, measure_bandwidth);
  ctx_.git_commit = ctx_.machine.git_commit;
  ctx_.run_static = run_conditions_static(SPECLAB_SOURCE_DIR);

  // Prompts, tokenized once with the target's tokenizer (or prompts.tokenizer).
  if (cfg.prompts) {
    std::unique_ptr<Tokenizer> prompt_tokenizer;
    if (!cfg.prompts->tokenizer.spec.empty()) {
      prompt_tokenizer = tokenizer_load(cfg.prompts->tokenizer.path);
      SPECLAB_INPUT_CHECK(prompt_tokenizer->vocab_size() <= target_model_->config.vocab_size,
                          cfg.where("prompts.tokenizer"), ": ", prompt_tokenizer->vocab_size(),
                          " tokens, more than the target's vocabulary of ",
                          target_model_->config.vocab_size);
    }
    const Tokenizer* tok =
        prompt_tokenizer ? prompt_tokenizer.get() : target_model_->tokenizer.get();
    SPECLAB_INPUT_CHECK(tok != nullptr, cfg.target->spec,
                        ": the target has no tokenizer to encode the prompts with (set "
                        "prompts.tokenizer)");
    std::vector<std::string> files;
    for (const auto& f : cfg.prompts->files) files.push_back(f.path);
    for (const auto& p : prompt_set_load_files(files, cfg.prompts->limit, cfg.prompts->skip)) {
      const std::string text =
          cfg.prompts->chat_template ? chat_template_apply(*tok, p.text) : p.text;
      PromptTokens pt{p.id, tok->encode(text, /*add_bos=*/true), p.category};
      SPECLAB_INPUT_CHECK(static_cast<int64_t>(pt.ids.size()) + cfg.generation.max_new_tokens +
                                  cfg.measure.cost_curve_max_k <=
                              target_->max_ctx(),
                          p.file, ":", p.line, ": prompt '", p.id, "' has ", pt.ids.size(),
                          " tokens; with generation.max_new_tokens it exceeds generation.ctx = ",
                          target_->max_ctx());
      ctx_.prompts.push_back(std::move(pt));
    }
  }
  // Every drafter of the sweep, before the first cell: a drafter that cannot serve the run
  // (a shorter context than generation.ctx, another vocabulary or tokenizer) is refused now,
  // not after the other drafters' cells have run for minutes.
  for (const std::string& name : cfg.sweep ? cfg.sweep->drafter() : std::vector<std::string>{}) {
    if (drafters_.count(name)) continue;
    const DrafterEntry* entry = cfg.find_drafter(name);
    SPECLAB_ASSERT(entry != nullptr);  // experiment_config_validate checked it
    try {
      PreparedDrafter d = cell_prepare_drafter(ctx_, *entry);
      session_check_drafter(*d.drafter, *target_model_, *target_);
      drafters_.emplace(name, std::move(d));
    } catch (const InputError& e) {
      fail_input(cfg.where("drafters." + name), ": ", e.what());
    }
  }

  check_concurrency();

  if (!measure_cost_curve) return;
  // The target's cost curve, once per session, from a context as long as a typical one.
  int64_t ctx_len = 64;
  if (!ctx_.prompts.empty()) {
    int64_t sum = 0;
    for (const auto& p : ctx_.prompts) sum += static_cast<int64_t>(p.ids.size());
    ctx_len = sum / static_cast<int64_t>(ctx_.prompts.size()) + cfg.generation.max_new_tokens / 2;
  }
  const std::vector<int32_t> seed_ctx =
      ctx_.prompts.empty() ? std::vector<int32_t>{1, 2, 3, 4} : ctx_.prompts[0].ids;
  ctx_.target_curve = cost_measure_curve(*target_, seed_ctx, ctx_len, cfg.measure.cost_curve_max_k,
                                         cfg.measure.cost_only ? 15 : 9);
}

void ExperimentSession::check_concurrency() const {
  const ExperimentConfig& cfg = config_;
  if (!cfg.sweep) return;
  int most = 1;
  for (int c : cfg.sweep->list<int>("concurrency")) most = std::max(most, c);
  if (most <= 1) return;
  const std::string where = cfg.where("sweep.concurrency");
  const std::string& backend = cfg.generation.backend;
  // backend_create_runner accepted the backend (cpu, or cuda in a CUDA build with a device);
  // the batched loop runs on the same one (experiments/measure/backend.h).
  SPECLAB_INPUT_CHECK(!cfg.measure.cost_only, where, ": concurrency ", most,
                      " measures generation; measure.cost_only has none (expected [1])");
  SPECLAB_INPUT_CHECK(!ctx_.prompts.empty(), where, ": concurrency ", most,
                      " serves the prompt set; the config has no prompts");
  for (const std::string& t : cfg.sweep->list<std::string>("tree"))
    SPECLAB_INPUT_CHECK(t.empty() || t == "off", where, ": concurrency ", most, " with tree ", t,
                        ": trees serve one request at a time (expected concurrency [1] or no "
                        "tree)");
  for (const auto& [name, d] : drafters_) {
    if (const DrafterEntry* e = cfg.find_drafter(name))
      backend_check_batched_drafter(backend, e->ref.path, where);
  }
  // The caches of the largest cell, target and draft, are allocated up front (on cuda with a
  // device copy of each model's weights).
  size_t most_bytes = 0;
  for (const auto& [name, d] : drafters_)
    most_bytes =
        std::max(most_bytes, backend_batched_bytes(backend, *target_model_, d.drafter->model(),
                                                   most, target_->max_ctx()));
  const BackendMemory mem = backend_memory(backend);
  SPECLAB_INPUT_CHECK(mem.available < 0 || most_bytes <= static_cast<size_t>(mem.available), where,
                      ": concurrency ", most, " x ", target_->max_ctx(), " positions needs ",
                      most_bytes, " bytes of KV cache (target and draft",
                      backend == "cuda" ? ", and their weights on the device" : "", ") but only ",
                      mem.available, " bytes of memory are available (", mem.source,
                      std::getenv("SPECLAB_MEMORY_LIMIT") ? ", SPECLAB_MEMORY_LIMIT" : "",
                      "); lower concurrency or generation.ctx");
}

void ExperimentSession::wrap_drafters(DrafterWrap wrap) {
  for (auto& [name, d] : drafters_) d.drafter = wrap(std::move(d.drafter));
  wrap_drafter_ = std::move(wrap);
}

PreparedDrafter& ExperimentSession::drafter_for(const Cell& cell) {
  auto it = drafters_.find(cell.drafter);
  if (it == drafters_.end()) {
    // The cell carries its drafter's reference (sweep_expand resolved it): no lookup by name.
    SPECLAB_ASSERT(!cell.drafter_ref.path.empty());
    const DrafterEntry entry{cell.drafter, cell.drafter_ref};
    PreparedDrafter prepared = cell_prepare_drafter(ctx_, entry);
    if (wrap_drafter_) prepared.drafter = wrap_drafter_(std::move(prepared.drafter));
    it = drafters_.emplace(cell.drafter, std::move(prepared)).first;
  }
  return it->second;
}

void ExperimentSession::enable_prediction(const std::vector<Cell>& all_cells,
                                          const std::string& profiles_dir, ProfileMode mode,
                                          const CostProfile* cost_override) {
  const std::vector<int64_t> stops =
      config_.generation.ignore_eos ? std::vector<int64_t>{} : ctx_.stop_ids;
  predictor_ =
      std::make_unique<CellPredictor>(config_, all_cells, target_.get(), ctx_.prompts, stops,
                                      profiles_dir, mode, cost_override, ctx_.interrupted);
  ProfileConditions pc;
  CostProfileTaken& f = pc.fixed;
  f.git_commit = ctx_.git_commit;
  f.git_describe = ctx_.run_static.git_describe;
  f.cpu_model = ctx_.machine.cpu_model;
  f.hostname = ctx_.machine.hostname;
  f.gpu = ctx_.machine.gpu;
  f.matmul_isa = ctx_.run_static.matmul_isa;
  f.cores = ctx_.machine.cores;
  f.threads = ctx_.machine.threads;
  f.target_sha256 = ctx_.target_identity.sha256.value_or("");
  pc.utc_now = run_conditions_utc_now;
  pc.load1 = [] { return run_conditions_sample().load1; };
  pc.draft_sha256 = [this](const Cell& c) { return drafter_for(c).identity.sha256.value_or(""); };
  predictor_->set_conditions(std::move(pc));
  // Batched cost profiles on runners of their own, built for the profile's slots and freed
  // after it (check_concurrency has made sure the caches of the largest concurrency fit).
  predictor_->set_batched_measure(
      [this](const Cell& cell, const BatchedCostRequest& request, BatchedCostSpread* spread) {
        const int64_t slots = request.slots.back();
        const int64_t max_ctx = target_->max_ctx();
        const std::string& backend = config_.generation.backend;
        const std::string what = config_.where("generation.backend");
        std::unique_ptr<BatchTokenRunner> target =
            backend_create_batched_runner(backend, *ctx_.target_model, slots, max_ctx, what);
        std::unique_ptr<BatchDrafter> drafter =
            batch_drafter_create(cell.drafter_ref.path, *ctx_.target_model, slots, max_ctx,
                                 backend_batched_runner_factory(backend, what));
        return batched_cost_profile_measure(*target, *drafter, request, spread);
      });
  ctx_.predictor = predictor_.get();
}

void ExperimentSession::recheck_profiles_before_cells() {
  SPECLAB_ASSERT(predictor_ != nullptr);
  predictor_->set_recheck(config_.measure.cost_profile_recheck);
}

CellPrediction ExperimentSession::predict_cell(const Cell& cell) {
  SPECLAB_ASSERT(predictor_ != nullptr);
  return predictor_->predict(cell, drafter_for(cell).drafter.get());
}

ResultRow ExperimentSession::run_cell(const Cell& cell) {
  PreparedDrafter& d = drafter_for(cell);
  if (config_.measure.cost_only) return cell_run_cost_only(ctx_, cell, d);
  if (cell.concurrency > 1) return cell_run_concurrent(ctx_, cell, d);
  return cell_run(ctx_, cell, d);
}

}  // namespace speclab
