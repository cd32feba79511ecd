#include "kvcache/kv_placement.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <unordered_map>

#include "engine/backend/kv_codec_rows.h"

namespace lr {

namespace {
constexpr uint64_t kUnbounded = UINT64_MAX / 4;
constexpr SeqId kNoSequence = UINT32_MAX;  // making room between ubatches: no sequence is active
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }
Status data_loss(const std::string & what) { return error(StatusCode::corrupt_data, "KV block lost: " + what); }
}  // namespace

KvPlacement::~KvPlacement() {
    if (io_) settle_prefetches();
}

void KvPlacement::open() {
    const KvTierCapacities & c = state_.config.capacities;
    device_ = MemoryTier::device(state_.backend, c.device_bytes > 0 ? c.device_bytes : kUnbounded);
    if (c.host_bytes > 0) host_ = MemoryTier::host(state_.backend, c.host_bytes);
    io_ = std::make_unique<IoThread>();
    prefetch_layers_ = state_.config.settings.prefetch_layers;
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il)
        staging_.resize(std::max(staging_.size(), state_.write_layout(il).block_bytes()));
    if (state_.config.dir.empty() || c.disk_bytes == 0) return;
    Result<std::unique_ptr<DiskTier>> disk = DiskTier::create(state_.config.dir, c.disk_bytes, state_.config.io);
    if (disk.ok()) {
        disk_ = std::move(disk).value();
    } else {
        state_.report_fault(error(disk.status().code(), "disk tier disabled: " + disk.status().message()));
        ++tier_stats(BlockHome::disk).faults;
    }
    if (state_.config.settings.prefix_cache && state_.config.model_identity != 0 && disk_) {
        Result<std::unique_ptr<PrefixStore>> store = PrefixStore::open(state_.config.dir, c.disk_bytes, state_.config.io);
        if (store.ok()) {
            prefix_ = std::move(store).value();
        } else {
            state_.report_fault(error(store.status().code(), "prefix cache disabled: " + store.status().message()));
            ++tier_stats(BlockHome::prefix_store).faults;
        }
    }
}

TierStore * KvPlacement::store(BlockHome home) const {
    switch (home) {
        case BlockHome::device: return device_.get();
        case BlockHome::host: return host_.get();
        case BlockHome::disk: return disk_.get();
        case BlockHome::prefix_store: return nullptr;
    }
    return nullptr;
}

KvTierStats & KvPlacement::tier_stats(BlockHome home) {
    switch (home) {
        case BlockHome::device: return state_.counters.tiers[0];
        case BlockHome::host: return state_.counters.tiers[1];
        default: return state_.counters.tiers[2];
    }
}

void KvPlacement::fill_tier_stats(KvStats & s) const {
    auto fill = [](KvTierStats & t, const TierStore * store) {
        t.present = store != nullptr;
        if (!store) return;
        t.used_bytes = store->used_bytes();
        t.capacity_bytes = store->capacity_bytes() >= kUnbounded ? store->used_bytes() : store->capacity_bytes();
        t.blocks = store->n_blocks();
    };
    s.move_ms += io_move_ms();
    fill(s.tiers[0], device_.get());
    fill(s.tiers[1], host_.get());
    fill(s.tiers[2], disk_.get());
    if (prefix_) {
        s.tiers[2].present = true;
        s.tiers[2].used_bytes += prefix_->used_bytes();
        s.tiers[2].blocks += prefix_->n_blocks();
        s.tiers[2].capacity_bytes = std::max<uint64_t>(s.tiers[2].capacity_bytes, state_.config.capacities.disk_bytes);
    }
}

// ---- Blocks ---------------------------------------------------------------------------------

