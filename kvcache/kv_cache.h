#pragma once
// The paged KV cache as the runtime and the graph see it: sequences of tokens whose K and V
// live in blocks tiered across the device (VRAM, or the CPU backend's hot RAM arena), host
// RAM and disk, a prefix cache that survives restarts and shares common prefixes between
// sequences, and the lossy selection policies and codecs.
//
// Placement is lossless: attention reads a layer's blocks from the device tier, so results
// are bit-identical whatever the budgets. Selection and codecs are lossy by design and
// measured by `longread-cli eval-kv`.
//
// One ubatch of one sequence, in four steps:
//   plan(seq, request)       what the ubatch is (tokens, positions, whether it fits) and
//                            what its views need; changes nothing the sequence holds.
//   layer_view(plan, il, q)  layer il's view for attention: the blocks it reads brought to
//                            the device tier (all, or the pages the query q needs), the
//                            slots for the new tokens, the next layer's blocks prefetched.
//                            Placement only, undone by discard.
//   recurrent_state(plan, il)  instead, for a recurrent layer: its state, which the graph
//                            advances in place (recurrent_state.h).
//   apply(plan)              the tokens become part of the sequence: attention mass is
//                            folded in (one copy from the device per ubatch), the policy
//                            evicts, blocks are compacted and re-encoded, full prefix
//                            blocks are persisted in the background.
//   discard(plan)            a cancelled or failed ubatch is dropped.
//
// Faults (disk full, unwritable directory, I/O error, checksum mismatch, a file truncated
// or deleted) are reported once in KvStats::last_fault and handled without wrong output:
// the disk tier is disabled, and a block that cannot be read back is lost — the sequence
// is cut at that block (take_lost_position) and the caller recomputes from there.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "engine/api/attention_mass.h"
#include "kvcache/kv_adapter.h"
#include "kvcache/kv_cache_state.h"
#include "kvcache/kv_layer_edits.h"
#include "kvcache/kv_placement.h"
#include "kvcache/kv_prefix.h"
#include "kvcache/recurrent_snapshots.h"
#include "kvcache/recurrent_state.h"
#include "kvcache/ubatch_plan.h"

namespace lr {

class KvCache {
public:
    static Result<std::unique_ptr<KvCache>> create(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend);
    ~KvCache();
    KvCache(const KvCache &) = delete;
    KvCache & operator=(const KvCache &) = delete;

    const KvCacheConfig & config() const { return state_.config; }
    KvBlockShape block_shape() const { return state_.block_shape; }

    // ---- Sequences (opened on first use with the cache's settings) ----
    // Opens `seq` with selection settings of its own (policy, budget, window...; the codecs,
    // blocks and tiers are the cache's). invalid_argument when `seq` holds tokens already or
    // the settings do not fit the cache.
    Status open_sequence(SeqId seq, const KvSettings & selection);
    uint32_t n_tokens(SeqId seq) const;
    int32_t next_position(SeqId seq) const;  // the token count, unless streaming renumbered
    uint32_t n_kept(SeqId seq) const;        // positions kept per layer and head (mean)
    uint32_t room(SeqId seq) const;          // tokens it may still take (UINT32_MAX: its policy renumbers)
    // Bytes `seq` holds over every tier: its blocks (one several sequences hold counts in
    // shares, as the stats' layer rows count it), recurrent states and their snapshots.
    uint64_t sequence_bytes(SeqId seq) const;
    // Takes whole blocks of `upcoming` (the tokens after the sequence's own) from a live
    // sequence or the prefix store, leaving at least `keep_last` tokens to compute. With
    // recurrent layers, only up to a block whose states can be had (a live sequence's
    // snapshot or one persisted with the blocks), and those states are restored too. Returns
    // the tokens taken, which are part of the sequence now.
    uint32_t restore_prefix(SeqId seq, std::span<const int32_t> upcoming, uint32_t keep_last = 1);
    // Keeps the positions below n_keep (edit, regenerate); 0 drops the sequence. Returns
    // the tokens kept: fewer when streaming renumbered (then 0), a sliding window moved past
    // the cut, or the model has recurrent layers (then the latest snapshot at or before
    // n_keep: at most snapshot_interval() tokens fewer).
    uint32_t truncate(SeqId seq, uint32_t n_keep);
    // Tokens between two snapshots of the recurrent states (recurrent_snapshots.h); a
    // recurrent sequence's ubatches end at each multiple of it.
    uint32_t snapshot_interval() const { return snapshot_interval_; }
    // After a data loss: the position `seq` was cut back to (once), for recomputation.
    std::optional<uint32_t> take_lost_position(SeqId seq);

    // ---- One ubatch ----
    // context_full when the tokens do not fit the sequence (nothing changes).
    Result<UbatchPlan> plan(SeqId seq, const UbatchRequest & request);
    // q: [n_head][head_dim] of the ubatch's last token, in backend memory (read only when
    // the plan's views depend on the query). Views are asked in layer order.
    Result<PagedKvView> layer_view(UbatchPlan & plan, uint32_t il, const float * q);
    // Recurrent layer il's state of the plan's sequence, in backend memory (state_bytes of
    // it); the graph advances it over the ubatch's tokens. A plan discarded after this
    // cuts its sequence back to its latest snapshot (a half-advanced state cannot be
    // undone): take_lost_position then says where.
    Result<void *> recurrent_state(UbatchPlan & plan, uint32_t il);
    void apply(UbatchPlan & plan);
    void discard(UbatchPlan & plan);

