#pragma once
// The prefix cache that survives restarts. A full block of an uncompressed prefix is
// content-addressed by a hash chain: chain_0 = the cache identity (model file, KV codecs,
// block shape), chain_i = XXH3(chain_{i-1}, tokens of block i). Each layer's block for
// chain_i is stored in a slot of a shared data file under the cache directory, indexed in
// SQLite (WAL, so several Longread processes can share the directory safely), with an
// XXH3 checksum verified on every read. Bounded by a byte budget: the least recently used
// entries go first (deepest first, so shared beginnings such as a system prompt outlive
// the documents that follow them). Each ubatch's blocks are written in one transaction, and
// the index keeps its byte total in a row of its own, so a write costs the same however
// full the cache is.
//
// A recurrent model's states after a chain's block (a snapshot, recurrent_snapshots.h) are
// stored like a block of the pseudo-layer kStatesLayer: checksummed, in the budget, and
// dropped when a block of their chain is evicted (they restore nothing without it).

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "kvcache/file_io.h"

struct sqlite3;

namespace lr {

// One layer's block of one chain, as PrefixStore::write takes it.
struct PrefixBlockWrite {
    uint64_t chain = 0;
    uint32_t layer = 0;
    uint32_t depth = 0;  // the block's index in its sequence (eviction takes the deepest first)
    std::span<const uint8_t> bytes;
};

class PrefixStore {
public:
    static Result<std::unique_ptr<PrefixStore>> open(const std::string & dir, uint64_t capacity_bytes,
                                                     std::shared_ptr<FileIo> io = posix_file_io());
    ~PrefixStore();
    PrefixStore(const PrefixStore &) = delete;
    PrefixStore & operator=(const PrefixStore &) = delete;

    static uint64_t chain_next(uint64_t previous, std::span<const int32_t> block_tokens);
    // The `layer` under which the recurrent states after a chain's block are stored.
    static constexpr uint32_t kStatesLayer = 0x7fffffff;

    // Whether every layer of `chain` is stored (n_layer blocks; the states not counted).
    bool contains(uint64_t chain, uint32_t n_layer);
    // The stored block; corrupt_data (and the entry dropped) when it fails its checksum or
    // its file is gone or short; not_found when absent.
    Status read(uint64_t chain, uint32_t layer, uint8_t * dst, size_t n_bytes);
    // Stores the blocks in one transaction (those already stored are skipped): all of them or,
    // on an error, none. out_of_memory when one cannot fit even after evicting older entries;
    // io_error when the disk or the index refuses.
    Status write(std::span<const PrefixBlockWrite> blocks);
    Status write(uint64_t chain, uint32_t layer, uint32_t depth, const uint8_t * src, size_t n_bytes) {
        const PrefixBlockWrite block{chain, layer, depth, {src, n_bytes}};
        return write(std::span(&block, 1));
    }
    // Marks the entries of `chain` (all layers) as just used.
    void touch(uint64_t chain);

    uint64_t used_bytes();
    uint64_t n_blocks();
    uint64_t capacity_bytes() const { return capacity_; }
    // Evicts least recently used entries until at most `bytes` are used (the spill files
    // share the disk budget and take precedence).
    void evict_to(uint64_t bytes);
    // The budget writes must stay within (the disk budget minus what the spill files use).
    void set_capacity(uint64_t bytes);
    const std::string & dir() const { return dir_; }

    // ---- Health (kv_health.h) ----
    struct Summary {
        uint64_t blocks = 0;
        uint64_t bytes = 0;
        int64_t oldest_use_us = 0;  // the least recently used entry's last use (µs since the epoch; 0: empty)
    };
    Summary summary();
    // Drops the entries last used before `before_us` (µs since the epoch), at most
    // `max_blocks` of them, oldest first; returns the bytes.
    uint64_t evict_unused_before(int64_t before_us, uint32_t max_blocks);
    // Gives the disk space of the data files' free slots back to the file system (holes);
    // unsupported where it cannot. The slots stay free for later writes.
    Status release_free_space();

private:
    PrefixStore(std::string dir, uint64_t capacity, std::shared_ptr<FileIo> io)
        : dir_(std::move(dir)), capacity_(capacity), io_(std::move(io)) {}
    Status exec(const char * sql);
    Status index_error(const char * what) const;
    // Runs `body` in one write transaction with used_ loaded from the index, and stores
    // used_ back on success; rolls back (and reloads used_) on failure.
    template <class Body>
    Status transaction(Body && body);
    Status load_used();
    Result<int> data_file(size_t n_bytes);
    Result<int64_t> take_slot(size_t n_bytes);
    Status write_one(const PrefixBlockWrite & block);
    Status evict_to_locked(uint64_t bytes);
    Status drop(uint64_t chain, uint32_t layer);
    int64_t now_tick();

    std::string dir_;
    uint64_t capacity_;
    std::shared_ptr<FileIo> io_;
    sqlite3 * db_ = nullptr;
    std::mutex mutex_;  // the engine thread and the I/O thread both use the store
    std::unordered_map<size_t, int> files_;
    // Bytes of the index's entries (its `totals` row, as last read or written); atomic because
    // used_bytes() reads it without waiting for a write in flight.
    std::atomic<uint64_t> used_{0};
};

}  // namespace lr
