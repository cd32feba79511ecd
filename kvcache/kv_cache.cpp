#include "kv_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "engine/backend/kv_codec_rows.h"

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
    const KvSettings & k = config.settings;
    for (KvCodec c : {k.k_codec(), k.v_codec(), KvSettings::narrowed(k.k_codec(), k.host_bits),
                      KvSettings::narrowed(k.v_codec(), k.host_bits), KvSettings::narrowed(k.k_codec(), k.disk_bits),
                      KvSettings::narrowed(k.v_codec(), k.disk_bits)}) {
        if (!kv_codec_supports(c, shape.head_dim)) {
            return error(StatusCode::invalid_argument, "KV codec " + std::string(kv_codec_name(c)) + " cannot hold heads of " +
                         std::to_string(shape.head_dim) + " values");
        }
    }
    if (config.settings.policy == KvPolicy::streaming && config.rope.n_rot == 0) {
        return error(StatusCode::invalid_argument, "the streaming policy needs the model's rope parameters");
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
    if (config_.max_position == 0) config_.max_position = config_.max_tokens;
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
    if (c.host_bytes > 0) host_ = MemoryTier::host(backend_, c.host_bytes);
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

bool KvCache::collects_mass(const Sequence & s) const {
    const KvPolicy p = config_.settings.policy;
    if (p == KvPolicy::h2o) return true;
    if (p == KvPolicy::snapkv) return s.observation || s.selecting;
    return false;
}

bool KvCache::evicts(const Sequence & s) const {
    const KvPolicy p = config_.settings.policy;
    if (p == KvPolicy::h2o || p == KvPolicy::streaming || p == KvPolicy::random) return true;
    return p == KvPolicy::snapkv && s.selecting;  // after the prompt, with --then h2o
}

uint32_t KvCache::n_tokens(SeqId seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : it->second.n_committed;
}

int32_t KvCache::next_position(SeqId seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : it->second.next_pos;
}

uint32_t KvCache::n_kept(SeqId seq) const {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return 0;
    uint64_t sum = 0;
    for (uint32_t il = 0; il < shape_.n_layer; ++il) sum += kept_in_layer(it->second, il);
    return uint32_t(sum / shape_.n_layer);
}

void KvCache::report_fault(const Status & s) {
    ++counters_.faults;
    counters_.last_fault = s.message();
}

// ---- Blocks --------------------------------------------------------------------------------

Result<BlockId> KvCache::new_block(SeqId seq, uint32_t il, KvCodec k_codec, KvCodec v_codec) {
    const KvBlockLayout layout{block_shape_, k_codec, v_codec};
    const size_t n_bytes = layout.block_bytes();
    LR_RETURN_IF_ERROR(make_room(BlockHome::device, n_bytes, seq, il));
    LR_ASSIGN_OR_RETURN(TierSlot slot, device_->allocate(n_bytes));
    if (layout == layout_) {
        LR_RETURN_IF_ERROR(device_->write(slot, empty_block_.data(), n_bytes));
    }
    const BlockId id = pool_.allocate();
    BlockMeta & m = pool_.meta(id);
    m.seq = seq;
    m.layer = il;
    m.k_codec = k_codec;
    m.v_codec = v_codec;
    m.n_bytes = uint32_t(n_bytes);
    m.home = BlockHome::device;
    m.slot = slot;
    m.pos.assign(layout.n_slots(), kInvalidPos);
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

Status KvCache::read_block(const BlockMeta & m, std::vector<uint8_t> & bytes) {
    LR_ASSERT(m.home == BlockHome::device);
    bytes.resize(m.n_bytes);
    if (device_->host_addressable()) {
        std::memcpy(bytes.data(), m.slot.data, m.n_bytes);
        return {};
    }
    return device_->read(m.slot, bytes.data(), m.n_bytes);
}

Status KvCache::write_block(BlockMeta & m, const std::vector<uint8_t> & bytes) {
    LR_ASSERT(m.home == BlockHome::device && bytes.size() == m.n_bytes);
    return device_->write(m.slot, bytes.data(), m.n_bytes);
}

Status KvCache::write_positions(BlockMeta & m) {
    LR_ASSERT(m.home == BlockHome::device);
    TierSlot positions = m.slot;
    positions.data += layout_of(m).pos_offset();
    return device_->write(positions, reinterpret_cast<const uint8_t *>(m.pos.data()), m.pos.size() * sizeof(int32_t));
}

// ---- The ubatch protocol ---------------------------------------------------------------------

Status KvCache::reserve(SeqId seq, std::span<const int32_t> tokens, bool observation) {
    Sequence & s = seqs_[seq];
    LR_ASSERT(s.pending.empty());  // commit or rollback the previous ubatch first
    if (s.blocks.empty()) {
        s.blocks.resize(shape_.n_layer);
        s.slots_used.assign(shape_.n_layer, 0);
    }
    const int32_t n = int32_t(tokens.size());
    if (config_.settings.policy == KvPolicy::streaming) {
        // Past the trained context the kept window is renumbered (sinks, then consecutive
        // positions), as StreamingLLM assigns positions inside the cache.
        if (s.next_pos + n > int32_t(config_.max_position)) LR_RETURN_IF_ERROR(renumber(seq, n));
    } else if (size_t(s.n_committed) + tokens.size() > config_.max_tokens) {
        return error(StatusCode::context_full, "the context holds " + std::to_string(config_.max_tokens) + " tokens; " +
                     std::to_string(s.n_committed) + " are used and " + std::to_string(tokens.size()) + " more do not fit");
    }
    s.pending.assign(tokens.begin(), tokens.end());
    s.pending_pos.resize(tokens.size());
    for (int32_t i = 0; i < n; ++i) s.pending_pos[size_t(i)] = s.next_pos + i;
    s.observation = observation;
    if (observation && !s.mass_from) s.mass_from = s.next_pos;
    return {};
}

std::span<const int32_t> KvCache::pending_positions(SeqId seq) const { return seqs_.at(seq).pending_pos; }

bool KvCache::wants_query(SeqId seq) const {
    if (config_.settings.policy != KvPolicy::quest) return false;
    auto it = seqs_.find(seq);
    return it != seqs_.end() && it->second.pending.size() == 1;
}

Result<PagedKvView> KvCache::layer_view(SeqId seq, uint32_t il, const float * q_host, uint32_t n_head) {
    Sequence & s = seqs_.at(seq);
    LR_ASSERT(il < shape_.n_layer);
    const uint32_t bt = block_shape_.block_tokens;
    std::vector<BlockId> & layer = s.blocks[il];
    const uint32_t first_new = s.slots_used[il];
    const size_t n_new = s.pending.size();

    // A block that cannot be read back (a damaged prefix cache) loses the sequence from the
    // earliest position it held: that is where recomputation starts.
    auto lost = [&](const Status & st, std::span<const BlockId> ids) -> Status {
        if (st.code() != StatusCode::corrupt_data) return st;
        int32_t from = s.next_pos;
        for (BlockId id : ids) {
            const BlockMeta & m = pool_.meta(id);
            if (m.home == BlockHome::device) continue;
            for (int32_t p : m.pos) {
                if (p != kInvalidPos) from = std::min(from, p);
            }
        }
        lose_sequence_from(seq, uint32_t(from), st);
        return data_loss("recompute from position " + std::to_string(*s.lost_from));
    };

    // What attention reads: every block, or the pages each head's query needs (quest).
    std::vector<uint32_t> chosen;
    const bool query_aware = q_host != nullptr && config_.settings.policy == KvPolicy::quest;
    s.read_pages.clear();
    if (query_aware) {
        if (Status st = bound_restored_blocks(seq, il); !st.ok()) return lost(st, layer);
        QuestReads reads = quest_reads(s, il, q_host, n_head);
        chosen = std::move(reads.blocks);
        s.read_pages = std::move(reads.pages);
    } else {
        chosen.resize(layer.size());
        for (uint32_t b = 0; b < layer.size(); ++b) chosen[b] = b;
    }
    s.view_ids.clear();
    for (uint32_t b : chosen) s.view_ids.push_back(layer[b]);
    if (Status st = ensure_on_device(s.view_ids, seq, il); !st.ok()) return lost(st, s.view_ids);
    // Blocks for the new tokens.
    const size_t needed = (size_t(first_new) + n_new + bt - 1) / bt;
    while (layer.size() < needed) {
        Result<BlockId> id = new_block(seq, il, layout_.k_codec, layout_.v_codec);
        if (!id.ok()) {
            for (BlockId p : s.view_ids) pool_.meta(p).pinned = false;
            return id.status();
        }
        pool_.meta(*id).pinned = true;
        if (collects_mass(s)) pool_.meta(*id).importance.assign(layout_.n_slots(), 0.0f);
        layer.push_back(*id);
        chosen.push_back(uint32_t(layer.size() - 1));
        s.view_ids.push_back(*id);
        if (query_aware) {
            const uint32_t pages = bt / config_.settings.quest_page_tokens();
            s.read_pages.insert(s.read_pages.end(), block_shape_.n_head_kv, pages == 32 ? ~0u : (1u << pages) - 1);
        }
    }
    // Write slots, as indices into the view.
    s.write_slots.resize(n_new);
    for (size_t i = 0; i < n_new; ++i) {
        const uint32_t slot = first_new + uint32_t(i);
        const uint32_t b = slot / bt;
        const size_t at = size_t(std::find(chosen.begin(), chosen.end(), b) - chosen.begin());
        LR_ASSERT(at < chosen.size());
        s.write_slots[i] = uint32_t(at) * bt + slot % bt;
    }
    if (!query_aware && il + 1 < shape_.n_layer) start_prefetch(seq, il + 1);
    s.view_blocks.clear();
    for (BlockId id : s.view_ids) {
        const BlockMeta & m = pool_.meta(id);
        s.view_blocks.push_back({m.slot.data, m.k_codec, m.v_codec});
    }
    PagedKvView view;
    view.shape = block_shape_;
    view.blocks = s.view_blocks;
    view.write_slots = s.write_slots;
    if (query_aware) {
        view.read_pages = s.read_pages;
        view.page_tokens = config_.settings.quest_page_tokens();
        for (uint32_t bits : s.read_pages) counters_.rows_read += uint64_t(std::popcount(bits)) * view.page_tokens;
    } else {
        counters_.rows_read += uint64_t(s.view_ids.size()) * block_shape_.n_head_kv * bt;
    }
    if (collects_mass(s)) {
        const size_t n = s.view_ids.size() * layout_.n_slots();
        if (mass_.n_bytes() < n * sizeof(float)) {
            LR_ASSIGN_OR_RETURN(mass_, backend_.alloc(std::max(n * sizeof(float), mass_.n_bytes() * 2)));
        }
        const std::vector<float> zeros(n, 0.0f);
        backend_.copy_to_device(mass_.data(), zeros.data(), n * sizeof(float));
        view.attn_mass = mass_.as<float>();
    }
    return view;
}

void KvCache::end_layer(SeqId seq, uint32_t il) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    Sequence & s = it->second;
    note_new_rows(s, il);
    if (collects_mass(s)) fold_mass(s, il);
    for (BlockId id : s.view_ids) pool_.meta(id).pinned = false;
    if (evicts(s)) {
        uint32_t budget = config_.settings.budget_for(s.n_committed + uint32_t(s.pending.size()));
        if (config_.settings.policy == KvPolicy::streaming) budget = std::min(budget, config_.max_tokens);
        evict(s, il, budget, false);
        if (Status st = compact(seq, il); !st.ok()) report_fault(st);
    }
    if (config_.settings.k_codec() != layout_.k_codec || config_.settings.v_codec() != layout_.v_codec) {
        if (Status st = reencode_aged(seq, il); !st.ok()) report_fault(st);
    }
}

void KvCache::commit(SeqId seq) {
    Sequence & s = seqs_.at(seq);
    const uint32_t bt = block_shape_.block_tokens;
    const uint32_t full_before = s.n_committed / bt;
    s.tokens.insert(s.tokens.end(), s.pending.begin(), s.pending.end());
    s.n_committed += uint32_t(s.pending.size());
    if (!s.pending_pos.empty()) s.next_pos = s.pending_pos.back() + 1;
    s.pending.clear();
    s.pending_pos.clear();
    s.observation = false;
    if (s.pure_prefix) {
        const uint32_t full_after = s.n_committed / bt;
        for (uint32_t b = uint32_t(s.chains.size()); b < full_after; ++b) {
            const uint64_t previous = b == 0 ? chain_seed_ : s.chains[b - 1];
            s.chains.push_back(PrefixStore::chain_next(previous, std::span(s.tokens).subspan(size_t(b) * bt, bt)));
        }
        if (full_after > full_before) persist_full_blocks(seq, full_before, full_after);
    }
    collect_persisted(false);
    publish_stats();
}

void KvCache::rollback(SeqId seq) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    Sequence & s = it->second;
    for (BlockId id : s.view_ids) pool_.meta(id).pinned = false;
    const int32_t from = s.pending_pos.empty() ? s.next_pos : s.pending_pos.front();
    s.pending.clear();
    s.pending_pos.clear();
    s.observation = false;
    if (!drop_positions_from(seq, from)) {
        lose_sequence_from(seq, uint32_t(from), error(StatusCode::corrupt_data, "a KV block could not be read back"));
    }
    publish_stats();
}

