#include "core/cuda/cuda_kernel_timeline.h"

#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace speclab {

CudaKernelTimeline::~CudaKernelTimeline() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t CudaKernelTimeline::event_at(size_t i) {
  while (events_.size() <= i) {
    cudaEvent_t e = nullptr;
    SPECLAB_CUDA_CHECK(cudaEventCreate(&e), "timeline event create failed");
    events_.push_back(e);
  }
  return events_[i];
}

void CudaKernelTimeline::begin(cudaStream_t stream) {
  SPECLAB_ASSERT(used_ == 0);  // end() closes every pass
  labels_.clear();
  SPECLAB_CUDA_CHECK(cudaEventRecord(event_at(0), stream), "timeline event record failed");
  used_ = 1;
}

void CudaKernelTimeline::mark(const char* label, cudaStream_t stream) {
  SPECLAB_ASSERT(used_ >= 1);  // after begin()
  SPECLAB_CUDA_CHECK(cudaEventRecord(event_at(used_), stream), "timeline event record failed");
  labels_.push_back(label);
  used_++;
}

void CudaKernelTimeline::end() {
  SPECLAB_ASSERT(used_ >= 1);
  SPECLAB_CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1]), "a timed kernel failed");
  for (size_t i = 0; i < labels_.size(); i++) {
    float ms = 0.0f;
    SPECLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]),
                       "timeline elapsed time failed");
    const std::string label = labels_[i];
    if (totals_ms_.find(label) == totals_ms_.end()) order_.push_back(label);
    totals_ms_[label] += ms;
  }
  passes_++;
  used_ = 0;
}

}  // namespace speclab
