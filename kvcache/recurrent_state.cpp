#include "kvcache/recurrent_state.h"

#include <algorithm>

#include "engine/common/assert.h"

namespace lr {

namespace {
// States are zeroed from a host buffer of at most this size, piece by piece.
constexpr uint64_t kZeroPieceBytes = uint64_t(1) << 20;
}  // namespace

RecurrentStates::RecurrentStates(const KvModelShape & shape, Backend & backend) : backend_(backend) {
    offset_.assign(shape.n_layer, 0);
    bytes_.assign(shape.n_layer, 0);
    for (uint32_t il = 0; il < shape.n_layer; ++il) {
        if (shape.kind(il) != KvLayerKind::recurrent) continue;
        // Each state starts on a cache line of its own.
        offset_[il] = bytes_per_sequence_;
        bytes_[il] = shape.layers[il].state_bytes;
        bytes_per_sequence_ += (bytes_[il] + 63) / 64 * 64;
    }
}

void RecurrentStates::zero(const DeviceBuffer & states) {
    zeros_.resize(size_t(std::min(bytes_per_sequence_, kZeroPieceBytes)), 0);
    auto * dst = states.as<uint8_t>();
    for (uint64_t at = 0; at < bytes_per_sequence_; at += zeros_.size()) {
        backend_.copy_to_device(dst + at, zeros_.data(), size_t(std::min<uint64_t>(zeros_.size(), bytes_per_sequence_ - at)));
    }
}

Result<void *> RecurrentStates::sequence(SeqId seq) {
    LR_ASSERT(any());
    auto it = states_.find(seq);
    if (it == states_.end()) {
        LR_ASSIGN_OR_RETURN(DeviceBuffer states, backend_.alloc(size_t(bytes_per_sequence_)));
        zero(states);
        it = states_.emplace(seq, std::move(states)).first;
    }
    return it->second.data();
}

Result<void *> RecurrentStates::layer(SeqId seq, uint32_t il) {
    LR_ASSERT(il < bytes_.size() && bytes_[il] > 0);
    LR_ASSIGN_OR_RETURN(void * states, sequence(seq));
    return static_cast<void *>(static_cast<uint8_t *>(states) + offset_[il]);
}

void RecurrentStates::reset(SeqId seq) {
    auto it = states_.find(seq);
    if (it != states_.end()) zero(it->second);
}

void * RecurrentStates::sequence_states(SeqId seq) {
    auto it = states_.find(seq);
    return it == states_.end() ? nullptr : it->second.data();
}

void RecurrentStates::drop(SeqId seq) { states_.erase(seq); }

uint64_t RecurrentStates::layer_bytes(SeqId seq, uint32_t il) const { return states_.contains(seq) ? bytes_[il] : 0; }

}  // namespace lr
