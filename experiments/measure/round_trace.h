// Per-round traces of speculative generations (`speclab run --trace FILE`, `speclab generate
// --trace FILE`), in the JSON-lines format `speclab simulate --replay` reads
// (core/trace_simulator.h), one line per round, with more keys than the replay uses:
//   {"n_draft": g, "n_accepted": n, "draft_cap": m, "beta": [g],
//    "drafted": [g ids], "p": [g] p_i(d_i), "q": [g] q_i(d_i),
//    "accept": [min(n + 1, g) booleans: the verifier's decision at each examined position],
//    "next_token": id (correction or bonus), "bonus": bool,
//    "n_emitted": e, "emitted": [e ids committed this round, after stops],
//    "draft_s": s, "verify_s": s, "sample_s": s,
//    "round": index within the generation, "request": request id, "prompt_id": "...",
//    "repeat": r, "cell_id": "..." (run only), "gamma": the fixed gamma (0: an adaptive policy)}
//
// draft_cap (see core/trace_simulator.h) is reconstructed from the generation: the decoder
// drafts k = min(gamma, remaining - 1, max_ctx - L) tokens (models/decode/speculative_decoder),
// so the cap beyond the policy is min(remaining - 1, max_ctx - L) with remaining and L known
// from the tokens emitted before the round; a round that drafted fewer than that cap and fewer
// than its fixed gamma was cut by the drafter (e.g. an n-gram miss), and its cap is n_draft.
// Under an adaptive policy a short round is cut by the policy or the drafter, which the
// trace cannot tell apart; only the budget and context caps are recorded then, except that a
// round that drafted nothing had cap 0 (every policy asks for at least one token).
//
// Tree generations are not written: their rounds verify a tree, and the replay models chains.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "experiments/config/sweep.h"
#include "models/decode/generation.h"

namespace speclab {

// Where a generation came from, for the trace lines.
struct RoundTraceSource {
  std::string cell_id;    // "" outside `speclab run`
  std::string prompt_id;  // "" for `speclab generate`
  int repeat = 0;
  int fixed_gamma = 0;  // the gamma of a fixed policy; 0 for adaptive policies
  bool tree = false;
  int64_t max_ctx = 0;  // the target runner's context limit
};

class RoundTraceWriter {
 public:
  // Creates (truncates) `path`, or writes a FIFO or device there in place
  // (output_target_resolve). InputError naming the file if it cannot.
  explicit RoundTraceWriter(const std::string& path);
  // Whether the constructor could create `path`, asked before the work whose trace it holds
  // (InputError naming `path` as the constructor would give it); writes nothing.
  static void check_path(const std::string& path);
  ~RoundTraceWriter();
  RoundTraceWriter(const RoundTraceWriter&) = delete;
  RoundTraceWriter& operator=(const RoundTraceWriter&) = delete;

  // Appends one line per round of `result` (nothing for a tree generation: counted in
  // skipped_tree_generations()). InputError naming the file when a write fails.
  void write(const GenerationRequest& request, const GenerationResult& result,
             const RoundTraceSource& source);
  // The same for a cell of `speclab run` (source from the cell).
  void write_cell(const Cell& cell, const std::string& prompt_id, int repeat,
                  const GenerationRequest& request, const GenerationResult& result,
                  int64_t max_ctx);
  // Flushes and closes; InputError naming the file if the data did not reach it.
  void close();
  // After a failed write: closes and removes the regular file this writer created or
  // truncated (no partial trace); a FIFO or device it wrote to is left as it was.
  void discard();

  int64_t rounds_written() const { return rounds_; }
  int64_t skipped_tree_generations() const { return skipped_tree_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string file_;  // the regular file written (a link resolved), or empty for a FIFO or device
  std::FILE* f_ = nullptr;
  int64_t rounds_ = 0, skipped_tree_ = 0;
};

}  // namespace speclab
