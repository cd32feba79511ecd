#pragma once
// Placement: which tier holds each block's bytes, and the moves between tiers. Lossless —
// attention reads a block from the device tier whatever its history, so results are
// bit-identical whatever the budgets (unless per-tier codecs narrow aged blocks on the way
// down, which is off by default).
//
// Only full-attention layers' blocks move down; a sliding window's bounded ring stays on
// the device tier.
//
// Demotion order (KvSettings::demotion): when a tier is full, with `cycle` blocks of other
// sequences go first, then the active sequence's layers in the order its forward pass needs
// them last (the layer just read, the one before, ...): Belady's choice on the cycle of
// layers; `lru` takes the block pinned longest ago, `fifo` the oldest. Promotion happens when
// a view needs a block; the next prefetch_layers() layers' blocks are prefetched on the I/O
// thread while a layer computes, making room only from blocks needed after them.
//
// Faults: a disk that refuses a write is disabled (RAM keeps its blocks beyond budget);
// a block that cannot be read back is reported as corrupt_data (the caller recomputes).

#include <atomic>
#include <memory>
#include <span>
#include <vector>

#include "kvcache/disk_tier.h"
#include "kvcache/io_thread.h"
#include "kvcache/kv_cache_state.h"
#include "kvcache/memory_tier.h"
#include "kvcache/prefix_store.h"

namespace lr {

class KvPlacement {
public:
    explicit KvPlacement(KvCacheState & state) : state_(state) {}
    ~KvPlacement();  // lets the I/O thread finish what touches the tiers
    KvPlacement(const KvPlacement &) = delete;
    KvPlacement & operator=(const KvPlacement &) = delete;

    // Opens the tiers of the configured capacities; a disk tier or prefix cache that cannot
    // be opened is reported (stats) and left out.
    void open();

    // A new block on the device tier (making room), its slots empty when it is in the
    // written layout. Not pinned: pin it before making room for anything else.
    Result<BlockId> new_block(SeqId owner, uint32_t il, KvCodec k_codec, KvCodec v_codec);
    // Drops one reference; the bytes go when the last one does.
    void free_block(BlockId id);

    // Brings `ids` to the device tier (each fetched, or a prefetch adopted) and pins them.
    // corrupt_data when a block cannot be read back (the caller recomputes from it).
    // count_reads: attention reads them (the hit rate counts them); false for fix-ups.
    Result<PinnedBlocks> pin_on_device(std::span<const BlockId> ids, SeqId seq, uint32_t il, bool count_reads = true);
    // While layer il of `seq` computes: starts copying the blocks of the next
    // prefetch_layers() layers that are not on the device, while room lasts.
    void prefetch_ahead(SeqId seq, uint32_t il);
    uint32_t prefetch_layers() const { return prefetch_layers_; }
    void set_prefetch_layers(uint32_t n) { prefetch_layers_ = n; }
    // The device and host budgets (the adaptive mode's split; between ubatches, nothing
    // pinned): blocks move first — up when the device grows, down when it shrinks — so the
    // bytes held never exceed what they were. unsupported without a host tier.
    Status set_memory_budgets(uint64_t device_bytes, uint64_t host_bytes);
    // Waits for every prefetch and adopts its block.
    void settle_prefetches();

    // Device-resident blocks' bytes (block must be on the device).
    Status read_block(const BlockMeta & m, std::vector<uint8_t> & bytes);
    Status write_block(const BlockMeta & m, std::span<const uint8_t> bytes);
    Status write_positions(const BlockMeta & m);  // only the position mirror, to the device copy

