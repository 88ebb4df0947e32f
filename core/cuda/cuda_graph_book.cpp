#include "core/cuda/cuda_graph_book.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace speclab {

const char* cuda_graph_action_name(CudaGraphAction a) {
  switch (a) {
    case CudaGraphAction::kPlain:
      return "plain";
    case CudaGraphAction::kCapture:
      return "capture";
    case CudaGraphAction::kReplay:
      return "replay";
  }
  return "?";
}

CudaGraphAction CudaGraphBook::next(const CudaGraphKey& key) {
  if (!policy_.enabled || key.n_tokens < 1 || key.n_tokens > policy_.max_tokens) {
    stats_.plain++;
    return CudaGraphAction::kPlain;
  }
  Entry& e = keys_[key];
  if (e.state == State::kCaptured) {
    stats_.replays++;
    return CudaGraphAction::kReplay;
  }
  if (e.state == State::kFailed || e.calls < policy_.warmup_calls ||
      n_graphs_ >= policy_.max_graphs) {
    if (e.state == State::kWarming) e.calls++;
    stats_.plain++;
    return CudaGraphAction::kPlain;
  }
  return CudaGraphAction::kCapture;
}

void CudaGraphBook::captured(const CudaGraphKey& key) {
  Entry& e = keys_[key];
  SPECLAB_ASSERT(e.state == State::kWarming);
  e.state = State::kCaptured;
  n_graphs_++;
  stats_.captures++;
}

void CudaGraphBook::capture_failed(const CudaGraphKey& key) {
  keys_[key].state = State::kFailed;
  stats_.failures++;
  stats_.plain++;
}

void CudaGraphBook::invalidate() {
  if (n_graphs_ > 0 || !keys_.empty()) stats_.invalidations++;
  keys_.clear();
  n_graphs_ = 0;
}

bool cuda_graphs_env_value(const char* value, bool fallback) {
  if (value == nullptr || value[0] == '\0') return fallback;
  if (std::strcmp(value, "0") == 0) return false;
  if (std::strcmp(value, "1") == 0) return true;
  throw InputError(std::string("SPECLAB_CUDA_GRAPHS must be 0 or 1, got '") + value + "'");
}

bool cuda_graphs_from_env() {
  return cuda_graphs_env_value(std::getenv("SPECLAB_CUDA_GRAPHS"), true);
}

}  // namespace speclab
