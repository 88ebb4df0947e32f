// speclab generate: one request, autoregressive (no --draft) or speculative (--draft SPEC);
// or a prompt file served N requests at a time (--prompts FILE --concurrency N: the batched
// loop of models/decode/batched_decoder.h).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/cpu_matmul.h"
#include "core/error.h"
#include "core/gamma_policy.h"
#include "core/threads.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/number_checks.h"
#include "experiments/config/chat_template.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/prompt_set.h"
#include "experiments/measure/backend.h"
#include "experiments/measure/round_trace.h"
#include "models/decode/autoregressive.h"
#include "models/decode/batched_decoder.h"
#include "models/decode/round_stats.h"
#include "models/decode/speculative_decoder.h"
#include "models/decode/tree_decoder.h"
#include "models/drafters/batch_drafter.h"
#include "models/drafters/drafter.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner.h"
#include "models/llama/weights_layout.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {

namespace {

struct GenerateArgs {
  std::string target, draft, tokenizer, prompt, prompt_ids, gamma_policy = "fixed", backend = "cpu";
  std::string trace;                   // --trace FILE: the rounds, for speclab simulate --replay
  std::string synthetic_acceptance;    // "" = off; "0.8" or "0.9,0.8,0.7" (per draft position)
  std::string tree;                    // "" = chain; "3x2x1" or "2x2:sample" (tree speculation)
  std::string chat_template = "none";  // none | auto | chatml | llama3 (wraps --prompt)
  std::string matmul_isa;              // --matmul-isa: a CPU kernel path (core/cpu_matmul.h)
  std::string prompts;                 // --prompts FILE: a prompt set (JSONL), one request each
  int64_t concurrency = 1;             // requests in flight (--prompts)
  std::vector<std::string> drafting_options_given;  // e.g. "--gamma": need --draft
  int gamma = 4, top_k = 0, threads = 0;
  float temperature = 1.0f, top_p = 1.0f, draft_temperature = -1.0f, p_min = 0.0f;
  double lenience = 1.0;
  uint64_t seed = 0;
  int64_t max_new_tokens = 64, ctx = 0;
  bool json = false, show_drafts = false, no_bos = false, ignore_eos = false;
};

// --json's one line. A sampled continuation can end inside a multi-byte character (byte-level
// tokens) or hold bytes that are no UTF-8 at all: they are shown as U+FFFD, as in result rows,
// where dumping them as they are throws.
void print_json_line(const nlohmann::json& j) {
  std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long v = -1;
    try {
      v = std::stol(item, &used);
    } catch (...) {
      used = 0;
    }
    SPECLAB_INPUT_CHECK(used == item.size() && !item.empty() && v >= 0 && v <= INT32_MAX,
                        "--prompt-ids: '", item, "' is not a non-negative token id");
    ids.push_back(static_cast<int32_t>(v));
  }
  SPECLAB_INPUT_CHECK(!ids.empty(), "--prompt-ids: empty list");
  return ids;
}

// "0.8" or "0.9,0.8,0.7": per-position acceptance probabilities, each in (0, 1].
std::vector<double> parse_synthetic_acceptance(const std::string& s) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    SPECLAB_INPUT_CHECK(!item.empty() && *end == '\0' && v >= 1e-30 && v <= 1,
                        "--synthetic-acceptance: '", item,
                        "' (expected a number in (0, 1] of at least 1e-30, or a comma-separated "
                        "list of them, one per draft position)");
    SPECLAB_INPUT_CHECK(out.size() < 64,
                        "--synthetic-acceptance: more than 64 probabilities "
                        "(one per draft position; gamma is at most 64)");
    out.push_back(v);
  }
  SPECLAB_INPUT_CHECK(!out.empty() && s.back() != ',', "--synthetic-acceptance: '", s,
                      "' (expected a number in (0, 1], or a comma-separated list of them, one per "
                      "draft position)");
  return out;
}