bool KvCache::drop_positions_from(SeqId seq, int32_t from) {
    Sequence & s = seqs_.at(seq);
    const uint32_t bt = block_shape_.block_tokens;
    bool ok = true;
    for (uint32_t il = 0; il < shape_.n_layer; ++il) {
        std::vector<BlockId> & layer = s.blocks[il];
        uint32_t last_used = 0;
        for (uint32_t b = 0; b < layer.size(); ++b) {
            BlockMeta & m = pool_.meta(layer[b]);
            const KvBlockLayout L = layout_of(m);
            bool changed = false;
            for (uint32_t g = 0; g < block_shape_.n_head_kv; ++g) {
                for (uint32_t sl = 0; sl < bt; ++sl) {
                    int32_t & p = m.pos[L.pos_index(g, sl)];
                    if (p == kInvalidPos) continue;
                    if (p >= from) {
                        p = kInvalidPos;
                        changed = true;
                    } else {
                        last_used = std::max(last_used, b * bt + sl + 1);
                    }
                }
            }
            if (!changed) continue;
            m.chain = 0;  // no longer the full block the prefix cache knows
            m.persisted = false;
            if (m.home != BlockHome::device) {
                if (!ensure_on_device(std::span(&layer[b], 1), seq, il).ok()) {
                    ok = false;
                    continue;
                }
                m.pinned = false;
            }
            ok = write_positions(m).ok() && ok;
        }
        // Trailing slots left empty go, with the blocks that held only them.
        s.slots_used[il] = last_used;
        while (layer.size() > (size_t(last_used) + bt - 1) / bt) {
            free_block(layer.back());
            layer.pop_back();
        }
        // New rows are written in the full-precision codecs: a quantized block that will
        // take them is widened back first.
        if (last_used % bt != 0) {
            const BlockMeta & m = pool_.meta(layer.back());
            if (m.k_codec != layout_.k_codec || m.v_codec != layout_.v_codec) {
                ok = ensure_on_device(std::span(&layer.back(), 1), seq, il).ok() && ok;
                pool_.meta(layer.back()).pinned = false;
                if (pool_.meta(layer.back()).home == BlockHome::device) {
                    ok = recode_in_layer(s, il, layer.size() - 1, layout_.k_codec, layout_.v_codec).ok() && ok;
                }
            }
        }
    }
    return ok;
}

