#include "kvcache/recurrent_snapshots.h"

#include <algorithm>

#include "engine/backend/kv_block_layout.h"
#include "engine/common/assert.h"

namespace lr {

uint32_t snapshot_interval(std::span<const KvLayerSpec> layers, uint32_t n_head_kv, uint32_t head_dim, uint32_t block_tokens) {
    // A model without full-attention layers (or with very large states) still cuts back
    // within kMaxIntervalTokens.
    constexpr uint64_t kMaxIntervalTokens = 4096;
    uint64_t state_bytes = 0, kv_bytes_per_token = 0;
    for (const KvLayerSpec & l : layers) {
        state_bytes += l.kind == KvLayerKind::recurrent ? l.state_bytes : 0;
        if (l.kind == KvLayerKind::full) kv_bytes_per_token += 2 * uint64_t(n_head_kv) * kv_codec_row_bytes(KvCodec::f16, head_dim);
    }
    const uint64_t tokens = kv_bytes_per_token ? (state_bytes + kv_bytes_per_token - 1) / kv_bytes_per_token : kMaxIntervalTokens;
    const uint64_t blocks = std::max<uint64_t>(1, (std::min(tokens, kMaxIntervalTokens) + block_tokens - 1) / block_tokens);
    return uint32_t(blocks * block_tokens);
}

Status RecurrentSnapshots::take(SeqId seq, uint32_t n_tokens, const void * states, uint32_t interval) {
    std::map<uint32_t, DeviceBuffer> & mine = by_seq_[seq];
    if (n_tokens % interval != 0) std::erase_if(mine, [&](const auto & s) { return s.first % interval != 0 && s.first < n_tokens; });
    auto it = mine.find(n_tokens);
    if (it == mine.end()) {
        LR_ASSIGN_OR_RETURN(DeviceBuffer copy, backend_.alloc(size_t(bytes_)));
        it = mine.emplace(n_tokens, std::move(copy)).first;
    }
    backend_.copy_on_device(it->second.data(), states, size_t(bytes_));
    return {};
}

uint32_t RecurrentSnapshots::at_or_before(SeqId seq, uint32_t n_tokens, uint32_t align) const {
    auto s = by_seq_.find(seq);
    if (s == by_seq_.end()) return 0;
    for (auto it = s->second.upper_bound(n_tokens); it != s->second.begin();) {
        --it;
        if (it->first % align == 0) return it->first;
    }
    return 0;
}

bool RecurrentSnapshots::has(SeqId seq, uint32_t n_tokens) const {
    auto s = by_seq_.find(seq);
    return s != by_seq_.end() && s->second.contains(n_tokens);
}

void RecurrentSnapshots::restore(SeqId seq, uint32_t n_tokens, void * states) {
    const DeviceBuffer & copy = by_seq_.at(seq).at(n_tokens);
    backend_.copy_on_device(states, copy.data(), size_t(bytes_));
}

void RecurrentSnapshots::drop_after(SeqId seq, uint32_t n_tokens) {
    auto s = by_seq_.find(seq);
    if (s == by_seq_.end()) return;
    s->second.erase(s->second.upper_bound(n_tokens), s->second.end());
    if (s->second.empty()) by_seq_.erase(s);
}

uint64_t RecurrentSnapshots::count(SeqId seq) const {
    auto s = by_seq_.find(seq);
    return s == by_seq_.end() ? 0 : s->second.size();
}

}  // namespace lr
