#pragma once
// The prefix cache: full blocks of a pure prefix (no eviction, renumbering or re-encoding)
// are keyed by a hash chain over the cache identity and their tokens. A sequence that
// begins with the tokens of another live sequence shares those blocks (copy-on-write);
// blocks persisted in the background to the prefix store on disk are restored by a later
// session with the same beginning instead of being recomputed.
//
// A recurrent model continues only from the states after the restored tokens: its caller
// persists snapshots of them with the blocks (under the chain of the block they end), and
// a restore ends at the deepest block whose states its caller can load.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kvcache/kv_placement.h"

namespace lr {

class KvPrefixCache {
public:
    KvPrefixCache(KvCacheState & state, KvPlacement & placement);
    ~KvPrefixCache();  // waits for the writes in flight

    // The chains of the sequence's blocks that became full since its last `n_full_before`
    // full blocks, and their persisting (in the background) when a prefix store exists.
    // `states`, when not empty, are the recurrent states after the sequence's tokens (which
    // end on a block boundary), persisted with the blocks.
    void note_full_blocks(SeqId seq, uint32_t n_full_before, std::vector<uint8_t> states = {});
    // Whether note_full_blocks writes to a prefix store (states are worth copying for it).
    bool persists() const { return placement_.prefix() && writes_ok_; }
    // Settles the writes that finished (all of them when `wait`): their blocks count as
    // persisted; a refused write disables persisting (reported once).
    void collect(bool wait);

    // Whether the caller can load the recurrent states after the block at `depth` whose
    // chain is `chain` (it keeps what it found, to load once the blocks are taken).
    using StatesAt = std::function<bool(uint64_t chain, uint32_t depth)>;
    // Takes whole blocks of `upcoming` (the tokens after the sequence's own) from a live
    // sequence that holds them, else from the prefix store, leaving at least `keep_last`
    // tokens to compute. Only when the sequence ends on a block boundary and is a pure prefix.
    // With `states_at` (a recurrent model), only up to the deepest block it accepts.
    // Returns the tokens taken; they are part of the sequence.
    uint32_t restore(SeqId seq, std::span<const int32_t> upcoming, uint32_t keep_last, const StatesAt & states_at = {});

    // Estimated prefill time the restored tokens saved, from the time spent computing.
    void note_prefill(uint32_t n_tokens, double ms);

private:
    // The blocks of every layer a live sequence other than `seq` holds for `chain` at `depth`.
    bool share_live(SeqId seq, uint64_t chain, uint32_t depth, std::vector<BlockId> & out) const;
    void update_saved();

    KvCacheState & state_;
    KvPlacement & placement_;
    uint64_t chain_seed_ = 0;  // chain_0: the model file, the codecs, the block shape
    bool writes_ok_ = true;    // false after the prefix store refused a write
    struct PersistJob {
        IoThread::JobId job = 0;
        std::vector<std::pair<BlockId, uint64_t>> blocks;  // and the chain each was written under
    };
    std::vector<PersistJob> persisting_;  // writes in flight, a job per ubatch
    uint32_t computed_tokens_ = 0;
};

}  // namespace lr
