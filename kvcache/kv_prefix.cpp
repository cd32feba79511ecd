// The prefix cache: full blocks of an uncompressed prefix persisted in the background,
// restored instead of recomputed by a later session with the same beginning.
#include <cstring>

#include "kvcache/kv_cache.h"

namespace lr {

void KvCache::persist_full_blocks(SeqId seq, uint32_t first_block, uint32_t end_block) {
    if (!prefix_ || !prefix_writes_ok_) return;
    Sequence & s = seqs_.at(seq);
    if (!s.pure_prefix) return;
    const uint64_t spill = disk_ ? disk_->used_bytes() : 0;
    prefix_->set_capacity(config_.capacities.disk_bytes - std::min(config_.capacities.disk_bytes, spill));
    for (uint32_t b = first_block; b < end_block; ++b) {
        for (uint32_t il = 0; il < shape_.n_layer; ++il) {
            if (b >= s.blocks[il].size()) continue;
            const BlockId id = s.blocks[il][b];
            BlockMeta & m = pool_.meta(id);
            if (m.persisted || m.home == BlockHome::prefix_store) continue;
            m.chain = s.chains[b];
            // Copy the bytes now: the block may move or change before the write runs.
            std::vector<uint8_t> bytes(m.n_bytes);
            TierStore * src = store(m.home);
            if (src->host_addressable()) {
                std::memcpy(bytes.data(), m.slot.data, m.n_bytes);
            } else if (!src->read(m.slot, bytes.data(), m.n_bytes).ok()) {
                continue;
            }
            PrefixStore * prefix = prefix_.get();
            const uint64_t chain = m.chain;
            const uint32_t layer = il, depth = b;
            const IoThread::JobId job = io_->submit([prefix, chain, layer, depth, bytes = std::move(bytes)]() {
                return prefix->write(chain, layer, depth, bytes.data(), bytes.size());
            });
            // The durable copy counts once written (collect_persisted); until then the block
            // is demoted like any other.
            persisting_.push_back({job, id, chain});
        }
    }
}

void KvCache::collect_persisted(bool wait) {
    std::vector<PersistJob> still;
    for (const PersistJob & p : persisting_) {
        if (!wait && !io_->finished(p.job)) {
            still.push_back(p);
            continue;
        }
        Status s = io_->wait(p.job);
        BlockMeta & m = pool_.meta(p.block);
        if (s.ok()) {
            if (m.ref_count > 0 && m.chain == p.chain) m.persisted = true;
        } else if (prefix_writes_ok_) {
            report_fault(error(s.code(), "prefix cache disabled: " + s.message()));
            prefix_writes_ok_ = false;
        }
    }
    persisting_ = std::move(still);
}

uint32_t KvCache::restore_prefix(SeqId seq, std::span<const int32_t> upcoming, uint32_t keep_last) {
    if (!prefix_ || upcoming.size() <= keep_last) return 0;
    Sequence & s = seqs_[seq];
    if (s.blocks.empty()) {
        s.blocks.resize(shape_.n_layer);
        s.slots_used.assign(shape_.n_layer, 0);
    }
    const uint32_t bt = block_shape_.block_tokens;
    if (!s.pure_prefix || s.n_committed % bt != 0 || !s.pending.empty()) return 0;
    collect_persisted(true);  // our own pending writes may be what we are about to look up
    const size_t n_blocks = (upcoming.size() - keep_last) / bt;
    uint32_t restored = 0;
    uint64_t chain = s.chains.empty() ? chain_seed_ : s.chains.back();
    for (size_t k = 0; k < n_blocks; ++k) {
        const std::span<const int32_t> block_tokens = upcoming.subspan(k * bt, bt);
        chain = PrefixStore::chain_next(chain, block_tokens);
        ++counters_.prefix_lookups;
        if (!prefix_->contains(chain, shape_.n_layer)) break;
        const int32_t first_pos = int32_t(s.n_committed);
        for (uint32_t il = 0; il < shape_.n_layer; ++il) {
            const BlockId id = pool_.allocate();
            BlockMeta & m = pool_.meta(id);
            m.seq = seq;
            m.layer = il;
            m.k_codec = layout_.k_codec;
            m.v_codec = layout_.v_codec;
            m.n_bytes = uint32_t(written_block_bytes());
            m.home = BlockHome::prefix_store;  // loaded when attention needs it
            m.chain = chain;
            m.persisted = true;
            m.pos.resize(layout_.n_slots());
            for (uint32_t g = 0; g < block_shape_.n_head_kv; ++g) {
                for (uint32_t sl = 0; sl < bt; ++sl) m.pos[layout_.pos_index(g, sl)] = first_pos + int32_t(sl);
            }
            if (collects_mass(s)) m.importance.assign(layout_.n_slots(), 0.0f);
            s.blocks[il].push_back(id);
            s.slots_used[il] += bt;
        }
        prefix_->touch(chain);
        counters_.prefix_hits += shape_.n_layer;
        s.tokens.insert(s.tokens.end(), block_tokens.begin(), block_tokens.end());
        s.chains.push_back(chain);
        s.n_committed += bt;
        s.next_pos += int32_t(bt);
        restored += bt;
    }
    counters_.restored_tokens += restored;
    if (computed_tokens_ > 0) counters_.prefill_ms_saved = counters_.prefill_ms * double(counters_.restored_tokens) / computed_tokens_;
    publish_stats();
    return restored;
}

}  // namespace lr
