// Checked CUDA and cuBLAS calls: every call site names its file:line, the error string and
// a hint, and throws CudaError (a failed device call is not the user's input, so it is not an
// InputError; the CLI reports it as an internal failure).
//   SPECLAB_CUDA_CHECK(cudaMalloc(&p, n), "device out of memory? lower max_ctx");
//   SPECLAB_CUBLAS_CHECK(cublasSgemm(...), "check the matrix shapes passed to matmul");
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace speclab {

struct CudaError : std::runtime_error {
  explicit CudaError(const std::string& msg) : std::runtime_error(msg) {}
};

// Name of a cuBLAS status ("CUBLAS_STATUS_NOT_SUPPORTED", ...).
const char* cuda_cublas_status_name(cublasStatus_t status);

[[noreturn]] void cuda_fail(const char* call, const char* file, int line, const char* error,
                            const char* hint);

}  // namespace speclab

#define SPECLAB_CUDA_CHECK(call, hint)                                                       \
  do {                                                                                       \
    const cudaError_t speclab_cuda_err_ = (call);                                            \
    if (speclab_cuda_err_ != cudaSuccess) {                                                  \
      ::speclab::cuda_fail(#call, __FILE__, __LINE__, cudaGetErrorString(speclab_cuda_err_), \
                           hint);                                                            \
    }                                                                                        \
  } while (0)

#define SPECLAB_CUBLAS_CHECK(call, hint)                                                  \
  do {                                                                                    \
    const cublasStatus_t speclab_cublas_st_ = (call);                                     \
    if (speclab_cublas_st_ != CUBLAS_STATUS_SUCCESS) {                                    \
      ::speclab::cuda_fail(#call, __FILE__, __LINE__,                                     \
                           ::speclab::cuda_cublas_status_name(speclab_cublas_st_), hint); \
    }                                                                                     \
  } while (0)

// After a kernel launch: catches bad launch configurations at the launch site.
#define SPECLAB_CUDA_CHECK_LAUNCH(hint) SPECLAB_CUDA_CHECK(cudaGetLastError(), hint)