Result<BlockId> KvPlacement::new_block(SeqId owner, uint32_t il, KvCodec k_codec, KvCodec v_codec) {
    const KvBlockLayout layout{state_.layer_shapes[il], k_codec, v_codec};
    const size_t n_bytes = layout.block_bytes();
    LR_RETURN_IF_ERROR(make_room(BlockHome::device, n_bytes, owner, il));
    LR_ASSIGN_OR_RETURN(TierSlot slot, device_->allocate(n_bytes));
    if (layout == state_.write_layout(il)) {
        LR_RETURN_IF_ERROR(device_->write(slot, state_.empty_blocks[il].data(), n_bytes));
    }
    const BlockId id = state_.pool.allocate();
    BlockMeta & m = state_.pool.meta(id);
    m.owner = owner;
    m.layer = il;
    m.k_codec = k_codec;
    m.v_codec = v_codec;
    m.n_bytes = uint32_t(n_bytes);
    m.place.home = BlockHome::device;
    m.place.slot = slot;
    m.place.born = m.place.used = state_.tick();
    m.pos.assign(layout.n_slots(), kInvalidPos);
    return id;
}

void KvPlacement::free_block(BlockId id) {
    BlockMeta & m = state_.pool.meta(id);
    if (m.ref_count > 1) {
        state_.pool.release(id);
        return;
    }
    if (m.place.prefetch != 0) {
        (void)io_->wait(m.place.prefetch);
        device_->release(m.place.prefetch_slot, m.n_bytes);
        m.place.prefetch = 0;
    }
    if (m.place.home != BlockHome::prefix_store && store(m.place.home)) store(m.place.home)->release(m.place.slot, m.n_bytes);
    state_.pool.release(id);
}

Status KvPlacement::read_block(const BlockMeta & m, std::vector<uint8_t> & bytes) {
    LR_ASSERT(m.place.home == BlockHome::device);
    bytes.resize(m.n_bytes);
    if (device_->host_addressable()) {
        std::memcpy(bytes.data(), m.place.slot.data, m.n_bytes);
        return {};
    }
    return device_->read(m.place.slot, bytes.data(), m.n_bytes);
}

Status KvPlacement::write_block(const BlockMeta & m, std::span<const uint8_t> bytes) {
    LR_ASSERT(m.place.home == BlockHome::device && bytes.size() == m.n_bytes);
    return device_->write(m.place.slot, bytes.data(), m.n_bytes);
}

Status KvPlacement::write_positions(const BlockMeta & m) {
    LR_ASSERT(m.place.home == BlockHome::device);
    TierSlot positions = m.place.slot;
    positions.data += state_.layout_of(m).pos_offset();
    return device_->write(positions, reinterpret_cast<const uint8_t *>(m.pos.data()), m.pos.size() * sizeof(int32_t));
}

// ---- Making room -----------------------------------------------------------------------------

bool KvPlacement::may_leave(const BlockMeta & m, BlockHome home) const {
    if (!state_.shape.full(m.layer)) return false;  // a sliding window's ring stays on the device
    // Pinning protects what attention reads from the device; a pinned block still on a
    // lower tier may move further down (it is fetched from there).
    const bool pinned = m.place.pins > 0 && home == BlockHome::device;
    return m.place.home == home && !pinned && !m.place.moving && m.place.prefetch == 0;
}

std::vector<BlockId> KvPlacement::victims(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor, uint32_t soon) const {
    if (state_.config.settings.demotion == KvDemotion::cycle) return layer_cycle_victims(home, n_bytes, active, layer_cursor, soon);
    return stamp_victims(home, n_bytes, active, layer_cursor, soon);
}

std::vector<BlockId> KvPlacement::layer_cycle_victims(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor,
                                                      uint32_t soon) const {
    std::vector<BlockId> out;
    uint64_t bytes = 0;
    auto consider = [&](BlockId id) {
        const BlockMeta & m = state_.pool.meta(id);
        if (bytes >= n_bytes || !may_leave(m, home)) return;
        if (std::find(out.begin(), out.end(), id) != out.end()) return;  // shared by two sequences
        out.push_back(id);
        bytes += m.n_bytes;
    };
    for (const auto & [id, s] : state_.seqs) {
        if (id == active) continue;
        for (const LayerBlocks & layer : s.layers) {
            for (BlockId b : layer.ids) consider(b);
        }
    }
    auto it = state_.seqs.find(active);
    if (it != state_.seqs.end()) {
        const uint32_t L = state_.shape.n_layer;
        for (uint32_t k = 1; k + soon <= L && bytes < n_bytes; ++k) {
            const uint32_t il = (layer_cursor + L - k) % L;
            for (BlockId b : it->second.layers[il].ids) consider(b);
        }
    }
    return out;
}

