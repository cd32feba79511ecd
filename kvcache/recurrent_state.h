#pragma once
// The memory of recurrent layers (KvLayerKind::recurrent, e.g. Gated DeltaNet): per
// sequence and layer a fixed-size state (KvLayerSpec::state_bytes) that the layer's graph
// reads and advances in place, whatever the sequence's length. A sequence's states are one
// block of backend memory (the device tier, like a sliding window's ring: never demoted),
// zero when the sequence starts. What the bytes mean is the model's business (the graph's);
// the cache only keeps them with the sequence and starts them over.
//
// A state holds every token of its sequence folded in: it cannot be cut back to an earlier
// position; the cache cuts back to a copy taken there (recurrent_snapshots.h).

#include <cstdint>
#include <map>
#include <vector>

#include "engine/backend/backend.h"
#include "kvcache/block_pool.h"
#include "kvcache/kv_cache_config.h"

namespace lr {

class RecurrentStates {
public:
    RecurrentStates(const KvModelShape & shape, Backend & backend);

    // Whether the model has recurrent layers at all.
    bool any() const { return bytes_per_sequence_ > 0; }
    uint64_t bytes_per_sequence() const { return bytes_per_sequence_; }

    // The whole block of `seq`'s states, every layer's (allocated and zeroed on first use).
    Result<void *> sequence(SeqId seq);
    // Layer il's state of `seq` in backend memory (allocated with the block).
    Result<void *> layer(SeqId seq, uint32_t il);
    // `seq` starts over: its states are zero again (nothing happens when it holds none).
    void reset(SeqId seq);
    // `seq` is gone: its states are freed.
    void drop(SeqId seq);
    // The whole block of `seq`'s states (every layer's; nullptr when it holds none).
    void * sequence_states(SeqId seq);
    // Bytes layer il holds for `seq` (0 when it holds no state yet).
    uint64_t layer_bytes(SeqId seq, uint32_t il) const;

private:
    void zero(const DeviceBuffer & states);

    Backend & backend_;
    std::vector<uint64_t> offset_;  // [layer] where its state starts in a sequence's block
    std::vector<uint64_t> bytes_;   // [layer] its state's bytes (0: not recurrent)
    uint64_t bytes_per_sequence_ = 0;
    std::map<SeqId, DeviceBuffer> states_;
    std::vector<uint8_t> zeros_;  // host zeros, copied in pieces
};

}  // namespace lr
