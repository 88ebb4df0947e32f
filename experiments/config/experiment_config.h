// An experiment file (configs/*.yaml) loaded strictly into typed structs.
//
// One file answers one question, stated in a `# Question:` header comment and in the
// `question:` key. Loading is strict (Drake common/yaml, Marian config_validator style):
// an unknown key, a missing required key, a value of the wrong type and an out-of-range
// value are all InputErrors of one line naming the file, the line, the YAML path and what
// was expected:
//   configs/default.yaml:21: sweep.gamma[2]: expected an integer in 1..64, got 100
// A value that came from `--set` is named by the override instead of a line:
//   --set sweep.gamma: sweep.gamma[0]: expected an integer in 1..64, got 0
//
// Schema (every key; `=` gives the default of an optional key). The table the loader checks
// keys against, and docs/config-reference.md is made from, is experiments/config/config_schema.cpp:
// a new key goes there too.
//
//   name: default              required; [A-Za-z0-9._-]+; results go to results/<name>/
//   question: "..."            required; one line
//   target: PATH               model path (HF dir, .gguf, synthetic:<shape>[:dtype]);
//                              required unless `simulate` is given
//   drafters:                  name -> drafter spec (drafter_factory.cpp grammar: a model path,
//     draft-2m: PATH           lookup[:n=N], self:skip=A-B, ngram:PATH); required with a target
//   prompts:                   required with a target unless measure.cost_only
//     file: PATH | [PATH, ...] required; JSONL {id, text, task?, ...} (prompt_set.h); a list
//                              runs the sets one after the other (ids unique across them)
//     skip: 0                  leave out the first N prompts of each file, >= 0 (then limit)
//     limit: 0                 first N prompts of each file (0 = all), >= 0
//     chat_template: false     wrap each text in the target's chat format
//     tokenizer: PATH          optional: encode with this tokenizer (tokenizer.json,
//                              tokenizer.model, .gguf or HF dir) instead of the target's, for
//                              targets without one (synthetic shapes); its vocabulary must fit
//   generation:                optional section
//     max_new_tokens: 64       >= 1
//     seed: 0                  >= 0
//     repeats: 1               timed runs per prompt, >= 1
//     warmup: 1                untimed warmup prompts, >= 0
//     threads: 0               0 = all cores
//     ctx: 1024                KV-cache length, > max_new_tokens
//     ignore_eos: false
//     backend: cpu               # cpu | cuda: where the target and model drafters run
//     matmul_isa: best         CPU kernel path: best | generic | avx2 | avx512 | avx512bf16 |
//                              avx512vnni | amxbf16 (unset: SPECLAB_MATMUL_ISA, else best)
//   measure:                   optional section
//     baseline: true           also run the target alone (interleaved with speculative runs)
//     cost_curve_max_k: =max(sweep.gamma)+1   measure T(k) for k = 1..this; at least
//                              max(sweep.gamma)+1 (Theorem 3.8 needs T(gamma+1))
//     bootstrap_resamples: 1000   >= 1
//     confidence: 0.95         in (0, 1)
//     cost_only: false         measure T(k) only: no prompts, no speculative runs
//     acceptance_stride: 1     acceptance profile: rollouts at every N-th position only
//   sweep:                     required with a target; each axis is a list or a scalar.
//                              The axes (keys, types, defaults, checks, expansion order)
//                              are declared once, in experiments/config/sweep_axes.cpp; the
//                              generated docs/config-reference.md lists them:
//     drafter: [names]         names from `drafters` (required)
//     gamma: [4]               1..64
//     temperature, draft_temperature ("same" = the cell's temperature), top_k, top_p,
//     lenience, gamma_policy, p_min, synthetic_acceptance (timing only), tree (tree cells
//     exist only with the exact settings and the first gamma, and take the tree's depth
//     as gamma)
//   simulate:                  optional; simulator-only configs have no target
//     table: paper-table1      which table `speclab simulate` prints
//   gate:                      optional; for `speclab check`
//     sigmas: 4                tolerance in standard errors, > 0
//
// Only `sweep.drafter` is required within `sweep`; the other axes default to a single value.
// Lists must be non-empty and hold no duplicate values.
//
// Strings: `${VAR}` is replaced by the environment variable VAR (an error if it is unset),
// `${VAR:?hint}` likewise with the hint in the error; a leading `~/` is $HOME.
//
// Paths: a relative path (target, model drafters, ngram:PATH, prompts.file) resolves against
// the current directory if it exists there, otherwise against the repository root (the
// nearest ancestor of the config file's directory holding both CMakeLists.txt and configs/;
// the config's own directory if there is none). Nothing is required to exist at load time:
// model paths are opened by the run. Model strings starting with `synthetic:`, the non-path
// drafters (lookup, self:) and Hugging Face model ids ("org/name" that is no local path; the
// run finds them in the local HF cache, models/formats/hf_hub_cache.h) are kept as written.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace speclab {