std::vector<BlockId> KvPlacement::stamp_victims(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor,
                                                uint32_t soon) const {
    const bool lru = state_.config.settings.demotion == KvDemotion::lru;
    const uint32_t L = state_.shape.n_layer;
    std::vector<std::pair<uint64_t, BlockId>> candidates;  // (stamp, block)
    for (const auto & [seq, s] : state_.seqs) {
        for (uint32_t il = 0; il < L; ++il) {
            if (seq == active && (il + L - layer_cursor) % L < soon) continue;  // needed before what makes room
            for (BlockId b : s.layers[il].ids) {
                const BlockMeta & m = state_.pool.meta(b);
                if (may_leave(m, home)) candidates.emplace_back(lru ? m.place.used : m.place.born, b);
            }
        }
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());  // shared blocks
    std::vector<BlockId> out;
    uint64_t bytes = 0;
    for (const auto & [stamp, b] : candidates) {
        if (bytes >= n_bytes) break;
        out.push_back(b);
        bytes += state_.pool.meta(b).n_bytes;
    }
    return out;
}

Status KvPlacement::make_room(BlockHome home, uint64_t n_bytes, SeqId active, uint32_t layer_cursor, uint32_t soon) {
    TierStore * t = store(home);
    if (!t) return error(StatusCode::out_of_memory, "no such tier");
    if (home == BlockHome::disk) {
        if (!disk_writable_) return error(StatusCode::out_of_memory, "the disk tier is disabled");
        // Spilled blocks and the prefix cache share the disk budget; the prefix cache yields.
        if (prefix_) {
            const uint64_t budget = state_.config.capacities.disk_bytes;
            const uint64_t spill = disk_->used_bytes() + n_bytes;
            if (spill + prefix_->used_bytes() > budget) prefix_->evict_to(spill < budget ? budget - spill : 0);
            disk_->set_capacity(budget - std::min(budget, prefix_->used_bytes()));
        }
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (t->has_room(n_bytes)) return {};
        const uint64_t free = t->capacity_bytes() - std::min(t->capacity_bytes(), t->used_bytes());
        for (BlockId v : victims(home, n_bytes - free, active, layer_cursor, soon)) {
            LR_RETURN_IF_ERROR(demote(v, active, layer_cursor));
            if (t->has_room(n_bytes)) return {};
        }
        // Blocks being prefetched are neither movable nor freeable: let the copies land,
        // which frees their sources and makes them ordinary blocks, and try once more.
        settle_prefetches();
    }
    if (t->has_room(n_bytes)) return {};
    return error(StatusCode::out_of_memory, "the KV cache is full (device " + format_bytes(device_->capacity_bytes()) + ", host " +
                                                format_bytes(host_ ? host_->capacity_bytes() : 0) + ", disk " +
                                                format_bytes(disk_ ? disk_->capacity_bytes() : 0) +
                                                "): lower the context, enable compression (h2o, snapkv, 8-bit KV), or raise a tier budget");
}

Status KvPlacement::shrink_to_capacity(BlockHome home) {
    TierStore * t = store(home);
    for (int attempt = 0; attempt < 2 && t->used_bytes() > t->capacity_bytes(); ++attempt) {
        for (BlockId v : victims(home, t->used_bytes() - t->capacity_bytes(), kNoSequence, 0, 0)) {
            LR_RETURN_IF_ERROR(demote(v, kNoSequence, 0));
            if (t->used_bytes() <= t->capacity_bytes()) return {};
        }
    }
    if (t->used_bytes() <= t->capacity_bytes()) return {};
    return error(StatusCode::out_of_memory, "the KV cache could not move blocks out of a tier it shrank");
}

