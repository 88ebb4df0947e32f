#include "experiments/config/config_schema.h"

#include <sstream>

#include "experiments/config/sweep_axes.h"

namespace speclab {

namespace {

// Every key but the sweep axes', which come from their table (sweep_axes.h) after `sweep`.
const std::vector<ConfigKey>& fixed_keys() {
  static const std::vector<ConfigKey> keys = {
      {"name", "string of [A-Za-z0-9._-]", "required", "",
       "the experiment's name; results go to `results/<name>/`"},
      {"question", "one-line string", "required", "",
       "the question the config answers (also in the file's `# Question:` header)"},
      {"target", "model path", "required unless `simulate` is given", "",
       "the target model: an HF model directory, a Hugging Face model id (org/name, found in "
       "the local HF cache; never downloaded), a .gguf file, or `synthetic:<shape>[:dtype]`"},
      {"drafters", "mapping name -> drafter spec", "required with a target", "",
       "the drafters the sweep may name: a model path or id, lookup[:n=N,min=M], "
       "self:skip=A-B[+C-D], ngram:PATH (docs/cli.md has the grammar)"},
      {"prompts", "section", "required with a target unless measure.cost_only", "",
       "the prompt sets"},
      {"prompts.file", "path or list of paths", "required", "",
       "JSONL files of {id, text, task?} (configs/prompts/README.md); a list runs the sets one "
       "after the other, ids unique across them"},
      {"prompts.skip", "integer >= 0", "0", "0",
       "leave out the first N prompts of each file, then apply limit (two configs with skip 0 "
       "and skip N, limit N, split each file into halves: held-out prompts, docs/prediction.md)"},
      {"prompts.limit", "integer >= 0", "0", "0", "the first N prompts of each file (0 = all)"},
      {"prompts.chat_template", "true or false", "false", "false",
       "wrap each text in the target's chat format (ChatML or Llama 3, chosen by the "
       "tokenizer's special tokens)"},
      {"prompts.tokenizer", "tokenizer path or model id", "unset (the target's tokenizer)", "",
       "encode the prompts with this tokenizer.json, tokenizer.model, .gguf or model directory "
       "instead (for targets without one, the synthetic shapes); its vocabulary must fit the "
       "target's"},
      {"generation", "section", "optional", "", "how each request is generated"},
      {"generation.max_new_tokens", "integer >= 1", "64", "64", "tokens generated per request"},
      {"generation.seed", "integer >= 0", "0", "0",
       "seed of the Philox streams (with the request and position: results do not depend on "
       "threads or timing)"},
      {"generation.repeats", "integer >= 1", "1", "1", "timed runs per prompt"},
      {"generation.warmup", "integer >= 0", "1", "1", "untimed warm-up prompts per cell"},
      {"generation.threads", "integer >= 0", "0", "0", "CPU threads (0 = all cores)"},
      {"generation.ctx", "integer > max_new_tokens", "1024", "1024",
       "KV-cache length; at most the target's (and each draft's) context length"},
      {"generation.ignore_eos", "true or false", "false", "false",
       "generate max_new_tokens even past EOS (equal lengths across cells)"},
      {"generation.backend", "cpu or cuda", "cpu", "cpu",
       "where the target and the model drafters (draft models, self-speculation) run; cuda needs a "
       "CUDA build and device"},
      {"generation.matmul_isa", "best, generic, avx2, avx512, avx512bf16, avx512vnni or amxbf16",
       "unset (SPECLAB_MATMUL_ISA, else best)", "",
       "the CPU kernel path (docs/cpu-kernels.md): best keeps FP32 activations (the exact "
       "reference path); avx512bf16 and amxbf16 round them to BF16 for BF16 weights, avx512vnni "
       "quantizes them to int8 blocks for Q8_0, Q4_0, Q4_1, Q4_K and Q6_K weights (the arithmetic "
       "of llama.cpp's quantized dot products); a path this CPU lacks stops the run"},
      {"measure", "section", "optional", "", "what is measured besides the speculative runs"},
      {"measure.baseline", "true or false", "true", "true",
       "also run the target alone, interleaved with the speculative runs (the speedup needs it)"},
      {"measure.cost_curve_max_k", "integer >= max(sweep.gamma)+1", "max(sweep.gamma)+1", "",
       "measure T(k) for k = 1..this (Theorem 3.8 needs T(gamma+1))"},
      {"measure.bootstrap_resamples", "integer >= 1", "1000", "1000",
       "percentile-bootstrap resamples over prompts for the speedup interval"},
      {"measure.confidence", "number in (0, 1)", "0.95", "0.95", "level of the intervals"},
      {"measure.cost_only", "true or false", "false", "false",
       "measure the cost curve T(k) and c only: no prompts, no speculative runs"},
      {"measure.acceptance_stride", "integer >= 1", "1", "1",
       "acceptance profile (`speclab predict`): a drafter rollout at every N-th position of each "
       "prompt's text (offset seeded per prompt), not at every one: about 1/N of its target "
       "passes; 1 = every position"},
      {"measure.cost_profile_seconds", "number in [0, 3600]", "0", "0",
       "cost profile: its repetitions (at least 15) go on until this many seconds have passed, "
       "so its medians sample the machine over a stretch of time, not the moment a fast "
       "model's 15 repetitions take; 0 = 15 repetitions"},
      {"measure.cost_profile_recheck", "number in [0, 1]", "0.1", "0.1",
       "`speclab run`: before each cell of one request, time the target's plain step as the "
       "cost profile did (the median of 3 runs) and retake the group's cost profile (into "
       "cost-<group>-retakeN.json) when the step departs from the profile's plain step by more "
       "than this fraction; 0 = never check"},
      {"sweep", "section", "required with a target", "",
       "the cells: the cross product of the axes; each axis is a list or a scalar"},
      {"simulate", "section", "optional", "", "simulator-only configs (no target)"},
      {"simulate.table", "paper-table1", "required", "", "the table `speclab simulate` prints"},
      {"gate", "section", "optional", "", "the acceptance gate of `speclab check`"},
      {"gate.sigmas", "number > 0", "4", "4",
       "tolerance in combined standard errors before a cell's alpha or tau counts as moved"},
      {"gate.deterministic_band", "number in [0, 1)", "0.01", "0.01",
       "relative tolerance of a figure that `speclab check --calibrate` found deterministic (the "
       "same under every seed: greedy cells), instead of gate.sigmas standard errors"},
  };
  return keys;
}

}  // namespace

const std::vector<ConfigKey>& config_schema() {
  // Rebuilt when the axis table changes (only a test's axis does that).
  static std::vector<ConfigKey> keys;
  static int built_for = -1;
  if (built_for != sweep_axes_version()) {
    keys.clear();
    for (const ConfigKey& k : fixed_keys()) {
      keys.push_back(k);
      if (k.path != "sweep") continue;
      for (const SweepAxis& a : sweep_axes())
        keys.push_back({"sweep." + a.key, a.type, a.default_text,
                        a.defaults.empty() ? "" : a.default_text, a.meaning});
      keys.push_back({"sweep.exclude", "list of mappings axis -> value or list of values", "[]", "",
                      "combinations left out of the cross product: a cell is excluded when each "
                      "axis an entry names holds one of the entry's values (e.g. "
                      "`[{drafter: lookup, temperature: 1}]`); every value must be on its axis "
                      "and every entry must exclude a cell"});
    }
    built_for = sweep_axes_version();
  }
  return keys;
}

std::vector<std::string> config_schema_children(const std::string& section) {
  std::vector<std::string> children;
  const std::string prefix = section.empty() ? "" : section + ".";
  for (const auto& k : config_schema()) {
    if (k.path.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = k.path.substr(prefix.size());
    if (!rest.empty() && rest.find('.') == std::string::npos) children.push_back(rest);
  }
  return children;
}

std::string config_reference_markdown() {
  std::ostringstream md;
  md << "# Config reference\n\n"
     << "<!-- Generated by `speclab config-reference` from experiments/config/config_schema.cpp; "
        "do "
        "not edit. A test (ConfigSchema.ReferenceIsCurrent) fails when this file is stale. -->\n\n"
     << "Every key of an experiment file (`configs/*.yaml`). Loading is strict: an unknown key, "
        "a missing required key, a wrong type or an out-of-range value is one line naming the "
        "file, line and key, exit code 2 ([bad-input.md](bad-input.md)). Strings expand "
        "`${VAR}` (an error when unset; `${VAR:?hint}` adds the hint) and a leading `~/`. "
        "Relative paths resolve against the current directory when they exist there, else "
        "against the repository root; an `org/name` that is no local path is a Hugging Face "
        "model id. `speclab run CONFIG --set key.path=value` overrides any key (the value is "
        "YAML: `--set sweep.gamma=[2,4]`). Each sweep axis is a list (a scalar is a list of "
        "one); lists must be non-empty without duplicates.\n";
  auto section_of = [](const std::string& path) {
    const size_t dot = path.find('.');
    return dot == std::string::npos ? std::string() : path.substr(0, dot);
  };
  std::string current = "-";
  for (const auto& k : config_schema()) {
    const std::string section = section_of(k.path);
    if (section != current) {
      current = section;
      md << "\n## " << (section.empty() ? "Top level" : "`" + section + "`") << "\n\n"
         << "| key | type | default | meaning |\n| --- | --- | --- | --- |\n";
    }
    md << "| `" << k.path << "` | " << k.type << " | " << k.fallback << " | " << k.meaning
       << " |\n";
  }
  md << "\n## How to add a sweep axis\n\n"
     << "The sweep axes are declared once, in the table of experiments/config/sweep_axes.cpp: one "
        "entry "
        "per axis carries its key, type, default, the check of one value, this reference's "
        "words, how a value is parsed from YAML, how it sets the cell's field, how it enters "
        "the cell id and the result row (and is read back, Cell::from_json) and how result "
        "tables label and print it. The loader, the validation (non-empty lists, duplicates, "
        "the cell-count limit), the config hash, this reference, `sweep_expand` and the cell "
        "ids all iterate over that table. To add an axis:\n\n"
        "1. Add the typed field to `Cell` (experiments/config/sweep.h) that the decoder reads.\n"
        "2. Add one entry to the table (e.g. `int_axis(...)` for an integer) at the position "
        "the axis takes in the expansion order (the last entry varies fastest). Give it "
        "`omit_at_default` when configs and cells that do not use it must keep their config "
        "hash and cell ids: at its default it is then left out of the config's JSON and of "
        "the cell id and row.\n"
        "3. Regenerate this file: `build/bin/speclab config-reference > "
        "docs/config-reference.md`.\n\n"
        "tests/experiments/test_sweep_axes.cpp registers a test-only axis from the test file "
        "alone and follows it through loading, validation, expansion, cell ids, rows and this "
        "reference; tests/experiments/test_sweep_golden.cpp holds every committed config's "
        "cell ids and config hash.\n";
  return md.str();
}

}  // namespace speclab
