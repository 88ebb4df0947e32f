#include "experiments/predict/cell_prediction.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/output_file.h"
#include "core/safe_name.h"
#include "core/speculative_verify.h"
#include "core/speedup_theory.h"
#include "core/token_tree.h"
#include "experiments/predict/cost_profile.h"
#include "experiments/predict/cost_profile_check.h"
#include "experiments/predict/profile_io.h"

namespace speclab {

namespace {

// The settings that make up a profile group (see the header).
// What a group's profiles depend on: the pair, the sampling law, the verification rule, the
// budget and the machine-side settings (threads, backend, context). Not the prompts, nor
// repeats or warmup: the acceptance law and the costs are the pair's, so profiles measured on
// one prompt set predict cells on another (held-out prompts: `--profiles DIR`); the index
// records which prompts they came from (profile_prompts in the rows).
nlohmann::json group_settings(const ExperimentConfig& config, const Cell& c) {
  nlohmann::json generation = config.generation_json();
  generation.erase("repeats");
  generation.erase("warmup");
  return {{"target", config.target ? nlohmann::json(config.target->spec) : nlohmann::json()},
          {"generation", generation},
          {"drafter", c.drafter},
          {"drafter_spec", c.drafter_ref.spec},
          {"temperature", c.temperature},
          {"draft_temperature", c.draft_temperature},
          {"top_k", c.top_k},
          {"top_p", c.top_p},
          {"lenience", c.lenience}};
}

// Rollout depth and T(k) range a cell needs.
void cell_needs(const Cell& c, int cost_curve_max_k, int* depth, int* k_max) {
  if (c.tree.depth() > 0) {
    const TreeShape& shape = c.tree;
    *depth = std::max(*depth, shape.depth());
    *k_max = std::max<int>(*k_max, static_cast<int>(shape.n_drafted()) + 1);
    return;
  }
  // HF's heuristic grows gamma without bound; the prediction follows it up to the deepest
  // round the cost curve covers.
  const int g = c.gamma_policy == "heuristic" ? std::max(c.gamma, cost_curve_max_k - 1) : c.gamma;
  *depth = std::max(*depth, g);
  *k_max = std::max(*k_max, g + 1);
}

// How a tree's levels are priced (tree_profile below).
enum class TreeLevelModel {
  kTopMass,     // top-k levels from the measured top_mass
  kSampleMass,  // sampled levels from the measured sample_mass, nodes from sample_distinct
  kIndependent  // siblings as independent tries of the chain's rollout (nothing measured)
};

// The model a profile supports for `shape`: the measured list of its mode (top_mass for top-k,
// sample_mass for sampled), a rollout at every position, each with at least the widest level's
// siblings; else independent tries.
TreeLevelModel tree_level_model(const AcceptanceProfile& a, const TreeShape& shape) {
  if (a.stride != 1 || a.prompts.empty()) return TreeLevelModel::kIndependent;
  const bool top = shape.mode == TreeMode::kTopK;
  const size_t widest =
      static_cast<size_t>(*std::max_element(shape.branching.begin(), shape.branching.end()));
  for (const auto& p : a.prompts)
    for (const auto& r : p.positions)
      if (r.beta != -1.0f && (top ? r.top_mass : r.sample_mass).size() < widest)
        return TreeLevelModel::kIndependent;
  return top ? TreeLevelModel::kTopMass : TreeLevelModel::kSampleMass;
}

// Tree rounds as chain rollouts of per-level pass probabilities (acceptance_profile.h).
//   top-b (top_mass measured): level j of a round at t passes with top_mass[b_j - 1] at t + j,
//     the drafter's b_j likeliest siblings at the text's prefix (exact at T = 0);
//   sampled (sample_mass measured): level j passes with sample_mass[b_j - 1] at t + j, b_j
//     siblings drawn from q at the text's prefix and verified with SpecInfer's residuals
//     (exact at the first level);
//   otherwise: a level of b siblings passes when one does; treating them as independent
//     draws, r_j(tree) = 1 - (1 - r_j)^b. An approximation for both modes: a sampled repeat
//     of a rejected token always fails again, and top-k children are distinct, not
//     independent (at T = 0, where r_j is 0 or 1, it prices the tree as the chain).
AcceptanceProfile tree_profile(const AcceptanceProfile& chain, const TreeShape& shape,
                               TreeLevelModel model) {
  AcceptanceProfile t = chain;
  t.max_depth = shape.depth();
  for (size_t pi = 0; pi < t.prompts.size(); pi++) {
    const std::vector<AcceptanceRollout>& source = chain.prompts[pi].positions;  // [N] at stride 1
    for (size_t at = 0; at < source.size(); at++) {
      AcceptanceRollout& r = t.prompts[pi].positions[at];
      const size_t d = std::min<size_t>(r.accept.size(), static_cast<size_t>(shape.depth()));
      r.accept.resize(d);
      r.top_prob.resize(d);
      r.entropy.resize(d);
      for (size_t j = 0; j < d; j++) {
        const size_t b = static_cast<size_t>(shape.branching[j]);
        // Past the text's end no round reaches level j; the chain's figure stands there.
        const std::vector<float>* measured =
            at + j >= source.size()                ? nullptr
            : model == TreeLevelModel::kTopMass    ? &source[at + j].top_mass
            : model == TreeLevelModel::kSampleMass ? &source[at + j].sample_mass
                                                   : nullptr;
        if (measured != nullptr && measured->size() >= b)
          r.accept[j] = (*measured)[b - 1];
        else
          r.accept[j] = static_cast<float>(1.0 - std::pow(1.0 - r.accept[j], b));
      }
    }
  }
  return t;
}

// [depth + 1] expected drafted nodes of `shape` cut to depth g, g = 0..depth. Top-k levels
// have every node; a sampled level of b siblings has the profile's mean sample_distinct[b - 1]
// children per node (repeats get no node), levels taken as independent. Without sample_distinct
// a sampled level is counted at full width.
std::vector<double> tree_expected_nodes(const AcceptanceProfile& a, const TreeShape& shape,
                                        TreeLevelModel model) {
  std::vector<double> per_node(shape.branching.begin(), shape.branching.end());  // [depth]
  if (model == TreeLevelModel::kSampleMass) {
    for (size_t j = 0; j < per_node.size(); j++) {
      const size_t b = static_cast<size_t>(shape.branching[j]);
      double sum = 0;
      int64_t n = 0;
      for (const auto& p : a.prompts)
        for (const auto& r : p.positions)
          if (r.sample_distinct.size() >= b) {
            sum += r.sample_distinct[b - 1];
            n++;
          }
      if (n > 0) per_node[j] = std::clamp(sum / static_cast<double>(n), 1.0, per_node[j]);
    }
  }
  std::vector<double> nodes = {0.0};
  double level = 1;  // nodes at the previous level (the root)
  for (double children : per_node) {
    level *= children;
    nodes.push_back(nodes.back() + level);
  }
  return nodes;
}

}  // namespace

void CellPrediction::put_into(ResultRow* row) const {
  ResultRow& r = *row;
  r.prediction_group = group;
  r.prediction_model = model;
  r.predicted_speedup = prediction.speedup;
  r.predicted_tokens_per_round = prediction.tokens_per_round;
  r.predicted_drafted_per_round = prediction.mean_drafted_per_round;
  if (prediction.mean_tree_nodes_per_round > 0)
    r.predicted_tree_nodes_per_round = prediction.mean_tree_nodes_per_round;
  r.predicted_spec_s_per_token = prediction.spec_s_per_token;
  r.predicted_baseline_s_per_token = prediction.base_s_per_token;
  if (std::isfinite(interval.speedup_lo) && !batched) {
    r.predicted_speedup_ci_lo = interval.speedup_lo;
    r.predicted_speedup_ci_hi = interval.speedup_hi;
    r.predicted_tokens_per_round_ci_lo = interval.tokens_per_round_lo;
    r.predicted_tokens_per_round_ci_hi = interval.tokens_per_round_hi;
  }
  if (std::isfinite(cost_range.lo)) {  // (left NaN by predict for batched cells)
    r.predicted_speedup_cost_lo = cost_range.lo;
    r.predicted_speedup_cost_hi = cost_range.hi;
  }
  if (std::isfinite(mean_costs_speedup)) r.predicted_speedup_mean_costs = mean_costs_speedup;
  if (acceptance_stride != 1) r.acceptance_profile_stride = acceptance_stride;
  r.alpha_profile = acceptance.alpha_beta;
  r.alpha_profile_ci_lo = alpha_ci.lo;
  r.alpha_profile_ci_hi = alpha_ci.hi;
  r.alpha_profile_positions = acceptance.n_positions;
  r.acceptance_profile_by_position = acceptance.conditional;
  r.survival_profile_by_position = acceptance.survival;
  r.c_profile = c;
  // Lenient cells are lossy: alpha_profile is then alpha_l = E[sum_x min(q, p / l)], and the
  // quality cost is the mean total variation between the emitted law and the target's.
  r.lenient_tv_profile = acceptance.lenient_tv;
  if (thm38_speedup > 0) {
    r.thm38_alpha = thm38_alpha;
    r.thm38_speedup = thm38_speedup;
  }
  r.cost_profile_source = cost.source;
  if (!profile_prompts.empty()) r.profile_prompts = profile_prompts;
  r.cost_profile_file = cost_file;
  if (!cost_taken_utc.empty()) r.cost_profile_taken_utc = cost_taken_utc;
  if (!cost_check.empty()) {
    r.cost_profile_check = cost_check;
    r.cost_profile_check_step_s = cost_check_step_s;
  }
  r.cost_profile_context_len = cost.context_len;
  r.cost_profile_target_s = cost.target_s;
  if (cost.baseline_step_s > 0) r.cost_profile_baseline_step_s = cost.baseline_step_s;
  r.cost_profile_draft_round_s = cost.draft_round_s;
  r.cost_profile_draft_catchup_s = cost.draft_catchup_s;
  r.cost_profile_draft_prefill_s = cost.draft_prefill_s;
  r.cost_profile_host_round_s = cost.host_round_s;
  if (!cost.verify_device_s.empty()) r.cost_profile_verify_device_s = cost.verify_device_s;
  if (verify_on_device) r.predicted_verify_on_device = true;
  if (!gamma_by_load.empty())
    r.predicted_gamma_by_load = std::vector<int64_t>(gamma_by_load.begin(), gamma_by_load.end());
  if (batched) {
    r.predicted_throughput_speedup = batched_prediction.throughput_speedup;
    r.predicted_throughput_baseline_tokens_per_s = batched_prediction.base_tokens_per_s;
    r.predicted_throughput_spec_tokens_per_s = batched_prediction.spec_tokens_per_s;
    r.predicted_prefill_share = batched_prediction.prefill_share_spec;
    r.batched_cost_profile_source = batched_cost_source;
    r.batched_cost_profile_file = batched_cost_file;
    r.predicted_spec_s_per_token.reset();
    r.predicted_baseline_s_per_token.reset();
  }
}

nlohmann::json PredictionGroupRow::to_json(const Cell& best) const {
  nlohmann::json shared = best.to_json();
  for (const char* k : {"gamma", "gamma_policy", "cell_id", "cell_index"}) shared.erase(k);
  shared.update(nlohmann::json{{"row_type", "group"},
                               {"group", group},
                               {"cell_ids", cell_ids},
                               {"predicted_best_cell_id", best_cell_id},
                               {"predicted_best_gamma", best_gamma},
                               {"predicted_best_policy", best_policy},
                               {"predicted_best_speedup", best_speedup}});
  return shared;
}

std::string CellPredictor::group_of(const ExperimentConfig& config, const Cell& cell) {
  return experiment_hash_hex(group_settings(config, cell).dump()).substr(0, 12);
}

std::string CellPredictor::acceptance_file_name(const std::string& group, int stride) {
  return "acceptance-" + group + (stride > 1 ? "-stride" + std::to_string(stride) : "") + ".json";
}

CellPredictor::CellPredictor(const ExperimentConfig& config, const std::vector<Cell>& all_cells,
                             TokenRunner* target, std::vector<PromptTokens> prompts,
                             std::vector<int64_t> stop_ids, std::string profiles_dir,
                             ProfileMode mode, const CostProfile* cost_override,
                             const std::atomic<bool>* interrupted)
    : config_(config),
      target_(target),
      prompts_(std::move(prompts)),
      stop_ids_(std::move(stop_ids)),
      dir_(std::move(profiles_dir)),
      mode_(mode),
      cost_override_(cost_override),
      interrupted_(interrupted) {
  for (const Cell& c : all_cells) {
    const std::string g = group_of(config, c);
    int& d = depth_[g];
    int& k = k_max_[g];
    k = std::max(k, config.measure.cost_curve_max_k);
    cell_needs(c, config.measure.cost_curve_max_k, &d, &k);
    std::vector<TreeShape>& trees = trees_[g];
    if (c.tree.depth() > 0 && std::none_of(trees.begin(), trees.end(), [&](const TreeShape& t) {
          return t.to_string() == c.tree.to_string();
        }))
      trees.push_back(c.tree);
    int& top_b = top_branching_[g];
    int& sample_b = sample_branching_[g];
    if (c.tree.depth() > 0) {
      const int widest = *std::max_element(c.tree.branching.begin(), c.tree.branching.end());
      int& b = c.tree.mode == TreeMode::kTopK ? top_b : sample_b;
      b = std::max(b, widest);
    }
    settings_[g] = group_settings(config, c);
    needs_acceptance_[g] = needs_acceptance_[g] || c.synthetic_acceptance.empty();
    if (c.gamma_policy == "predicted") slots_[g];  // its gamma table needs a batched profile
    if (c.concurrency > 1) {
      std::vector<int>& sl = slots_[g];
      if (std::find(sl.begin(), sl.end(), c.concurrency) == sl.end()) sl.push_back(c.concurrency);
      std::sort(sl.begin(), sl.end());
    }
  }
  if (mode_ != ProfileMode::kReuse) {
    output_dir_create(dir_, "profiles directory");
  }
  // Resuming: the groups of earlier runs into this directory stay in the index. Reusing: the
  // index says which prompts each group's profiles were measured on.
  const std::string index_file = dir_ + "/index.json";
  if (mode_ != ProfileMode::kMeasure && std::filesystem::exists(index_file)) {
    index_ = profile_read_json(index_file);
    SPECLAB_INPUT_CHECK(index_.is_object(), index_file, ": expected an object (group -> settings)");
    // Each entry names files in this directory: a name with a folder in it (../x) or of
    // another type would read or be taken for a file elsewhere.
    for (const auto& [group, entry] : index_.items()) {
      SPECLAB_INPUT_CHECK(entry.is_object(), index_file, ": ", group, ": expected an object");
      for (const char* key : {"cost_profile", "acceptance_profile", "batched_cost_profile"}) {
        if (!entry.contains(key)) continue;
        const nlohmann::json& v = entry[key];
        SPECLAB_INPUT_CHECK(v.is_string() && safe_name(v.get<std::string>(), 255), index_file, ": ",
                            group, ".", key, ": expected a file name in this directory, got ",
                            v.dump());
      }
    }
  }
}

void CellPredictor::write_index() {
  for (const auto& [g, prof] : cache_) {
    nlohmann::json e = settings_[g];
    e["cost_profile"] = "cost-" + g + ".json";
    e["acceptance_profile"] = acceptance_file_name(g, config_.measure.acceptance_stride);
    e["depth"] = depth_[g];
    e["prompts"] = config_.prompts_json();
    if (prof.has_batched) e["batched_cost_profile"] = "batched-cost-" + g + ".json";
    index_[g] = e;
  }
  profile_write_json(dir_ + "/index.json", index_);
}

void CellPredictor::profile_context(std::vector<int32_t>* context, int64_t* context_len,
                                    int64_t* prompt_len) const {
  int64_t mean_prompt = 0;
  for (const auto& p : prompts_) mean_prompt += static_cast<int64_t>(p.ids.size());
  mean_prompt = prompts_.empty() ? 32 : mean_prompt / static_cast<int64_t>(prompts_.size());
  *context = prompts_.empty() ? std::vector<int32_t>{1, 2, 3, 4} : prompts_[0].ids;
  *context_len = mean_prompt + config_.generation.max_new_tokens / 2;
  *prompt_len = mean_prompt;
}

void CellPredictor::batched_for(const Cell& cell, Profiles* prof) {
  if (prof->has_batched) return;
  const std::string g = group_of(config_, cell);
  const std::string file = dir_ + "/batched-cost-" + g + ".json";
  const bool read = mode_ == ProfileMode::kReuse ||
                    (mode_ == ProfileMode::kResume && std::filesystem::exists(file));
  prof->batched_file = file;
  if (read) {
    const nlohmann::json j = profile_read_json(file);
    prof->batched = batched_cost_profile_record_from_json(j, file);
    // The prompts the prefill figures are applied to (a reused profile predicts the queue it
    // was measured with when no prompts are loaded).
    if (j.contains("queue_prompt_lens")) {
      SPECLAB_INPUT_CHECK(j["queue_prompt_lens"].is_array(), file,
                          ": queue_prompt_lens: expected a list of token counts");
      for (const auto& x : j["queue_prompt_lens"]) {
        SPECLAB_INPUT_CHECK(x.is_number_integer() && x.get<int64_t>() >= 0, file,
                            ": queue_prompt_lens: expected token counts >= 0");
        prof->queue_prompt_lens.push_back(x.get<int64_t>());
      }
    }
  } else {
    SPECLAB_ASSERT(batched_measure_ != nullptr);
    BatchedCostRequest br;
    profile_context(&br.context, &br.context_len, &br.prompt_len);
    br.slots = {1};
    for (int b : slots_.at(g)) br.slots.push_back(b);
    br.k_max = k_max_.at(g);
    br.g_max = std::max(depth_.at(g), k_max_.at(g) - 1);
    br.draft_sampling = cell.draft_sampling();
    CostProfileTaken& taken = prof->batched.taken;
    taken = conditions_.fixed;
    if (conditions_.draft_sha256) taken.draft_sha256 = conditions_.draft_sha256(cell);
    if (conditions_.load1) taken.load_before = conditions_.load1();
    taken.utc = conditions_.utc_now ? conditions_.utc_now() : "";
    prof->batched.cost = batched_measure_(cell, br, &prof->batched.spread);
    if (conditions_.load1) taken.load_after = conditions_.load1();
    for (const auto& p : prompts_)
      prof->queue_prompt_lens.push_back(static_cast<int64_t>(p.ids.size()));
    const bool cut_short = interrupted_ != nullptr && interrupted_->load();
    if (!cut_short) {
      nlohmann::json j = batched_cost_profile_to_json(prof->batched);
      j["queue_prompt_lens"] = prof->queue_prompt_lens;
      profile_write_json(file, j);
    }
  }
  prof->has_batched = true;
  if (mode_ != ProfileMode::kReuse) write_index();
}

void CellPredictor::measure_cost(const Cell& cell, Drafter* drafter, Profiles* prof) {
  CostProfileTaken& taken = prof->cost_taken;
  taken = conditions_.fixed;
  if (conditions_.draft_sha256) taken.draft_sha256 = conditions_.draft_sha256(cell);
  if (conditions_.load1) taken.load_before = conditions_.load1();
  taken.utc = conditions_.utc_now ? conditions_.utc_now() : "";
  prof->cost = cost_profile_measure(*target_, *drafter, prof->cost_request, &prof->cost_spread,
                                    &prof->cost_parts);
  if (conditions_.load1) taken.load_after = conditions_.load1();
}

void CellPredictor::recheck_cost(const Cell& cell, Drafter* drafter, Profiles* prof,
                                 CellPrediction* out) {
  const CostProfileCheck check = cost_profile_check_judge(
      cost_profile_check_time(*target_, prof->cost_request), prof->cost, recheck_band_);
  out->cost_check_step_s = check.step_s;
  out->cost_check = check.holds ? "held" : "retaken";
  if (check.holds) return;
  std::fprintf(stderr,
               "speclab: cost profile %s: plain step %.4g ms outside [%.4g, %.4g] ms before cell "
               "%s; retaking it\n",
               prof->cost_file.c_str(), check.step_s * 1e3, check.lo * 1e3, check.hi * 1e3,
               cell.cell_id.c_str());
  measure_cost(cell, drafter, prof);
  // A file of its own: the group's first profile (and any earlier retake) stays as the rows
  // that came from it read it; a resumed run numbers on past the retakes already there.
  const std::string g = group_of(config_, cell);
  std::string file;
  do {
    file = str_cat(dir_, "/cost-", g, "-retake", ++prof->cost_retakes, ".json");
  } while (std::filesystem::exists(file));
  prof->cost_file = file;
  const bool cut_short = interrupted_ != nullptr && interrupted_->load();
  if (!cut_short)
    profile_write_json(file, cost_profile_to_json({prof->cost, prof->cost_spread, prof->cost_taken,
                                                   prof->cost_parts}));
}

CellPredictor::Profiles& CellPredictor::profiles_for(const Cell& cell, Drafter* drafter) {
  const std::string g = group_of(config_, cell);
  auto it = cache_.find(g);
  if (it != cache_.end()) return it->second;
  Profiles prof;
  const std::string cost_file = dir_ + "/cost-" + g + ".json";
  const std::string acc_file =
      dir_ + "/" + acceptance_file_name(g, config_.measure.acceptance_stride);
  const int depth = depth_.at(g);
  // What this group reads from the directory rather than measures (see ProfileMode).
  const bool reuse = mode_ == ProfileMode::kReuse;
  const bool resume = mode_ == ProfileMode::kResume;
  const bool read_cost = reuse || (resume && std::filesystem::exists(cost_file));
  const bool read_acc = reuse || (resume && std::filesystem::exists(acc_file));
  SPECLAB_ASSERT(reuse || (drafter != nullptr && target_ != nullptr));
  const SamplingParams ts = cell.target_sampling(), ds = cell.draft_sampling();

  prof.cost_file = cost_file;
  CostProfileRequest& cr = prof.cost_request;
  profile_context(&cr.context, &cr.context_len, &cr.prompt_len);
  cr.k_max = k_max_.at(g);
  cr.g_max = std::max(depth, k_max_.at(g) - 1);
  cr.min_seconds = config_.measure.cost_profile_seconds;
  cr.target_sampling = ts;
  cr.draft_sampling = ds;
  cr.trees = trees_.at(g);
  if (cost_override_) {
    prof.cost = *cost_override_;
    prof.cost_file = cost_override_->origin;
  } else if (read_cost) {
    CostProfileRecord rec = cost_profile_record_from_json(profile_read_json(cost_file), cost_file);
    prof.cost = std::move(rec.cost);
    prof.cost_spread = std::move(rec.spread);
    prof.cost_taken = std::move(rec.taken);
    prof.cost_parts = std::move(rec.parts);
  } else {
    measure_cost(cell, drafter, &prof);
  }

  if (read_acc) {
    prof.acceptance = acceptance_profile_from_json(profile_read_json(acc_file), acc_file);
    SPECLAB_INPUT_CHECK(prof.acceptance.max_depth >= depth, acc_file, ": rollouts of depth ",
                        prof.acceptance.max_depth, ", the sweep's cells need ", depth);
    SPECLAB_INPUT_CHECK(prof.acceptance.stride == config_.measure.acceptance_stride, acc_file,
                        ": measured at acceptance stride ", prof.acceptance.stride,
                        ", the config asks for measure.acceptance_stride ",
                        config_.measure.acceptance_stride);
  } else {
    AcceptanceProfileRequest ar;
    ar.target_sampling = ts;
    ar.draft_sampling = ds;
    ar.lenience = cell.lenience;
    ar.depth = depth;
    ar.max_new_tokens = config_.generation.max_new_tokens;
    ar.stop_ids = stop_ids_;
    ar.seed = static_cast<uint64_t>(config_.generation.seed);
    ar.stride = config_.measure.acceptance_stride;
    ar.top_branching = top_branching_.at(g);
    ar.sample_branching = sample_branching_.at(g);
    // Synthetic cells predict from their configured acceptance: a group of nothing else needs
    // no rollouts (its profile file is written empty, so --profiles still finds it).
    prof.acceptance.max_depth = depth;
    prof.acceptance.stride = ar.stride;
    if (needs_acceptance_.at(g))
      prof.acceptance = acceptance_profile_measure(*target_, *drafter, prompts_, ar, interrupted_);
  }
  // Only what was not read is written: a file in the directory is never replaced here. A
  // measurement cut short by a signal is partial (the rollouts stop early): nothing is written,
  // so that a resumed run measures the group again instead of reading it, and the cell in
  // flight is dropped by the caller.
  const bool cut_short = interrupted_ != nullptr && interrupted_->load();
  if (!read_cost && !cut_short)
    profile_write_json(cost_file, cost_profile_to_json({prof.cost, prof.cost_spread,
                                                        prof.cost_taken, prof.cost_parts}));
  if (!read_acc && !cut_short)
    profile_write_json(acc_file, acceptance_profile_to_json(prof.acceptance));
  // Which prompts the acceptance profile came from, against this config's.
  if (!read_acc) {
    prof.prompts = "same";
  } else if (index_.contains(g) && index_[g].is_object() && index_[g].contains("prompts")) {
    prof.prompts = index_[g]["prompts"] == config_.prompts_json() ? "same" : "other";
  }
  prof.summary = acceptance_summarize(prof.acceptance);
  prof.alpha_ci = acceptance_alpha_interval(prof.acceptance, config_.measure.bootstrap_resamples,
                                            config_.measure.confidence,
                                            static_cast<uint64_t>(config_.generation.seed));
  auto& stored = cache_.emplace(g, std::move(prof)).first->second;
  if (mode_ != ProfileMode::kReuse && !cut_short) write_index();
  return stored;
}

void CellPredictor::predict_batched_into(const Cell& cell, const Profiles& prof,
                                         const AcceptanceProfile& acceptance,
                                         const ChainSetting& chain, CellPrediction* out) const {
  BatchedSetting bs;
  bs.chain = chain;
  bs.concurrency = cell.concurrency;
  bs.repeats = config_.generation.repeats;
  // The loaded prompts' lengths; without prompts (profiles reused offline), those the batched
  // profile was measured for.
  bs.prompt_lens = prof.queue_prompt_lens;
  if (!prompts_.empty()) {
    bs.prompt_lens.clear();
    for (const auto& p : prompts_) bs.prompt_lens.push_back(static_cast<int64_t>(p.ids.size()));
  }
  bs.draft_prefill = prof.batched.cost.draft_prefill_s_per_token > 0;
  if (!out->gamma_by_load.empty()) {
    bs.gamma_by_load = out->gamma_by_load;
    bs.chain.gamma = cell.gamma;
  }
  const BatchedPrediction b = predict_batched(prof.cost, prof.batched.cost, acceptance, bs);
  out->batched = true;
  out->batched_prediction = b;
  out->batched_cost_source = prof.batched.cost.source;
  out->batched_cost_file = prof.batched_file;
  out->profile_load =
      std::max({out->profile_load, prof.batched.taken.load_before, prof.batched.taken.load_after});
  out->model = "batched-loop";
  // Per request, as the measurement's speedup at the same concurrency.
  out->prediction.speedup = b.speedup;
  out->prediction.tokens_per_round = b.tokens_per_round;
  out->prediction.mean_drafted_per_round = b.mean_drafted_per_round;
}

CellPrediction CellPredictor::predict(const Cell& cell, Drafter* drafter) {
  Profiles& prof = profiles_for(cell, drafter);
  CellPrediction out;
  if (recheck_band_ > 0 && mode_ != ProfileMode::kReuse && cost_override_ == nullptr &&
      cell.concurrency == 1 && target_ != nullptr && drafter != nullptr)
    recheck_cost(cell, drafter, &prof, &out);
  out.group = group_of(config_, cell);
  out.cost = prof.cost;
  out.cost_parts = prof.cost_parts;
  out.cost_file = prof.cost_file;
  out.cost_taken_utc = prof.cost_taken.utc;
  if (prof.cost_spread.baseline_step_s.min.size() == 1) {
    out.plain_step_min_s = prof.cost_spread.baseline_step_s.min[0];
    out.plain_step_median_s = prof.cost_spread.baseline_step_s.median[0];
    out.plain_step_max_s = prof.cost_spread.baseline_step_s.max[0];
  }
  out.profile_prompts = prof.prompts;
  out.profile_load = std::max(prof.cost_taken.load_before, prof.cost_taken.load_after);
  out.c = prof.cost.c();
  out.acceptance = prof.summary;
  out.alpha_ci = prof.alpha_ci;
  out.acceptance_stride = prof.acceptance.stride;
  ChainSetting s;
  s.gamma = cell.gamma;
  s.policy = cell.gamma_policy;
  s.p_min = cell.p_min;
  s.max_new_tokens = config_.generation.max_new_tokens;
  s.seed = static_cast<uint64_t>(config_.generation.seed);
  const bool predicted_policy = cell.gamma_policy == "predicted";
  if (cell.concurrency > 1 || predicted_policy) batched_for(cell, &prof);
  // The queue's prompts: loaded, or (profiles reused without a model) those the batched cost
  // profile was measured with.
  const size_t n_prompts = !prompts_.empty() ? prompts_.size() : prof.queue_prompt_lens.size();
  // Synthetic acceptance: the configured per-position probabilities replace the profile;
  // ignore_eos makes every request max_new_tokens long.
  const bool synthetic = !cell.synthetic_acceptance.empty();
  const AcceptanceProfile configured =
      synthetic
          ? acceptance_profile_configured(
                cell.synthetic_acceptance, std::max(cell.gamma, depth_.at(out.group)),
                std::max<int>(1, static_cast<int>(n_prompts)), config_.generation.max_new_tokens)
          : AcceptanceProfile{};
  const AcceptanceProfile& acceptance = synthetic ? configured : prof.acceptance;
  if (synthetic) {
    out.acceptance = acceptance_summarize(configured);
    out.alpha_ci = {out.acceptance.alpha_beta, out.acceptance.alpha_beta};
  }
  if (predicted_policy) {
    // The load-following policy: its gamma per number of requests in flight, from the
    // profiles; one request at a time it is the fixed gamma of its first entry (at least 1:
    // the one-request decoder always drafts).
    out.gamma_by_load =
        predicted_gamma_by_load(prof.cost, prof.batched.cost, out.acceptance.survival, cell.gamma);
    s.policy = "fixed";
    s.gamma = std::max(1, out.gamma_by_load[1]);
  }
  if (cell.tree.depth() > 0) {
    // Sampled children of a greedy drafter are all its argmax: every repeat gets no node, so
    // the tree the decoder verifies is the chain of the same depth (exactly). Other sampled
    // trees are priced at their expected node count (tree_expected_nodes).
    TreeShape shape = cell.tree;
    if (shape.mode == TreeMode::kSample && cell.draft_sampling().temperature == 0.0f)
      std::fill(shape.branching.begin(), shape.branching.end(), 1);
    s.gamma = shape.depth();
    s.tree_shape = cell.tree.to_string();  // its drafting as timed, repeats and all
    const TreeLevelModel levels = tree_level_model(prof.acceptance, shape);
    // The decoder drops the deepest levels near the budget: the nodes of each cut.
    s.tree_nodes_at_depth = tree_expected_nodes(prof.acceptance, shape, levels);
    out.model = levels == TreeLevelModel::kTopMass      ? "tree-top-b"
                : levels == TreeLevelModel::kSampleMass ? "tree-sampled-b"
                                                        : "tree-approx";
    const AcceptanceProfile tree = tree_profile(prof.acceptance, shape, levels);
    out.prediction = predict_chain(prof.cost, tree, s);
    out.interval = predict_chain_interval(prof.cost, tree, s, config_.measure.bootstrap_resamples,
                                          config_.measure.confidence, s.seed);
    out.cost_range = predict_cost_range(prof.cost, prof.cost_spread, tree, s);
    out.mean_costs_speedup = predict_speedup_at_mean_costs(prof.cost, prof.cost_spread, tree, s);
  } else {
    // Where the decoder verifies this cell's rounds: on the target's device when the profile
    // timed that round and the decoder's rule allows it; one request at a time (the batched
    // decoders verify on the host).
    VerifyConfig vc;
    vc.greedy = cell.target_sampling().temperature == 0.0f;
    vc.lenience = cell.lenience;
    s.verify_on_device = cell.concurrency <= 1 && verify_may_run_on_device(synthetic, vc) &&
                         !prof.cost.verify_device_s.empty();
    out.verify_on_device = s.verify_on_device;
    out.model = synthetic                      ? "configured-acceptance"
                : cell.gamma_policy == "fixed" ? "chain"
                                               : "policy-walk";
    out.prediction = predict_chain(prof.cost, acceptance, s);
    if (cell.concurrency <= 1) {
      out.cost_range = predict_cost_range(prof.cost, prof.cost_spread, acceptance, s);
      out.mean_costs_speedup =
          predict_speedup_at_mean_costs(prof.cost, prof.cost_spread, acceptance, s);
    }
    // A configured acceptance has no sampling error to state.
    if (!synthetic)
      out.interval =
          predict_chain_interval(prof.cost, acceptance, s, config_.measure.bootstrap_resamples,
                                 config_.measure.confidence, s.seed);
    if (cell.concurrency > 1) predict_batched_into(cell, prof, acceptance, s, &out);
  }
  out.thm38_alpha = out.acceptance.alpha_beta;
  if (!cell.synthetic_acceptance.empty()) {
    // One alpha for a per-position list: Eq. (1) increases with alpha, so bisect for the
    // i.i.d. alpha giving the configured tokens per round at the cell's gamma.
    std::vector<double> a;
    for (int i = 0; i < cell.gamma; i++)
      a.push_back(verify_synthetic_prob_at(cell.synthetic_acceptance, i));
    const double tokens = theory_refined_expected_tokens(a, cell.gamma);
    double lo = 0, hi = 1;
    for (int it = 0; it < 100; it++) {
      const double mid = (lo + hi) / 2;
      (theory_expected_tokens(mid, cell.gamma) < tokens ? lo : hi) = mid;
    }
    const bool constant = std::all_of(a.begin(), a.end(), [&](double x) { return x == a[0]; });
    out.thm38_alpha = constant ? a[0] : (lo + hi) / 2;
  }
  const double alpha = std::min(out.thm38_alpha, 1.0 - 1e-12);
  // Theorem 3.8 prices one request at a time: no figure for a batched cell.
  out.thm38_speedup =
      cell.tree.depth() == 0 && !out.batched ? theory_walltime_speedup(alpha, out.c, s.gamma) : 0.0;
  out.thm38_gamma = s.gamma;
  return out;
}

std::vector<PredictionGroupRow> CellPredictor::best_per_group(
    const std::vector<Cell>& cells, const std::vector<CellPrediction>& predictions) {
  SPECLAB_ASSERT(cells.size() == predictions.size());
  std::map<std::string, PredictionGroupRow> groups;
  std::vector<std::string> order;
  for (size_t i = 0; i < cells.size(); i++) {
    const Cell& c = cells[i];
    // Cells differing only in gamma and policy: the group key plus what else shapes a round.
    nlohmann::json k = {{"group", predictions[i].group},
                        {"p_min", c.p_min},
                        {"synthetic", c.synthetic_acceptance},
                        {"tree", c.tree.depth() > 0 ? c.tree.to_string() : ""}};
    if (c.concurrency > 1) k["concurrency"] = c.concurrency;  // (absent at 1: keys unchanged)
    const std::string key = experiment_hash_hex(k.dump()).substr(0, 12);
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    PredictionGroupRow& g = it->second;
    g.group = key;
    g.cell_ids.push_back(c.cell_id);
    if (predictions[i].prediction.speedup > g.best_speedup) {
      g.best_speedup = predictions[i].prediction.speedup;
      g.best_cell_id = c.cell_id;
      g.best_gamma = c.gamma;
      g.best_policy = c.gamma_policy;
    }
  }
  std::vector<PredictionGroupRow> out;
  for (const auto& k : order) out.push_back(groups[k]);
  return out;
}

}  // namespace speclab