Status KvPlacement::set_memory_budgets(uint64_t device_bytes, uint64_t host_bytes) {
    if (!host_) return error(StatusCode::unsupported, "no host tier to share the memory budget with");
    settle_prefetches();
    if (device_bytes >= device_->capacity_bytes()) {
        // The device grows by what the host gives up: the host's blocks beyond its new
        // budget move up first (the device has room for them: its growth is their bytes).
        device_->set_capacity(device_bytes);
        for (auto & [seq, s] : state_.seqs) {
            for (const LayerBlocks & layer : s.layers) {
                for (BlockId id : layer.ids) {
                    if (host_->used_bytes() <= host_bytes) break;
                    if (state_.pool.meta(id).place.home == BlockHome::host) LR_RETURN_IF_ERROR(move(id, BlockHome::device, kNoSequence, 0));
                }
            }
        }
        host_->set_capacity(host_bytes);
        return shrink_to_capacity(BlockHome::host);
    }
    // The device shrinks: its blocks beyond the new budget go down to the grown host.
    host_->set_capacity(host_bytes);
    device_->set_capacity(device_bytes);
    return shrink_to_capacity(BlockHome::device);
}

Status KvPlacement::demote(BlockId id, SeqId active, uint32_t layer_cursor) {
    BlockMeta & m = state_.pool.meta(id);
    // Down one tier; a block with a durable copy in the prefix cache can simply be dropped
    // from memory instead of being written to the spill files.
    if (m.place.home == BlockHome::device && host_ && host_->capacity_bytes() >= m.n_bytes) {
        return move(id, BlockHome::host, active, layer_cursor);
    }
    if (m.persisted) return move(id, BlockHome::prefix_store, active, layer_cursor);
    if (disk_ && disk_writable_) return move(id, BlockHome::disk, active, layer_cursor);
    if (!disk_writable_ && m.place.home == BlockHome::host) {
        // The disk failed earlier: RAM keeps what it would have held (reported then).
        host_->grow_capacity(m.n_bytes);
        return {};
    }
    return error(StatusCode::out_of_memory,
                 "the KV cache is full and there is no lower tier to move blocks to: raise the "
                 "RAM or disk budget, lower the context, or enable compression");
}

Status KvPlacement::narrow_for_tier(BlockId id, BlockHome to, RecodedBlock & out) {
    out.bytes.clear();
    const KvSettings & k = state_.config.settings;
    const uint32_t tier_bits = to == BlockHome::host ? k.host_bits : to == BlockHome::disk ? k.disk_bits : 0;
    const BlockMeta & m = state_.pool.meta(id);
    out.k_codec = KvSettings::narrowed(m.k_codec, tier_bits);
    out.v_codec = KvSettings::narrowed(m.v_codec, tier_bits);
    if (out.k_codec == m.k_codec && out.v_codec == m.v_codec) return {};
    // A block with a durable copy is dropped from memory at no cost instead (and stays
    // exact); a shared one belongs to more than one sequence.
    if (m.persisted || m.ref_count != 1 || m.place.home == BlockHome::prefix_store) return {};
    // Only aged blocks: the full-precision window stays exact whatever tier holds it.
    auto it = state_.seqs.find(m.owner);
    if (it == state_.seqs.end()) return {};
    // Nor while its sequence warms up.
    if (it->second.policy && it->second.policy->settings().warming_up(it->second.n_tokens(), state_.config.max_tokens)) return {};
    const LayerBlocks & layer = it->second.layers[m.layer];
    const size_t b = size_t(std::find(layer.ids.begin(), layer.ids.end(), id) - layer.ids.begin());
    if (b == layer.size() || (b + 1) * state_.block_shape.block_tokens + k.residual_tokens > layer.slots_used) return {};
    std::vector<uint8_t> bytes(m.n_bytes);
    LR_RETURN_IF_ERROR(store(m.place.home)->read(m.place.slot, bytes.data(), m.n_bytes));
    const KvBlockLayout L{state_.layer_shapes[m.layer], out.k_codec, out.v_codec};
    out.bytes.resize(L.block_bytes());
    kv_recode_block(state_.layout_of(m), bytes.data(), L, out.bytes.data());
    std::memcpy(out.bytes.data() + L.pos_offset(), m.pos.data(), m.pos.size() * sizeof(int32_t));
    return {};
}

