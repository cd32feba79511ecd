#pragma once
// The CUDA backend's memory: slabs for many small buffers, scratch that grows, and the
// ring that carries small host arrays to the device. Host code only.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <mutex>

#include "engine/backend/backend.h"

namespace lr::cuda {

// VRAM or page-locked host RAM for many small buffers (KV blocks, the host tier's slots),
// carved out of large slabs: cudaMalloc and cudaMallocHost are slow and may synchronize
// the device, and the KV cache asks for a block at a time. A slab is freed when the last
// buffer carved out of it is gone (buffers hold a reference); carved space is not reused
// before that (the KV tiers recycle their slots themselves). Requests larger than a
// quarter of a slab get an allocation of their own. Thread-safe.
class SlabAllocator {
public:
    enum class Kind { device, pinned_host };
    SlabAllocator(Kind kind, int device, size_t slab_bytes) : kind_(kind), device_(device), slab_bytes_(slab_bytes) {}

    // out_of_memory (naming VRAM or pinned RAM) when CUDA refuses.
    Result<DeviceBuffer> alloc(size_t n_bytes);

private:
    struct Slab;
    Result<void *> raw_alloc(size_t n_bytes) const;

    Kind kind_;
    int device_;
    size_t slab_bytes_;
    std::mutex mutex_;
    std::shared_ptr<Slab> current_;  // the slab new buffers are carved from
};

// Device scratch for one use (GEMM inputs, attention scores): grows on demand, keeps its
// size, contents not kept. Used by the ops on `stream` only: growing waits for the stream
// (queued kernels may still read the old buffer) before freeing it.
class Workspace {
public:
    Workspace() = default;
    Workspace(const Workspace &) = delete;
    Workspace & operator=(const Workspace &) = delete;
    ~Workspace();

    void set_stream(cudaStream_t stream) { stream_ = stream; }
    // At least n_bytes. The Backend ops cannot return an error: running out of VRAM for
    // scratch aborts with a message saying what to lower (like LR_CUDA_CHECK).
    void * get(size_t n_bytes);

private:
    cudaStream_t stream_ = nullptr;
    void * data_ = nullptr;
    size_t n_bytes_ = 0;
};

// Small host arrays (token ids, positions, block tables) on their way to the device,
// queued on the ops' stream without waiting: each upload is copied into page-locked
// staging and from there, asynchronously, to the same offset of a device mirror. The ring
// has four segments; the event recorded when the ring leaves a segment must have passed
// before it comes back to it, so the host may run up to three segments ahead of the GPU.
class UploadRing {
public:
    UploadRing() = default;
    UploadRing(const UploadRing &) = delete;
    UploadRing & operator=(const UploadRing &) = delete;
    ~UploadRing();

    Status init(cudaStream_t stream, size_t segment_bytes);
    // Where host[0..n_bytes) will be on the device once the stream gets there.
    const void * upload(const void * host, size_t n_bytes);
    template <class T>
    const T * upload(const T * host, size_t n) {
        return static_cast<const T *>(upload(static_cast<const void *>(host), n * sizeof(T)));
    }

private:
    static constexpr int kSegments = 4;
    void release();

    cudaStream_t stream_ = nullptr;
    size_t segment_bytes_ = 0;
    uint8_t * staging_ = nullptr;  // [kSegments * segment_bytes_] page-locked
    uint8_t * device_ = nullptr;   // the same, in VRAM
    cudaEvent_t left_[kSegments] = {};
    int segment_ = 0;
    size_t used_ = 0;  // bytes of the current segment taken
};

}  // namespace lr::cuda
