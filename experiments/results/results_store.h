// The result file of a run: results/<name>/results.jsonl, one JSON row per finished cell.
//
// Crash safety, so that `--resume` after a kill (Ctrl-C, OOM, SIGKILL) neither loses nor
// duplicates a cell:
//   - a row is one line written by a single write() of the whole line (O_APPEND) and then
//     fsync()ed: a reader sees a complete row or, if the process died mid-write, an
//     incomplete final line without its newline;
//   - readers ignore an incomplete final line, and opening a store truncates it away;
//   - a cell is "finished" when its row is in the file: the run appends a cell's row once,
//     after measuring it, so a kill before the write re-runs the cell on resume.
//
// One writer per directory: <dir>/.lock holds the writer's pid under an flock(). A second
// store on the same directory is refused with an InputError naming the lock and that pid.
// A lock file left by a dead process (flock released by the kernel) is taken over with a
// warning on stderr. The lock file is removed when the store closes.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "experiments/results/result_row.h"

namespace speclab {

enum class ResultsOpenMode {
  fresh,   // results.jsonl must be absent or empty (a non-empty one needs --resume)
  resume,  // keep the rows there; finished_cell_ids() lists them
};

class ResultsStore {
 public:
  // Creates `dir` if needed, takes the lock, opens <dir>/results.jsonl. Throws InputError.
  ResultsStore(const std::string& dir, ResultsOpenMode mode);
  ~ResultsStore();  // releases the lock
  // Removes results.jsonl when it holds nothing (a run that failed before its first row
  // leaves no result file behind). Safe to call any time; a non-empty file is kept.
  void remove_if_empty();
  ResultsStore(const ResultsStore&) = delete;
  ResultsStore& operator=(const ResultsStore&) = delete;

  // Appends `row` (a cell with its id) as one line, durably (see above).
  void append_row(const ResultRow& row);
  // cell_ids of the rows in the file, including those appended through this store.
  const std::set<std::string>& finished_cell_ids() const { return finished_; }

  const std::string& results_path() const { return results_path_; }
  const std::string& lock_path() const { return lock_path_; }

 private:
  std::string dir_, results_path_, lock_path_;
  int lock_fd_ = -1;
  int data_fd_ = -1;
  std::set<std::string> finished_;
};

// The rows of a results file in order. A line that is not a JSON object with a string cell_id,
// a field of the wrong type, a cell_id or config_hash that is no safe name, a second row of
// the same cell and kind, or an incomplete final line (no newline) is an InputError
// "<file>:<line>: ...". A missing file is an InputError.
std::vector<ResultRow> results_read(const std::string& path);

// Joins the rows of shard files into `output` (written whole, then renamed into place):
// rows keep input order; a cell_id seen again with an identical row is dropped; one seen
// again with a different row is an InputError naming both places. Rows of different
// config_hash are an InputError naming both hashes and the file:line of each, unless
// allow_mixed_configs: then the output holds one group of rows per config_hash (in order of
// first appearance; duplicates judged within a config), never pooled. Returns the number of
// rows written; inputs without any row are an InputError (nothing is written).
size_t results_merge(const std::vector<std::string>& inputs, const std::string& output,
                     bool allow_mixed_configs = false);

}  // namespace speclab
