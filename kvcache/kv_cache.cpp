#include "kv_cache.h"

#include <algorithm>
#include <cstring>

namespace lr {

namespace {
constexpr uint64_t kUnbounded = UINT64_MAX / 4;

Status data_loss(const std::string & what) { return error(StatusCode::corrupt_data, "KV block lost: " + what); }

}  // namespace

Status validate(const KvCacheConfig & config, const KvModelShape & shape) {
    LR_RETURN_IF_ERROR(validate(config.settings));
    if (config.max_tokens == 0) return error(StatusCode::invalid_argument, "the context size must be at least 1 token");
    if (shape.n_layer == 0 || shape.n_head_kv == 0 || shape.head_dim == 0) {
        return error(StatusCode::invalid_argument, "the model has an empty KV shape");
    }
    for (KvCodec c : {config.settings.k_codec(), config.settings.v_codec()}) {
        if (!kv_codec_supports(c, shape.head_dim)) {
            return error(StatusCode::invalid_argument, "KV codec " + std::string(kv_codec_name(c)) + " cannot hold heads of " +
                         std::to_string(shape.head_dim) + " values");
        }
    }
    return {};
}

Result<std::unique_ptr<KvCache>> KvCache::create(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend) {
    LR_RETURN_IF_ERROR(validate(config, shape));
    std::unique_ptr<KvCache> cache(new KvCache(config, shape, backend));
    LR_RETURN_IF_ERROR(cache->open_tiers());
    cache->publish_stats();
    return cache;
}

KvCache::KvCache(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend)
    : config_(config), shape_(shape), backend_(backend) {
    if (!config_.io) config_.io = posix_file_io();
    block_shape_ = {config.settings.block_tokens, shape.n_head_kv, shape.head_dim};
    layout_.shape = block_shape_;
    // Blocks are written in full precision; the codecs of the settings apply when a block
    // leaves the full-precision window.
    layout_.k_codec = config.settings.k_bits == 32 ? KvCodec::f32 : KvCodec::f16;
    layout_.v_codec = config.settings.v_bits == 32 ? KvCodec::f32 : KvCodec::f16;
    empty_block_.assign(layout_.block_bytes(), 0);
    auto * pos = reinterpret_cast<int32_t *>(empty_block_.data() + layout_.pos_offset());
    std::fill_n(pos, layout_.n_slots(), kInvalidPos);
    staging_.resize(layout_.block_bytes());
    // The chain starts from everything that makes a block's bytes: the model file, the
    // codecs and the block shape. Any change restores nothing.
    if (config_.model_identity != 0) {
        const uint64_t seed[] = {config_.model_identity, uint64_t(layout_.k_codec), uint64_t(layout_.v_codec),
                                 block_shape_.block_tokens, block_shape_.n_head_kv, block_shape_.head_dim, layout_.block_bytes()};
        chain_seed_ = PrefixStore::chain_next(0x4c52, std::span(reinterpret_cast<const int32_t *>(seed), sizeof seed / 4));
    }
    counters_.tiers[0].name = "device";
    counters_.tiers[1].name = "host";
    counters_.tiers[2].name = "disk";
    counters_.policy = describe(config.settings);
}

KvCache::~KvCache() {
    if (!io_) return;
    collect_persisted(true);
    settle_prefetches();
}

Status KvCache::open_tiers() {
    const KvTierCapacities & c = config_.capacities;
    device_ = MemoryTier::device(backend_, c.device_bytes > 0 ? c.device_bytes : kUnbounded);
    if (c.host_bytes > 0) host_ = MemoryTier::host(c.host_bytes);
    io_ = std::make_unique<IoThread>();
    if (config_.dir.empty() || c.disk_bytes == 0) return {};
    Result<std::unique_ptr<DiskTier>> disk = DiskTier::create(config_.dir, c.disk_bytes, config_.io);
    if (disk.ok()) {
        disk_ = std::move(disk).value();
    } else {
        report_fault(error(disk.status().code(), "disk tier disabled: " + disk.status().message()));
    }
    if (config_.settings.prefix_cache && config_.model_identity != 0 && disk_) {
        Result<std::unique_ptr<PrefixStore>> store = PrefixStore::open(config_.dir, c.disk_bytes, config_.io);
        if (store.ok()) {
            prefix_ = std::move(store).value();
        } else {
            report_fault(error(store.status().code(), "prefix cache disabled: " + store.status().message()));
        }
    }
    return {};
}

TierStore * KvCache::store(BlockHome home) const {
    switch (home) {
        case BlockHome::device: return device_.get();
        case BlockHome::host: return host_.get();
        case BlockHome::disk: return disk_.get();
        case BlockHome::prefix_store: return nullptr;
    }
    return nullptr;
}

KvTierStats & KvCache::tier_stats(BlockHome home) {
    switch (home) {
        case BlockHome::device: return counters_.tiers[0];
        case BlockHome::host: return counters_.tiers[1];
        default: return counters_.tiers[2];
    }
}

uint32_t KvCache::n_tokens(SeqId seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : it->second.n_committed;
}

void KvCache::report_fault(const Status & s) {
    ++counters_.faults;
    counters_.last_fault = s.message();
}

// ---- Placement ---------------------------------------------------------------------------

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
    if (m.home == BlockHome::device && host_) return move(id, BlockHome::host, active, layer_cursor);
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

Status KvCache::copy_block(const BlockMeta & m, BlockHome to, const TierSlot & dst) {
    const size_t n = m.n_bytes;
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
    // Making room moves other blocks (recursively, down the tiers); this one stays put.
    m.moving = true;
    Status room = make_room(to, m.n_bytes, active, layer_cursor);
    pool_.meta(id).moving = false;
    LR_RETURN_IF_ERROR(room);
    TierStore * dst_store = store(to);
    LR_ASSIGN_OR_RETURN(TierSlot dst, dst_store->allocate(m.n_bytes));
    Status s = copy_block(m, to, dst);
    if (!s.ok()) {
        dst_store->release(dst, m.n_bytes);
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

void KvCache::start_prefetch(SeqId seq, uint32_t il) {
    Sequence & s = seqs_.at(seq);
    for (BlockId id : s.blocks[il]) {
        BlockMeta & m = pool_.meta(id);
        if (m.home == BlockHome::device || m.prefetch != 0) continue;
        // Room only from blocks needed later than layer il; stop at the first refusal.
        if (!device_->has_room(m.n_bytes) && !make_room(BlockHome::device, m.n_bytes, seq, (il + 1) % shape_.n_layer).ok()) return;
        Result<TierSlot> dst = device_->allocate(m.n_bytes);
        if (!dst.ok()) return;
        m.prefetch_slot = *dst;
        TierStore * src = store(m.home);
        TierStore * dev = device_.get();
        PrefixStore * prefix = prefix_.get();
        const BlockHome home = m.home;
        const TierSlot src_slot = m.slot, dst_slot = *dst;
        const uint64_t chain = m.chain;
        const uint32_t layer = m.layer, n = m.n_bytes;
        // The job touches only the two slots, which nothing else uses until it is adopted.
        m.prefetch = io_->submit([=]() -> Status {
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
                if (pool_.meta(id).prefetch != 0) (void)adopt_prefetch(id, ready);
            }
        }
    }
}

// ---- Blocks --------------------------------------------------------------------------------

Result<BlockId> KvCache::new_block(SeqId seq, uint32_t il, uint32_t index) {
    LR_RETURN_IF_ERROR(make_room(BlockHome::device, block_bytes(), seq, il));
    LR_ASSIGN_OR_RETURN(TierSlot slot, device_->allocate(block_bytes()));
    LR_RETURN_IF_ERROR(device_->write(slot, empty_block_.data(), block_bytes()));
    const BlockId id = pool_.allocate();
    BlockMeta & m = pool_.meta(id);
    m.seq = seq;
    m.layer = il;
    m.index = index;
    m.k_codec = layout_.k_codec;
    m.v_codec = layout_.v_codec;
    m.n_bytes = uint32_t(block_bytes());
    m.home = BlockHome::device;
    m.slot = slot;
    return id;
}

void KvCache::free_block(BlockId id) {
    BlockMeta & m = pool_.meta(id);
    if (m.prefetch != 0) {
        (void)io_->wait(m.prefetch);
        device_->release(m.prefetch_slot, m.n_bytes);
        m.prefetch = 0;
    }
    if (m.ref_count > 1) {
        pool_.release(id);
        return;
    }
    if (m.home != BlockHome::prefix_store && store(m.home)) store(m.home)->release(m.slot, m.n_bytes);
    pool_.release(id);
}

Status KvCache::clear_positions(BlockId id, uint32_t first_slot) {
    BlockMeta & m = pool_.meta(id);
    if (m.home != BlockHome::device) LR_RETURN_IF_ERROR(fetch_to_device(id, m.seq, m.layer));
    LR_RETURN_IF_ERROR(device_->read(m.slot, staging_.data(), m.n_bytes));
    const KvBlockLayout layout{block_shape_, m.k_codec, m.v_codec};
    auto * pos = reinterpret_cast<int32_t *>(staging_.data() + layout.pos_offset());
    for (uint32_t g = 0; g < block_shape_.n_head_kv; ++g) {
        for (uint32_t s = first_slot; s < block_shape_.block_tokens; ++s) pos[layout.pos_index(g, s)] = kInvalidPos;
    }
    LR_RETURN_IF_ERROR(device_->write(m.slot, staging_.data(), m.n_bytes));
    m.n_filled = first_slot;
    m.chain = 0;  // no longer the full block the prefix cache knows
    m.persisted = false;
    return {};
}

// ---- The ubatch protocol ---------------------------------------------------------------------

Status KvCache::reserve(SeqId seq, std::span<const int32_t> tokens) {
    Sequence & s = seqs_[seq];
    LR_ASSERT(s.pending.empty());  // commit or rollback the previous ubatch first
    if (s.blocks.empty()) s.blocks.resize(shape_.n_layer);
    if (size_t(s.n_committed) + tokens.size() > config_.max_tokens) {
        return error(StatusCode::context_full, "the context holds " + std::to_string(config_.max_tokens) + " tokens; " +
                     std::to_string(s.n_committed) + " are used and " + std::to_string(tokens.size()) + " more do not fit");
    }
    s.pending.assign(tokens.begin(), tokens.end());
    s.write_slots.resize(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) s.write_slots[i] = s.n_committed + uint32_t(i);
    return {};
}

Result<PagedKvView> KvCache::layer_view(SeqId seq, uint32_t il) {
    Sequence & s = seqs_.at(seq);
    LR_ASSERT(il < shape_.n_layer);
    const uint32_t bt = block_shape_.block_tokens;
    std::vector<BlockId> & layer = s.blocks[il];
    // Pin first, so that making room never takes a block this layer needs.
    for (BlockId id : layer) pool_.meta(id).pinned = true;
    for (size_t b = 0; b < layer.size(); ++b) {
        const BlockId id = layer[b];
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
            for (BlockId p : layer) pool_.meta(p).pinned = false;
            if (st.code() == StatusCode::corrupt_data) {
                lose_sequence_from(seq, uint32_t(b), st);
                return data_loss("recompute from position " + std::to_string(*s.lost_from));
            }
            return st;
        }
        m.last_use = ++tick_;
    }
    const size_t needed = (size_t(s.n_committed) + s.pending.size() + bt - 1) / bt;
    while (layer.size() < needed) {
        Result<BlockId> id = new_block(seq, il, uint32_t(layer.size()));
        if (!id.ok()) {
            for (BlockId p : layer) pool_.meta(p).pinned = false;
            return id.status();
        }
        pool_.meta(*id).pinned = true;
        layer.push_back(*id);
    }
    if (shape_.n_layer > 1 && il + 1 < shape_.n_layer) start_prefetch(seq, il + 1);
    s.view_blocks.clear();
    for (BlockId id : layer) {
        const BlockMeta & m = pool_.meta(id);
        s.view_blocks.push_back({m.slot.data, m.k_codec, m.v_codec});
    }
    PagedKvView view;
    view.shape = block_shape_;
    view.blocks = s.view_blocks;
    view.write_slots = s.write_slots;
    return view;
}

void KvCache::end_layer(SeqId seq, uint32_t il) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    for (BlockId id : it->second.blocks[il]) pool_.meta(id).pinned = false;
}

void KvCache::commit(SeqId seq) {
    Sequence & s = seqs_.at(seq);
    const uint32_t bt = block_shape_.block_tokens;
    const uint32_t full_before = s.n_committed / bt;
    s.tokens.insert(s.tokens.end(), s.pending.begin(), s.pending.end());
    s.n_committed += uint32_t(s.pending.size());
    s.pending.clear();
    s.write_slots.clear();
    for (auto & layer : s.blocks) {
        for (size_t b = full_before; b < layer.size(); ++b) {
            pool_.meta(layer[b]).n_filled = std::min<uint32_t>(bt, s.n_committed - std::min<uint32_t>(s.n_committed, uint32_t(b) * bt));
        }
    }
    const uint32_t full_after = s.n_committed / bt;
    for (uint32_t b = uint32_t(s.chains.size()); b < full_after; ++b) {
        const uint64_t previous = b == 0 ? chain_seed_ : s.chains[b - 1];
        s.chains.push_back(PrefixStore::chain_next(previous, std::span(s.tokens).subspan(size_t(b) * bt, bt)));
    }
    if (full_after > full_before) persist_full_blocks(seq, full_before, full_after);
    collect_persisted(false);
    publish_stats();
}

void KvCache::rollback(SeqId seq) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    it->second.pending.clear();
    it->second.write_slots.clear();
    truncate(seq, it->second.n_committed);
}

