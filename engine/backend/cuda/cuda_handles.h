#pragma once
// RAII owners of the CUDA and cuBLAS handles the backend uses. Creation is checked and
// returns a Status (it is where a missing or broken device shows); destruction ignores
// errors: at process exit the runtime may already be gone, and nothing can be done then.

#include <cuda_runtime_api.h>

#include <utility>

#include "engine/backend/cuda/cuda_blas.h"
#include "engine/backend/cuda/cuda_check.h"

namespace lr::cuda {

// A stream that does not synchronize with the legacy default stream.
class Stream {
public:
    Stream() = default;
    static Result<Stream> create() {
        Stream s;
        if (Status st = cuda_status(cudaStreamCreateWithFlags(&s.s_, cudaStreamNonBlocking), "cannot create a CUDA stream"); !st.ok()) {
            return st;
        }
        return s;
    }
    Stream(Stream && o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    Stream & operator=(Stream && o) noexcept {
        std::swap(s_, o.s_);
        return *this;
    }
    Stream(const Stream &) = delete;
    Stream & operator=(const Stream &) = delete;
    ~Stream() {
        if (s_) (void)cudaStreamDestroy(s_);
    }
    cudaStream_t get() const { return s_; }

private:
    cudaStream_t s_ = nullptr;
};

// An event for ordering and waiting only (no timing).
class Event {
public:
    Event() = default;
    static Result<Event> create(bool timing = false) {
        Event e;
        const unsigned flags = timing ? cudaEventDefault : cudaEventDisableTiming;
        if (Status st = cuda_status(cudaEventCreateWithFlags(&e.e_, flags), "cannot create a CUDA event"); !st.ok()) return st;
        return e;
    }
    Event(Event && o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
    Event & operator=(Event && o) noexcept {
        std::swap(e_, o.e_);
        return *this;
    }
    Event(const Event &) = delete;
    Event & operator=(const Event &) = delete;
    ~Event() {
        if (e_) (void)cudaEventDestroy(e_);
    }
    cudaEvent_t get() const { return e_; }

private:
    cudaEvent_t e_ = nullptr;
};

// A cuBLAS handle, through the library loaded at run time (cuda_blas.h).
class CublasHandle {
public:
    CublasHandle() = default;
    static Result<CublasHandle> create() {
        LR_ASSIGN_OR_RETURN(const CublasApi * api, cublas_api());
        CublasHandle h;
        h.api_ = api;
        if (const cublasStatus_t st = api->create(&h.h_); st != CUBLAS_STATUS_SUCCESS) {
            return error(StatusCode::unsupported, std::string("cannot create a cuBLAS handle: ") + api->status_string(st));
        }
        return h;
    }
    CublasHandle(CublasHandle && o) noexcept : api_(o.api_), h_(std::exchange(o.h_, nullptr)) {}
    CublasHandle & operator=(CublasHandle && o) noexcept {
        std::swap(api_, o.api_);
        std::swap(h_, o.h_);
        return *this;
    }
    CublasHandle(const CublasHandle &) = delete;
    CublasHandle & operator=(const CublasHandle &) = delete;
    ~CublasHandle() {
        if (h_) (void)api_->destroy(h_);
    }
    cublasHandle_t get() const { return h_; }
    const CublasApi & api() const { return *api_; }

private:
    const CublasApi * api_ = nullptr;
    cublasHandle_t h_ = nullptr;
};

}  // namespace lr::cuda
