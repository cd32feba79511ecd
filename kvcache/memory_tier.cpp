#include "memory_tier.h"

#include <algorithm>
#include <cstring>

namespace lr {

std::unique_ptr<MemoryTier> MemoryTier::device(Backend & backend, uint64_t capacity_bytes) {
    const bool addressable = backend.kind() == BackendKind::cpu;
    if (const BackendMemory m = backend.device_memory(); m.total_bytes > 0) {
        const uint64_t usable = m.free_bytes > 2 * kDeviceOpsReserveBytes ? m.free_bytes - kDeviceOpsReserveBytes : m.free_bytes / 2;
        capacity_bytes = std::min(capacity_bytes, usable);
    }
    return std::unique_ptr<MemoryTier>(new MemoryTier(
        KvTier::device, capacity_bytes, addressable, [&backend](size_t n) { return backend.alloc(n); },
        [&backend](void * dst, const void * src, size_t n) { backend.copy_to_device(dst, src, n); },
        [&backend](void * dst, const void * src, size_t n) {
            backend.copy_to_host(dst, src, n);
            backend.synchronize();
        }));
}

std::unique_ptr<MemoryTier> MemoryTier::host(Backend & backend, uint64_t capacity_bytes) {
    auto alloc = [&backend](size_t n) -> Result<DeviceBuffer> {
        Result<DeviceBuffer> buffer = backend.alloc_host(n);
        if (!buffer.ok()) return error(StatusCode::out_of_memory, buffer.status().message() + " for the KV host tier");
        return buffer;
    };
    auto copy = [](void * dst, const void * src, size_t n) { std::memcpy(dst, src, n); };
    return std::unique_ptr<MemoryTier>(new MemoryTier(KvTier::host, capacity_bytes, true, alloc, copy, copy));
}

MemoryTier::MemoryTier(KvTier tier, uint64_t capacity, bool host_addressable, Alloc alloc, Copy to_tier, Copy to_host)
    : tier_(tier), capacity_(capacity), host_addressable_(host_addressable), alloc_(std::move(alloc)), to_tier_(std::move(to_tier)),
      to_host_(std::move(to_host)) {}

Result<TierSlot> MemoryTier::allocate(size_t n_bytes) {
    if (!has_room(n_bytes)) return error(StatusCode::out_of_memory, "KV tier full");
    std::vector<uint8_t *> & recycled = free_[n_bytes];
    uint8_t * data = nullptr;
    if (!recycled.empty()) {
        data = recycled.back();
        recycled.pop_back();
    } else {
        // Blocks come in a few sizes (codecs differ): recycled slots of other sizes give
        // their memory back rather than let the tier hold more than its budget.
        for (auto it = free_.begin(); it != free_.end() && reserved_ + n_bytes > capacity_; ++it) {
            while (!it->second.empty() && reserved_ + n_bytes > capacity_) {
                buffers_.erase(it->second.back());
                it->second.pop_back();
                reserved_ -= it->first;
            }
        }
        LR_ASSIGN_OR_RETURN(DeviceBuffer buffer, alloc_(n_bytes));
        data = buffer.as<uint8_t>();
        buffers_.emplace(data, std::move(buffer));
        reserved_ += n_bytes;
    }
    used_ += n_bytes;
    ++n_blocks_;
    return TierSlot{reinterpret_cast<uint64_t>(data), data};
}

void MemoryTier::set_capacity(uint64_t bytes) {
    capacity_ = bytes;
    for (auto it = free_.begin(); it != free_.end() && reserved_ > std::max(capacity_, used_); ++it) {
        while (!it->second.empty() && reserved_ > std::max(capacity_, used_)) {
            buffers_.erase(it->second.back());
            it->second.pop_back();
            reserved_ -= it->first;
        }
    }
}

void MemoryTier::release(const TierSlot & slot, size_t n_bytes) {
    free_[n_bytes].push_back(slot.data);
    used_ -= n_bytes;
    --n_blocks_;
}

uint64_t MemoryTier::release_recycled() {
    const uint64_t released = reserved_ - used_;
    for (auto & [n_bytes, slots] : free_) {
        for (uint8_t * data : slots) buffers_.erase(data);
    }
    free_.clear();
    reserved_ = used_;
    return released;
}

Status MemoryTier::write(const TierSlot & slot, const uint8_t * host_src, size_t n_bytes) {
    to_tier_(slot.data, host_src, n_bytes);
    return {};
}

Status MemoryTier::read(const TierSlot & slot, uint8_t * host_dst, size_t n_bytes) {
    to_host_(host_dst, slot.data, n_bytes);
    return {};
}

}  // namespace lr