Status KvPlacement::copy_block(const BlockMeta & m, BlockHome to, const TierSlot & dst, std::span<const uint8_t> recoded) {
    if (!recoded.empty()) {
        LR_RETURN_IF_ERROR(store(to)->write(dst, recoded.data(), recoded.size()));
        state_.counters.bytes_moved += recoded.size();
        tier_stats(m.place.home).bytes_out += m.n_bytes;
        tier_stats(to).bytes_in += recoded.size();
        return {};
    }
    const size_t n = m.n_bytes;
    if (staging_.size() < n) staging_.resize(n);
    TierStore * src = store(m.place.home);
    TierStore * out = store(to);
    if (m.place.home == BlockHome::prefix_store) {
        LR_RETURN_IF_ERROR(prefix_->read(m.chain, m.layer, staging_.data(), n));
        LR_RETURN_IF_ERROR(out->write(dst, staging_.data(), n));
    } else if (src->host_addressable()) {
        LR_RETURN_IF_ERROR(out->write(dst, m.place.slot.data, n));
    } else if (out->host_addressable()) {
        LR_RETURN_IF_ERROR(src->read(m.place.slot, dst.data, n));
    } else {
        LR_RETURN_IF_ERROR(src->read(m.place.slot, staging_.data(), n));
        LR_RETURN_IF_ERROR(out->write(dst, staging_.data(), n));
    }
    state_.counters.bytes_moved += n;
    tier_stats(m.place.home).bytes_out += n;
    tier_stats(to).bytes_in += n;
    return {};
}

Status KvPlacement::move(BlockId id, BlockHome to, SeqId active, uint32_t layer_cursor) {
    BlockMeta & m = state_.pool.meta(id);
    const BlockHome from = m.place.home;
    if (to == BlockHome::prefix_store) {
        LR_ASSERT(m.persisted);
        store(from)->release(m.place.slot, m.n_bytes);
        m.place.home = to;
        m.place.slot = {};
        tier_stats(from).bytes_out += m.n_bytes;
        ++state_.counters.demotions;
        return {};
    }
    // Per-tier codecs: an aged block going down may take the lower tier's narrower codec.
    RecodedBlock recoded;
    LR_RETURN_IF_ERROR(narrow_for_tier(id, to, recoded));
    const uint32_t n_bytes = recoded.bytes.empty() ? m.n_bytes : uint32_t(recoded.bytes.size());
    // Making room moves other blocks (recursively, down the tiers); this one stays put.
    m.place.moving = true;
    Status room = make_room(to, n_bytes, active, layer_cursor);
    state_.pool.meta(id).place.moving = false;
    LR_RETURN_IF_ERROR(room);
    TierStore * dst_store = store(to);
    LR_ASSIGN_OR_RETURN(TierSlot dst, dst_store->allocate(n_bytes));
    const Clock::time_point copy_start = Clock::now();
    Status s = copy_block(m, to, dst, recoded.bytes);
    state_.counters.move_ms += ms_since(copy_start);
    if (!s.ok()) {
        dst_store->release(dst, n_bytes);
        if (to == BlockHome::disk) {
            // The disk refused (full, I/O error): report it once and stop spilling there.
            state_.report_fault(error(s.code(), "disk tier disabled: " + s.message()));
            ++tier_stats(BlockHome::disk).faults;
            disk_writable_ = false;
            if (m.persisted) return move(id, BlockHome::prefix_store, active, layer_cursor);
            // Nowhere lower to go: keep the block in RAM beyond the budget rather than fail.
            if (host_ && from == BlockHome::host) {
                host_->grow_capacity(m.n_bytes);
                return {};
            }
            return error(StatusCode::out_of_memory,
                         "the KV cache is full and the disk tier failed (" + s.message() + "): lower the context or enable compression");
        }
        return s;
    }
    if (from != BlockHome::prefix_store) store(from)->release(m.place.slot, m.n_bytes);
    m.place.home = to;
    m.place.slot = dst;
    if (!recoded.bytes.empty()) {
        m.k_codec = recoded.k_codec;
        m.v_codec = recoded.v_codec;
        m.n_bytes = n_bytes;
        m.chain = 0;
        state_.seqs.at(m.owner).pure_prefix = false;
        ++state_.counters.narrowed_blocks;
    }
    if (to == BlockHome::device) {
        ++state_.counters.promotions;
    } else {
        ++state_.counters.demotions;
    }
    return {};
}