std::string render(const Tokenizer* tok, const std::vector<int32_t>& ids) {
  return tok ? tok->decode(ids) : std::string();
}

// Figure 1 of the paper as text: accepted drafts plain, rejected drafts [-like this-],
// the target's own token (correction or bonus) {+like this+}.
std::string render_drafts(const Tokenizer& tok, const GenerationResult& r) {
  std::string out;
  for (const auto& round : r.rounds) {
    std::vector<int32_t> acc(round.drafted.begin(), round.drafted.begin() + round.n_accepted);
    out += tok.decode(acc);
    // Tree rounds record only the accepted path: nothing rejected to show.
    if (round.n_accepted < static_cast<int>(round.drafted.size())) {
      std::vector<int32_t> rej(round.drafted.begin() + round.n_accepted, round.drafted.end());
      out += "[-" + tok.decode(rej) + "-]";
    }
    if (round.n_emitted > round.n_accepted) out += "{+" + tok.decode({round.next_token}) + "+}";
  }
  return out;
}

// The chain speculation settings of the arguments (the policy is the caller's): the draft
// samples like the target unless --draft-temperature is given.
SpeculativeConfig chain_config(const GenerateArgs& a, const SamplingParams& target_sampling,
                               const std::vector<double>& synthetic) {
  SpeculativeConfig cfg;
  cfg.gamma = a.gamma;
  cfg.draft_sampling = target_sampling;
  if (a.draft_temperature >= 0) cfg.draft_sampling.temperature = a.draft_temperature;
  sampling_validate(cfg.draft_sampling);
  SPECLAB_INPUT_CHECK(a.lenience > 0 && a.lenience <= 1, "--lenience: ", a.lenience,
                      " (expected 0 < l <= 1)");
  cfg.lenience = a.lenience;
  cfg.stop_rule.p_min = a.p_min;
  cfg.synthetic_accept = synthetic;
  return cfg;
}