void KvCache::truncate(SeqId seq, uint32_t n_keep) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    Sequence & s = it->second;
    LR_ASSERT(s.pending.empty());
    const uint32_t bt = block_shape_.block_tokens;
    uint32_t cut = std::min(n_keep, s.n_committed);
    // The last kept block keeps its first cut % bt slots; when it cannot be fixed up (its
    // bytes are lost), the cut moves back to its start and that much is recomputed.
    for (bool settled = false; !settled;) {
        settled = true;
        const size_t keep_blocks = (size_t(cut) + bt - 1) / bt;
        for (auto & layer : s.blocks) {
            while (layer.size() > keep_blocks) {
                free_block(layer.back());
                layer.pop_back();
            }
            if (layer.empty() || cut % bt == 0 || pool_.meta(layer.back()).n_filled == cut % bt) continue;
            if (Status st = clear_positions(layer.back(), cut % bt); !st.ok()) {
                report_fault(st);
                cut -= cut % bt;
                s.lost_from = std::min(s.lost_from.value_or(cut), cut);
                settled = false;
                break;
            }
        }
    }
    s.n_committed = cut;
    s.tokens.resize(cut);
    s.chains.resize(std::min<size_t>(s.chains.size(), cut / bt));
    if (cut == 0 && !s.lost_from) seqs_.erase(it);
    publish_stats();
}