// ---- The device tier -------------------------------------------------------------------------

Status KvPlacement::fetch_to_device(BlockId id, SeqId seq, uint32_t il) {
    const BlockHome from = state_.pool.meta(id).place.home;
    Status s = move(id, BlockHome::device, seq, il);
    if (s.code() == StatusCode::corrupt_data || s.code() == StatusCode::io_error || s.code() == StatusCode::not_found) {
        if (from == BlockHome::disk) disk_writable_ = false;  // a disk that loses data gets no more
        ++tier_stats(from).faults;
        return data_loss(s.message());
    }
    return s;
}

Result<PinnedBlocks> KvPlacement::pin_on_device(std::span<const BlockId> ids, SeqId seq, uint32_t il, bool count_reads) {
    // Pin first, so that making room never takes a block this reader needs.
    PinnedBlocks pins(state_.pool);
    for (BlockId id : ids) pins.add(id);
    for (BlockId id : ids) {
        BlockMeta & m = state_.pool.meta(id);
        state_.counters.block_reads += count_reads;
        m.place.used = state_.tick();
        const bool resident = m.place.home == BlockHome::device && m.place.prefetch == 0;
        const Clock::time_point wait_start = resident ? Clock::time_point{} : Clock::now();
        Status st;
        if (m.place.prefetch != 0) {
            bool ready = false;
            st = adopt_prefetch(id, ready);
            if (st.ok() && ready && count_reads) {
                ++state_.counters.block_hits;
                ++state_.counters.prefetch_hits;
            }
        } else if (m.place.home == BlockHome::device) {
            state_.counters.block_hits += count_reads;
        } else {
            st = fetch_to_device(id, seq, il);
        }
        if (!resident) state_.counters.fetch_wait_ms += ms_since(wait_start);
        if (!st.ok()) return st;
    }
    return pins;
}

void KvPlacement::prefetch_ahead(SeqId seq, uint32_t il) {
    const uint32_t L = state_.shape.n_layer;
    // Room comes only from the layers needed after the one fetched (layer il, computing
    // now, is pinned).
    for (uint32_t ahead = 1; ahead <= prefetch_layers_ && il + ahead < L; ++ahead) {
        if (!prefetch_layer(seq, state_.shape.source(il + ahead), (il + 1) % L, ahead)) return;
    }
}

bool KvPlacement::prefetch_layer(SeqId seq, uint32_t il, uint32_t layer_cursor, uint32_t soon) {
    const KvSequence & s = state_.seqs.at(seq);
    for (BlockId id : s.layers[il].ids) {
        const BlockMeta & m = state_.pool.meta(id);
        if (m.place.home == BlockHome::device || m.place.prefetch != 0) continue;
        // Stop at the first refusal.
        if (!device_->has_room(m.n_bytes) && !make_room(BlockHome::device, m.n_bytes, seq, layer_cursor, soon).ok()) return false;
        BlockMeta & mm = state_.pool.meta(id);
        Result<TierSlot> dst = device_->allocate(mm.n_bytes);
        if (!dst.ok()) return false;
        mm.place.prefetch_slot = *dst;
        TierStore * src = store(mm.place.home);
        TierStore * dev = device_.get();
        PrefixStore * prefix = prefix_.get();
        const BlockHome home = mm.place.home;
        const TierSlot src_slot = mm.place.slot, dst_slot = *dst;
        const uint64_t chain = mm.chain;
        const uint32_t layer = mm.layer, n = mm.n_bytes;
        std::atomic<uint64_t> * move_ns = &io_move_ns_;
        // The job touches only the two slots, which nothing else uses until it is adopted.
        mm.place.prefetch = io_->submit([=]() -> Status {
            const Clock::time_point start = Clock::now();
            auto copy = [&]() -> Status {
                thread_local std::vector<uint8_t> buffer;
                if (home != BlockHome::prefix_store && src->host_addressable()) return dev->write(dst_slot, src_slot.data, n);
                buffer.resize(n);
                if (home == BlockHome::prefix_store) {
                    LR_RETURN_IF_ERROR(prefix->read(chain, layer, buffer.data(), n));
                } else {
                    LR_RETURN_IF_ERROR(src->read(src_slot, buffer.data(), n));
                }
                return dev->write(dst_slot, buffer.data(), n);
            };
            Status st = copy();
            *move_ns += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
            return st;
        });
        ++state_.counters.prefetches;
    }
    return true;
}

