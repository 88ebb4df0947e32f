#include "experiments/results/results_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_input.h"
#include "core/output_file.h"
#include "core/safe_name.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep_axes.h"

namespace fs = std::filesystem;

namespace speclab {

namespace {

std::string read_fd(int fd) {
  std::string out;
  char buf[1 << 16];
  off_t pos = 0;
  while (true) {
    const ssize_t n = pread(fd, buf, sizeof buf, pos);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    pos += n;
  }
  return out;
}

std::string dump_row(const nlohmann::json& row) {
  return row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct RowAt {
  ResultRow row;
  nlohmann::json raw;  // the line as written: merge copies rows verbatim
  int line;
};

const char* json_kind(const nlohmann::json& v) {
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "true or false";
  if (v.is_array()) return "a list";
  return "an object";
}

// A cell parameter of the wrong type, named: the types a cell's own keys are written with
// (Cell().to_json()) against the row's. Keys absent from a default cell (the optional axes)
// are left to Cell::from_json, whose type errors are reported without the key.
void check_cell_key_types(const nlohmann::json& row, const std::string& where) {
  static const nlohmann::json reference = Cell().to_json();
  for (auto it = reference.begin(); it != reference.end(); ++it) {
    const auto got = row.find(it.key());
    if (got == row.end() || got->is_null() || it.value().is_null()) continue;
    const bool same = std::string(json_kind(*got)) == json_kind(it.value());
    SPECLAB_INPUT_CHECK(same, where, ": field ", it.key(), ": expected ", json_kind(it.value()),
                        ", got ", got->type_name());
    // An integer key holding 2.5 would be read as 2.
    SPECLAB_INPUT_CHECK(!it.value().is_number_integer() || got->is_number_integer(), where,
                        ": field ", it.key(), ": expected an integer, got ", got->dump());
  }
  const auto index = row.find("cell_index");
  if (index != row.end() && index->is_number_integer() && index->get<int64_t>() < 0)
    fail_input(where, ": field cell_index: expected an integer >= 0, got ", index->dump());
  // The ranges the sweep's own axes hold their values to (gamma 1..64, temperature >= 0, ...).
  static const ExperimentConfig any_config;
  for (const SweepAxis& axis : sweep_axes()) {
    if (!axis.check_is_a_range || !reference.contains(axis.key)) continue;
    const auto got = row.find(axis.key);
    if (got == row.end() || got->is_null()) continue;
    const SweepAxisProblem problem = axis.check(*got, any_config);
    SPECLAB_INPUT_CHECK(problem.message.empty(), where, ": field ", axis.key, ": ",
                        problem.message);
  }
}

// Complete lines of `text` parsed as rows; `complete_bytes` = length up to the last newline.
// Bytes after the last newline are an interrupted run's torn row: only the store of a run
// being resumed may drop them (torn_tail_allowed); every reader of finished results refuses
// them, as a merge or a table without that cell would be wrong without a word.
std::vector<RowAt> parse_rows(const std::string& text, const std::string& path,
                              size_t* complete_bytes, bool torn_tail_allowed) {
  std::vector<RowAt> rows;
  const size_t last_nl = text.rfind('\n');
  *complete_bytes = last_nl == std::string::npos ? 0 : last_nl + 1;
  size_t start = 0;
  int line = 0;
  while (start < *complete_bytes) {
    const size_t nl = text.find('\n', start);
    ++line;
    const std::string s = text.substr(start, nl - start);
    start = nl + 1;
    if (s.empty()) continue;
    nlohmann::json json;
    const std::string where = str_cat(path, ":", line);
    try {
      json = json_input_parse(s, where);          // depth bounded, a key twice refused
    } catch (const nlohmann::json::exception&) {  // parse_error; out_of_range for 1e999
      fail_input(where, ": not a valid JSON row");
    }
    SPECLAB_INPUT_CHECK(json.is_object() && json.contains("cell_id") && json["cell_id"].is_string(),
                        where, ": expected a JSON object with a string \"cell_id\"");
    check_cell_key_types(json, where);
    ResultRow row;
    try {
      row = ResultRow::from_json(json, where);
    } catch (const nlohmann::json::exception& e) {  // an optional axis of the wrong type
      fail_input(where, ": a cell parameter has the wrong type (", e.what(), ")");
    }
    // Ids and hashes name files (table --out DIR/<name>-<config_hash>.csv) and table rows.
    SPECLAB_INPUT_CHECK(safe_name(row.cell.cell_id, 64), where, ": cell_id '", row.cell.cell_id,
                        "': expected 1-64 letters, digits, '.', '_' or '-' (not . or ..)");
    SPECLAB_INPUT_CHECK(!row.config_hash || safe_name(*row.config_hash, 64), where,
                        ": config_hash '", row.config_hash.value_or(""),
                        "': expected 1-64 letters, digits, '.', '_' or '-' (not . or ..)");
    rows.push_back(RowAt{std::move(row), std::move(json), line});
  }
  if (!torn_tail_allowed && *complete_bytes < text.size()) {
    fail_input(path, ":", line + 1, ": incomplete final row (", text.size() - *complete_bytes,
               " bytes without a closing newline; the run that wrote it was interrupted: "
               "resume it with speclab run --resume, or remove the line)");
  }
  return rows;
}

std::string read_file(const std::string& path) {
  // Results of a long sweep are a few MB; 4 GiB is not a results file.
  constexpr uint64_t kMaxResultsBytes = 4ull << 30;
  return input_file_read(path, "results file", kMaxResultsBytes);
}

// The pid a lock file holds, for a message: its digits, or "unknown" when it holds anything
// else (a file put there by hand is never echoed: it may span lines).
std::string lock_pid_text(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const bool digits = !text.empty() && text.size() <= 20 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  return digits ? text : "unknown";
}

// Takes <dir>/.lock (see the header). Returns the locked fd.
int lock_take(const std::string& lock_path) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    // O_NOFOLLOW and the kind check: the lock is truncated and written, so a link (or a FIFO,
    // a device) put at its path must never be written through.
    const int fd =
        ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0 && errno == ELOOP)
      fail_input(lock_path,
                 ": is a symbolic link, expected speclab's own lock file (a regular file; "
                 "remove the link)");
    SPECLAB_INPUT_CHECK(fd >= 0, lock_path, ": cannot create lock file: ", std::strerror(errno));
    struct stat kind {};
    if (fstat(fd, &kind) != 0 || !S_ISREG(kind.st_mode)) {
      ::close(fd);
      fail_input(lock_path, ": is ", input_file_kind(kind.st_mode),
                 ", expected speclab's own lock file (a regular file)");
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      std::string pid = read_fd(fd);
      ::close(fd);
      fail_input(lock_path, ": the results directory is in use by another speclab run (pid ",
                 lock_pid_text(pid), "); wait for it to end, or write elsewhere with --out DIR");
    }
    // A closing holder unlinks the file before releasing it: make sure we locked the file
    // that is at the path now, not an unlinked one.
    struct stat locked {
    }, at_path{};
    if (fstat(fd, &locked) != 0 || ::stat(lock_path.c_str(), &at_path) != 0 ||
        locked.st_ino != at_path.st_ino || locked.st_dev != at_path.st_dev) {
      ::close(fd);
      continue;
    }
    const std::string old = read_fd(fd);
    if (!old.empty()) {
      const long old_pid = std::atol(old.c_str());
      const bool alive =
          old_pid > 0 && (::kill(static_cast<pid_t>(old_pid), 0) == 0 || errno == EPERM);
      std::fprintf(stderr, "speclab: warning: %s: taking over a stale lock of pid %s (%s)\n",
                   lock_path.c_str(), lock_pid_text(old).c_str(),
                   alive ? "that process no longer holds it" : "no such process");
    }
    const std::string mine = std::to_string(::getpid()) + "\n";
    SPECLAB_INPUT_CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, mine.data(), mine.size(), 0) ==
                                                     static_cast<ssize_t>(mine.size()),
                        lock_path, ": cannot write lock file: ", std::strerror(errno));
    fsync(fd);
    return fd;
  }
  fail_input(lock_path, ": the lock file keeps changing under us; is another run starting?");
}

}  // namespace