    // ---- What it holds ----
    KvStats stats() const;  // any thread
    // Per position of `seq`, the share of (full-attention layer, KV head) pairs holding it.
    std::vector<float> retention(SeqId seq) const;
    // Records, from the next ubatch on, the attention mass every position of every sequence
    // receives per full-attention layer (attention()), whatever the policy: the views gather
    // mass as H2O's do, at the cost of one device-to-host copy and a pass over the held slots
    // per ubatch, and layers x positions floats per sequence. Observation never changes the
    // logits. Off by default.
    void observe_attention(bool on) { observe_attention_ = on; }
    bool observes_attention() const { return observe_attention_; }
    // What `seq` received while observed, per full-attention layer and position, and which
    // positions each layer still holds (attention_mass.h). Positions whose queries were cut
    // (truncate) lose what they received from them only if they were cut too; empty when
    // nothing was recorded.
    AttentionMass attention(SeqId seq) const;
    // Layer il's blocks' codecs, and one KV head's K (or V) rows decoded ([row][head_dim]),
    // in slot order: what the cache holds, for measurements and tests.
    std::vector<std::pair<KvCodec, KvCodec>> layer_codecs(SeqId seq, uint32_t il) const;
    Result<std::vector<float>> layer_rows(SeqId seq, uint32_t il, uint32_t head, bool keys);
    // The tier each of layer il's blocks of `seq` is on, in table order (a block only in the
    // prefix store counts as disk).
    std::vector<KvTier> block_tiers(SeqId seq, uint32_t il) const;
    size_t pinned_blocks() const { return state_.pool.n_pinned(); }  // 0 between ubatches
    void note_prefill(uint32_t n_tokens, double ms);                 // time spent computing tokens (stats)
    void note_refusal();  // tokens a caller refused before planning them: they would not fit (stats)
    void flush();         // waits for the prefix cache's writes

    // ---- Health (kvcache/kv_health.h runs the checks; these are its facts and repairs) ----
    // Engine thread, between ubatches.
    TierFragmentation disk_fragmentation() const { return placement_.disk_fragmentation(); }
    Result<uint64_t> compact_disk() { return placement_.compact_disk(); }  // blocks moved
    // A memory tier's slots kept for reuse, and giving their memory back (returns the bytes).
    uint64_t recycled_bytes(KvTier tier) const;
    uint64_t release_recycled(KvTier tier);
    bool disk_tier_enabled() const { return placement_.disk_enabled(); }
    // Stops using the disk tier and moves its blocks up to RAM (beyond the budget); a block
    // that does not read back is lost and its sequence cut (take_lost_position says where,
    // the caller recomputes). Returns the blocks lost.
    uint32_t disable_disk_tier();
    PrefixStore * prefix_store() const { return placement_.prefix(); }
    // The latest check's findings and the repairs it ran, for stats().
    void note_health(std::vector<KvHealthFinding> findings, uint64_t repairs);

private:
    KvCache(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend);
    KvSequence & sequence(SeqId seq);
    // layer_view without counting its refusal.
    Result<PagedKvView> build_view(UbatchPlan & plan, uint32_t il, const float * q);
    // What every layer's view or state does first (layers are asked in order).
    Status begin_layer(UbatchPlan & plan, uint32_t il);
    Result<PagedKvView> shared_view(UbatchPlan & plan, uint32_t il);
    Status lose_unreadable(SeqId seq, const Status & why, std::span<const BlockId> ids);
    Status clear_mass(UbatchPlan & plan);
    void fold_mass(UbatchPlan & plan);
    // Adds the ubatch's mass (mass_host_) to the sequence's observation record, by position.
    void observe_mass(const UbatchPlan & plan);
    void select_prompt(SeqId seq);
    void lose_sequence_from(SeqId seq, uint32_t position, const Status & why);
    // The most tokens of at most n_keep that `s` can continue from: what its sliding
    // windows still cover and, with recurrent layers, a snapshot's token count (one whose
    // count is a multiple of `align`) or 0.
    uint32_t rollback_point(const KvSequence & s, SeqId seq, uint32_t n_keep, uint32_t align) const;
    // Cuts `seq` to its first n tokens (a rollback_point): KV, states and tokens. False
    // when a KV block could not be read back.
    bool cut_to(SeqId seq, uint32_t n);
    // The recurrent states of `seq` go back to the snapshot after n tokens (zero for 0).
    void roll_back_states(SeqId seq, uint32_t n);
    // restore_prefix for a model with recurrent layers: blocks, then the states at their end.
    uint32_t restore_with_states(SeqId seq, std::span<const int32_t> upcoming, uint32_t keep_last);
    void publish_stats();
    std::vector<KvLayerKindStats> layer_kind_stats() const;
    // The adaptive mode, at the end of a ubatch: measures, lets the adapter decide, and
    // applies what it chose.
    void adapt();

    KvCacheState state_;
    KvPlacement placement_;
    KvPrefixCache prefix_;
    KvLayerEditor editor_;
    RecurrentStates states_;
    RecurrentSnapshots snapshots_;
    uint32_t snapshot_interval_;
    bool renumbers_by_default_;  // the cache's policy runs past the context (streaming)
    bool observe_attention_ = false;
    // Attention mass of a sequence's ubatch, every layer's view (a buffer per sequence: the
    // plans of several sequences may be in flight together).
    std::map<SeqId, DeviceBuffer> mass_;
    std::vector<float> zeros_;  // host zeros to clear it
    std::vector<float> mass_host_;
    std::vector<float> q_host_;  // the query, when the device is not host memory

    std::unique_ptr<KvAdapter> adapter_;  // with KvSettings::adapt
    std::chrono::steady_clock::time_point opened_ = std::chrono::steady_clock::now();
    uint64_t ubatches_ = 0;

    mutable std::mutex stats_mutex_;
    KvStats published_;  // the snapshot stats() returns
};

}  // namespace lr