// --prompts FILE --concurrency N: every prompt of the file is one request (request id = its
// index, so a request's random keys do not depend on N), served N at a time by the batched
// loop; prints every request's tokens and stats, and the run's throughput.
void run_generate_concurrent(const GenerateArgs& a, const LlamaModel& target, const Tokenizer* tok,
                             std::unique_ptr<LlamaModel> draft_model, int64_t ctx,
                             const std::vector<double>& synthetic, const TreeShape& tree) {
  SPECLAB_INPUT_CHECK(tree.depth() == 0,
                      "--tree: tree speculation serves one request at a time; "
                      "it does not combine with --prompts");
  SPECLAB_INPUT_CHECK(a.trace.empty(),
                      "--trace: records one request; it does not combine with "
                      "--prompts");
  // The batched runners of the backend (cpu, or cuda in a CUDA build with a device), checked
  // before the prompts are read.
  const BatchTokenRunnerFactory make_batched =
      backend_batched_runner_factory(a.backend, "--backend");
  if (!a.draft.empty()) backend_check_batched_drafter(a.backend, a.draft, "--draft");
  SPECLAB_INPUT_CHECK(tok != nullptr, a.target,
                      ": model has no tokenizer; --prompts needs one (pass --tokenizer PATH)");
  const std::vector<Prompt> prompts = prompt_set_load(a.prompts);
  const int64_t model_ctx = target.config.max_seq_len;
  const int64_t max_ctx =
      ctx > 0 ? ctx : (model_ctx > 0 ? std::min<int64_t>(model_ctx, 4096) : 4096);
  std::vector<GenerationRequest> queue;
  for (size_t i = 0; i < prompts.size(); i++) {
    const Prompt& p = prompts[i];
    GenerationRequest req;
    const std::string text =
        a.chat_template == "none"
            ? p.text
            : chat_template_apply(*tok, p.text, a.chat_template, "--chat-template");
    req.prompt = tok->encode(text, !a.no_bos);
    SPECLAB_INPUT_CHECK(static_cast<int64_t>(req.prompt.size()) < max_ctx, p.file, ":", p.line,
                        ": prompt '", p.id, "': ", req.prompt.size(),
                        " tokens, leaving no room for a new token in the context limit of ",
                        max_ctx, " tokens (see --ctx)");
    req.max_new_tokens = a.max_new_tokens;
    req.sampling = SamplingParams{a.temperature, a.top_k, a.top_p};
    req.seed = a.seed;
    req.request_id = static_cast<uint64_t>(i);
    if (!a.ignore_eos) req.stop_ids = target.config.eos_token_ids;
    queue.push_back(std::move(req));
  }
  sampling_validate(queue.front().sampling);

  // Every slot's cache is allocated up front: refuse what cannot fit before allocating.
  const size_t target_bytes =
      backend_batched_bytes(a.backend, target, nullptr, a.concurrency, max_ctx);
  const size_t draft_bytes =
      draft_model
          ? backend_batched_bytes(a.backend, target, draft_model.get(), a.concurrency, max_ctx) -
                target_bytes
          : 0;
  const BackendMemory mem = backend_memory(a.backend);
  SPECLAB_INPUT_CHECK(
      mem.available < 0 || target_bytes + draft_bytes <= static_cast<size_t>(mem.available),
      "--concurrency: ", a.concurrency, " requests of ", max_ctx, " positions need ",
      target_bytes + draft_bytes, " bytes of KV cache",
      a.backend == "cuda" ? " and device weights" : "", " (target ", target_bytes, ", draft ",
      draft_bytes, ") but only ", mem.available, " bytes of memory are available (", mem.source,
      std::getenv("SPECLAB_MEMORY_LIMIT") ? ", SPECLAB_MEMORY_LIMIT" : "",
      "); lower --concurrency or --ctx");

  std::unique_ptr<BatchTokenRunner> runner_ptr =
      backend_create_batched_runner(a.backend, target, a.concurrency, max_ctx, "--backend");
  BatchTokenRunner& runner = *runner_ptr;
  BatchedGeneration gen;
  std::unique_ptr<BatchDrafter> drafter;
  if (a.draft.empty()) {
    gen = generate_batched_autoregressive(runner, queue);
  } else {
    drafter = draft_model
                  ? batch_drafter_create_model(std::move(draft_model), a.draft, target,
                                               a.concurrency, max_ctx, make_batched)
                  : batch_drafter_create(a.draft, target, a.concurrency, max_ctx, make_batched);
    const SpeculativeConfig cfg = chain_config(a, queue.front().sampling, synthetic);
    gen = generate_batched_speculative(runner, *drafter, queue, cfg, a.gamma_policy);
  }

  const int64_t total = gen.total_tokens();
  const double throughput = gen.total_s > 0 ? static_cast<double>(total) / gen.total_s : 0.0;
  AcceptanceStats all;
  nlohmann::json requests = nlohmann::json::array();
  for (size_t i = 0; i < queue.size(); i++) {
    const GenerationResult& r = gen.results[i];
    const RequestTiming& t = gen.timing[i];
    nlohmann::json j;
    j["id"] = prompts[i].id;
    j["request_id"] = queue[i].request_id;
    j["slot"] = t.slot;
    j["prompt_tokens"] = queue[i].prompt;
    j["tokens"] = r.tokens;
    j["text"] = render(tok, r.tokens);
    j["stop"] = stop_reason_name(r.stop);
    j["admitted_s"] = t.admitted_s;
    j["ttft_s"] = t.ttft_s();
    j["time_per_output_token_s"] = t.time_per_output_token_s(r.tokens.size());
    j["target_calls"] = r.n_target_calls;
    if (drafter) {
      AcceptanceStats s;
      s.add(r.rounds);
      all.add(r.rounds);
      j["rounds"] = s.n_rounds;
      j["drafted"] = s.n_drafted;
      j["accepted"] = s.n_accepted;
      j["tau"] = s.tau();
    }
    requests.push_back(j);
  }
  if (a.json) {
    nlohmann::json j;
    j["target"] = a.target;
    j["draft"] = a.draft;
    j["concurrency"] = a.concurrency;
    j["requests"] = requests;
    j["tokens"] = total;
    j["total_s"] = gen.total_s;
    j["throughput_tokens_per_s"] = throughput;
    j["steps"] = gen.steps.size();
    if (drafter) {
      j["gamma"] = a.gamma;
      j["gamma_policy"] = a.gamma_policy;
      if (!synthetic.empty()) j["synthetic_acceptance"] = synthetic;
      j["alpha_empirical"] = all.alpha_empirical();
      j["tau"] = all.tau();
    }
    print_json_line(j);
    return;
  }
  for (const nlohmann::json& r : requests)
    std::cout << "[" << r["id"].get<std::string>() << "] " << r["text"].get<std::string>() << "\n";
  std::fprintf(stderr,
               "speclab: %zu requests, concurrency %lld: %lld tokens in %.2f s, %.2f tok/s "
               "over the run",
               queue.size(), static_cast<long long>(a.concurrency), static_cast<long long>(total),
               gen.total_s, throughput);
  if (drafter)
    std::fprintf(stderr, "; alpha %.3f, tokens/target call %.2f", all.alpha_empirical(), all.tau());
  if (!synthetic.empty())
    std::fprintf(stderr, "; synthetic acceptance: the text is not the target's distribution");
  std::fprintf(stderr, "\n");
}

