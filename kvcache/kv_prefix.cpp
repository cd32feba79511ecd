#include "kvcache/kv_prefix.h"

#include <cstring>

#include "engine/common/assert.h"

namespace lr {

KvPrefixCache::KvPrefixCache(KvCacheState & state, KvPlacement & placement) : state_(state), placement_(placement) {
    // The chain starts from everything that makes a block's bytes: the model file, the
    // codecs and the block shape (and the recurrent states' size and layout version). Any
    // change restores nothing.
    if (state_.config.model_identity != 0) {
        const KvBlockLayout & L = state_.layout;
        const KvBlockShape & b = state_.block_shape;
        uint64_t state_bytes = 0;
        for (const KvLayerSpec & l : state_.shape.layers) state_bytes += l.kind == KvLayerKind::recurrent ? l.state_bytes : 0;
        constexpr uint64_t kStatesLayoutVersion = 1;
        std::vector<uint64_t> seed = {state_.config.model_identity,
                                      uint64_t(L.k_codec),
                                      uint64_t(L.v_codec),
                                      b.block_tokens,
                                      b.n_head_kv,
                                      b.head_dim,
                                      L.block_bytes()};
        // Models without states keep the chains they always had.
        if (state_bytes > 0) seed.insert(seed.end(), {state_bytes, kStatesLayoutVersion});
        chain_seed_ = PrefixStore::chain_next(0x4c52, std::span(reinterpret_cast<const int32_t *>(seed.data()), seed.size() * 2));
    }
}

KvPrefixCache::~KvPrefixCache() { collect(true); }

void KvPrefixCache::note_full_blocks(SeqId seq, uint32_t n_full_before, std::vector<uint8_t> states) {
    KvSequence & s = state_.seqs.at(seq);
    if (!s.pure_prefix) return;
    const uint32_t bt = state_.block_shape.block_tokens;
    const uint32_t n_full = s.n_tokens() / bt;
    for (uint32_t b = uint32_t(s.chains.size()); b < n_full; ++b) {
        const uint64_t previous = b == 0 ? chain_seed_ : s.chains[b - 1];
        s.chains.push_back(PrefixStore::chain_next(previous, std::span(s.tokens).subspan(size_t(b) * bt, bt)));
    }
    PrefixStore * prefix = placement_.prefix();
    const bool persist = persists();
    if (persist) {
        const uint64_t spill = placement_.disk() ? placement_.disk()->used_bytes() : 0;
        const uint64_t budget = state_.config.capacities.disk_bytes;
        prefix->set_capacity(budget - std::min(budget, spill));
    }
    // The ubatch's new full blocks go to the store in one job (one transaction).
    std::vector<PrefixBlockWrite> writes;  // their bytes in `copies`
    std::vector<std::vector<uint8_t>> copies;
    PersistJob job;
    for (uint32_t b = n_full_before; b < n_full; ++b) {
        for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
            const BlockId * held = s.layers[il].at_depth(b);
            if (!held) continue;
            const BlockId id = *held;
            BlockMeta & m = state_.pool.meta(id);
            if (m.persisted || m.place.home == BlockHome::prefix_store) continue;
            m.chain = s.chains[b];  // other sequences with this prefix may share it now
            if (!persist) continue;
            // Copy the bytes now: the block may move or change before the write runs.
            std::vector<uint8_t> copy(m.n_bytes);
            TierStore * src = placement_.store(m.place.home);
            if (src->host_addressable()) {
                std::memcpy(copy.data(), m.place.slot.data, m.n_bytes);
            } else if (!src->read(m.place.slot, copy.data(), m.n_bytes).ok()) {
                continue;
            }
            writes.push_back({.chain = m.chain, .layer = il, .depth = b});
            copies.push_back(std::move(copy));
            job.blocks.push_back({id, m.chain});
        }
    }
    if (persist && !states.empty()) {
        LR_ASSERT(s.n_tokens() % bt == 0 && n_full > 0);
        writes.push_back({.chain = s.chains[n_full - 1], .layer = PrefixStore::kStatesLayer, .depth = n_full - 1});
        copies.push_back(std::move(states));
    }
    if (writes.empty()) return;
    job.job = placement_.io().submit([prefix, writes = std::move(writes), copies = std::move(copies)]() mutable {
        for (size_t i = 0; i < writes.size(); ++i) writes[i].bytes = copies[i];
        return prefix->write(std::span(writes));
    });
    // The durable copies count once written (collect); until then the blocks are demoted
    // like any other.
    persisting_.push_back(std::move(job));
}

void KvPrefixCache::collect(bool wait) {
    std::vector<PersistJob> still;
    for (const PersistJob & p : persisting_) {
        if (!wait && !placement_.io().finished(p.job)) {
            still.push_back(p);
            continue;
        }
        Status s = placement_.io().wait(p.job);
        if (s.ok()) {
            for (const auto & [block, chain] : p.blocks) {
                BlockMeta & m = state_.pool.meta(block);
                if (m.ref_count > 0 && m.chain == chain) m.persisted = true;
            }
        } else if (writes_ok_) {
            state_.report_fault(error(s.code(), "prefix cache disabled: " + s.message()));
            ++state_.counters.tiers[size_t(KvTier::disk)].faults;
            writes_ok_ = false;
        }
    }
    persisting_ = std::move(still);
}