void KvCache::finish_prompt(SeqId seq) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end() || config_.settings.policy != KvPolicy::snapkv) return;
    Sequence & s = it->second;
    const uint32_t budget = config_.settings.budget_for(s.n_committed);
    for (uint32_t il = 0; il < shape_.n_layer; ++il) {
        if (Status st = ensure_on_device(s.blocks[il], seq, il); !st.ok()) {
            report_fault(st);
            continue;
        }
        for (BlockId id : s.blocks[il]) pool_.meta(id).pinned = false;
        evict(s, il, budget, true);
        if (Status st = compact(seq, il); !st.ok()) report_fault(st);
    }
    // Decoding keeps growing, or continues with H2O.
    s.selecting = config_.settings.then == KvPolicy::h2o;
    publish_stats();
}

void KvCache::truncate(SeqId seq, uint32_t n_keep) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    Sequence & s = it->second;
    LR_ASSERT(s.pending.empty());
    if (n_keep >= s.n_committed) return;
    // Positions are token indices unless streaming renumbered them: then start over.
    const bool renumbered = s.next_pos != int32_t(s.n_committed);
    const uint32_t cut = renumbered ? 0 : n_keep;
    const bool ok = drop_positions_from(seq, int32_t(cut));
    const uint32_t bt = block_shape_.block_tokens;
    s.n_committed = cut;
    s.next_pos = int32_t(cut);
    s.tokens.resize(cut);
    s.chains.resize(std::min<size_t>(s.chains.size(), cut / bt));
    if (!ok) {
        lose_sequence_from(seq, cut, error(StatusCode::corrupt_data, "a KV block could not be read back"));
        return;
    }
    if (cut == 0 && !s.lost_from) {
        for (auto & layer : s.blocks) {
            for (BlockId id : layer) free_block(id);
        }
        seqs_.erase(it);
    }
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

