#include "engine/backend/cuda/cuda_check.h"

#include <cstdio>
#include <cstdlib>

namespace lr::cuda {

void fail(const char * file, int line, const char * call, const char * what) {
    std::fprintf(stderr, "%s:%d: CUDA call failed: %s: %s\n", file, line, call, what);
    std::abort();
}

Status cuda_status(cudaError_t err, const std::string & what) {
    if (err == cudaSuccess) return {};
    (void)cudaGetLastError();  // expected failures are reported once, not left as the last error
    const StatusCode code = err == cudaErrorMemoryAllocation ? StatusCode::out_of_memory : StatusCode::unsupported;
    return error(code, what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

}  // namespace lr::cuda