void run_generate(const GenerateArgs& a) {
  if (a.threads > 0) threads_set(a.threads, "--threads");
  if (!a.matmul_isa.empty()) matmul_force_isa(matmul_isa_parse(a.matmul_isa, "--matmul-isa"));
  SPECLAB_INPUT_CHECK(
      (a.prompt.empty() ? 0 : 1) + (a.prompt_ids.empty() ? 0 : 1) + (a.prompts.empty() ? 0 : 1) ==
          1,
      "arguments: give exactly one of --prompt, --prompt-ids and --prompts");
  SPECLAB_INPUT_CHECK(a.concurrency == 1 || !a.prompts.empty(), "--concurrency: ", a.concurrency,
                      " requests at once need --prompts FILE (one request per prompt)");
  // Options of the drafting loop mean nothing without a drafter: refuse rather than ignore.
  for (const std::string& option : a.drafting_options_given)
    SPECLAB_INPUT_CHECK(!a.draft.empty(), option,
                        ": needs --draft (without a drafter generation is autoregressive)");
  SPECLAB_INPUT_CHECK(a.chat_template == "none" || a.chat_template == "auto" ||
                          a.chat_template == "chatml" || a.chat_template == "llama3",
                      "--chat-template: unknown chat template '", a.chat_template,
                      "' (expected auto, none, chatml or llama3)");
  SPECLAB_INPUT_CHECK(a.chat_template == "none" || a.prompt_ids.empty(),
                      "--chat-template: wraps --prompt text; --prompt-ids are used as given");
  // The policy by its name, checked before any model is loaded.
  std::unique_ptr<GammaPolicy> policy;
  try {
    policy = gamma_policy_create(a.gamma_policy, a.gamma);
  } catch (const InputError& e) {
    fail_input("--gamma-policy: ", e.what());
  }
  SPECLAB_INPUT_CHECK(a.trace.empty() || (!a.draft.empty() && a.tree.empty()),
                      "--trace: records the rounds of chain speculation; it needs --draft and "
                      "does not combine with --tree");
  SPECLAB_INPUT_CHECK(!a.show_drafts || a.prompts.empty(),
                      "--show-drafts: marks one request's drafts; it does not combine with "
                      "--prompts");
  if (!a.trace.empty()) RoundTraceWriter::check_path(a.trace);  // before any model is loaded
  auto target = llama_load(a.target);
  std::unique_ptr<Tokenizer> override_tok;
  if (!a.tokenizer.empty()) override_tok = tokenizer_load(a.tokenizer);
  const Tokenizer* tok = override_tok ? override_tok.get() : target->tokenizer.get();
  if (tok) {
    SPECLAB_INPUT_CHECK(tok->vocab_size() <= target->config.vocab_size,
                        a.tokenizer.empty() ? a.target : a.tokenizer, ": tokenizer has ",
                        tok->vocab_size(), " tokens, more than the model's ",
                        target->config.vocab_size);
  }

  // A top-k beyond the vocabulary keeps every token (top-k 0 by another name).
  SPECLAB_INPUT_CHECK(a.top_k <= target->config.vocab_size, "--top-k: ", a.top_k,
                      " exceeds the target's vocabulary of ", target->config.vocab_size,
                      " tokens (", a.target, ")");
  SPECLAB_INPUT_CHECK(a.tree.empty() || !a.draft.empty(), "--tree: needs --draft");
  // Parsed once (depth 0: a chain).
  const TreeShape tree = a.tree.empty() ? TreeShape() : tree_shape_parse(a.tree, "--tree");
  SPECLAB_INPUT_CHECK(
      a.synthetic_acceptance.empty() || !a.draft.empty(),
      "--synthetic-acceptance: needs --draft (it replaces the drafts' accept test)");
  const std::vector<double> synthetic = a.synthetic_acceptance.empty()
                                            ? std::vector<double>{}
                                            : parse_synthetic_acceptance(a.synthetic_acceptance);

  GenerationRequest req;
  if (!a.prompt_ids.empty()) {
    req.prompt = parse_ids(a.prompt_ids);
    for (int32_t id : req.prompt)
      SPECLAB_INPUT_CHECK(id < target->config.vocab_size, "--prompt-ids: id ", id,
                          " outside the vocabulary of ", target->config.vocab_size);
  } else {
    SPECLAB_INPUT_CHECK(tok != nullptr, a.target,
                        ": model has no tokenizer; pass --tokenizer PATH or use --prompt-ids");
    const std::string text =
        a.chat_template == "none"
            ? a.prompt
            : chat_template_apply(*tok, a.prompt, a.chat_template, "--chat-template");
    req.prompt = tok->encode(text, !a.no_bos);
  }
  req.max_new_tokens = a.max_new_tokens;
  req.sampling = SamplingParams{a.temperature, a.top_k, a.top_p};
  sampling_validate(req.sampling);
  req.seed = a.seed;
  if (!a.ignore_eos) req.stop_ids = target->config.eos_token_ids;

  // Positions past the model's trained context are garbage, and a huge --ctx only allocates
  // a huge KV cache: refuse it as `run` refuses generation.ctx.
  const int64_t model_ctx = target->config.max_seq_len;
  SPECLAB_INPUT_CHECK(model_ctx <= 0 || a.ctx <= model_ctx, "--ctx: ", a.ctx,
                      " exceeds the target's context length ", model_ctx, " (", a.target, ")");
  // A draft model's context bounds the run's too. It is loaded here, before the target's KV
  // cache is sized: a default context the draft cannot serve shrinks to the draft's (the user
  // asked for no particular length), while an explicit --ctx beyond it is refused.
  std::unique_ptr<LlamaModel> draft_model;
  if (!a.draft.empty() && drafter_spec_is_model(a.draft)) draft_model = llama_load(a.draft);
  // A pair that cannot work is refused before any note about the context is printed.
  SPECLAB_INPUT_CHECK(!draft_model || draft_model->config.vocab_size == target->config.vocab_size,
                      "draft '", a.draft, "': vocabulary of ",
                      draft_model ? draft_model->config.vocab_size : 0, " tokens, the target has ",
                      target->config.vocab_size);
  int64_t ctx = a.ctx;
  const int64_t draft_ctx = draft_model ? draft_model->config.max_seq_len : 0;
  if (draft_ctx > 0 && a.ctx > 0) {
    SPECLAB_INPUT_CHECK(a.ctx <= draft_ctx, "--ctx: ", a.ctx,
                        " exceeds the draft model's context length ", draft_ctx, " (", a.draft,
                        ")");
  } else if (draft_ctx > 0) {
    const int64_t default_ctx = model_ctx > 0 ? std::min<int64_t>(model_ctx, 4096) : 4096;
    if (draft_ctx < default_ctx) {
      ctx = draft_ctx;
      std::fprintf(stderr,
                   "speclab: context limited to %lld tokens, the draft model's context length "
                   "(%s); the default would be %lld\n",
                   static_cast<long long>(ctx), a.draft.c_str(),
                   static_cast<long long>(default_ctx));
    }
  }
  if (!a.prompts.empty()) {
    run_generate_concurrent(a, *target, tok, std::move(draft_model), ctx, synthetic, tree);
    return;
  }
  auto runner_ptr = backend_create_runner(a.backend, *target, ctx, "--backend");
  TokenRunner& runner = *runner_ptr;
  SPECLAB_INPUT_CHECK(static_cast<int64_t>(req.prompt.size()) < runner.max_ctx(),
                      "prompt: ", req.prompt.size(),
                      " tokens, leaving no room for a new token in the context limit of ",
                      runner.max_ctx(), " tokens (see --ctx)");
  auto make_drafter = [&]() {
    const TokenRunnerFactory factory = backend_runner_factory(a.backend, "--backend");
    return draft_model
               ? drafter_create_model(std::move(draft_model), a.draft, runner.max_ctx(), factory)
               : drafter_create(a.draft, *target, runner.max_ctx(), factory);
  };
  GenerationResult res;
  std::unique_ptr<Drafter> drafter;
  AcceptanceStats stats;
  if (a.draft.empty()) {
    res = generate_autoregressive(runner, req);
  } else if (!a.tree.empty()) {
    SPECLAB_INPUT_CHECK(a.synthetic_acceptance.empty() && a.lenience == 1.0 && a.p_min == 0.0f &&
                            a.gamma_policy == "fixed",
                        "--tree: tree speculation is exact only; it does not combine with "
                        "--synthetic-acceptance, --lenience, --p-min or --gamma-policy");
    TreeSpeculativeConfig cfg;
    cfg.shape = tree;
    cfg.draft_sampling = req.sampling;
    if (a.draft_temperature >= 0) cfg.draft_sampling.temperature = a.draft_temperature;
    sampling_validate(cfg.draft_sampling);
    drafter = make_drafter();
    res = generate_tree_speculative(runner, *drafter, req, cfg);
    stats.add(res.rounds);
  } else {
    drafter = make_drafter();
    SpeculativeConfig cfg = chain_config(a, req.sampling, synthetic);
    cfg.policy = policy.get();
    res = generate_speculative(runner, *drafter, req, cfg);
    stats.add(res.rounds);
  }

  if (!a.trace.empty()) {
    RoundTraceSource src;
    src.fixed_gamma = a.gamma_policy == "fixed" ? a.gamma : 0;
    src.max_ctx = runner.max_ctx();
    RoundTraceWriter trace(a.trace);  // a path it cannot open is left as it is
    try {
      trace.write(req, res, src);
      trace.close();
    } catch (...) {
      trace.discard();  // no partial trace (a FIFO or device stays)
      throw;
    }
  }

  const double n = static_cast<double>(res.tokens.size());
  if (a.json) {
    nlohmann::json j;
    j["target"] = a.target;
    j["draft"] = a.draft;
    j["prompt_tokens"] = req.prompt;
    j["tokens"] = res.tokens;
    j["text"] = render(tok, res.tokens);
    j["stop"] = stop_reason_name(res.stop);
    j["prefill_s"] = res.prefill_s;
    j["decode_s"] = res.decode_s;
    j["prefill_tokens_per_s"] = res.prefill_s > 0 ? req.prompt.size() / res.prefill_s : 0.0;
    j["decode_tokens_per_s"] = res.decode_s > 0 ? n / res.decode_s : 0.0;
    j["target_calls"] = res.n_target_calls;
    // The target's weight file copied into huge pages rather than mapped (core/mapped_file.h).
    j["target_weights_copied"] = target->weights_copied;
    j["matmul_isa"] = matmul_isa();  // the CPU kernel path the products ran on
    // How its BF16 matrices lie for the CPU kernels (models/llama/weights_layout.h).
    j["target_weights_layout"] = llama_weights_layout(*target);
    if (drafter) {
      if (!a.tree.empty()) {
        j["tree"] = tree.to_string();
        j["tree_nodes"] = stats.n_tree_nodes;
      } else {
        j["gamma"] = a.gamma;
      }
      j["gamma_policy"] = a.gamma_policy;
      if (!synthetic.empty()) j["synthetic_acceptance"] = synthetic;
      j["draft_calls"] = res.n_draft_calls;
      j["rounds"] = stats.n_rounds;
      j["drafted"] = stats.n_drafted;
      j["tested"] = stats.n_tested;
      j["accepted"] = stats.n_accepted;
      j["alpha_empirical"] = stats.alpha_empirical();
      j["alpha_beta"] = stats.alpha_beta();
      j["tau"] = stats.tau();
      j["acceptance_by_position"] = stats.conditional_acceptance();
      j["survival_by_position"] = stats.survival();
      double draft_s = 0, verify_s = 0, sample_s = 0;
      for (const auto& r : res.rounds) {
        draft_s += r.draft_s;
        verify_s += r.verify_s;
        sample_s += r.sample_s;
      }
      j["draft_s"] = draft_s;
      j["verify_s"] = verify_s;
      j["sample_s"] = sample_s;
    }
    print_json_line(j);
    return;
  }
  if (a.show_drafts && drafter && tok) {
    std::cout << render_drafts(*tok, res) << "\n";
  } else if (tok) {
    std::cout << (a.prompt.empty() ? "" : a.prompt) << render(tok, res.tokens) << "\n";
  } else {
    for (size_t i = 0; i < res.tokens.size(); i++) std::cout << (i ? " " : "") << res.tokens[i];
    std::cout << "\n";
  }
  std::fprintf(stderr,
               "speclab: %zu prompt tokens, prefill %.1f tok/s; %zu new tokens, decode %.2f tok/s "
               "(%s)",
               req.prompt.size(), res.prefill_s > 0 ? req.prompt.size() / res.prefill_s : 0.0,
               res.tokens.size(), res.decode_s > 0 ? n / res.decode_s : 0.0,
               stop_reason_name(res.stop));
  if (drafter)
    std::fprintf(stderr, "; alpha %.3f, tokens/target call %.2f", stats.alpha_empirical(),
                 stats.tau());
  if (!synthetic.empty())
    std::fprintf(stderr, "; synthetic acceptance: the text is not the target's distribution");
  std::fprintf(stderr, "\n");
}

}  // namespace

