#pragma once
// The paged KV cache as the model sees it, tiered across the device (VRAM, or the hot RAM
// arena of the CPU backend), host RAM and disk, with a prefix cache that survives
// restarts. Placement is lossless: attention always reads a layer's blocks from the device
// tier, so results are bit-identical whatever the budgets.
//
// For each ubatch of one sequence:
//   reserve(seq, tokens)  checks that the tokens fit the sequence (mutates nothing on failure);
//   layer_view(seq, il)   brings layer il's blocks to the device tier (waiting for or doing
//                         the copies, demoting the blocks needed last to make room), adds
//                         the blocks the new tokens go to, starts fetching layer il+1 on the
//                         I/O thread, and returns what attention reads;
//   end_layer(seq, il)    attention is done with layer il;
//   commit(seq)           the tokens become part of the sequence (full prefix blocks are
//                         persisted to the prefix cache in the background), or
//   rollback(seq)         they are dropped (a cancelled or failed ubatch).
//
// Faults (disk full, unwritable directory, I/O error, checksum mismatch, a file truncated
// or deleted) are reported once in KvStats::last_fault and handled without wrong output:
// the disk tier is disabled, and a block that cannot be read back is lost — the sequence
// is cut at that block (take_lost_position) and the caller recomputes from there.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "kvcache/block_pool.h"
#include "kvcache/disk_tier.h"
#include "kvcache/io_thread.h"
#include "kvcache/kv_cache_config.h"
#include "kvcache/kv_stats.h"
#include "kvcache/memory_tier.h"
#include "kvcache/prefix_store.h"

namespace lr {

class KvCache {
public:
    static Result<std::unique_ptr<KvCache>> create(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend);
    ~KvCache();
    KvCache(const KvCache &) = delete;
    KvCache & operator=(const KvCache &) = delete;

    const KvCacheConfig & config() const { return config_; }
    KvBlockShape block_shape() const { return block_shape_; }

    // Committed positions of `seq` (0 for an unknown sequence): the next position to write.
    uint32_t n_tokens(SeqId seq) const;

    // Restores, from the prefix cache, whole blocks of `upcoming` (the tokens that follow the
    // sequence's committed ones), leaving at least `keep_last` tokens to compute. Works when
    // the sequence ends on a block boundary and is still an uncompressed prefix. Returns
    // the tokens restored; the caller appends them to its token list without computing.
    uint32_t restore_prefix(SeqId seq, std::span<const int32_t> upcoming, uint32_t keep_last = 1);

    // context_full when the sequence would exceed max_tokens.
    Status reserve(SeqId seq, std::span<const int32_t> tokens);
    // out_of_memory when no tier can hold the blocks; data_loss (corrupt_data) when a block
    // could not be read back (see take_lost_position).
    Result<PagedKvView> layer_view(SeqId seq, uint32_t il);
    void end_layer(SeqId seq, uint32_t il);
    void commit(SeqId seq);
    void rollback(SeqId seq);

    // Keeps the first n_keep positions of `seq` (edit/regenerate), or drops it (n_keep = 0).
    void truncate(SeqId seq, uint32_t n_keep);

    // After a data loss: the position `seq` was cut back to (once), for recomputation.
    std::optional<uint32_t> take_lost_position(SeqId seq);

    // Prefill accounting for the stats (time spent computing tokens).
    void note_prefill(uint32_t n_tokens, double ms);
    // Waits for background writes (prefix cache) to finish.
    void flush();

    // A snapshot of the cache's state. Safe to call from any thread.
    KvStats stats() const;

private:
    KvCache(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend);
    Status open_tiers();

    struct Sequence {
        std::vector<std::vector<BlockId>> blocks;  // [layer][logical block]
        std::vector<int32_t> tokens;               // committed tokens (prefix-cache keys)
        std::vector<uint64_t> chains;              // chain hash after each full block
        uint32_t n_committed = 0;
        std::vector<int32_t> pending;              // tokens of the reserved ubatch
        std::vector<uint32_t> write_slots;         // flat slot of each pending token
        std::vector<KvBlockRef> view_blocks;       // scratch for layer_view
        bool pure_prefix = true;                   // no position ever evicted: persistable
        std::optional<uint32_t> lost_from;         // set by a data loss
    };

    TierStore * store(BlockHome home) const;
    KvTierStats & tier_stats(BlockHome home);
    size_t block_bytes() const { return layout_.block_bytes(); }

    // Placement.
    Status make_room(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor);
    std::vector<BlockId> victims(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor) const;
    Status demote(BlockId id, SeqId active, uint32_t layer_cursor);
    Status move(BlockId id, BlockHome to, SeqId active, uint32_t layer_cursor);
    Status copy_block(const BlockMeta & m, BlockHome to, const TierSlot & dst);
    Status fetch_to_device(BlockId id, SeqId seq, uint32_t il);
    void start_prefetch(SeqId seq, uint32_t il);
    Status adopt_prefetch(BlockId id, bool & was_ready);
    void settle_prefetches();  // waits for every prefetch and adopts its block

    // Blocks.
    Result<BlockId> new_block(SeqId seq, uint32_t il, uint32_t index);
    void free_block(BlockId id);
    Status clear_positions(BlockId id, uint32_t first_slot);
    void persist_full_blocks(SeqId seq, uint32_t first_block, uint32_t end_block);
    void collect_persisted(bool wait);
    void lose_sequence_from(SeqId seq, uint32_t block_index, const Status & why);
    void report_fault(const Status & s);
    void publish_stats();

    KvCacheConfig config_;
    KvModelShape shape_;
    KvBlockShape block_shape_;
    KvBlockLayout layout_;  // of the blocks written (f16 or f32)
    Backend & backend_;
    BlockPool pool_;
    std::map<SeqId, Sequence> seqs_;
    std::unique_ptr<MemoryTier> device_;
    std::unique_ptr<MemoryTier> host_;
    std::unique_ptr<DiskTier> disk_;
    std::unique_ptr<PrefixStore> prefix_;
    std::unique_ptr<IoThread> io_;
    bool disk_writable_ = true;          // false after the disk refused a write
    bool prefix_writes_ok_ = true;       // false after the prefix cache refused a write
    struct PersistJob {
        IoThread::JobId job;
        BlockId block;
        uint64_t chain;
    };
    std::vector<PersistJob> persisting_;  // prefix-cache writes in flight
    std::vector<uint8_t> empty_block_;   // zero bytes and kInvalidPos positions
    std::vector<uint8_t> staging_;       // host bytes for device <-> disk moves
    uint64_t tick_ = 0;
    uint64_t chain_seed_ = 0;            // chain_0 of the prefix cache
    uint32_t computed_tokens_ = 0;

    mutable std::mutex stats_mutex_;
    KvStats counters_;                   // engine thread's running totals
    KvStats published_;                  // the snapshot stats() returns
};

}  // namespace lr