void KvCache::lose_sequence_from(SeqId seq, uint32_t position, const Status & why) {
    report_fault(why);
    Sequence & s = seqs_.at(seq);
    for (BlockId id : s.view_ids) pool_.meta(id).pinned = false;
    s.pending.clear();
    s.pending_pos.clear();
    const uint32_t bt = block_shape_.block_tokens;
    // Recomputation restarts at a block boundary so that the prefix stays block-aligned.
    // After eviction blocks no longer follow positions: then everything is recomputed.
    const uint32_t cut = s.pure_prefix ? std::min(s.n_committed, position / bt * bt) : 0;
    s.lost_from = std::min(s.lost_from.value_or(cut), cut);
    // Drop every block from the cut on (their bytes may be unreadable), then truncate.
    for (uint32_t il = 0; il < shape_.n_layer; ++il) {
        std::vector<BlockId> & layer = s.blocks[il];
        while (layer.size() > cut / bt) {
            free_block(layer.back());
            layer.pop_back();
        }
        s.slots_used[il] = std::min<uint32_t>(s.slots_used[il], uint32_t(layer.size()) * bt);
    }
    s.n_committed = std::min(s.n_committed, cut);
    s.next_pos = int32_t(s.n_committed);
    s.tokens.resize(s.n_committed);
    s.chains.resize(std::min<size_t>(s.chains.size(), s.n_committed / bt));
    publish_stats();
}

