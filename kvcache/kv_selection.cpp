// The lossy side of the cache: attention statistics, eviction by the policy, compaction
// of the holes it leaves, re-encoding of blocks that leave the full-precision window, and
// StreamingLLM's renumbering of positions.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/backend/kv_codec_rows.h"
#include "kvcache/kv_cache.h"
#include "kvcache/rope_shift.h"
#include "kvcache/token_selection.h"

namespace lr {

void KvCache::note_new_rows(Sequence & s, uint32_t il) {
    const uint32_t bt = block_shape_.block_tokens;
    const uint32_t first_new = s.slots_used[il];
    const bool bounds = config_.settings.policy == KvPolicy::quest;
    std::vector<uint8_t> bytes;
    std::vector<float> row(bounds ? block_shape_.head_dim : 0);
    BlockId bytes_of = UINT32_MAX;
    for (size_t i = 0; i < s.pending.size(); ++i) {
        const uint32_t slot = first_new + uint32_t(i);
        const BlockId id = s.blocks[il][slot / bt];
        BlockMeta & m = pool_.meta(id);
        const KvBlockLayout L = layout_of(m);
        for (uint32_t g = 0; g < block_shape_.n_head_kv; ++g) m.pos[L.pos_index(g, slot % bt)] = s.pending_pos[i];
        if (!bounds) continue;
        // Quest's per-channel key bounds, from the rows just written.
        if (bytes_of != id) {
            if (!read_block(m, bytes).ok()) continue;
            bytes_of = id;
        }
        widen_key_bounds(m, bytes.data(), slot % bt, row.data());
    }
    s.slots_used[il] = first_new + uint32_t(s.pending.size());
}

void KvCache::fold_mass(Sequence & s, uint32_t il) {
    (void)il;
    const size_t per_block = layout_.n_slots();
    std::vector<float> mass(s.view_ids.size() * per_block);
    backend_.copy_to_host(mass.data(), mass_.data(), mass.size() * sizeof(float));
    backend_.synchronize();
    for (size_t v = 0; v < s.view_ids.size(); ++v) {
        BlockMeta & m = pool_.meta(s.view_ids[v]);
        if (m.importance.empty()) m.importance.assign(per_block, 0.0f);
        // The kernel writes [block][head][slot], the layout of the importance mirror.
        for (size_t i = 0; i < per_block; ++i) m.importance[i] += mass[v * per_block + i];
    }
}

uint32_t KvCache::kept_in_layer(const Sequence & s, uint32_t il) const {
    if (il >= s.blocks.size()) return 0;
    std::vector<uint32_t> per_head(block_shape_.n_head_kv, 0);
    for (BlockId id : s.blocks[il]) {
        const BlockMeta & m = pool_.meta(id);
        for (uint32_t g = 0; g < block_shape_.n_head_kv; ++g) {
            for (uint32_t sl = 0; sl < block_shape_.block_tokens; ++sl) {
                if (m.pos[layout_of(m).pos_index(g, sl)] != kInvalidPos) ++per_head[g];
            }
        }
    }
    return *std::max_element(per_head.begin(), per_head.end());
}

void KvCache::evict(Sequence & s, uint32_t il, uint32_t budget, bool snapkv) {
    const KvSettings & k = config_.settings;
    const uint32_t bt = block_shape_.block_tokens;
    std::vector<BlockId> & layer = s.blocks[il];
    const size_t n = layer.size() * bt;
    SelectionParams params{.budget = budget, .sinks = k.sink_tokens};
    switch (k.policy) {
        case KvPolicy::streaming: params.recent = budget; break;
        case KvPolicy::snapkv: params.recent = snapkv ? k.obs_window : uint32_t(k.recent_ratio * budget); break;
        default: params.recent = uint32_t(k.recent_ratio * budget); break;
    }
    std::vector<int32_t> positions(n);
    std::vector<float> scores(n);
    const int32_t end = s.pending_pos.empty() ? s.next_pos : s.pending_pos.back() + 1;  // after the newest query
    std::vector<uint8_t> keep;
    uint64_t evicted = 0;
    std::vector<uint8_t> dirty(layer.size(), 0);
    for (uint32_t g = 0; g < block_shape_.n_head_kv; ++g) {
        for (size_t b = 0; b < layer.size(); ++b) {
            const BlockMeta & m = pool_.meta(layer[b]);
            for (uint32_t sl = 0; sl < bt; ++sl) {
                const size_t at = layout_of(m).pos_index(g, sl);
                positions[b * bt + sl] = m.pos[at];
                scores[b * bt + sl] = m.importance.empty() ? 0.0f : m.importance[at];
            }
        }
        if (k.policy == KvPolicy::random) scores = random_scores(n, (uint64_t(il) << 32) ^ (uint64_t(g) << 48) ^ s.n_committed);
        if (k.policy == KvPolicy::h2o || (k.policy == KvPolicy::snapkv && !snapkv)) {
            scores = mean_attention_scores(positions, scores, end, s.mass_from.value_or(0));
        }
        if (snapkv) scores = max_pool_scores(positions, scores, k.pool_kernel);
        select_positions(positions, scores, params, keep);
        for (size_t i = 0; i < n; ++i) {
            if (positions[i] == kInvalidPos || keep[i]) continue;
            BlockMeta & m = pool_.meta(layer[i / bt]);
            const size_t at = layout_of(m).pos_index(g, uint32_t(i % bt));
            m.pos[at] = kInvalidPos;
            if (!m.importance.empty()) m.importance[at] = 0.0f;
            dirty[i / bt] = 1;
            ++evicted;
        }
    }
    if (evicted == 0) return;
    s.pure_prefix = false;
    counters_.evicted_tokens += evicted / block_shape_.n_head_kv;
    // Attention must not see the evicted positions any more: write the positions back.
    for (size_t b = 0; b < layer.size(); ++b) {
        if (!dirty[b]) continue;
        BlockMeta & m = pool_.meta(layer[b]);
        m.chain = 0;
        m.persisted = false;
        if (m.home != BlockHome::device) continue;  // compaction below rewrites it
        (void)write_positions(m);
    }
}

Status KvCache::compact(SeqId seq, uint32_t il) {
    Sequence & s = seqs_.at(seq);
    const uint32_t bt = block_shape_.block_tokens;
    const uint32_t n_heads = block_shape_.n_head_kv, d = block_shape_.head_dim;
    std::vector<BlockId> & layer = s.blocks[il];
    const uint32_t kept = kept_in_layer(s, il);
    // Compact once the holes add up to a whole block: amortized, and at most one block of
    // slack per layer beyond the budget.
    if (size_t(s.slots_used[il]) < size_t(kept) + bt) return {};
    LR_RETURN_IF_ERROR(ensure_on_device(layer, seq, il));
    for (BlockId id : layer) pool_.meta(id).pinned = false;
    // Every kept row, per head in slot (= position) order, decoded.
    struct Rows {
        std::vector<int32_t> pos;
        std::vector<float> importance;
        std::vector<float> k, v;  // [row][d]
    };
    std::vector<Rows> heads(n_heads);
    std::vector<uint8_t> bytes;
    for (BlockId id : layer) {
        const BlockMeta & m = pool_.meta(id);
        const KvBlockLayout L = layout_of(m);
        LR_RETURN_IF_ERROR(read_block(m, bytes));
        for (uint32_t g = 0; g < n_heads; ++g) {
            for (uint32_t sl = 0; sl < bt; ++sl) {
                const int32_t p = m.pos[L.pos_index(g, sl)];
                if (p == kInvalidPos) continue;
                Rows & r = heads[g];
                r.pos.push_back(p);
                r.importance.push_back(m.importance.empty() ? 0.0f : m.importance[L.pos_index(g, sl)]);
                r.k.resize(r.k.size() + d);
                r.v.resize(r.v.size() + d);
                kv_decode_row(m.k_codec, bytes.data() + L.k_row_offset(g, sl), r.k.data() + r.k.size() - d, d);
                kv_decode_row(m.v_codec, bytes.data() + L.v_row_offset(g, sl), r.v.data() + r.v.size() - d, d);
            }
        }
    }
    const bool with_importance = collects_mass(s) || config_.settings.policy == KvPolicy::h2o;
    for (BlockId id : layer) free_block(id);
    layer.clear();
    // Rewrite: blocks past the full-precision window use the configured codecs (rows keep
    // their groups, so re-encoding an already quantized row is lossless).
    const uint32_t n_blocks = (kept + bt - 1) / bt;
    const uint32_t window = config_.settings.residual_tokens;
    for (uint32_t b = 0; b < n_blocks; ++b) {
        const bool aged = size_t(b + 1) * bt + window <= kept;
        const KvCodec kc = aged ? config_.settings.k_codec() : layout_.k_codec;
        const KvCodec vc = aged ? config_.settings.v_codec() : layout_.v_codec;
        LR_ASSIGN_OR_RETURN(BlockId id, new_block(seq, il, kc, vc));
        BlockMeta & m = pool_.meta(id);
        const KvBlockLayout L = layout_of(m);
        bytes.assign(m.n_bytes, 0);
        if (with_importance) m.importance.assign(L.n_slots(), 0.0f);
        for (uint32_t g = 0; g < n_heads; ++g) {
            const Rows & r = heads[g];
            for (uint32_t sl = 0; sl < bt; ++sl) {
                const size_t row = size_t(b) * bt + sl;
                if (row >= r.pos.size()) continue;
                kv_encode_row(kc, r.k.data() + row * d, bytes.data() + L.k_row_offset(g, sl), d);
                kv_encode_row(vc, r.v.data() + row * d, bytes.data() + L.v_row_offset(g, sl), d);
                m.pos[L.pos_index(g, sl)] = r.pos[row];
                if (with_importance) m.importance[L.pos_index(g, sl)] = r.importance[row];
            }
        }
        std::memcpy(bytes.data() + L.pos_offset(), m.pos.data(), m.pos.size() * sizeof(int32_t));
        LR_RETURN_IF_ERROR(write_block(m, bytes));
        layer.push_back(id);
    }
    s.slots_used[il] = kept;
    return {};
}

Status KvCache::reencode_aged(SeqId seq, uint32_t il) {
    Sequence & s = seqs_.at(seq);
    const uint32_t bt = block_shape_.block_tokens;
    const uint32_t window = config_.settings.residual_tokens;
    const KvCodec kc = config_.settings.k_codec(), vc = config_.settings.v_codec();
    for (size_t b = 0; b < s.blocks[il].size(); ++b) {
        if ((b + 1) * bt + window > s.slots_used[il]) break;  // still in the full-precision window
        const BlockMeta & old = pool_.meta(s.blocks[il][b]);
        // Blocks a lower tier narrowed further stay so (re-encoding up gains nothing).
        if (kv_codec_bits(old.k_codec) <= kv_codec_bits(kc) && kv_codec_bits(old.v_codec) <= kv_codec_bits(vc)) continue;
        if (old.home != BlockHome::device) continue;  // re-encoded when next resident
        LR_RETURN_IF_ERROR(recode_in_layer(s, il, b, KvSettings::narrowed(old.k_codec, kv_codec_bits(kc)),
                                           KvSettings::narrowed(old.v_codec, kv_codec_bits(vc))));
    }
    return {};
}

Status KvCache::recode_in_layer(Sequence & s, uint32_t il, size_t b, KvCodec k_codec, KvCodec v_codec) {
    std::vector<uint8_t> from, to;
    LR_RETURN_IF_ERROR(read_block(pool_.meta(s.blocks[il][b]), from));
    LR_ASSIGN_OR_RETURN(BlockId id, new_block(pool_.meta(s.blocks[il][b]).seq, il, k_codec, v_codec));
    BlockMeta & m = pool_.meta(id);
    const BlockMeta & src = pool_.meta(s.blocks[il][b]);
    to.resize(m.n_bytes);
    kv_recode_block(layout_of(src), from.data(), layout_of(m), to.data());
    m.pos = src.pos;
    std::memcpy(to.data() + layout_of(m).pos_offset(), m.pos.data(), m.pos.size() * sizeof(int32_t));
    m.importance = src.importance;
    m.key_min = src.key_min;
    m.key_max = src.key_max;
    LR_RETURN_IF_ERROR(write_block(m, to));
    free_block(s.blocks[il][b]);
    s.blocks[il][b] = id;
    s.pure_prefix = false;
    return {};
}

Status KvCache::renumber(SeqId seq, int32_t room_needed) {
    Sequence & s = seqs_.at(seq);
    const int32_t sinks = int32_t(config_.settings.sink_tokens);
    int32_t next = 0;
    std::vector<float> row(block_shape_.head_dim);
    std::vector<uint8_t> bytes;
    for (uint32_t il = 0; il < shape_.n_layer; ++il) {
        std::vector<BlockId> & layer = s.blocks[il];
        LR_RETURN_IF_ERROR(ensure_on_device(layer, seq, il));
        for (BlockId id : layer) pool_.meta(id).pinned = false;
        // Per head the kept positions, in slot order, become sinks, then consecutive.
        std::vector<int32_t> rank(block_shape_.n_head_kv, 0);
        for (BlockId id : layer) {
            BlockMeta & m = pool_.meta(id);
            const KvBlockLayout L = layout_of(m);
            LR_RETURN_IF_ERROR(read_block(m, bytes));
            for (uint32_t g = 0; g < block_shape_.n_head_kv; ++g) {
                for (uint32_t sl = 0; sl < block_shape_.block_tokens; ++sl) {
                    int32_t & p = m.pos[L.pos_index(g, sl)];
                    if (p == kInvalidPos) continue;
                    const int32_t target = p < sinks ? p : sinks + rank[g]++;
                    if (target != p) {
                        uint8_t * k = bytes.data() + L.k_row_offset(g, sl);
                        kv_decode_row(m.k_codec, k, row.data(), block_shape_.head_dim);
                        rope_shift_row(row.data(), target - p, config_.rope);
                        kv_encode_row(m.k_codec, row.data(), k, block_shape_.head_dim);
                        p = target;
                    }
                    next = std::max(next, p + 1);
                }
            }
            std::memcpy(bytes.data() + L.pos_offset(), m.pos.data(), m.pos.size() * sizeof(int32_t));
            LR_RETURN_IF_ERROR(write_block(m, bytes));
            m.key_min.clear();
            m.key_max.clear();
        }
    }
    if (next + room_needed > int32_t(config_.max_position)) {
        return error(StatusCode::context_full, "the streaming window (" + std::to_string(next) +
                     " positions) leaves no room in the model's context: lower --kv-budget");
    }
    s.next_pos = next;
    s.pure_prefix = false;
    return {};
}

}  // namespace lr
