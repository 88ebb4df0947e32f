// What a command created under its output directory before it failed is removed again, so a
// refused run (a prompt longer than the context, a profile that cannot be taken, a name too
// long for the file system) leaves no empty results folder, empty results.jsonl or half a
// profiles/ behind. Only what did not exist when the command started is removed, and nothing
// once a result row has been written (the rows came from those profiles).
#pragma once

#include <exception>
#include <filesystem>
#include <string>
#include <system_error>

namespace speclab {

class OutputDirCleanup {
 public:
  explicit OutputDirCleanup(const std::string& dir)
      : dir_(dir), exceptions_at_start_(std::uncaught_exceptions()) {
    std::error_code ec;
    // The nearest path that is there now (a link to nothing counts: it is someone's):
    // everything created below it is this command's.
    existing_ = std::filesystem::absolute(dir_, ec);
    while (!existing_.empty() && !there(existing_) && existing_.has_parent_path() &&
           existing_.parent_path() != existing_)
      existing_ = existing_.parent_path();
    dir_existed_ = there(dir_);
    profiles_existed_ = there(dir_ / "profiles");
    results_existed_ = there(dir_ / "results.jsonl");
  }
  // Keeps everything even if the command then fails (an interrupted run: "rerun with
  // --resume" names the directory).
  void keep() { kept_ = true; }
  OutputDirCleanup(const OutputDirCleanup&) = delete;
  // Whether anything is at `p`, a symbolic link to nothing included.
  static bool there(const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::exists(std::filesystem::symlink_status(p, ec));
  }
  OutputDirCleanup& operator=(const OutputDirCleanup&) = delete;

  // Declared before the objects that write into the directory (a ResultsStore holds its
  // .lock there), so it runs after them while an exception unwinds the stack.
  ~OutputDirCleanup() {
    if (kept_ || std::uncaught_exceptions() <= exceptions_at_start_) return;  // no failure
    std::error_code ec;
    const auto results = dir_ / "results.jsonl";
    if (std::filesystem::exists(results, ec) && std::filesystem::file_size(results, ec) > 0)
      return;  // rows were written: keep them and the profiles they came from
    if (!results_existed_ &&
        std::filesystem::is_regular_file(std::filesystem::symlink_status(results, ec)))
      std::filesystem::remove(results, ec);
    if (!profiles_existed_ &&
        std::filesystem::is_directory(std::filesystem::symlink_status(dir_ / "profiles", ec)))
      std::filesystem::remove_all(dir_ / "profiles", ec);
    if (dir_existed_) return;
    // The folders this command created, deepest first, while they are empty (only real
    // folders: never a link, which remove() would take away).
    for (auto p = std::filesystem::absolute(dir_, ec);
         !p.empty() && p != existing_ && p.has_parent_path() && p.parent_path() != p;
         p = p.parent_path()) {
      if (!std::filesystem::is_directory(std::filesystem::symlink_status(p, ec))) break;
      if (!std::filesystem::remove(p, ec)) break;  // not empty (or not ours): stop
    }
  }

 private:
  std::filesystem::path dir_, existing_;
  int exceptions_at_start_;
  bool kept_ = false, dir_existed_ = false, profiles_existed_ = false, results_existed_ = false;
};

}  // namespace speclab
