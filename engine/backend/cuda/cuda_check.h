#pragma once
// Every CUDA and cuBLAS call is checked.
//
// LR_CUDA_CHECK / LR_CUBLAS_CHECK are for calls that cannot fail unless the device is lost
// or Longread is wrong (a launch with a bad configuration, a copy to a freed pointer): the
// ops return nothing, so such a failure is an invariant violation like LR_ASSERT. It
// prints file:line, the call and CUDA's message, then aborts.
// cuda_status() is for calls that fail for expected reasons (no driver, no device, out of
// memory): the caller returns the Status.

#include <cuda_runtime_api.h>

#include <string>

#include "engine/backend/cuda/cuda_blas.h"
#include "engine/common/assert.h"
#include "engine/common/status.h"

namespace lr::cuda {

[[noreturn]] void fail(const char * file, int line, const char * call, const char * what);

// ok, or `what` + ": " + CUDA's name and description of err (out_of_memory for
// cudaErrorMemoryAllocation, unsupported for the rest).
Status cuda_status(cudaError_t err, const std::string & what);

}  // namespace lr::cuda

#define LR_CUDA_CHECK(call)                                                           \
    do {                                                                              \
        const cudaError_t lr_err_ = (call);                                           \
        if (lr_err_ != cudaSuccess) [[unlikely]] {                                    \
            ::lr::cuda::fail(__FILE__, __LINE__, #call, cudaGetErrorString(lr_err_)); \
        }                                                                             \
    } while (0)

#define LR_CUBLAS_CHECK(call)                                                                      \
    do {                                                                                           \
        const cublasStatus_t lr_st_ = (call);                                                      \
        if (lr_st_ != CUBLAS_STATUS_SUCCESS) [[unlikely]] {                                        \
            ::lr::cuda::fail(__FILE__, __LINE__, #call, ::lr::cuda::cublas_status_string(lr_st_)); \
        }                                                                                          \
    } while (0)

// After a kernel launch: a bad configuration shows up here; faults inside the kernel show
// up at the next synchronizing call.
#define LR_CUDA_CHECK_LAUNCH() LR_CUDA_CHECK(cudaGetLastError())
