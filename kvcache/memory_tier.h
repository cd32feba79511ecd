#pragma once
// A tier of memory slots (device or host), allocated on demand through a backend's
// allocator and recycled per block size; bounded by a byte budget.

#include <functional>
#include <map>
#include <vector>

#include "engine/backend/backend.h"
#include "kvcache/tier_store.h"

namespace lr {

class MemoryTier final : public TierStore {
public:
    // Slots come from backend.alloc() (VRAM for CUDA, RAM for the CPU backend); bytes are
    // copied with the backend's copy_to_device / copy_to_host. With a device of its own
    // memory the capacity is capped to what it has free (less a reserve for the ops).
    static std::unique_ptr<MemoryTier> device(Backend & backend, uint64_t capacity_bytes);
    // RAM from backend.alloc_host(): pinned with CUDA, so that moves to the device are
    // DMA copies; plain RAM otherwise.
    static std::unique_ptr<MemoryTier> host(Backend & backend, uint64_t capacity_bytes);

    KvTier tier() const override { return tier_; }
    bool host_addressable() const override { return host_addressable_; }
    uint64_t capacity_bytes() const override { return capacity_; }
    uint64_t used_bytes() const override { return used_; }
    uint64_t n_blocks() const override { return n_blocks_; }
    // Bytes taken from the allocator, live or recycled: at most the budget (recycled slots
    // of another size are freed to make room).
    uint64_t reserved_bytes() const { return reserved_; }

    // Raises the budget (a fault fallback: when the disk fails, RAM holds what it can't).
    void grow_capacity(uint64_t extra_bytes) { capacity_ += extra_bytes; }
    // A new budget (the adaptive mode's split). Recycled slots give their memory back down
    // to it; live blocks above it are the caller's to move first.
    void set_capacity(uint64_t bytes);

    // Slots freed and kept for reuse (their memory still taken from the allocator), and
    // giving that memory back (the health monitor's repair under memory pressure).
    uint64_t recycled_bytes() const { return reserved_ - used_; }
    uint64_t release_recycled();

    Result<TierSlot> allocate(size_t n_bytes) override;
    void release(const TierSlot & slot, size_t n_bytes) override;
    Status write(const TierSlot & slot, const uint8_t * host_src, size_t n_bytes) override;
    Status read(const TierSlot & slot, uint8_t * host_dst, size_t n_bytes) override;

private:
    using Alloc = std::function<Result<DeviceBuffer>(size_t)>;
    using Copy = std::function<void(void * dst, const void * src, size_t n)>;
    MemoryTier(KvTier tier, uint64_t capacity, bool host_addressable, Alloc alloc, Copy to_tier, Copy to_host);

    KvTier tier_;
    uint64_t capacity_;
    bool host_addressable_;
    Alloc alloc_;
    Copy to_tier_;
    Copy to_host_;
    uint64_t used_ = 0;
    uint64_t n_blocks_ = 0;
    uint64_t reserved_ = 0;
    std::map<uint8_t *, DeviceBuffer> buffers_;      // every slot allocated, live or recycled
    std::map<size_t, std::vector<uint8_t *>> free_;  // recycled slots by size
};

}  // namespace lr
