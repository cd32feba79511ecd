// Placement: which tier holds each block, moves between tiers, prefetch. Lossless.
#include <algorithm>
#include <cstring>

#include "engine/backend/kv_codec_rows.h"
#include "kvcache/kv_cache.h"

namespace lr {

namespace {
Status data_loss(const std::string & what) { return error(StatusCode::corrupt_data, "KV block lost: " + what); }
}  // namespace

std::vector<BlockId> KvCache::victims(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor) const {
    std::vector<BlockId> out;
    uint64_t bytes = 0;
    auto consider = [&](BlockId id) {
        const BlockMeta & m = pool_.meta(id);
        // Pinning protects what attention reads from the device; a pinned block still on a
        // lower tier may move further down (it is fetched from there).
        if (m.home != home || (m.pinned && home == BlockHome::device) || m.moving || m.prefetch != 0 || bytes >= n_bytes) return;
        out.push_back(id);
        bytes += m.n_bytes;
    };
    // Other sequences first; then the active one's layers in the order it needs them
    // last: the layer just processed, the one before, ... (Belady on the layer cycle).
    for (const auto & [id, s] : seqs_) {
        if (id == active) continue;
        for (const auto & layer : s.blocks) {
            for (BlockId b : layer) consider(b);
        }
    }
    auto it = seqs_.find(active);
    if (it != seqs_.end()) {
        const uint32_t L = shape_.n_layer;
        for (uint32_t k = 1; k <= L && bytes < n_bytes; ++k) {
            const uint32_t m = (layer_cursor + L - k) % L;
            for (BlockId b : it->second.blocks[m]) consider(b);
        }
    }
    return out;
}

Status KvCache::make_room(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor) {
    TierStore * t = store(home);
    if (!t) return error(StatusCode::out_of_memory, "no such tier");
    if (home == BlockHome::disk) {
        if (!disk_writable_) return error(StatusCode::out_of_memory, "the disk tier is disabled");
        // Spilled blocks and the prefix cache share the disk budget; the prefix cache yields.
        if (prefix_) {
            const uint64_t budget = config_.capacities.disk_bytes;
            const uint64_t spill = disk_->used_bytes() + n_bytes;
            if (spill + prefix_->used_bytes() > budget) prefix_->evict_to(spill < budget ? budget - spill : 0);
            disk_->set_capacity(budget - std::min(budget, prefix_->used_bytes()));
        }
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (t->has_room(n_bytes)) return {};
        const uint64_t free = t->capacity_bytes() - std::min(t->capacity_bytes(), t->used_bytes());
        for (BlockId v : victims(home, n_bytes - free, active, layer_cursor)) {
            LR_RETURN_IF_ERROR(demote(v, active, layer_cursor));
            if (t->has_room(n_bytes)) return {};
        }
        // Blocks being prefetched are neither movable nor freeable: let the copies land,
        // which frees their sources and makes them ordinary blocks, and try once more.
        settle_prefetches();
    }
    if (t->has_room(n_bytes)) return {};
    return error(StatusCode::out_of_memory,
                 "the KV cache is full (device " + format_bytes(device_->capacity_bytes()) + ", host " +
                     format_bytes(host_ ? host_->capacity_bytes() : 0) + ", disk " + format_bytes(disk_ ? disk_->capacity_bytes() : 0) +
                     "): lower the context, enable compression (h2o, snapkv, 8-bit KV), or raise a tier budget");
}

Status KvCache::demote(BlockId id, SeqId active, uint32_t layer_cursor) {
    BlockMeta & m = pool_.meta(id);
    // Down one tier; a block with a durable copy in the prefix cache can simply be dropped
    // from memory instead of being written to the spill files.
    if (m.home == BlockHome::device && host_ && host_->capacity_bytes() >= m.n_bytes) {
        return move(id, BlockHome::host, active, layer_cursor);
    }
    if (m.persisted) return move(id, BlockHome::prefix_store, active, layer_cursor);
    if (disk_ && disk_writable_) return move(id, BlockHome::disk, active, layer_cursor);
    if (!disk_writable_ && m.home == BlockHome::host) {
        // The disk failed earlier: RAM keeps what it would have held (reported then).
        host_->grow_capacity(m.n_bytes);
        return {};
    }
    return error(StatusCode::out_of_memory, "the KV cache is full and there is no lower tier to move blocks to: raise the "
                                            "RAM or disk budget, lower the context, or enable compression");
}

Status KvCache::narrow_for_tier(BlockId id, BlockHome to, RecodedBlock & out) {
    out.bytes.clear();
    const KvSettings & k = config_.settings;
    const uint32_t tier_bits = to == BlockHome::host ? k.host_bits : to == BlockHome::disk ? k.disk_bits : 0;
    const BlockMeta & m = pool_.meta(id);
    out.k_codec = KvSettings::narrowed(m.k_codec, tier_bits);
    out.v_codec = KvSettings::narrowed(m.v_codec, tier_bits);
    if (out.k_codec == m.k_codec && out.v_codec == m.v_codec) return {};
    // A block with a durable copy is dropped from memory at no cost instead (and stays
    // exact); a shared one belongs to more than one sequence.
    if (m.persisted || m.ref_count != 1 || m.home == BlockHome::prefix_store) return {};
    // Only aged blocks: the full-precision window stays exact whatever tier holds it.
    auto it = seqs_.find(m.seq);
    if (it == seqs_.end()) return {};
    const std::vector<BlockId> & layer = it->second.blocks[m.layer];
    const size_t b = size_t(std::find(layer.begin(), layer.end(), id) - layer.begin());
    if (b == layer.size() || (b + 1) * block_shape_.block_tokens + k.residual_tokens > it->second.slots_used[m.layer]) return {};
    std::vector<uint8_t> bytes(m.n_bytes);
    LR_RETURN_IF_ERROR(store(m.home)->read(m.slot, bytes.data(), m.n_bytes));
    const KvBlockLayout L{block_shape_, out.k_codec, out.v_codec};
    out.bytes.resize(L.block_bytes());
    kv_recode_block(layout_of(m), bytes.data(), L, out.bytes.data());
    std::memcpy(out.bytes.data() + L.pos_offset(), m.pos.data(), m.pos.size() * sizeof(int32_t));
    return {};
}

Status KvCache::copy_block(const BlockMeta & m, BlockHome to, const TierSlot & dst, std::span<const uint8_t> recoded) {
    if (!recoded.empty()) {
        LR_RETURN_IF_ERROR(store(to)->write(dst, recoded.data(), recoded.size()));
        counters_.bytes_moved += recoded.size();
        tier_stats(m.home).bytes_out += m.n_bytes;
        tier_stats(to).bytes_in += recoded.size();
        return {};
    }
    const size_t n = m.n_bytes;
    if (staging_.size() < n) staging_.resize(n);
    TierStore * src = store(m.home);
    TierStore * out = store(to);
    if (m.home == BlockHome::prefix_store) {
        LR_RETURN_IF_ERROR(prefix_->read(m.chain, m.layer, staging_.data(), n));
        LR_RETURN_IF_ERROR(out->write(dst, staging_.data(), n));
    } else if (src->host_addressable()) {
        LR_RETURN_IF_ERROR(out->write(dst, m.slot.data, n));
    } else if (out->host_addressable()) {
        LR_RETURN_IF_ERROR(src->read(m.slot, dst.data, n));
    } else {
        LR_RETURN_IF_ERROR(src->read(m.slot, staging_.data(), n));
        LR_RETURN_IF_ERROR(out->write(dst, staging_.data(), n));
    }
    counters_.bytes_moved += n;
    tier_stats(m.home).bytes_out += n;
    tier_stats(to).bytes_in += n;
    return {};
}

Status KvCache::move(BlockId id, BlockHome to, SeqId active, uint32_t layer_cursor) {
    BlockMeta & m = pool_.meta(id);
    const BlockHome from = m.home;
    if (to == BlockHome::prefix_store) {
        LR_ASSERT(m.persisted);
        store(from)->release(m.slot, m.n_bytes);
        m.home = to;
        m.slot = {};
        tier_stats(from).bytes_out += m.n_bytes;
        ++counters_.demotions;
        return {};
    }
    // Per-tier codecs: an aged block going down may take the lower tier's narrower codec.
    RecodedBlock recoded;
    LR_RETURN_IF_ERROR(narrow_for_tier(id, to, recoded));
    const uint32_t n_bytes = recoded.bytes.empty() ? m.n_bytes : uint32_t(recoded.bytes.size());
    // Making room moves other blocks (recursively, down the tiers); this one stays put.
    m.moving = true;
    Status room = make_room(to, n_bytes, active, layer_cursor);
    pool_.meta(id).moving = false;
    LR_RETURN_IF_ERROR(room);
    TierStore * dst_store = store(to);
    LR_ASSIGN_OR_RETURN(TierSlot dst, dst_store->allocate(n_bytes));
    Status s = copy_block(m, to, dst, recoded.bytes);
    if (!s.ok()) {
        dst_store->release(dst, n_bytes);
        if (to == BlockHome::disk) {
            // The disk refused (full, I/O error): report it once and stop spilling there.
            report_fault(error(s.code(), "disk tier disabled: " + s.message()));
            disk_writable_ = false;
            if (m.persisted) return move(id, BlockHome::prefix_store, active, layer_cursor);
            // Nowhere lower to go: keep the block in RAM beyond the budget rather than fail.
            if (host_ && from == BlockHome::host) {
                host_->grow_capacity(m.n_bytes);
                return {};
            }
            return error(StatusCode::out_of_memory, "the KV cache is full and the disk tier failed (" + s.message() +
                                                        "): lower the context or enable compression");
        }
        return s;
    }
    if (from != BlockHome::prefix_store) store(from)->release(m.slot, m.n_bytes);
    m.home = to;
    m.slot = dst;
    if (!recoded.bytes.empty()) {
        m.k_codec = recoded.k_codec;
        m.v_codec = recoded.v_codec;
        m.n_bytes = n_bytes;
        m.chain = 0;
        seqs_.at(m.seq).pure_prefix = false;
        ++counters_.narrowed_blocks;
    }
    if (to == BlockHome::device) {
        ++counters_.promotions;
    } else {
        ++counters_.demotions;
    }
    return {};
}

Status KvCache::fetch_to_device(BlockId id, SeqId seq, uint32_t il) {
    const BlockHome from = pool_.meta(id).home;
    Status s = move(id, BlockHome::device, seq, il);
    if (s.code() == StatusCode::corrupt_data || s.code() == StatusCode::io_error || s.code() == StatusCode::not_found) {
        if (from == BlockHome::disk) disk_writable_ = false;  // a disk that loses data gets no more
        return data_loss(s.message());
    }
    return s;
}

Status KvCache::ensure_on_device(std::span<const BlockId> ids, SeqId seq, uint32_t il) {
    // Pin first, so that making room never takes a block this view needs.
    for (BlockId id : ids) pool_.meta(id).pinned = true;
    for (BlockId id : ids) {
        BlockMeta & m = pool_.meta(id);
        ++counters_.block_reads;
        Status st;
        if (m.prefetch != 0) {
            bool ready = false;
            st = adopt_prefetch(id, ready);
            if (st.ok() && ready) {
                ++counters_.block_hits;
                ++counters_.prefetch_hits;
            }
        } else if (m.home == BlockHome::device) {
            ++counters_.block_hits;
        } else {
            st = fetch_to_device(id, seq, il);
        }
        if (!st.ok()) {
            for (BlockId p : ids) pool_.meta(p).pinned = false;
            return st;
        }
        pool_.meta(id).last_use = ++tick_;
    }
    return {};
}

void KvCache::start_prefetch(SeqId seq, uint32_t il) {
    Sequence & s = seqs_.at(seq);
    for (BlockId id : s.blocks[il]) {
        BlockMeta & m = pool_.meta(id);
        if (m.home == BlockHome::device || m.prefetch != 0) continue;
        // Room only from blocks needed later than layer il; stop at the first refusal.
        if (!device_->has_room(m.n_bytes) && !make_room(BlockHome::device, m.n_bytes, seq, (il + 1) % shape_.n_layer).ok()) return;
        BlockMeta & mm = pool_.meta(id);
        Result<TierSlot> dst = device_->allocate(mm.n_bytes);
        if (!dst.ok()) return;
        mm.prefetch_slot = *dst;
        TierStore * src = store(mm.home);
        TierStore * dev = device_.get();
        PrefixStore * prefix = prefix_.get();
        const BlockHome home = mm.home;
        const TierSlot src_slot = mm.slot, dst_slot = *dst;
        const uint64_t chain = mm.chain;
        const uint32_t layer = mm.layer, n = mm.n_bytes;
        // The job touches only the two slots, which nothing else uses until it is adopted.
        mm.prefetch = io_->submit([=]() -> Status {
            thread_local std::vector<uint8_t> buffer;
            if (home != BlockHome::prefix_store && src->host_addressable()) return dev->write(dst_slot, src_slot.data, n);
            buffer.resize(n);
            if (home == BlockHome::prefix_store) {
                LR_RETURN_IF_ERROR(prefix->read(chain, layer, buffer.data(), n));
            } else {
                LR_RETURN_IF_ERROR(src->read(src_slot, buffer.data(), n));
            }
            return dev->write(dst_slot, buffer.data(), n);
        });
        ++counters_.prefetches;
    }
}

Status KvCache::adopt_prefetch(BlockId id, bool & was_ready) {
    BlockMeta & m = pool_.meta(id);
    was_ready = io_->finished(m.prefetch);
    Status s = io_->wait(m.prefetch);
    m.prefetch = 0;
    if (!s.ok()) {
        device_->release(m.prefetch_slot, m.n_bytes);
        if (m.home == BlockHome::disk) disk_writable_ = false;
        return data_loss(s.message());
    }
    const size_t n = m.n_bytes;
    counters_.bytes_moved += n;
    tier_stats(m.home).bytes_out += n;
    tier_stats(BlockHome::device).bytes_in += n;
    if (m.home != BlockHome::prefix_store) store(m.home)->release(m.slot, n);
    m.home = BlockHome::device;
    m.slot = m.prefetch_slot;
    ++counters_.promotions;
    return {};
}

void KvCache::settle_prefetches() {
    for (auto & [seq, s] : seqs_) {
        for (auto & layer : s.blocks) {
            for (BlockId id : layer) {
                bool ready = false;
                if (pool_.meta(id).prefetch == 0) continue;
                if (Status st = adopt_prefetch(id, ready); !st.ok()) report_fault(st);
            }
        }
    }
}

}  // namespace lr