Status KvPlacement::adopt_prefetch(BlockId id, bool & was_ready) {
    BlockMeta & m = state_.pool.meta(id);
    was_ready = io_->finished(m.place.prefetch);
    Status s = io_->wait(m.place.prefetch);
    m.place.prefetch = 0;
    if (!s.ok()) {
        device_->release(m.place.prefetch_slot, m.n_bytes);
        if (m.place.home == BlockHome::disk) disk_writable_ = false;
        ++tier_stats(m.place.home).faults;
        return data_loss(s.message());
    }
    const size_t n = m.n_bytes;
    state_.counters.bytes_moved += n;
    tier_stats(m.place.home).bytes_out += n;
    tier_stats(BlockHome::device).bytes_in += n;
    if (m.place.home != BlockHome::prefix_store) store(m.place.home)->release(m.place.slot, n);
    m.place.home = BlockHome::device;
    m.place.slot = m.place.prefetch_slot;
    ++state_.counters.promotions;
    return {};
}

void KvPlacement::settle_prefetches() {
    for (auto & [seq, s] : state_.seqs) {
        for (const LayerBlocks & layer : s.layers) {
            for (BlockId id : layer.ids) {
                bool ready = false;
                if (state_.pool.meta(id).place.prefetch == 0) continue;
                if (Status st = adopt_prefetch(id, ready); !st.ok()) state_.report_fault(st);
            }
        }
    }
}

// ---- Health ----------------------------------------------------------------------------------

Result<uint64_t> KvPlacement::compact_disk() {
    if (!disk_) return uint64_t(0);
    settle_prefetches();                            // no copy in flight reads a slot that moves
    std::unordered_map<uint64_t, BlockId> on_disk;  // slot id -> block
    for (const auto & [seq, s] : state_.seqs) {
        for (const LayerBlocks & layer : s.layers) {
            for (BlockId id : layer.ids) {
                const BlockMeta & m = state_.pool.meta(id);
                if (m.place.home == BlockHome::disk) on_disk.emplace(m.place.slot.id, id);
            }
        }
    }
    uint64_t moved = 0;
    Status s = disk_->compact([&](const TierSlot & from, const TierSlot & to) {
        auto it = on_disk.find(from.id);
        LR_ASSERT(it != on_disk.end());
        const BlockId id = it->second;
        on_disk.erase(it);
        on_disk.emplace(to.id, id);
        state_.pool.meta(id).place.slot = to;
        ++moved;
    });
    if (!s.ok()) {
        ++state_.counters.tiers[size_t(KvTier::disk)].faults;
        return s;
    }
    return moved;
}

Status KvPlacement::evacuate_disk_block(BlockId id, SeqId seq) {
    BlockMeta & m = state_.pool.meta(id);
    LR_ASSERT(m.place.home == BlockHome::disk);
    const BlockHome to = host_ ? BlockHome::host : BlockHome::device;
    MemoryTier * ram = host_ ? host_.get() : device_.get();
    if (!ram->has_room(m.n_bytes)) ram->grow_capacity(m.n_bytes);  // as when a disk write fails
    Status s = move(id, to, seq, 0);
    if (s.ok()) return s;
    ++state_.counters.tiers[size_t(KvTier::disk)].faults;
    return data_loss(s.message());
}

}  // namespace lr
