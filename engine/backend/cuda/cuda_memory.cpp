#include "engine/backend/cuda/cuda_memory.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/backend/cuda/cuda_check.h"

namespace lr::cuda {

namespace {
constexpr size_t kAlign = 256;  // cudaMalloc's alignment; every KV block starts on it
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

// ---- SlabAllocator ---------------------------------------------------------------------------------

struct SlabAllocator::Slab {
    Kind kind;
    uint8_t * base = nullptr;
    size_t n_bytes = 0;
    size_t used = 0;
    ~Slab() {
        if (!base) return;
        if (kind == Kind::device) (void)cudaFree(base);
        else (void)cudaFreeHost(base);
    }
};

Result<void *> SlabAllocator::raw_alloc(size_t n_bytes) const {
    void * p = nullptr;
    if (Status s = cuda_status(cudaSetDevice(device_), "cannot select the CUDA device"); !s.ok()) return s;
    const cudaError_t err = kind_ == Kind::device ? cudaMalloc(&p, n_bytes) : cudaHostAlloc(&p, n_bytes, cudaHostAllocPortable);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();  // an allocation failure is not sticky: clear it
        return error(StatusCode::out_of_memory, "cannot allocate " + std::to_string(n_bytes >> 20) + " MiB of " +
                                                    (kind_ == Kind::device ? "VRAM" : "page-locked RAM") + " (" + cudaGetErrorString(err) +
                                                    ")");
    }
    return p;
}

Result<DeviceBuffer> SlabAllocator::alloc(size_t n_bytes) {
    const size_t size = align_up(std::max<size_t>(n_bytes, 1));
    if (size > slab_bytes_ / 4) {
        LR_ASSIGN_OR_RETURN(void * p, raw_alloc(size));
        const Kind kind = kind_;
        return DeviceBuffer(p, n_bytes, [kind](void * q) {
            if (kind == Kind::device) (void)cudaFree(q);
            else (void)cudaFreeHost(q);
        });
    }
    std::lock_guard lock(mutex_);
    if (!current_ || current_->used + size > current_->n_bytes) {
        LR_ASSIGN_OR_RETURN(void * p, raw_alloc(slab_bytes_));
        current_ = std::make_shared<Slab>();
        current_->kind = kind_;
        current_->base = static_cast<uint8_t *>(p);
        current_->n_bytes = slab_bytes_;
    }
    uint8_t * p = current_->base + current_->used;
    current_->used += size;
    // The buffer keeps its slab alive; the slab frees itself with its last buffer.
    return DeviceBuffer(p, n_bytes, [slab = current_](void *) {});
}

// ---- Workspace ------------------------------------------------------------------------------------

Workspace::~Workspace() {
    if (data_) (void)cudaFree(data_);
}

void * Workspace::get(size_t n_bytes) {
    if (n_bytes <= n_bytes_ && data_) return data_;
    const size_t size = std::max(align_up(n_bytes), n_bytes_ + n_bytes_ / 2);  // grow by half at least
    if (data_) {
        LR_CUDA_CHECK(cudaStreamSynchronize(stream_));
        LR_CUDA_CHECK(cudaFree(data_));
        data_ = nullptr;
        n_bytes_ = 0;
    }
    const cudaError_t err = cudaMalloc(&data_, size);
    if (err != cudaSuccess) {
        const std::string what = "out of VRAM for " + std::to_string(size >> 20) +
                                 " MiB of scratch: lower the prefill chunk (--chunk), the context or --gpu-layers";
        fail(__FILE__, __LINE__, "cudaMalloc(scratch)", what.c_str());
    }
    n_bytes_ = size;
    return data_;
}

// ---- UploadRing -----------------------------------------------------------------------------------

UploadRing::~UploadRing() { release(); }

void UploadRing::release() {
    for (cudaEvent_t & e : left_) {
        if (e) (void)cudaEventDestroy(e);
        e = nullptr;
    }
    if (staging_) (void)cudaFreeHost(staging_);
    if (device_) (void)cudaFree(device_);
    staging_ = device_ = nullptr;
}

Status UploadRing::init(cudaStream_t stream, size_t segment_bytes) {
    release();
    stream_ = stream;
    segment_bytes_ = align_up(segment_bytes);
    const size_t total = kSegments * segment_bytes_;
    LR_RETURN_IF_ERROR(cuda_status(cudaHostAlloc(reinterpret_cast<void **>(&staging_), total, cudaHostAllocPortable),
                                   "cannot allocate page-locked staging memory"));
    LR_RETURN_IF_ERROR(cuda_status(cudaMalloc(reinterpret_cast<void **>(&device_), total), "cannot allocate VRAM for uploads"));
    for (cudaEvent_t & e : left_) {
        LR_RETURN_IF_ERROR(cuda_status(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cannot create a CUDA event"));
    }
    segment_ = 0;
    used_ = 0;
    return {};
}

const void * UploadRing::upload(const void * host, size_t n_bytes) {
    const size_t size = align_up(std::max<size_t>(n_bytes, 1));
    if (size > segment_bytes_) {
        // A table larger than a segment (a very long context): a ring of larger segments,
        // once every queued use of the old one has run.
        LR_CUDA_CHECK(cudaStreamSynchronize(stream_));
        const Status s = init(stream_, size * 2);
        if (!s.ok()) fail(__FILE__, __LINE__, "UploadRing::init", s.message().c_str());
    }
    if (used_ + size > segment_bytes_) {
        // Leave this segment (its event passes once the stream has used its bytes) and wait
        // until the stream is done with the next one.
        LR_CUDA_CHECK(cudaEventRecord(left_[segment_], stream_));
        segment_ = (segment_ + 1) % kSegments;
        used_ = 0;
        LR_CUDA_CHECK(cudaEventSynchronize(left_[segment_]));
    }
    const size_t at = size_t(segment_) * segment_bytes_ + used_;
    used_ += size;
    std::memcpy(staging_ + at, host, n_bytes);
    LR_CUDA_CHECK(cudaMemcpyAsync(device_ + at, staging_ + at, n_bytes, cudaMemcpyHostToDevice, stream_));
    return device_ + at;
}

}  // namespace lr::cuda
