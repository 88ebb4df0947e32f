#include "core/cuda/cuda_graph.h"

#include <string>
#include <utility>

#include "core/cuda/cuda_check.h"

namespace speclab {

CudaGraphExec::CudaGraphExec(CudaGraphExec&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}

CudaGraphExec& CudaGraphExec::operator=(CudaGraphExec&& o) noexcept {
  if (this != &o) {
    reset();
    exec_ = std::exchange(o.exec_, nullptr);
  }
  return *this;
}

void CudaGraphExec::reset() {
  if (exec_) cudaGraphExecDestroy(exec_);  // unchecked: may run during unwinding
  exec_ = nullptr;
}

CudaGraphExec CudaGraphExec::capture(cudaStream_t stream, const std::function<void()>& enqueue) {
  // Relaxed, as llama.cpp's CUDA backend captures: cuBLAS may allocate its workspace with
  // cudaMalloc inside the capture (not a stream operation, so not captured), which the
  // stricter modes refuse and which would fail every capture of a cuBLAS product.
  SPECLAB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed),
                     "graph capture could not start (the stream is busy capturing?)");
  std::string error;
  try {
    enqueue();
  } catch (const std::exception& e) {
    error = e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (error.empty() && end != cudaSuccess) error = cudaGetErrorString(end);
  CudaGraphExec out;
  if (error.empty()) {
    const cudaError_t inst = cudaGraphInstantiate(&out.exec_, graph, 0);
    if (inst != cudaSuccess) error = cudaGetErrorString(inst);
  }
  if (graph) cudaGraphDestroy(graph);  // the instance keeps what it needs
  if (!error.empty()) {
    out.exec_ = nullptr;
    cudaGetLastError();  // a failed capture's error is not sticky: clear it for later calls
    throw CudaError("CUDA graph capture failed: " + error);
  }
  return out;
}

void CudaGraphExec::launch(cudaStream_t stream) const {
  SPECLAB_CUDA_CHECK(cudaGraphLaunch(exec_, stream), "CUDA graph launch failed");
}

}  // namespace speclab
