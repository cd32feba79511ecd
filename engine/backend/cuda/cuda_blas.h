#pragma once
// cuBLAS, loaded at run time (dlopen) rather than linked: a build with the CUDA backend
// still starts on a machine without the CUDA toolkit's libraries, and CudaBackend::create
// then says that cuBLAS is missing (the CPU backend runs). cudart is linked statically and
// finds the driver at run time the same way. Only the functions the backend calls.

#include <cublas_v2.h>

#include "engine/common/status.h"

namespace lr::cuda {

struct CublasApi {
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float *, const float *, int,
                            const float *, int, const float *, float *, int);
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *, const void *, cudaDataType,
                              int, const void *, cudaDataType, int, const void *, void *, cudaDataType, int, cublasComputeType_t,
                              cublasGemmAlgo_t);
    const char * (*status_string)(cublasStatus_t);
};

// Loads libcublas once (thread-safe). unsupported, naming the paths tried, when it is not
// there or lacks a function.
Result<const CublasApi *> cublas_api();

// cuBLAS's name for a status (a number when cuBLAS is not loaded).
const char * cublas_status_string(cublasStatus_t status);

}  // namespace lr::cuda