// A model or drafter reference: as written (after --set and ${VAR} expansion) and resolved.
struct ModelRef {
  std::string spec;  // as written: part of a cell's identity, portable across machines
  std::string path;  // resolved to open (absolute for relative paths; synthetic:/lookup: as is)
};

struct DrafterEntry {
  std::string name;  // key in `drafters`
  ModelRef ref;
};

struct PromptsConfig {
  std::vector<ModelRef> files;  // ModelRef for its spec-as-written / resolved-path pair
  int skip = 0;                 // prompts left out at the start of each file, before `limit`
  int limit = 0;
  bool chat_template = false;
  // Tokenizer for the prompts instead of the target's (synthetic shapes carry none); unset:
  // spec empty.
  ModelRef tokenizer;
};

// Stated limits, checked by experiment_config_validate before anything is allocated: a typo
// (a repeats of 1000000000) is refused with the key named instead of running out of memory
// or running forever.
constexpr int kMaxContextTokens = 1 << 20;  // generation.ctx, generation.max_new_tokens
constexpr int kMaxRepeats = 1000;           // generation.repeats, generation.warmup
constexpr int kMaxThreads = 1024;           // generation.threads
constexpr int kMaxSweepCells = 10000;       // product of the sweep axes' lengths
constexpr int kMaxBootstrapResamples = 1000000;
constexpr int kMaxAcceptanceStride = 1000000;        // measure.acceptance_stride
constexpr double kMaxCostProfileSeconds = 3600;      // measure.cost_profile_seconds
constexpr double kDefaultCostProfileRecheck = 0.10;  // measure.cost_profile_recheck

struct GenerationConfig {
  int max_new_tokens = 64;
  int64_t seed = 0;  // >= 0
  int repeats = 1;
  int warmup = 1;
  int threads = 0;
  int ctx = 1024;
  bool ignore_eos = false;
  std::string backend = "cpu";  // cpu | cuda (experiments/measure/backend.h)
  // The CPU kernel path (core/cpu_matmul.h: best | generic | avx2 | avx512 | avx512bf16 |
  // avx512vnni | amxbf16); empty: SPECLAB_MATMUL_ISA, else the best the CPU runs.
  std::string matmul_isa;
};

struct MeasureConfig {
  bool baseline = true;
  int cost_curve_max_k = 0;  // resolved at load: absent -> max(sweep.gamma) + 1
  int bootstrap_resamples = 1000;
  double confidence = 0.95;
  bool cost_only = false;
  // Acceptance profile (experiments/predict/acceptance_profile.h): a rollout at every N-th
  // position of each prompt's text, the first at a seeded offset in [0, N). 1: every position.
  int acceptance_stride = 1;
  // Cost profile (experiments/predict/cost_profile.h): its repetitions (at least 15) go on until
  // this many seconds have passed, so that its medians sample the machine over a stretch of time
  // rather than the moment a fast model's 15 repetitions take. 0: 15 repetitions.
  double cost_profile_seconds = 0;
  // `speclab run`: the band of the check before each cell of one request
  // (experiments/predict/cost_profile_check.h); a failed check retakes the cost profile. 0: no
  // check.
  double cost_profile_recheck = kDefaultCostProfileRecheck;
};