std::optional<uint32_t> KvCache::take_lost_position(SeqId seq) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return std::nullopt;
    std::optional<uint32_t> p = it->second.lost_from;
    it->second.lost_from.reset();
    if (it->second.n_committed == 0) seqs_.erase(it);
    return p;
}

void KvCache::lose_sequence_from(SeqId seq, uint32_t block_index, const Status & why) {
    report_fault(why);
    Sequence & s = seqs_.at(seq);
    s.pending.clear();
    s.write_slots.clear();
    const uint32_t cut = std::min(s.n_committed, block_index * block_shape_.block_tokens);
    s.lost_from = std::min(s.lost_from.value_or(cut), cut);
    truncate(seq, cut);
}

// ---- Prefix cache -------------------------------------------------------------------------------

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
            Status st = src->host_addressable() ? Status{} : src->read(m.slot, bytes.data(), m.n_bytes);
            if (!st.ok()) continue;
            if (src->host_addressable()) std::memcpy(bytes.data(), m.slot.data, m.n_bytes);
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
        } else if (prefix_) {
            report_fault(error(s.code(), "prefix cache disabled: " + s.message()));
            prefix_writes_ok_ = false;
        }
    }
    persisting_ = std::move(still);
}

uint32_t KvCache::restore_prefix(SeqId seq, std::span<const int32_t> upcoming, uint32_t keep_last) {
    if (!prefix_ || upcoming.size() <= keep_last) return 0;
    Sequence & s = seqs_[seq];
    if (s.blocks.empty()) s.blocks.resize(shape_.n_layer);
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
        const uint32_t index = s.n_committed / bt;
        for (uint32_t il = 0; il < shape_.n_layer; ++il) {
            const BlockId id = pool_.allocate();
            BlockMeta & m = pool_.meta(id);
            m.seq = seq;
            m.layer = il;
            m.index = index;
            m.n_filled = bt;
            m.k_codec = layout_.k_codec;
            m.v_codec = layout_.v_codec;
            m.n_bytes = uint32_t(block_bytes());
            m.home = BlockHome::prefix_store;  // loaded when attention needs it
            m.chain = chain;
            m.persisted = true;
            s.blocks[il].push_back(id);
        }
        prefix_->touch(chain);
        counters_.prefix_hits += shape_.n_layer;
        s.tokens.insert(s.tokens.end(), block_tokens.begin(), block_tokens.end());
        s.chains.push_back(chain);
        s.n_committed += bt;
        restored += bt;
    }
    counters_.restored_tokens += restored;
    if (computed_tokens_ > 0) counters_.prefill_ms_saved = counters_.prefill_ms * double(counters_.restored_tokens) / computed_tokens_;
    publish_stats();
    return restored;
}

