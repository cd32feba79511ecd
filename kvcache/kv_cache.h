#pragma once
// The paged KV cache as the model sees it, tiered across the device (VRAM, or the hot RAM
// arena of the CPU backend), host RAM and disk, with a prefix cache that survives
// restarts, and the lossy policies (H2O, SnapKV, StreamingLLM, Quest, KV quantization).
//
// Placement is lossless: attention reads a layer's blocks from the device tier, so results
// are bit-identical whatever the budgets. Selection and codecs are lossy by design and
// measured by `longread-cli eval-kv`.
//
// For each ubatch of one sequence:
//   reserve(seq, tokens, positions)  checks that they fit (mutates nothing on failure);
//   layer_view(seq, il, q)  brings what attention reads of layer il to the device tier
//                         (every block, or with quest the blocks the query `q` needs),
//                         adds the blocks the new tokens go to, starts fetching layer il+1
//                         on the I/O thread, and returns the view;
//   end_layer(seq, il)    attention is done: attention mass is folded in, the policy
//                         evicts, blocks are compacted and re-encoded;
//   commit(seq)           the tokens become part of the sequence (full prefix blocks are
//                         persisted in the background), or
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
#include "engine/api/kv_stats.h"
#include "kvcache/memory_tier.h"
#include "kvcache/page_bounds.h"
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

    // Tokens appended to `seq` (0 for an unknown sequence).
    uint32_t n_tokens(SeqId seq) const;
    // The position of the next token: the token count, unless streaming renumbered.
    int32_t next_position(SeqId seq) const;
    // Positions the policy keeps per layer and head (averaged), after the last ubatch.
    uint32_t n_kept(SeqId seq) const;

    // Restores, from the prefix cache, whole blocks of `upcoming` (the tokens that follow the
    // sequence's committed ones), leaving at least `keep_last` tokens to compute. Works when
    // the sequence ends on a block boundary and is still an uncompressed prefix. Returns
    // the tokens restored; the caller appends them to its token list without computing.
    uint32_t restore_prefix(SeqId seq, std::span<const int32_t> upcoming, uint32_t keep_last = 1);

    // Takes the ubatch's tokens and gives them positions (pending_positions). context_full
    // when the sequence would exceed its positions (streaming renumbers instead).
    // `observation`: this ubatch is SnapKV's observation window.
    Status reserve(SeqId seq, std::span<const int32_t> tokens, bool observation = false);
    std::span<const int32_t> pending_positions(SeqId seq) const;
    // Whether layer_view wants the query of the ubatch's last token (quest during decode).
    bool wants_query(SeqId seq) const;
    // q_host: [n_head][head_dim] of the last token, when wants_query(); else nullptr.
    Result<PagedKvView> layer_view(SeqId seq, uint32_t il, const float * q_host = nullptr, uint32_t n_head = 0);
    void end_layer(SeqId seq, uint32_t il);
    void commit(SeqId seq);
    void rollback(SeqId seq);
    // The prompt is complete: SnapKV selects now.
    void finish_prompt(SeqId seq);

    // Keeps the positions below n_keep (edit/regenerate), or drops the sequence (0).
    void truncate(SeqId seq, uint32_t n_keep);

    // After a data loss: the position `seq` was cut back to (once), for recomputation.
    std::optional<uint32_t> take_lost_position(SeqId seq);

    // For each position of `seq`, the share of (layer, KV head) pairs that still hold it:
    // 1 everywhere without eviction (the retention view of the desktop app).
    std::vector<float> retention(SeqId seq) const;

    // The codecs of layer il's blocks, in slot order (what the cache holds, for the panel
    // and tests).
    std::vector<std::pair<KvCodec, KvCodec>> layer_codecs(SeqId seq, uint32_t il) const;

    // Layer il's K (or V) rows of one KV head, decoded, in slot order: [row][head_dim]
    // (what the cache holds, for measurements of the codecs).
    Result<std::vector<float>> layer_rows(SeqId seq, uint32_t il, uint32_t head, bool keys);

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
        std::vector<std::vector<BlockId>> blocks;  // [layer][block], in slot order
        std::vector<uint32_t> slots_used;          // [layer] the next free slot (same for every head)
        std::vector<int32_t> tokens;               // committed tokens (prefix-cache keys)
        std::vector<uint64_t> chains;              // chain hash after each full block
        uint32_t n_committed = 0;                  // tokens appended
        int32_t next_pos = 0;                      // position of the next token
        std::vector<int32_t> pending;              // tokens of the reserved ubatch
        std::vector<int32_t> pending_pos;          // ... and their positions
        bool observation = false;                  // the reserved ubatch votes for SnapKV
        bool selecting = false;                    // snapkv --then h2o: evicting after the prompt
        std::optional<int32_t> mass_from;          // snapkv: the first observation query (mass collected from it on)
        std::vector<uint32_t> write_slots;         // scratch for layer_view
        std::vector<KvBlockRef> view_blocks;       // scratch for layer_view
        std::vector<BlockId> view_ids;             // the blocks in the view, in view order
        std::vector<uint32_t> read_pages;          // scratch for layer_view (quest)
        bool pure_prefix = true;                   // no eviction, shift or re-encoding: persistable
        std::optional<uint32_t> lost_from;         // set by a data loss
    };

    TierStore * store(BlockHome home) const;
    KvTierStats & tier_stats(BlockHome home);
    size_t written_block_bytes() const { return layout_.block_bytes(); }
    KvBlockLayout layout_of(const BlockMeta & m) const { return {block_shape_, m.k_codec, m.v_codec}; }
    bool collects_mass(const Sequence & s) const;
    bool evicts(const Sequence & s) const;

    // Placement (kv_placement.cpp).
    Status make_room(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor);
    std::vector<BlockId> victims(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor) const;
    Status demote(BlockId id, SeqId active, uint32_t layer_cursor);
    Status move(BlockId id, BlockHome to, SeqId active, uint32_t layer_cursor);
    // recoded: the block's bytes in the destination's codecs (empty: copied as they are).
    Status copy_block(const BlockMeta & m, BlockHome to, const TierSlot & dst, std::span<const uint8_t> recoded = {});
    // Block `id` in the codecs of tier `to`, when they are narrower and the block has aged;
    // else out.bytes stays empty.
    struct RecodedBlock {
        KvCodec k_codec = KvCodec::f16;
        KvCodec v_codec = KvCodec::f16;
        std::vector<uint8_t> bytes;
    };
    Status narrow_for_tier(BlockId id, BlockHome to, RecodedBlock & out);
    Status fetch_to_device(BlockId id, SeqId seq, uint32_t il);
    Status ensure_on_device(std::span<const BlockId> ids, SeqId seq, uint32_t il);
    void start_prefetch(SeqId seq, uint32_t il);
    Status adopt_prefetch(BlockId id, bool & was_ready);
    void settle_prefetches();  // waits for every prefetch and adopts its block

    // Blocks.
    Result<BlockId> new_block(SeqId seq, uint32_t il, KvCodec k_codec, KvCodec v_codec);
    void free_block(BlockId id);
    Status read_block(const BlockMeta & m, std::vector<uint8_t> & bytes);   // from the device
    Status write_block(BlockMeta & m, const std::vector<uint8_t> & bytes);  // to the device
    Status write_positions(BlockMeta & m);  // only m.pos, to the device copy

    // Selection, compaction, codecs, renumbering (kv_selection.cpp).
    void fold_mass(Sequence & s, uint32_t il);
    void note_new_rows(Sequence & s, uint32_t il);
    void evict(Sequence & s, uint32_t il, uint32_t budget, bool snapkv);
    Status compact(SeqId seq, uint32_t il);
    Status reencode_aged(SeqId seq, uint32_t il);
    // Replaces device-resident block b of layer il by a copy of its rows in other codecs.
    Status recode_in_layer(Sequence & s, uint32_t il, size_t b, KvCodec k_codec, KvCodec v_codec);
    Status renumber(SeqId seq, int32_t room_needed);
    uint32_t kept_in_layer(const Sequence & s, uint32_t il) const;

    // Quest (kv_quest.cpp).
    struct QuestReads {
        std::vector<uint32_t> blocks;  // of the layer, ascending: those some head reads
        std::vector<uint32_t> pages;   // [blocks][n_head_kv]: bit i = the head reads page i of the block
    };
    QuestReads quest_reads(const Sequence & s, uint32_t il, const float * q, uint32_t n_head) const;
    // Widens the key bounds of slot `slot` of block m (bytes: the block's bytes) by its rows;
    // row: head_dim floats of scratch.
    void widen_key_bounds(BlockMeta & m, const uint8_t * bytes, uint32_t slot, float * row) const;
    // Blocks restored from the prefix cache come without bounds: computes theirs, fetching
    // each such block once, so that Quest ranks them like the others instead of first.
    Status bound_restored_blocks(SeqId seq, uint32_t il);

    // Prefix cache (kv_prefix.cpp).
    void persist_full_blocks(SeqId seq, uint32_t first_block, uint32_t end_block);
    void collect_persisted(bool wait);

    // Empties every slot holding a position >= from, in every layer, and frees the blocks
    // left empty at the end. False when a block to fix up could not be read back.
    bool drop_positions_from(SeqId seq, int32_t from);
    void lose_sequence_from(SeqId seq, uint32_t position, const Status & why);
    void report_fault(const Status & s);
    void publish_stats();

    KvCacheConfig config_;
    KvModelShape shape_;
    KvBlockShape block_shape_;
    KvBlockLayout layout_;  // of the blocks new tokens are written to (f16, or f32)
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
    DeviceBuffer mass_;                  // [blocks][n_head_kv][block_tokens] attention mass of one layer view
    uint64_t tick_ = 0;
    uint32_t computed_tokens_ = 0;
    uint64_t chain_seed_ = 0;            // chain_0 of the prefix cache
    const PageBounds page_bounds_ = best_page_bounds();  // quest's, the fastest this CPU runs

    mutable std::mutex stats_mutex_;
    KvStats counters_;                   // engine thread's running totals
    KvStats published_;                  // the snapshot stats() returns
};

}  // namespace lr