void register_generate(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  auto* c = app.add_subcommand("generate", "generate text from a model, optionally speculatively");
  c->add_option("--target", args->target, "target model: HF directory, .gguf, synthetic:<shape>")
      ->required();
  c->add_option("--draft", args->draft,
                "drafter: model path | lookup[:n=N,min=M] | self:skip=A-B | ngram:PATH");
  c->add_option("--tokenizer", args->tokenizer, "tokenizer to use instead of the model's");
  c->add_option("--prompt", args->prompt, "prompt text")->check(utf8_text());
  c->add_option("--prompt-ids", args->prompt_ids, "prompt as comma-separated token ids");
  c->add_option("--prompts", args->prompts,
                "a prompt set (JSONL, as prompts.file in configs): one request per prompt")
      ->check(non_empty("a prompt-set file"));
  c->add_option("--concurrency", args->concurrency,
                "with --prompts: requests in flight at once (continuous batching; default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  c->add_flag("--no-bos", args->no_bos, "do not prepend BOS to --prompt");
  c->add_option("--gamma", args->gamma,
                "tokens drafted per round (fixed); the initial gamma (heuristic); the largest "
                "gamma (entropy, between 1 and --gamma)")
      ->check(CLI::Range(1, 64));
  c->add_option("--gamma-policy", args->gamma_policy, "fixed | heuristic | entropy");
  c->add_option("--p-min", args->p_min, "stop drafting when the draft's top probability < p_min")
      ->check(finite_range(0.0, 1.0));
  c->add_option("--lenience", args->lenience, "paper A.5 lenience l in (0, 1]; 1 = exact")
      ->check(finite_range(0.0, 1.0, /*lo_open=*/true));
  c->add_option("--synthetic-acceptance", args->synthetic_acceptance,
                "timing only: accept each draft with probability A (or A1,A2,... per position, "
                "the last repeating) instead of the exact test; the text is not the target's");
  c->add_option("--tree", args->tree,
                "tree speculation: branching per depth, e.g. 3x2x1 (top-k of the draft) or "
                "2x2:sample (independent draft samples); replaces --gamma")
      ->check(non_empty("a tree shape such as 3x2x1 or 2x2:sample"));
  c->add_option("--temperature", args->temperature, "0 = greedy")->check(finite_range(0.0, 100.0));
  c->add_option("--draft-temperature", args->draft_temperature,
                "draft temperature (default: the target's)")
      ->check(finite_range(0.0, 100.0));
  c->add_option("--top-k", args->top_k, "0 = off")->check(CLI::Range(0, 1 << 24));
  c->add_option("--top-p", args->top_p, "in (0, 1]; 1 = off")
      ->check(finite_range(0.0, 1.0, /*lo_open=*/true));
  c->add_option("--seed", args->seed, "random seed")
      ->check(unsigned_up_to(18446744073709551615ull));
  c->add_option("--max-new-tokens", args->max_new_tokens, "tokens to generate")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  c->add_option("--ctx", args->ctx, "context limit (default min(model's, 4096))")
      ->check(CLI::Range(int64_t{0}, int64_t{kMaxContextTokens}));
  c->add_option("--backend", args->backend, "where the target runs: cpu | cuda");
  c->add_option("--threads", args->threads, "CPU threads (default: all cores)")
      ->check(CLI::Range(0, kMaxThreads));
  c->add_option("--matmul-isa", args->matmul_isa,
                "CPU kernel path: best | generic | avx2 | avx512 | avx512bf16 (BF16 activations) "
                "| avx512vnni (int8 activations, as llama.cpp's quantized dot products) | amxbf16 "
                "(default: SPECLAB_MATMUL_ISA, else best)");
  c->add_flag("--ignore-eos", args->ignore_eos, "do not stop at EOS");
  c->add_option("--trace", args->trace,
                "write every round to FILE (JSON lines, read by speclab simulate --replay)");
  c->add_flag("--json", args->json, "print one JSON object with tokens, text and stats");
  c->add_flag("--show-drafts", args->show_drafts,
              "mark accepted, [-rejected-] and {+target-sampled+} tokens");
  c->add_option("--chat-template", args->chat_template,
                "wrap --prompt in an instruct chat format: none | auto (by the tokenizer's "
                "special tokens) | chatml | llama3");
  c->callback([args, c] {
    for (const char* name : {"--gamma", "--gamma-policy", "--p-min", "--lenience",
                             "--draft-temperature", "--show-drafts"}) {
      if (c->get_option(name)->count() > 0) args->drafting_options_given.push_back(name);
    }
    run_generate(*args);
  });
}

}  // namespace speclab
