#pragma once
// The changes to a layer's rows the cache makes between ubatches: eviction by the
// sequence's policy, compaction of the holes it leaves, re-encoding of blocks that leave the
// full-precision window, StreamingLLM's renumbering, dropping positions (truncation,
// rollback), Quest's key bounds, and copy-on-write of shared blocks before any of these.
// Each works on one sequence and layer; the mirrors (positions, mass, bounds) and the
// device bytes stay in step.

#include <cstdint>

#include "kvcache/kv_placement.h"

namespace lr {

struct Eviction {
    uint32_t budget = 0;      // positions each head keeps at most
    int32_t end = 0;          // the position after the newest query
    uint32_t n_held = 0;      // tokens of the sequence before the ubatch
    bool prompt_end = false;  // the selection at the end of a prompt (SnapKV)
};

class KvLayerEditor {
public:
    KvLayerEditor(KvCacheState & state, KvPlacement & placement) : state_(state), placement_(placement) {}

    // Each head of layer il keeps what the sequence's policy selects; evicted slots become
    // empty (mirrors and device bytes). Then the holes are compacted once they add up to a
    // block. Faults are reported, not returned: the rows kept stay valid.
    void evict(SeqId seq, uint32_t il, const Eviction & eviction);
    // Blocks past the full-precision window take the configured codecs.
    Status reencode_aged(SeqId seq, uint32_t il);
    // Renumbers layer il's kept positions (per head: the sinks, then consecutive), rotating
    // the keys to match. Idempotent: a renumbered layer is left as it is.
    Status renumber(SeqId seq, uint32_t il);
    // The position after the last one renumber() gives, over every layer (pure).
    int32_t renumbered_end(const KvSequence & s) const;
    // Empties every slot holding a position >= from, in every layer, and frees the blocks
    // left empty at the end. False when a block to fix up could not be read back.
    bool drop_positions_from(SeqId seq, int32_t from);
    // Sliding-window layers let go of the blocks no query from the sequence's next position
    // on can see: their memory stops growing at the window.
    void slide(SeqId seq);
    // The longest prefix of at most n_keep tokens every sliding layer can continue from (it
    // still holds the window before it): n_keep, or 0 when a window has moved past it
    // (recurrent states are the cache's: it cuts back to a snapshot).
    uint32_t resumable(const KvSequence & s, uint32_t n_keep) const;
    // Quest: widens the key bounds of slots [first, first + n) of layer il by their rows.
    Status widen_key_bounds(SeqId seq, uint32_t il, uint32_t first, uint32_t n);
    // Quest: blocks that came without bounds (restored, shared) get them, fetched one at a time.
    Status bound_blocks(SeqId seq, uint32_t il);
    // Positions layer il holds per head (the most of any head).
    uint32_t kept_in_layer(const KvSequence & s, uint32_t il) const;

private:
    Status compact(SeqId seq, uint32_t il);
    // Block b of layer il becomes the sequence's own (a copy when it was shared).
    Status make_private(SeqId seq, uint32_t il, size_t b);
    // Replaces device-resident block b of layer il by a copy of its rows in other codecs.
    Status recode(SeqId seq, uint32_t il, size_t b, KvCodec k_codec, KvCodec v_codec);
    // Widens block m's bounds by slot `slot` of its bytes; row: head_dim floats of scratch.
    void widen_slot_bounds(BlockMeta & m, const uint8_t * bytes, uint32_t slot, float * row) const;

    KvCacheState & state_;
    KvPlacement & placement_;
};

}  // namespace lr