// The sweep's axes, generic: the axes themselves are declared in experiments/config/sweep_axes.cpp
// (one entry each), so this struct does not change when an axis is added.
struct SweepConfig {
  // Axis key -> its values in file order, each in the axis' canonical JSON form (4, 0.5,
  // "same", "off", [0.9, 0.6], "3x2x1"); after loading, every axis has its list (the
  // default list when the file has no key).
  std::map<std::string, std::vector<nlohmann::json>> axes;
  // sweep.exclude: combinations left out of the cross product. Each entry maps some axes to
  // values (canonical JSON, as in `axes`); a cell is excluded when, for every axis the entry
  // names, the cell's value is one of the entry's (e.g. {drafter: [lookup], temperature: [1]}).
  std::vector<std::map<std::string, std::vector<nlohmann::json>>> exclude;

  // The values of axis `key`; the axis' default list when the map has none, an empty list
  // for a key that is no axis.
  const std::vector<nlohmann::json>& values(const std::string& key) const;
  // The values converted to T (int, double, std::string, ...); only for axes whose values
  // all have that type.
  template <typename T>
  std::vector<T> list(const std::string& key) const {
    std::vector<T> out;
    for (const auto& v : values(key)) out.push_back(v.get<T>());
    return out;
  }
  // Typed views for the code that reads them.
  std::vector<std::string> drafter() const { return list<std::string>("drafter"); }
  std::vector<int> gamma() const { return list<int>("gamma"); }
  int max_gamma() const;  // 0 for no gamma values
};

struct SimulateConfig {
  std::string table;
};

struct GateConfig {
  double sigmas = 4.0;
  // Relative tolerance of a figure the calibration found deterministic (greedy cells: the
  // same value under every seed), instead of sigmas standard errors.
  double deterministic_band = 0.01;
};

struct ExperimentConfig {
  std::string file;  // the config file as given
  std::string name;
  std::string question;
  std::optional<ModelRef> target;
  std::vector<DrafterEntry> drafters;  // in file order
  std::optional<PromptsConfig> prompts;
  GenerationConfig generation;
  MeasureConfig measure;
  std::optional<SweepConfig> sweep;
  std::optional<SimulateConfig> simulate;
  GateConfig gate;

  // YAML path ("sweep.gamma[2]") -> where it was written ("configs/x.yaml:21" or
  // "--set sweep.gamma"); filled by the loader, used by error messages.
  std::map<std::string, std::string> locations;

  // "file:line: yaml.path" for a path, falling back to the nearest recorded ancestor.
  std::string where(const std::string& yaml_path) const;
  // Whether `yaml_path` (or the ancestor where() names) was given by --set, not the file.
  bool set_on_command_line(const std::string& yaml_path) const;
  // The drafter entry called `name`, or nullptr.
  const DrafterEntry* find_drafter(const std::string& name) const;
  // The resolved config as JSON with specs as written (no machine-specific paths); its
  // canonical dump is what config_hash() hashes.
  nlohmann::json to_json() const;
  // Its `prompts` part (null without prompts) and `generation` part, as to_json writes them:
  // what a cell's id and a profile group's key take from the config.
  nlohmann::json prompts_json() const;
  nlohmann::json generation_json() const;
  // 16 hex digits identifying to_json().
  std::string config_hash() const;
};

// Loads `path`, applies `overrides` ("key.path=value", the value parsed as YAML, from --set),
// expands ${VAR} and ~, resolves paths, then validates. Throws InputError.
ExperimentConfig experiment_config_load(const std::string& path,
                                        const std::vector<std::string>& overrides = {});

// The semantic checks (ranges, cross-references), one line each. Called by the loader;
// exposed so code that edits a config can re-check it. Throws InputError.
void experiment_config_validate(const ExperimentConfig& config);

// 64-bit FNV-1a of `text` as 16 hex digits: short, stable identities for configs and cells.
std::string experiment_hash_hex(const std::string& text);

// Expands ${VAR}, ${VAR:?hint} and a leading ~/ in `value`; `what` names the value in errors
// ("configs/x.yaml:3: target"). Throws InputError naming an unset variable.
std::string experiment_expand_string(const std::string& value, const std::string& what);

}  // namespace speclab
