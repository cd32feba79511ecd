#pragma once
// A place where KV block bytes live: the device tier (VRAM, or for the CPU backend the hot
// RAM arena attention reads from), the host tier (RAM; pinned with CUDA) and the disk
// tier. Every tier hands out slots of a block's size and copies block bytes to and from
// host memory; the KV cache moves blocks between tiers with these two copies.

#include <cstddef>
#include <cstdint>

#include "engine/api/kv_stats.h"
#include "engine/common/status.h"

namespace lr {

struct TierSlot {
    uint64_t id = 0;           // the tier's own handle
    uint8_t * data = nullptr;  // the bytes, for memory tiers (in the tier's address space)
};

class TierStore {
public:
    virtual ~TierStore() = default;

    virtual KvTier tier() const = 0;
    // Whether slot.data can be read and written by the CPU directly (true except VRAM).
    virtual bool host_addressable() const = 0;

    virtual uint64_t capacity_bytes() const = 0;
    virtual uint64_t used_bytes() const = 0;
    virtual uint64_t n_blocks() const = 0;
    bool has_room(size_t n_bytes) const { return used_bytes() + n_bytes <= capacity_bytes(); }

    // A slot of n_bytes. out_of_memory when the tier cannot hold it (nothing changes then).
    virtual Result<TierSlot> allocate(size_t n_bytes) = 0;
    virtual void release(const TierSlot & slot, size_t n_bytes) = 0;

    // host_src -> slot and slot -> host_dst, n_bytes (the slot's size). The disk tier
    // verifies a checksum on every read (corrupt_data on mismatch).
    virtual Status write(const TierSlot & slot, const uint8_t * host_src, size_t n_bytes) = 0;
    virtual Status read(const TierSlot & slot, uint8_t * host_dst, size_t n_bytes) = 0;
};

}  // namespace lr
