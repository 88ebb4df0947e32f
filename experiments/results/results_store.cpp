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

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_input.h"
#include "core/output_file.h"

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

// Complete lines of `text` parsed as rows; `complete_bytes` = length up to the last newline.
std::vector<RowAt> parse_rows(const std::string& text, const std::string& path,
                              size_t* complete_bytes) {
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
    json_input_check_depth(s, where);
    try {
      json = nlohmann::json::parse(s);
    } catch (const nlohmann::json::exception&) {  // parse_error; out_of_range for 1e999
      fail_input(where, ": not a valid JSON row");
    }
    ResultRow row;
    bool has_id = false;
    if (json.is_object()) {
      try {
        row = ResultRow::from_json(json, where);
        has_id = !row.cell.cell_id.empty();
      } catch (const nlohmann::json::exception&) {  // a cell parameter of the wrong type
        has_id = false;
      }
    }
    SPECLAB_INPUT_CHECK(has_id, where, ": expected a JSON object with a string \"cell_id\"");
    rows.push_back(RowAt{std::move(row), std::move(json), line});
  }
  return rows;
}

std::string read_file(const std::string& path) {
  // Results of a long sweep are a few MB; 4 GiB is not a results file.
  constexpr uint64_t kMaxResultsBytes = 4ull << 30;
  return input_file_read(path, "results file", kMaxResultsBytes);
}

// Takes <dir>/.lock (see the header). Returns the locked fd.
int lock_take(const std::string& lock_path) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    SPECLAB_INPUT_CHECK(fd >= 0, lock_path, ": cannot create lock file: ", std::strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      std::string pid = read_fd(fd);
      ::close(fd);
      while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
      fail_input(lock_path, ": the results directory is in use by another speclab run (pid ",
                 pid.empty() ? "unknown" : pid,
                 "); wait for it to end, or write elsewhere with --out DIR");
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
    std::string old = read_fd(fd);
    while (!old.empty() && (old.back() == '\n' || old.back() == ' ')) old.pop_back();
    if (!old.empty()) {
      const long old_pid = std::atol(old.c_str());
      const bool alive =
          old_pid > 0 && (::kill(static_cast<pid_t>(old_pid), 0) == 0 || errno == EPERM);
      std::fprintf(stderr, "speclab: warning: %s: taking over a stale lock of pid %s (%s)\n",
                   lock_path.c_str(), old.c_str(),
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
  std::error_code ec;
  fs::create_directories(dir, ec);
  SPECLAB_INPUT_CHECK(!ec && fs::is_directory(dir), dir, ": cannot create results directory",
                      ec ? ": " + ec.message() : "");
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
    for (const auto& r : parse_rows(text, results_path_, &complete))
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
  for (auto& r : parse_rows(read_file(path), path, &complete)) out.push_back(std::move(r.row));
  return out;
}

void results_merge(const std::vector<std::string>& inputs, const std::string& output,
                   bool allow_mixed_configs) {
  SPECLAB_INPUT_CHECK(!inputs.empty(), output, ": nothing to merge (no input files)");
  std::vector<std::vector<RowAt>> all;
  all.reserve(inputs.size());
  for (const auto& in : inputs) {
    size_t complete = 0;
    all.push_back(parse_rows(read_file(in), in, &complete));
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
      }
    }
  }
  output_file_write_atomic(output, text);
}

}  // namespace speclab
