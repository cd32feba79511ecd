#include "engine/backend/cuda/cuda_blas.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <vector>

namespace lr::cuda {

namespace {

struct Loaded {
    CublasApi api{};
    Status status;
};

template <class F>
bool resolve(void * lib, const char * name, F & fn) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    return fn != nullptr;
}

Loaded load() {
    Loaded l;
    const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    std::vector<std::string> paths = {soname};
#if defined(LONGREAD_CUBLAS_DIR)
    paths.push_back(std::string(LONGREAD_CUBLAS_DIR) + "/" + soname);  // where the build found it
#endif
    paths.push_back("/usr/local/cuda/lib64/" + soname);
    void * lib = nullptr;
    std::string tried;
    for (const std::string & p : paths) {
        lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib) break;
        tried += (tried.empty() ? "" : ", ") + p;
    }
    if (!lib) {
        l.status = error(StatusCode::unsupported, "cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + " is not installed (tried " + tried + ")");
        return l;
    }
    // NOTE: never closed: the handles live as long as the process may use them.
    const bool ok = resolve(lib, "cublasCreate_v2", l.api.create) && resolve(lib, "cublasDestroy_v2", l.api.destroy) &&
                    resolve(lib, "cublasSetStream_v2", l.api.set_stream) && resolve(lib, "cublasSgemm_v2", l.api.sgemm) &&
                    resolve(lib, "cublasGemmEx", l.api.gemm_ex) && resolve(lib, "cublasGetStatusString", l.api.status_string);
    if (!ok) l.status = error(StatusCode::unsupported, soname + " lacks a function the CUDA backend needs (" + dlerror() + ")");
    return l;
}

const Loaded & loaded() {
    static const Loaded l = load();
    return l;
}

}  // namespace

Result<const CublasApi *> cublas_api() {
    const Loaded & l = loaded();
    if (!l.status.ok()) return l.status;
    return &l.api;
}

const char * cublas_status_string(cublasStatus_t status) {
    const Loaded & l = loaded();
    if (l.status.ok()) return l.api.status_string(status);
    static thread_local std::string s;
    s = "cuBLAS status " + std::to_string(int(status));
    return s.c_str();
}

}  // namespace lr::cuda
