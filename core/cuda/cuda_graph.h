// An instantiated CUDA graph (RAII around cudaGraphExec_t): stream capture of whatever a
// function queues, then one launch per replay. CudaGraphBook (core/cuda/cuda_graph_book.h)
// decides when; this only owns the graph.
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace speclab {

class CudaGraphExec {
 public:
  CudaGraphExec() = default;
  ~CudaGraphExec() { reset(); }
  CudaGraphExec(const CudaGraphExec&) = delete;
  CudaGraphExec& operator=(const CudaGraphExec&) = delete;
  CudaGraphExec(CudaGraphExec&& o) noexcept;
  CudaGraphExec& operator=(CudaGraphExec&& o) noexcept;

  // Captures the work `enqueue` queues on `stream` (relaxed capture mode: non-stream calls
  // such as a library's cudaMalloc are allowed and not captured) and instantiates it;
  // nothing runs yet. Stream-ordered
  // allocations inside (cudaMallocAsync) become the graph's memory nodes. On any failure,
  // including a CudaError thrown by `enqueue`, the capture is ended, the stream is left
  // usable and CudaError is thrown; nothing was executed.
  static CudaGraphExec capture(cudaStream_t stream, const std::function<void()>& enqueue);

  // Queues the graph on `stream` (asynchronous).
  void launch(cudaStream_t stream) const;

  bool empty() const { return exec_ == nullptr; }
  void reset();

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace speclab
