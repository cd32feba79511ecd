#pragma once
// Copies of a sequence's recurrent states (recurrent_state.h) at earlier token counts: the
// points a recurrent sequence can be cut back to. A state has every token folded in, so
// without a copy a truncated sequence starts over from zero states and re-reads its prompt.
//
// The cache takes one every snapshot_interval() tokens (block boundaries; its ubatches end
// there) and one at the end of each ubatch its caller marks as a document's or a turn's end.
// Copies live beside the states in backend memory (device copies, queued like ops).

#include <cstdint>
#include <map>
#include <span>

#include "engine/api/kv_layer.h"
#include "engine/backend/backend.h"
#include "kvcache/block_pool.h"

namespace lr {

// Tokens between two snapshots of a model with these layers: the fewest whole blocks whose
// full-attention KV (f16, as written) outweighs one snapshot (every recurrent layer's
// state). Snapshots then add at most as much memory as the KV of the same tokens, and a cut
// recomputes at most this many tokens (at most 4096).
uint32_t snapshot_interval(std::span<const KvLayerSpec> layers, uint32_t n_head_kv, uint32_t head_dim, uint32_t block_tokens);

class RecurrentSnapshots {
public:
    RecurrentSnapshots(uint64_t bytes_per_sequence, Backend & backend) : backend_(backend), bytes_(bytes_per_sequence) {}

    // Copies `states` (a sequence's block of states) as `seq`'s snapshot after `n_tokens`.
    // A turn's end (off an interval boundary) replaces the previous one: one is kept.
    Status take(SeqId seq, uint32_t n_tokens, const void * states, uint32_t interval);
    // The latest snapshot of `seq` at or before n_tokens whose token count is a multiple
    // of `align`: its token count (0 when none: zero states).
    uint32_t at_or_before(SeqId seq, uint32_t n_tokens, uint32_t align = 1) const;
    bool has(SeqId seq, uint32_t n_tokens) const;
    // Copies the snapshot after `n_tokens` (which must exist) into `states`.
    void restore(SeqId seq, uint32_t n_tokens, void * states);
    // Drops `seq`'s snapshots after n_tokens (all of them for 0).
    void drop_after(SeqId seq, uint32_t n_tokens);

    uint64_t count(SeqId seq) const;
    uint64_t bytes(SeqId seq) const { return count(seq) * bytes_; }

private:
    Backend & backend_;
    uint64_t bytes_;                                            // one snapshot: a sequence's states
    std::map<SeqId, std::map<uint32_t, DeviceBuffer>> by_seq_;  // [seq][token count]
};

}  // namespace lr
