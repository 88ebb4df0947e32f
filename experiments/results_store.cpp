#include "experiments/results_store.h"

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

void write_all(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    SPECLAB_INPUT_CHECK(n > 0, path, ": write failed: ", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

std::string dump_row(const nlohmann::json& row) {
  return row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct RowAt {
  nlohmann::json row;
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
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(s);
    } catch (const nlohmann::json::exception&) {  // parse_error; out_of_range for 1e999
      fail_input(path, ":", line, ": not a valid JSON row");
    }
    SPECLAB_INPUT_CHECK(row.is_object() && row.contains("cell_id") && row["cell_id"].is_string(),
                        path, ":", line, ": expected a JSON object with a string \"cell_id\"");
    rows.push_back(RowAt{std::move(row), line});
  }
  return rows;
}

std::string read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  SPECLAB_INPUT_CHECK(fd >= 0, path, ": cannot open results file: ", std::strerror(errno));
  std::string text = read_fd(fd);
  ::close(fd);
  return text;
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
    const std::string text = read_fd(data_fd_);
    SPECLAB_INPUT_CHECK(mode == ResultsOpenMode::resume || text.empty(), results_path_,
                        ": already holds results; pass --resume to continue that run, or --out "
                        "DIR to start a new one");
    size_t complete = 0;
    for (const auto& r : parse_rows(text, results_path_, &complete))
      finished_.insert(r.row["cell_id"].get<std::string>());
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

void ResultsStore::append_row(const nlohmann::json& row) {
  SPECLAB_ASSERT(row.is_object() && row.contains("cell_id") && row["cell_id"].is_string());
  // One write() of the whole line: a kill leaves either nothing or a prefix without '\n'.
  write_all(data_fd_, dump_row(row) + "\n", results_path_);
  SPECLAB_INPUT_CHECK(fsync(data_fd_) == 0, results_path_,
                      ": fsync failed: ", std::strerror(errno));
  finished_.insert(row["cell_id"].get<std::string>());
}

std::vector<nlohmann::json> results_read(const std::string& path) {
  size_t complete = 0;
  std::vector<nlohmann::json> out;
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
  auto hash_of = [](const nlohmann::json& row) {
    auto it = row.find("config_hash");
    return it != row.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
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
  std::map<std::pair<std::string, std::string>, std::pair<std::string, const nlohmann::json*>>
      first_seen;  // (config_hash, cell_id) -> where, row
  std::string text;
  for (const auto& h : hash_order) {
    for (size_t f = 0; f < inputs.size(); ++f) {
      for (const auto& r : all[f]) {
        if (hash_of(r.row) != h) continue;
        const std::string id = r.row["cell_id"].get<std::string>();
        const std::string where = str_cat(inputs[f], ":", r.line);
        const auto [it, fresh] =
            first_seen.emplace(std::make_pair(h, id), std::make_pair(where, &r.row));
        if (!fresh) {
          SPECLAB_INPUT_CHECK(*it->second.second == r.row, where, ": cell_id ", id,
                              " conflicts with the different row at ", it->second.first);
          continue;
        }
        text += dump_row(r.row) + "\n";
      }
    }
  }
  const fs::path out_path(output);
  std::error_code ec;
  if (out_path.has_parent_path()) fs::create_directories(out_path.parent_path(), ec);
  const std::string tmp = output + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SPECLAB_INPUT_CHECK(fd >= 0, tmp, ": cannot create: ", std::strerror(errno));
  try {
    write_all(fd, text, tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), output.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    fail_input(output, ": cannot write: ", why);
  }
}

}  // namespace speclab