    TierStore * store(BlockHome home) const;
    bool device_host_addressable() const { return device_->host_addressable(); }
    PrefixStore * prefix() const { return prefix_.get(); }
    DiskTier * disk() const { return disk_.get(); }
    IoThread & io() { return *io_; }
    // Fills the tier rows of `stats` (used, capacity, blocks; the prefix store counts as disk)
    // and the time spent moving blocks (the I/O thread's prefetches included).
    void fill_tier_stats(KvStats & stats) const;
    // Time the I/O thread spent copying prefetched blocks (the engine's own moves are in
    // KvStats::move_ms).
    double io_move_ms() const { return double(io_move_ns_.load()) / 1e6; }

    // ---- Health (kv_health.h): facts and repairs, between ubatches ----
    bool disk_enabled() const { return disk_ && disk_writable_; }
    TierFragmentation disk_fragmentation() const { return disk_ ? disk_->fragmentation() : TierFragmentation{}; }
    // Compacts the spill files (DiskTier::compact), the blocks' metadata following; returns
    // the blocks moved.
    Result<uint64_t> compact_disk();
    MemoryTier * memory_tier(KvTier tier) const {
        return tier == KvTier::device ? device_.get() : tier == KvTier::host ? host_.get() : nullptr;
    }
    // Stops spilling to the disk tier (as after a refused write).
    void disable_disk() { disk_writable_ = false; }
    // Moves a disk-tier block up to RAM (the host tier, else the device tier), beyond the
    // tier's budget if need be; corrupt_data when it does not read back.
    Status evacuate_disk_block(BlockId id, SeqId seq);

private:
    // Makes room for n_bytes in `home`. layer_cursor: the active sequence's layer being
    // placed; its next `soon` layers from the cursor on are needed before anything else and
    // never give room.
    Status make_room(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor, uint32_t soon = 0);
    // Blocks of `home` that may leave it, at least n_bytes of them, in the demotion order.
    std::vector<BlockId> victims(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor, uint32_t soon) const;
    bool may_leave(const BlockMeta & m, BlockHome home) const;
    std::vector<BlockId> layer_cycle_victims(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor, uint32_t soon) const;
    std::vector<BlockId> stamp_victims(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor, uint32_t soon) const;
    // Starts copying layer il's blocks, making room only from blocks needed after it (the
    // cursor and the `soon` layers as for make_room).
    // False when the device had no room left for it.
    bool prefetch_layer(SeqId seq, uint32_t il, uint32_t layer_cursor, uint32_t soon);
    // Demotes the victims of `home` until it holds at most its capacity.
    Status shrink_to_capacity(BlockHome home);
    Status demote(BlockId id, SeqId active, uint32_t layer_cursor);
    Status move(BlockId id, BlockHome to, SeqId active, uint32_t layer_cursor);
    // Block `id` in the codecs of tier `to`, when they are narrower and the block has aged;
    // else bytes stays empty.
    struct RecodedBlock {
        KvCodec k_codec = KvCodec::f16;
        KvCodec v_codec = KvCodec::f16;
        std::vector<uint8_t> bytes;
    };
    Status narrow_for_tier(BlockId id, BlockHome to, RecodedBlock & out);
    // recoded: the block's bytes in the destination's codecs (empty: copied as they are).
    Status copy_block(const BlockMeta & m, BlockHome to, const TierSlot & dst, std::span<const uint8_t> recoded);
    Status fetch_to_device(BlockId id, SeqId seq, uint32_t il);
    Status adopt_prefetch(BlockId id, bool & was_ready);
    KvTierStats & tier_stats(BlockHome home);

    KvCacheState & state_;
    std::unique_ptr<MemoryTier> device_;
    std::unique_ptr<MemoryTier> host_;
    std::unique_ptr<DiskTier> disk_;
    std::unique_ptr<PrefixStore> prefix_;
    std::unique_ptr<IoThread> io_;
    bool disk_writable_ = true;     // false after the disk refused a write or lost data
    std::vector<uint8_t> staging_;  // host bytes for device <-> disk moves
    uint32_t prefetch_layers_ = 1;
    std::atomic<uint64_t> io_move_ns_{0};  // the I/O thread's copying (prefetches)
};

}  // namespace lr