void KvCache::note_prefill(uint32_t n_tokens, double ms) {
    counters_.prefill_ms += ms;
    computed_tokens_ += n_tokens;
    if (computed_tokens_ > 0) counters_.prefill_ms_saved = counters_.prefill_ms * double(counters_.restored_tokens) / computed_tokens_;
}

void KvCache::flush() {
    collect_persisted(true);
    publish_stats();
}

// ---- Stats ------------------------------------------------------------------------------------

void KvCache::publish_stats() {
    KvStats s = counters_;
    auto fill = [](KvTierStats & t, const TierStore * store) {
        t.present = store != nullptr;
        if (!store) return;
        t.used_bytes = store->used_bytes();
        t.capacity_bytes = store->capacity_bytes() >= kUnbounded ? store->used_bytes() : store->capacity_bytes();
        t.blocks = store->n_blocks();
    };
    fill(s.tiers[0], device_.get());
    fill(s.tiers[1], host_.get());
    fill(s.tiers[2], disk_.get());
    if (prefix_) {
        s.tiers[2].present = true;
        s.tiers[2].used_bytes += prefix_->used_bytes();
        s.tiers[2].blocks += prefix_->n_blocks();
        s.tiers[2].capacity_bytes = std::max(s.tiers[2].capacity_bytes, prefix_->capacity_bytes());
    }
    s.tokens_seen = 0;
    for (const auto & [id, seq] : seqs_) s.tokens_seen += seq.n_committed;
    s.tokens_kept = s.tokens_seen;
    std::lock_guard lock(stats_mutex_);
    published_ = std::move(s);
}

KvStats KvCache::stats() const {
    std::lock_guard lock(stats_mutex_);
    return published_;
}

}  // namespace lr