bool KvPrefixCache::share_live(SeqId seq, uint64_t chain, uint32_t depth, std::vector<BlockId> & out) const {
    for (const auto & [id, other] : state_.seqs) {
        if (id == seq || other.chains.size() <= depth || other.chains[depth] != chain) continue;
        out.assign(state_.shape.n_layer, 0);
        uint32_t found = 0;
        for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
            if (!state_.shape.stores(il)) continue;
            const BlockId * held = other.layers[il].at_depth(depth);  // a sliding window may have let it go
            if (!held || state_.pool.meta(*held).chain != chain) break;
            out[il] = *held;
            ++found;
        }
        if (found == state_.shape.n_storing_layers()) return true;
    }
    return false;
}

uint32_t KvPrefixCache::restore(SeqId seq, std::span<const int32_t> upcoming, uint32_t keep_last, const StatesAt & states_at) {
    PrefixStore * prefix = placement_.prefix();
    if ((!prefix && state_.seqs.size() < 2) || upcoming.size() <= keep_last) return 0;
    KvSequence & s = state_.seqs.at(seq);
    const uint32_t bt = state_.block_shape.block_tokens;
    if (!s.pure_prefix || s.n_tokens() % bt != 0) return 0;
    if (prefix) collect(true);  // our own pending writes may be what we are about to look up
    const uint32_t n_storing = state_.shape.n_storing_layers();
    const uint32_t first_depth = uint32_t(s.chains.size());

    // The blocks on offer, in order: a live sequence's (to share) or the store's.
    struct Found {
        uint64_t chain;
        std::vector<BlockId> live;  // empty: in the store
    };
    std::vector<Found> found;
    uint64_t chain = s.chains.empty() ? chain_seed_ : s.chains.back();
    for (size_t k = 0; k < (upcoming.size() - keep_last) / bt; ++k) {
        chain = PrefixStore::chain_next(chain, upcoming.subspan(k * bt, bt));
        ++state_.counters.prefix_lookups;
        Found f{.chain = chain, .live = {}};
        if (!share_live(seq, chain, first_depth + uint32_t(k), f.live) && !(prefix && prefix->contains(chain, n_storing))) break;
        found.push_back(std::move(f));
    }
    // A recurrent model stops where its states can be had.
    if (states_at) {
        while (!found.empty() && !states_at(found.back().chain, first_depth + uint32_t(found.size()) - 1)) found.pop_back();
    }

    uint32_t restored = 0;
    for (size_t k = 0; k < found.size(); ++k) {
        const Found & f = found[k];
        if (!f.live.empty()) {
            for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
                if (!state_.shape.stores(il)) continue;
                state_.pool.retain(f.live[il]);
                s.layers[il].push(f.live[il]);
                s.layers[il].slots_used += bt;
            }
            state_.counters.shared_blocks += n_storing;
        } else {
            const int32_t first_pos = int32_t(s.n_tokens());
            for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
                if (!state_.shape.stores(il)) continue;
                const KvBlockLayout L = state_.write_layout(il);
                const BlockId id = state_.pool.allocate();
                BlockMeta & m = state_.pool.meta(id);
                m.owner = seq;
                m.layer = il;
                m.k_codec = L.k_codec;
                m.v_codec = L.v_codec;
                m.n_bytes = uint32_t(L.block_bytes());
                m.place.home = BlockHome::prefix_store;  // loaded when attention needs it
                m.place.born = m.place.used = state_.tick();
                m.chain = f.chain;
                m.persisted = true;
                m.pos.resize(L.n_slots());
                for (uint32_t g = 0; g < L.shape.n_head_kv; ++g) {
                    for (uint32_t sl = 0; sl < bt; ++sl) m.pos[L.pos_index(g, sl)] = first_pos + int32_t(sl);
                }
                s.layers[il].push(id);
                s.layers[il].slots_used += bt;
            }
            prefix->touch(f.chain);
        }
        state_.counters.prefix_hits += n_storing;
        const std::span<const int32_t> block_tokens = upcoming.subspan(k * bt, bt);
        s.tokens.insert(s.tokens.end(), block_tokens.begin(), block_tokens.end());
        s.chains.push_back(f.chain);
        s.next_pos += int32_t(bt);
        restored += bt;
    }
    state_.counters.restored_tokens += restored;
    update_saved();
    return restored;
}

void KvPrefixCache::note_prefill(uint32_t n_tokens, double ms) {
    state_.counters.prefill_ms += ms;
    computed_tokens_ += n_tokens;
    update_saved();
}

void KvPrefixCache::update_saved() {
    KvStats & c = state_.counters;
    if (computed_tokens_ > 0) c.prefill_ms_saved = c.prefill_ms * double(c.restored_tokens) / computed_tokens_;
}

}  // namespace lr
