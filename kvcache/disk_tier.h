#pragma once
// The disk tier for blocks spilled from RAM: fixed-size slots in files under the cache
// directory, one file per block size, checksummed (XXH3) and verified on every read.
// The files belong to this cache alone: created with unique names and unlinked at once,
// so a crash leaves nothing behind and concurrent instances never share them.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kvcache/file_io.h"
#include "kvcache/tier_store.h"

namespace lr {

class DiskTier final : public TierStore {
public:
    // Fails when `dir` cannot be created or written (the message says which directory).
    static Result<std::unique_ptr<DiskTier>> create(const std::string & dir, uint64_t capacity_bytes,
                                                    std::shared_ptr<FileIo> io = posix_file_io());
    ~DiskTier() override;

    KvTier tier() const override { return KvTier::disk; }
    bool host_addressable() const override { return false; }
    uint64_t capacity_bytes() const override { return capacity_; }
    // The spill files share the disk budget with the prefix cache.
    void set_capacity(uint64_t bytes) { capacity_ = bytes; }
    uint64_t used_bytes() const override;
    uint64_t n_blocks() const override;

    Result<TierSlot> allocate(size_t n_bytes) override;
    void release(const TierSlot & slot, size_t n_bytes) override;
    // Thread-safe with each other (the I/O thread reads while the engine thread writes).
    Status write(const TierSlot & slot, const uint8_t * host_src, size_t n_bytes) override;
    Status read(const TierSlot & slot, uint8_t * host_dst, size_t n_bytes) override;

private:
    DiskTier(std::string dir, uint64_t capacity, std::shared_ptr<FileIo> io)
        : dir_(std::move(dir)), capacity_(capacity), io_(std::move(io)) {}

    struct SizeClass {
        int fd = -1;
        uint64_t next_index = 0;
        std::vector<uint64_t> free;
    };
    // Slot ids: size << 32 | index.
    static uint64_t slot_id(size_t n_bytes, uint64_t index) { return (uint64_t(n_bytes) << 32) | index; }
    Result<SizeClass *> size_class(size_t n_bytes);

    std::string dir_;
    uint64_t capacity_;
    std::shared_ptr<FileIo> io_;
    mutable std::mutex mutex_;
    std::map<size_t, SizeClass> classes_;
    std::unordered_map<uint64_t, uint64_t> checksums_;  // slot id -> XXH3 of its bytes
    uint64_t used_ = 0;
    uint64_t n_blocks_ = 0;
};

}  // namespace lr