// ---- Stats ------------------------------------------------------------------------------------

std::vector<float> KvCache::retention(SeqId seq) const {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return {};
    const Sequence & s = it->second;
    std::vector<float> kept(size_t(std::max(s.next_pos, 0)), 0.0f);
    for (const auto & layer : s.blocks) {
        for (BlockId id : layer) {
            for (int32_t p : pool_.meta(id).pos) {
                if (p >= 0 && size_t(p) < kept.size()) kept[size_t(p)] += 1.0f;
            }
        }
    }
    const float pairs = float(shape_.n_layer * shape_.n_head_kv);
    for (float & k : kept) k /= pairs;
    return kept;
}

std::vector<std::pair<KvCodec, KvCodec>> KvCache::layer_codecs(SeqId seq, uint32_t il) const {
    std::vector<std::pair<KvCodec, KvCodec>> out;
    auto it = seqs_.find(seq);
    if (it == seqs_.end() || il >= it->second.blocks.size()) return out;
    for (BlockId id : it->second.blocks[il]) out.emplace_back(pool_.meta(id).k_codec, pool_.meta(id).v_codec);
    return out;
}

Result<std::vector<float>> KvCache::layer_rows(SeqId seq, uint32_t il, uint32_t head, bool keys) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end() || il >= it->second.blocks.size() || head >= block_shape_.n_head_kv) {
        return error(StatusCode::invalid_argument, "no such sequence, layer or KV head");
    }
    const std::vector<BlockId> & layer = it->second.blocks[il];
    LR_RETURN_IF_ERROR(ensure_on_device(layer, seq, il));
    const uint32_t d = block_shape_.head_dim;
    std::vector<float> rows;
    std::vector<uint8_t> bytes;
    for (BlockId id : layer) {
        BlockMeta & m = pool_.meta(id);
        m.pinned = false;
        const KvBlockLayout L = layout_of(m);
        LR_RETURN_IF_ERROR(read_block(m, bytes));
        for (uint32_t sl = 0; sl < block_shape_.block_tokens; ++sl) {
            if (m.pos[L.pos_index(head, sl)] == kInvalidPos) continue;
            rows.resize(rows.size() + d);
            kv_decode_row(keys ? m.k_codec : m.v_codec, bytes.data() + (keys ? L.k_row_offset(head, sl) : L.v_row_offset(head, sl)),
                          rows.data() + rows.size() - d, d);
        }
    }
    return rows;
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
        s.tiers[2].capacity_bytes = std::max<uint64_t>(s.tiers[2].capacity_bytes, config_.capacities.disk_bytes);
    }
    s.mirror_bytes = pool_.mirror_bytes();
    s.tokens_seen = 0;
    s.tokens_kept = 0;
    for (const auto & [id, seq] : seqs_) {
        s.tokens_seen += seq.n_committed;
        s.tokens_kept += n_kept(id);
    }
    s.n_sequences = uint32_t(seqs_.size());
    s.layer_kinds = {{.kind = KvLayerKind::full,
                      .n_layers = shape_.n_layer,
                      .bytes = s.tiers[0].used_bytes + s.tiers[1].used_bytes + s.tiers[2].used_bytes,
                      .tokens_kept = seqs_.empty() ? 0 : s.tokens_kept / seqs_.size()}};
    std::lock_guard lock(stats_mutex_);
    published_ = std::move(s);
}

KvStats KvCache::stats() const {
    std::lock_guard lock(stats_mutex_);
    return published_;
}

}  // namespace lr
