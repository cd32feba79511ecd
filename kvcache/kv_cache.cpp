#include "kv_cache.h"

#include <algorithm>

namespace lr {

namespace {
constexpr size_t kBlocksPerArena = 64;
}

Status validate(const KvCacheConfig & config, const KvModelShape & shape) {
    if (config.block_tokens == 0 || config.block_tokens > 4096) {
        return error(StatusCode::invalid_argument, "KV block size must be between 1 and 4096 tokens (got " +
                     std::to_string(config.block_tokens) + ")");
    }
    if (config.max_tokens == 0) return error(StatusCode::invalid_argument, "the context size must be at least 1 token");
    for (KvCodec c : {config.k_codec, config.v_codec}) {
        if (!kv_codec_supports(c, shape.head_dim)) {
            return error(StatusCode::invalid_argument, "KV codec " + std::string(kv_codec_name(c)) +
                         " needs a head size that is a multiple of 32 (this model has " + std::to_string(shape.head_dim) + ")");
        }
    }
    if (shape.n_layer == 0 || shape.n_head_kv == 0 || shape.head_dim == 0) {
        return error(StatusCode::invalid_argument, "the model has an empty KV shape");
    }
    return {};
}

Result<std::unique_ptr<KvCache>> KvCache::create(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend) {
    LR_RETURN_IF_ERROR(validate(config, shape));
    return std::unique_ptr<KvCache>(new KvCache(config, shape, backend));
}

KvCache::KvCache(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend)
    : config_(config), shape_(shape), backend_(backend) {
    layout_.shape = {config.block_tokens, shape.n_head_kv, shape.head_dim};
    layout_.k_codec = config.k_codec;
    layout_.v_codec = config.v_codec;
    invalid_pos_.assign(layout_.n_slots(), kInvalidPos);
}

uint32_t KvCache::n_tokens(SeqId seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : it->second.n_committed;
}

Result<uint8_t *> KvCache::slot_for_new_block() {
    if (!free_slots_.empty()) {
        uint8_t * p = free_slots_.back();
        free_slots_.pop_back();
        return p;
    }
    const size_t block_bytes = layout_.block_bytes();
    LR_ASSIGN_OR_RETURN(DeviceBuffer arena, backend_.alloc(block_bytes * kBlocksPerArena));
    auto * base = arena.as<uint8_t>();
    for (size_t i = kBlocksPerArena; i-- > 1;) free_slots_.push_back(base + i * block_bytes);
    arenas_.push_back(std::move(arena));
    return base;
}

void KvCache::clear_positions(uint8_t * block, uint32_t first_slot, uint32_t n_slots) {
    // Positions are [n_head_kv][block_tokens]: clear the range in every head.
    for (uint32_t g = 0; g < layout_.shape.n_head_kv; ++g) {
        const size_t offset = layout_.pos_offset() + layout_.pos_index(g, first_slot) * sizeof(int32_t);
        backend_.copy_to_device(block + offset, invalid_pos_.data(), n_slots * sizeof(int32_t));
    }
}

void KvCache::free_block(BlockId id) {
    uint8_t * data = pool_.meta(id).data;
    if (pool_.release(id)) {
        free_slots_.push_back(data);
        pool_.meta(id).data = nullptr;
    }
}

Status KvCache::reserve(SeqId seq, uint32_t n_new) {
    Sequence & s = seqs_[seq];
    LR_ASSERT(s.n_reserved == 0);  // commit or rollback the previous ubatch first
    if (s.blocks.empty()) s.blocks.resize(shape_.n_layer);
    if (size_t(s.n_committed) + n_new > config_.max_tokens) {
        return error(StatusCode::context_full, "the context holds " + std::to_string(config_.max_tokens) +
                     " tokens; " + std::to_string(s.n_committed) + " are used and " + std::to_string(n_new) + " more do not fit");
    }
    const uint32_t bt = layout_.shape.block_tokens;
    const size_t blocks_needed = (size_t(s.n_committed) + n_new + bt - 1) / bt;
    // Allocate every layer's new blocks before touching the sequence, so failure changes nothing.
    std::vector<std::pair<uint32_t, BlockId>> added;
    for (uint32_t il = 0; il < shape_.n_layer; ++il) {
        for (size_t b = s.blocks[il].size(); b < blocks_needed; ++b) {
            Result<uint8_t *> slot = slot_for_new_block();
            if (!slot.ok()) {
                for (auto & [layer, id] : added) {
                    (void)layer;
                    free_block(id);
                }
                return slot.status();
            }
            const BlockId id = pool_.allocate(il);
            pool_.meta(id).data = *slot;
            clear_positions(*slot, 0, bt);
            added.emplace_back(il, id);
        }
    }
    for (auto & [layer, id] : added) s.blocks[layer].push_back(id);
    s.n_reserved = n_new;
    s.write_slots.resize(n_new);
    for (uint32_t i = 0; i < n_new; ++i) s.write_slots[i] = s.n_committed + i;
    return {};
}

PagedKvView KvCache::layer_view(SeqId seq, uint32_t il) {
    Sequence & s = seqs_.at(seq);
    LR_ASSERT(il < shape_.n_layer);
    s.view_blocks.clear();
    for (BlockId id : s.blocks[il]) s.view_blocks.push_back({pool_.meta(id).data, layout_.k_codec, layout_.v_codec});
    PagedKvView view;
    view.shape = layout_.shape;
    view.blocks = s.view_blocks;
    view.write_slots = s.write_slots;
    return view;
}

KvStats KvCache::stats() const {
    std::lock_guard lock(stats_mutex_);
    return stats_;
}

void KvCache::publish_stats() {
    KvStats s;
    s.tiers[0] = {.name = "device", .present = true, .used_bytes = bytes_used(),
                  .capacity_bytes = arenas_.size() * kBlocksPerArena * layout_.block_bytes(), .blocks = pool_.n_blocks_used()};
    s.tiers[1] = {.name = "host"};
    s.tiers[2] = {.name = "disk"};
    for (const auto & [id, seq] : seqs_) s.tokens_seen += seq.n_committed;
    s.tokens_kept = s.tokens_seen;
    s.policy = "none, K " + std::string(kv_codec_name(config_.k_codec)) + " / V " + std::string(kv_codec_name(config_.v_codec));
    std::lock_guard lock(stats_mutex_);
    stats_ = std::move(s);
}

void KvCache::commit(SeqId seq) {
    Sequence & s = seqs_.at(seq);
    const uint32_t bt = layout_.shape.block_tokens;
    s.n_committed += s.n_reserved;
    s.n_reserved = 0;
    s.write_slots.clear();
    for (auto & layer : s.blocks) {
        for (size_t b = 0; b < layer.size(); ++b) {
            pool_.meta(layer[b]).n_filled = std::min<uint32_t>(bt, s.n_committed - std::min<uint32_t>(s.n_committed, uint32_t(b) * bt));
        }
    }
    publish_stats();
}

void KvCache::rollback(SeqId seq) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    Sequence & s = it->second;
    s.n_reserved = 0;
    s.write_slots.clear();
    truncate(seq, s.n_committed);
}

void KvCache::truncate(SeqId seq, uint32_t n_keep) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    Sequence & s = it->second;
    LR_ASSERT(s.n_reserved == 0);
    n_keep = std::min(n_keep, s.n_committed);
    const uint32_t bt = layout_.shape.block_tokens;
    const size_t keep_blocks = (size_t(n_keep) + bt - 1) / bt;
    for (auto & layer : s.blocks) {
        while (layer.size() > keep_blocks) {
            free_block(layer.back());
            layer.pop_back();
        }
        if (!layer.empty() && n_keep % bt != 0) {
            BlockMeta & m = pool_.meta(layer.back());
            clear_positions(m.data, n_keep % bt, bt - n_keep % bt);
            m.n_filled = n_keep % bt;
        }
    }
    s.n_committed = n_keep;
    if (n_keep == 0) seqs_.erase(it);
    publish_stats();
}

}  // namespace lr
