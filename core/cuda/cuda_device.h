// Which CUDA device the backend runs on, and the one-line answer when there is none.
#pragma once

#include <cstdint>
#include <string>

namespace speclab {

// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB, 132 SMs, CUDA runtime 13000, driver 13000)" for
// the current device. Throws InputError("no CUDA device found (cudaGetDeviceCount: <error
// string>)") when the runtime finds no device; a config that asks for the CUDA backend maps
// that to exit code 2.
std::string speclab_cuda_device_info();

// Number of devices, 0 when cudaGetDeviceCount fails; *error (optional) gets the runtime's
// error string or "0 devices". Never throws: tests use it to decide whether to skip.
int cuda_device_count(std::string* error = nullptr);

// Stream-ordered allocations (cudaMallocAsync: the sampling, verification and attention
// scratch, cuBLAS's workspace) come from the device's default memory pool, whose release
// threshold is 0 by default: at every synchronization it hands its free memory back to the
// driver, so each step's next cudaMallocAsync maps memory afresh. This keeps up to
// kCudaPoolKeepBytes of freed pool memory for reuse instead (what a decode step's scratch
// needs many times over; more is still released). Idempotent; the runners call it on
// construction. Throws CudaError when the pool cannot be reached.
constexpr uint64_t kCudaPoolKeepBytes = uint64_t{1} << 30;
void cuda_keep_stream_ordered_memory();

// Free memory of the current device in bytes (cudaMemGetInfo), -1 when there is no device or
// the runtime cannot tell. Never throws.
int64_t cuda_device_free_bytes();

}  // namespace speclab