ResultsStore::ResultsStore(const std::string& dir, ResultsOpenMode mode)
    : dir_(dir),
      results_path_((fs::path(dir) / "results.jsonl").string()),
      lock_path_((fs::path(dir) / ".lock").string()) {
  output_dir_create(dir, "results directory");
  lock_fd_ = lock_take(lock_path_);
  try {
    data_fd_ = ::open(results_path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    SPECLAB_INPUT_CHECK(data_fd_ >= 0, results_path_, ": cannot open: ", std::strerror(errno));
    struct stat st {};
    SPECLAB_INPUT_CHECK(fstat(data_fd_, &st) == 0 && S_ISREG(st.st_mode), results_path_, ": is ",
                        input_file_kind(st.st_mode), ", expected a regular file (results file)");
    const std::string text = read_fd(data_fd_);
    SPECLAB_INPUT_CHECK(mode == ResultsOpenMode::resume || text.empty(), results_path_,
                        ": already holds results; pass --resume to continue that run, or --out "
                        "DIR to start a new one");
    size_t complete = 0;
    for (const auto& r : parse_rows(text, results_path_, &complete, /*torn_tail_allowed=*/true))
      finished_.insert(r.row.cell.cell_id);
    if (complete < text.size()) {
      std::fprintf(stderr,
                   "speclab: warning: %s: dropping an incomplete final row (%zu bytes) left by an "
                   "interrupted run\n",
                   results_path_.c_str(), text.size() - complete);
      SPECLAB_INPUT_CHECK(ftruncate(data_fd_, static_cast<off_t>(complete)) == 0, results_path_,
                          ": cannot truncate: ", std::strerror(errno));
      fsync(data_fd_);
    }
  } catch (...) {
    if (data_fd_ >= 0) ::close(data_fd_);
    ::unlink(lock_path_.c_str());
    ::close(lock_fd_);
    throw;
  }
}

void ResultsStore::remove_if_empty() {
  struct stat st {};
  if (data_fd_ >= 0 && fstat(data_fd_, &st) == 0 && st.st_size == 0)
    ::unlink(results_path_.c_str());
}

ResultsStore::~ResultsStore() {
  if (data_fd_ >= 0) ::close(data_fd_);
  if (lock_fd_ >= 0) {
    ::unlink(lock_path_.c_str());  // before releasing: see lock_take's inode check
    ::close(lock_fd_);
  }
}

void ResultsStore::append_row(const ResultRow& result) {
  SPECLAB_ASSERT(!result.cell.cell_id.empty());
  const nlohmann::json row = result.to_json();
  // One write() of the whole line: a kill leaves either nothing or a prefix without '\n'.
  // A write that fails (disk full, a quota, RLIMIT_FSIZE) may have stored a prefix: cut the
  // file back to its last complete row before reporting, so no torn row is ever left.
  struct stat before {};
  SPECLAB_INPUT_CHECK(fstat(data_fd_, &before) == 0, results_path_,
                      ": cannot stat: ", std::strerror(errno));
  const std::string line = dump_row(row) + "\n";
  int err = output_write_all(data_fd_, line.data(), line.size());
  if (err == 0 && fsync(data_fd_) != 0) err = errno;
  if (err != 0) {
    const bool cut = ftruncate(data_fd_, before.st_size) == 0;
    fsync(data_fd_);
    fail_input(results_path_, ": cannot write the row of cell ", result.cell.cell_id, " (",
               std::strerror(err), "); ",
               cut ? "the file keeps its complete rows only (rerun with --resume)"
                   : "could not cut the incomplete row; --resume will drop it");
  }
  finished_.insert(result.cell.cell_id);
}

std::vector<ResultRow> results_read(const std::string& path) {
  size_t complete = 0;
  std::vector<ResultRow> out;
  // A cell has one row of each kind: a second (a file appended to itself, two shards
  // concatenated by hand) would be pooled into the tables twice.
  std::map<std::tuple<std::string, std::string, std::string>, int> line_of;
  for (auto& r : parse_rows(read_file(path), path, &complete, /*torn_tail_allowed=*/false)) {
    const auto key =
        std::make_tuple(r.row.config_hash.value_or(""), r.row.cell.cell_id, r.row.kind());
    const auto [it, fresh] = line_of.emplace(key, r.line);
    SPECLAB_INPUT_CHECK(fresh, path, ":", r.line, ": cell_id ", r.row.cell.cell_id,
                        " has a row already, at line ", it->second,
                        " (a cell has one row; speclab merge joins shards and drops repeats)");
    out.push_back(std::move(r.row));
  }
  return out;
}

size_t results_merge(const std::vector<std::string>& inputs, const std::string& output,
                     bool allow_mixed_configs) {
  SPECLAB_INPUT_CHECK(!inputs.empty(), output, ": nothing to merge (no input files)");
  std::vector<std::vector<RowAt>> all;
  all.reserve(inputs.size());
  for (const auto& in : inputs) {
    size_t complete = 0;
    all.push_back(parse_rows(read_file(in), in, &complete, /*torn_tail_allowed=*/false));
  }
  auto hash_of = [](const ResultRow& row) { return row.config_hash.value_or(""); };
  // Rows of different configs measure different things under the same cell names: refused,
  // or with allow_mixed_configs written as separate groups (one per config_hash, in order of
  // first appearance), each row still carrying its config_hash, so nothing downstream pools
  // them.
  std::vector<std::string> hash_order;
  std::map<std::string, std::string> hash_first_at;  // config_hash -> "file:line"
  for (size_t f = 0; f < inputs.size(); ++f)
    for (const auto& r : all[f]) {
      const std::string h = hash_of(r.row);
      if (hash_first_at.count(h)) continue;
      const std::string where = str_cat(inputs[f], ":", r.line);
      if (!hash_order.empty() && !allow_mixed_configs) {
        const std::string& h0 = hash_order.front();
        fail_input(where, ": config_hash ", h.empty() ? "(none)" : h, " differs from config_hash ",
                   h0.empty() ? "(none)" : h0, " at ", hash_first_at[h0],
                   "; rows of different configs are not merged (--allow-mixed-configs keeps "
                   "them apart)");
      }
      hash_order.push_back(h);
      hash_first_at[h] = where;
    }
  std::map<std::pair<std::string, std::string>, std::pair<std::string, nlohmann::json>>
      first_seen;  // (config_hash, cell_id) -> where, row
  std::string text;
  size_t written = 0;
  for (const auto& h : hash_order) {
    for (size_t f = 0; f < inputs.size(); ++f) {
      for (const auto& r : all[f]) {
        if (hash_of(r.row) != h) continue;
        const std::string& id = r.row.cell.cell_id;
        const std::string where = str_cat(inputs[f], ":", r.line);
        const nlohmann::json& row = r.raw;
        const auto [it, fresh] =
            first_seen.emplace(std::make_pair(h, id), std::make_pair(where, row));
        if (!fresh) {
          SPECLAB_INPUT_CHECK(it->second.second == row, where, ": cell_id ", id,
                              " conflicts with the different row at ", it->second.first);
          continue;
        }
        text += dump_row(row) + "\n";
        ++written;
      }
    }
  }
  SPECLAB_INPUT_CHECK(written > 0, output, ": nothing to merge (the input files hold no rows)");
  output_file_write_atomic(output, text);
  return written;
}

}  // namespace speclab
