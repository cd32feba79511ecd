#pragma once
// The disk tier for blocks spilled from RAM: fixed-size slots in files under the cache
// directory, one file per block size, checksummed (XXH3) and verified on every read.
// The files belong to this cache alone: created with unique names and unlinked at once,
// so a crash leaves nothing behind and concurrent instances never share them.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kvcache/file_io.h"
#include "kvcache/tier_store.h"

namespace lr {

// How the spill files' slots are used. A file grows to its highest slot and never shrinks
// by itself, so freed slots stay on disk as holes among the used ones until a compaction.
struct TierFragmentation {
    uint64_t n_slots = 0;            // slots the files span, used and free
    uint64_t n_free_slots = 0;       // of them, free
    uint64_t largest_free_runs = 0;  // the longest run of adjacent free slots, summed over the files
    uint64_t free_bytes = 0;         // disk the free slots hold
    // 0 when each file's free slots are one run (or none); towards 1 as they scatter.
    double measure() const { return n_free_slots == 0 ? 0.0 : 1.0 - double(largest_free_runs) / double(n_free_slots); }
};

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

    TierFragmentation fragmentation() const;
    // Moves the blocks at the ends of the files into their free slots (each read back and
    // checked first), so that every file's used slots come first, then cuts the files there.
    // `moved(from, to)` is told each move. No read or write may be in flight. On an error
    // (a block that fails its checksum) nothing more moves; the moves done stand.
    Status compact(const std::function<void(const TierSlot & from, const TierSlot & to)> & moved);

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
