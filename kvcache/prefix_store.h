#pragma once
// The prefix cache that survives restarts. A full block of an uncompressed prefix is
// content-addressed by a hash chain: chain_0 = the cache identity (model file, KV codecs,
// block shape), chain_i = XXH3(chain_{i-1}, tokens of block i). Each layer's block for
// chain_i is stored in a slot of a shared data file under the cache directory, indexed in
// SQLite (WAL, so several Longread processes can share the directory safely), with an
// XXH3 checksum verified on every read. Bounded by a byte budget: the least recently used
// entries go first (deepest first, so shared beginnings such as a system prompt outlive
// the documents that follow them).

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

class PrefixStore {
public:
    static Result<std::unique_ptr<PrefixStore>> open(const std::string & dir, uint64_t capacity_bytes,
                                                     std::shared_ptr<FileIo> io = posix_file_io());
    ~PrefixStore();
    PrefixStore(const PrefixStore &) = delete;
    PrefixStore & operator=(const PrefixStore &) = delete;

    static uint64_t chain_next(uint64_t previous, std::span<const int32_t> block_tokens);

    // Whether every layer of `chain` is stored.
    bool contains(uint64_t chain, uint32_t n_layer);
    // The stored block; corrupt_data (and the entry dropped) when it fails its checksum or
    // its file is gone or short; not_found when absent.
    Status read(uint64_t chain, uint32_t layer, uint8_t * dst, size_t n_bytes);
    // Stores a block (no-op when already stored). out_of_memory when it cannot fit even after
    // evicting older entries; io_error when the disk refuses.
    Status write(uint64_t chain, uint32_t layer, uint32_t depth, const uint8_t * src, size_t n_bytes);
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

private:
    PrefixStore(std::string dir, uint64_t capacity, std::shared_ptr<FileIo> io)
        : dir_(std::move(dir)), capacity_(capacity), io_(std::move(io)) {}
    Status exec(const char * sql);
    Result<int> data_file(size_t n_bytes);
    Status make_room(size_t n_bytes);
    Status evict_to_locked(uint64_t bytes);
    void drop(uint64_t chain, uint32_t layer);
    int64_t now_tick();

    std::string dir_;
    uint64_t capacity_;
    std::shared_ptr<FileIo> io_;
    sqlite3 * db_ = nullptr;
    std::mutex mutex_;  // the engine thread and the I/O thread both use the store
    std::unordered_map<size_t, int> files_;
    uint64_t used_ = 0;  // bytes of this index's entries (kept in step with the table)
};

}  // namespace lr
