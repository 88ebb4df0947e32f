#include "experiments/measure/round_trace.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/output_file.h"

namespace speclab {

void RoundTraceWriter::check_path(const std::string& path) {
  const OutputTarget t = output_target_resolve(path);  // a folder, a dangling link: refused
  if (t.kind == OutputTarget::Kind::kSpecial) return;  // a reader may attach later
  const std::string dir = std::filesystem::path(t.path).parent_path().string();
  const std::string folder = dir.empty() ? "." : dir;
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail_input(path, ": cannot create the trace file: its folder ", folder,
               ::stat(folder.c_str(), &st) != 0 ? " does not exist" : " is not a directory");
  const bool ok = t.kind == OutputTarget::Kind::kRegular
                      ? ::access(t.path.c_str(), W_OK) == 0
                      : ::access(folder.c_str(), W_OK | X_OK) == 0;
  SPECLAB_INPUT_CHECK(ok, path, ": cannot create the trace file: ", std::strerror(errno));
}

RoundTraceWriter::RoundTraceWriter(const std::string& path) : path_(path) {
  const OutputTarget t = output_target_resolve(path);
  if (t.kind == OutputTarget::Kind::kSpecial) {
    // A FIFO or device is written in place (a reader's pipe, /dev/null), never truncated.
    const int fd = output_special_open(t.path, path);
    f_ = ::fdopen(fd, "w");
    if (f_ == nullptr) ::close(fd);
  } else {
    f_ = std::fopen(t.path.c_str(), "w");
    file_ = t.path;
  }
  SPECLAB_INPUT_CHECK(f_ != nullptr, path,
                      ": cannot create the trace file: ", std::strerror(errno));
}

void RoundTraceWriter::discard() {
  if (f_) std::fclose(f_);
  f_ = nullptr;
  if (!file_.empty()) ::unlink(file_.c_str());
}

RoundTraceWriter::~RoundTraceWriter() {
  if (f_) std::fclose(f_);
}

void RoundTraceWriter::write(const GenerationRequest& req, const GenerationResult& res,
                             const RoundTraceSource& src) {
  SPECLAB_ASSERT(f_ != nullptr);
  if (src.tree) {
    skipped_tree_++;
    return;
  }
  int64_t emitted_before = 0;  // tokens committed before the round
  const int64_t n_prompt = static_cast<int64_t>(req.prompt.size());
  for (size_t i = 0; i < res.rounds.size(); i++) {
    const RoundRecord& r = res.rounds[i];
    // The decoder's k = min(gamma, remaining - 1, max_ctx - L): what is not the policy's.
    const int64_t remaining = req.max_new_tokens - emitted_before;
    int64_t cap = std::min<int64_t>(remaining - 1, src.max_ctx - (n_prompt + emitted_before));
    const bool drafter_short =
        r.n_draft < cap && (r.n_draft == 0 || (src.fixed_gamma > 0 && r.n_draft < src.fixed_gamma));
    if (drafter_short) cap = r.n_draft;
    SPECLAB_ASSERT(cap >= r.n_draft);
    // beta = sum_x min(p, q) summed in float can exceed 1 by rounding; the format (and the
    // replay's parser) keeps it in [0, 1].
    std::vector<double> beta;
    for (float b : r.beta) beta.push_back(std::clamp(static_cast<double>(b), 0.0, 1.0));
    nlohmann::json accept = nlohmann::json::array();
    for (int p = 0; p < std::min(r.n_accepted + 1, r.n_draft); p++)
      accept.push_back(p < r.n_accepted);
    const auto first = res.tokens.begin() + emitted_before;
    nlohmann::json j = {{"n_draft", r.n_draft},
                        {"n_accepted", r.n_accepted},
                        {"draft_cap", cap},
                        {"beta", beta},
                        {"drafted", r.drafted},
                        {"p", r.p_draft},
                        {"q", r.q_draft},
                        {"accept", accept},
                        {"next_token", r.next_token},
                        {"bonus", r.bonus},
                        {"n_emitted", r.n_emitted},
                        {"emitted", std::vector<int32_t>(first, first + r.n_emitted)},
                        {"draft_s", r.draft_s},
                        {"verify_s", r.verify_s},
                        {"sample_s", r.sample_s},
                        {"round", i},
                        {"request", req.request_id},
                        {"prompt_id", src.prompt_id},
                        {"repeat", src.repeat},
                        {"gamma", src.fixed_gamma}};
    if (!src.cell_id.empty()) j["cell_id"] = src.cell_id;
    const std::string line = j.dump() + "\n";
    SPECLAB_INPUT_CHECK(std::fwrite(line.data(), 1, line.size(), f_) == line.size(), path_,
                        ": cannot write the trace: ", std::strerror(errno));
    emitted_before += r.n_emitted;
    rounds_++;
  }
  SPECLAB_ASSERT(emitted_before == static_cast<int64_t>(res.tokens.size()));
}

void RoundTraceWriter::write_cell(const Cell& cell, const std::string& prompt_id, int repeat,
                                  const GenerationRequest& req, const GenerationResult& res,
                                  int64_t max_ctx) {
  RoundTraceSource src;
  src.cell_id = cell.cell_id;
  src.prompt_id = prompt_id;
  src.repeat = repeat;
  src.fixed_gamma = cell.gamma_policy == "fixed" ? cell.gamma : 0;
  src.tree = cell.tree.depth() > 0;
  src.max_ctx = max_ctx;
  write(req, res, src);
}

void RoundTraceWriter::close() {
  if (!f_) return;
  const bool ok = std::fflush(f_) == 0 && !std::ferror(f_);
  const int err = errno;
  const bool closed = std::fclose(f_) == 0;
  f_ = nullptr;
  SPECLAB_INPUT_CHECK(ok && closed, path_, ": cannot write the trace: ", std::strerror(err));
}

}  // namespace speclab
