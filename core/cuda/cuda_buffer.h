// An owning device allocation of n values of T (RAII around cudaMalloc / cudaFree).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "core/cuda/cuda_check.h"

namespace speclab {

template <typename T>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  explicit CudaBuffer(size_t n) { resize(n); }
  ~CudaBuffer() { reset(); }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  CudaBuffer(CudaBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = std::exchange(o.data_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }

  // Reallocates (contents are lost) when n exceeds the current size.
  void resize(size_t n) {
    if (n <= n_) return;
    reset();
    SPECLAB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), n * sizeof(T)),
                       "device out of memory? use a smaller model, max_ctx or batch");
    n_ = n;
  }
  void reset() {
    if (data_) cudaFree(data_);  // unchecked: may run during unwinding after a device error
    data_ = nullptr;
    n_ = 0;
  }
  void upload(const T* host, size_t n, cudaStream_t stream = nullptr) {
    resize(n);
    SPECLAB_CUDA_CHECK(cudaMemcpyAsync(data_, host, n * sizeof(T), cudaMemcpyHostToDevice, stream),
                       "host-to-device copy failed");
  }
  void download(T* host, size_t n, cudaStream_t stream = nullptr) const {
    SPECLAB_CUDA_CHECK(cudaMemcpyAsync(host, data_, n * sizeof(T), cudaMemcpyDeviceToHost, stream),
                       "device-to-host copy failed");
    SPECLAB_CUDA_CHECK(cudaStreamSynchronize(stream), "a kernel before this copy failed");
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return n_; }

 private:
  T* data_ = nullptr;
  size_t n_ = 0;
};

}  // namespace speclab
