#include "kvcache/kv_layer_edits.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/backend/kv_codec_rows.h"
#include "engine/common/fp16.h"
#include "kvcache/rope_shift.h"

namespace lr {

uint32_t KvLayerEditor::kept_in_layer(const KvSequence & s, uint32_t il) const {
    if (il >= s.layers.size()) return 0;
    const uint32_t n_head_kv = state_.layer_shapes[il].n_head_kv;
    std::vector<uint32_t> per_head(n_head_kv, 0);
    for (BlockId id : s.layers[il].ids) {
        const BlockMeta & m = state_.pool.meta(id);
        const KvBlockLayout L = state_.layout_of(m);
        for (uint32_t g = 0; g < n_head_kv; ++g) {
            for (uint32_t sl = 0; sl < state_.block_shape.block_tokens; ++sl) {
                if (m.pos[L.pos_index(g, sl)] != kInvalidPos) ++per_head[g];
            }
        }
    }
    return *std::max_element(per_head.begin(), per_head.end());
}

Status KvLayerEditor::make_private(SeqId seq, uint32_t il, size_t b) {
    LayerBlocks & layer = state_.seqs.at(seq).layers[il];
    const BlockId old = layer.ids[b];
    if (state_.pool.meta(old).ref_count == 1) return {};
    std::vector<uint8_t> bytes;
    {
        LR_ASSIGN_OR_RETURN(PinnedBlocks pins, placement_.pin_on_device(std::span(&old, 1), seq, il, false));
        LR_RETURN_IF_ERROR(placement_.read_block(state_.pool.meta(old), bytes));
        const BlockMeta & src = state_.pool.meta(old);
        LR_ASSIGN_OR_RETURN(BlockId id, placement_.new_block(seq, il, src.k_codec, src.v_codec));
        BlockMeta & m = state_.pool.meta(id);
        const BlockMeta & from = state_.pool.meta(old);
        m.pos = from.pos;
        m.key_min = from.key_min;
        m.key_max = from.key_max;
        LR_RETURN_IF_ERROR(placement_.write_block(m, bytes));
        layer.ids[b] = id;
    }
    placement_.free_block(old);  // the other holders keep it
    return {};
}

// ---- Selection ------------------------------------------------------------------------------

void KvLayerEditor::evict(SeqId seq, uint32_t il, const Eviction & e) {
    KvSequence & s = state_.seqs.at(seq);
    const SelectionPolicy & policy = *s.policy;
    const uint32_t bt = state_.block_shape.block_tokens;
    LayerBlocks & layer = s.layers[il];
    const size_t n = layer.size() * bt;
    const SelectionParams params = policy.params(e.budget, e.prompt_end);
    std::vector<int32_t> positions(n);
    std::vector<float> mass(n), scores;
    std::vector<uint8_t> keep;
    // Decide per head first; shared blocks are copied before anything is written.
    std::vector<std::vector<uint32_t>> evicted(layer.size());  // per block: pos indices
    uint64_t n_evicted = 0;
    for (uint32_t g = 0; g < state_.block_shape.n_head_kv; ++g) {
        for (size_t b = 0; b < layer.size(); ++b) {
            const BlockMeta & m = state_.pool.meta(layer.ids[b]);
            for (uint32_t sl = 0; sl < bt; ++sl) {
                const size_t at = state_.layout_of(m).pos_index(g, sl);
                positions[b * bt + sl] = m.pos[at];
                mass[b * bt + sl] = layer.mass[b].empty() ? 0.0f : layer.mass[b][at];
            }
        }
        policy.score(
            {.positions = positions, .mass = mass, .end = e.end, .layer = il, .head = g, .n_held = e.n_held, .prompt_end = e.prompt_end},
            scores);
        select_positions(positions, scores, params, keep);
        for (size_t i = 0; i < n; ++i) {
            if (positions[i] == kInvalidPos || keep[i]) continue;
            evicted[i / bt].push_back(uint32_t(state_.layout_of(state_.pool.meta(layer.ids[i / bt])).pos_index(g, uint32_t(i % bt))));
            ++n_evicted;
        }
    }
    if (n_evicted > 0) {
        s.pure_prefix = false;
        state_.counters.evicted_tokens += n_evicted / state_.block_shape.n_head_kv;
    }
    // Attention must not see the evicted positions any more: the mirrors and the bytes.
    for (size_t b = 0; b < layer.size(); ++b) {
        if (evicted[b].empty()) continue;
        if (Status st = make_private(seq, il, b); !st.ok()) {
            state_.report_fault(st);
            continue;
        }
        const BlockId id = layer.ids[b];
        Result<PinnedBlocks> pins = placement_.pin_on_device(std::span(&id, 1), seq, il, false);
        if (!pins.ok()) {
            state_.report_fault(pins.status());
            continue;
        }
        BlockMeta & m = state_.pool.meta(id);
        for (uint32_t at : evicted[b]) {
            m.pos[at] = kInvalidPos;
            if (!layer.mass[b].empty()) layer.mass[b][at] = 0.0f;
        }
        m.chain = 0;
        m.persisted = false;
        if (Status st = placement_.write_positions(m); !st.ok()) state_.report_fault(st);
    }
    if (Status st = compact(seq, il); !st.ok()) state_.report_fault(st);
}

Status KvLayerEditor::compact(SeqId seq, uint32_t il) {
    KvSequence & s = state_.seqs.at(seq);
    const uint32_t bt = state_.block_shape.block_tokens;
    const uint32_t n_heads = state_.block_shape.n_head_kv, d = state_.block_shape.head_dim;
    LayerBlocks & layer = s.layers[il];
    const uint32_t kept = kept_in_layer(s, il);
    // Compact once the holes add up to a whole block: amortized, and at most one block of
    // slack per layer beyond the budget.
    if (size_t(layer.slots_used) < size_t(kept) + bt) return {};
    // Every kept row, per head in slot (= position) order, decoded.
    struct Rows {
        std::vector<int32_t> pos;
        std::vector<float> mass;
        std::vector<float> k, v;  // [row][d]
    };
    std::vector<Rows> heads(n_heads);
    std::vector<uint8_t> bytes;
    {
        LR_ASSIGN_OR_RETURN(PinnedBlocks pins, placement_.pin_on_device(layer.ids, seq, il));
        for (size_t b = 0; b < layer.size(); ++b) {
            const BlockMeta & m = state_.pool.meta(layer.ids[b]);
            const KvBlockLayout L = state_.layout_of(m);
            LR_RETURN_IF_ERROR(placement_.read_block(m, bytes));
            for (uint32_t g = 0; g < n_heads; ++g) {
                for (uint32_t sl = 0; sl < bt; ++sl) {
                    const int32_t p = m.pos[L.pos_index(g, sl)];
                    if (p == kInvalidPos) continue;
                    Rows & r = heads[g];
                    r.pos.push_back(p);
                    r.mass.push_back(layer.mass[b].empty() ? 0.0f : layer.mass[b][L.pos_index(g, sl)]);
                    r.k.resize(r.k.size() + d);
                    r.v.resize(r.v.size() + d);
                    kv_decode_row(m.k_codec, bytes.data() + L.k_row_offset(g, sl), r.k.data() + r.k.size() - d, d);
                    kv_decode_row(m.v_codec, bytes.data() + L.v_row_offset(g, sl), r.v.data() + r.v.size() - d, d);
                }
            }
        }
    }
    const bool with_mass = s.policy->keeps_mass();
    for (BlockId id : layer.ids) placement_.free_block(id);
    layer.clear();
    // Rewrite: blocks past the full-precision window use the configured codecs (rows keep
    // their groups, so re-encoding an already quantized row is lossless).
    const uint32_t n_blocks = (kept + bt - 1) / bt;
    const KvSettings & k = state_.config.settings;
    for (uint32_t b = 0; b < n_blocks; ++b) {
        const bool aged = size_t(b + 1) * bt + k.residual_tokens <= kept;
        const KvCodec kc = aged ? k.k_codec() : state_.layout.k_codec;
        const KvCodec vc = aged ? k.v_codec() : state_.layout.v_codec;
        LR_ASSIGN_OR_RETURN(BlockId id, placement_.new_block(seq, il, kc, vc));
        BlockMeta & m = state_.pool.meta(id);
        const KvBlockLayout L = state_.layout_of(m);
        bytes.assign(m.n_bytes, 0);
        layer.push(id);
        if (with_mass) layer.mass.back().assign(L.n_slots(), 0.0f);
        for (uint32_t g = 0; g < n_heads; ++g) {
            const Rows & r = heads[g];
            for (uint32_t sl = 0; sl < bt; ++sl) {
                const size_t row = size_t(b) * bt + sl;
                if (row >= r.pos.size()) continue;
                kv_encode_row(kc, r.k.data() + row * d, bytes.data() + L.k_row_offset(g, sl), d);
                kv_encode_row(vc, r.v.data() + row * d, bytes.data() + L.v_row_offset(g, sl), d);
                m.pos[L.pos_index(g, sl)] = r.pos[row];
                if (with_mass) layer.mass.back()[L.pos_index(g, sl)] = r.mass[row];
            }
        }
        std::memcpy(bytes.data() + L.pos_offset(), m.pos.data(), m.pos.size() * sizeof(int32_t));
        LR_RETURN_IF_ERROR(placement_.write_block(m, bytes));
    }
    layer.slots_used = kept;
    return {};
}

// ---- Codecs ---------------------------------------------------------------------------------

Status KvLayerEditor::reencode_aged(SeqId seq, uint32_t il) {
    LayerBlocks & layer = state_.seqs.at(seq).layers[il];
    const uint32_t bt = state_.block_shape.block_tokens;
    const KvSettings & k = state_.config.settings;
    const KvCodec kc = k.k_codec(), vc = k.v_codec();
    for (size_t b = 0; b < layer.size(); ++b) {
        if ((b + 1) * bt + k.residual_tokens > layer.slots_used) break;  // still in the full-precision window
        const BlockMeta & old = state_.pool.meta(layer.ids[b]);
        // Blocks a lower tier narrowed further stay so (re-encoding up gains nothing).
        if (kv_codec_bits(old.k_codec) <= kv_codec_bits(kc) && kv_codec_bits(old.v_codec) <= kv_codec_bits(vc)) continue;
        if (old.place.home != BlockHome::device) continue;  // re-encoded when next resident
        LR_RETURN_IF_ERROR(
            recode(seq, il, b, KvSettings::narrowed(old.k_codec, kv_codec_bits(kc)), KvSettings::narrowed(old.v_codec, kv_codec_bits(vc))));
    }
    return {};
}

Status KvLayerEditor::recode(SeqId seq, uint32_t il, size_t b, KvCodec k_codec, KvCodec v_codec) {
    KvSequence & s = state_.seqs.at(seq);
    LayerBlocks & layer = s.layers[il];
    std::vector<uint8_t> from, to;
    LR_RETURN_IF_ERROR(placement_.read_block(state_.pool.meta(layer.ids[b]), from));
    LR_ASSIGN_OR_RETURN(BlockId id, placement_.new_block(seq, il, k_codec, v_codec));
    BlockMeta & m = state_.pool.meta(id);
    const BlockMeta & src = state_.pool.meta(layer.ids[b]);
    to.resize(m.n_bytes);
    kv_recode_block(state_.layout_of(src), from.data(), state_.layout_of(m), to.data());
    m.pos = src.pos;
    std::memcpy(to.data() + state_.layout_of(m).pos_offset(), m.pos.data(), m.pos.size() * sizeof(int32_t));
    m.key_min = src.key_min;
    m.key_max = src.key_max;
    LR_RETURN_IF_ERROR(placement_.write_block(m, to));
    placement_.free_block(layer.ids[b]);
    layer.ids[b] = id;  // the sequence's mass for the block stays (same slots)
    s.pure_prefix = false;
    return {};
}

// ---- Positions ------------------------------------------------------------------------------

int32_t KvLayerEditor::renumbered_end(const KvSequence & s) const {
    const int32_t sinks = int32_t(state_.config.settings.sink_tokens);
    int32_t end = 0;
    for (const LayerBlocks & layer : s.layers) {
        std::vector<int32_t> rank(state_.block_shape.n_head_kv, 0);
        for (BlockId id : layer.ids) {
            const BlockMeta & m = state_.pool.meta(id);
            const KvBlockLayout L = state_.layout_of(m);
            for (uint32_t g = 0; g < state_.block_shape.n_head_kv; ++g) {
                for (uint32_t sl = 0; sl < state_.block_shape.block_tokens; ++sl) {
                    const int32_t p = m.pos[L.pos_index(g, sl)];
                    if (p == kInvalidPos) continue;
                    end = std::max(end, (p < sinks ? p : sinks + rank[g]++) + 1);
                }
            }
        }
    }
    return end;
}

Status KvLayerEditor::renumber(SeqId seq, uint32_t il) {
    KvSequence & s = state_.seqs.at(seq);
    const int32_t sinks = int32_t(state_.config.settings.sink_tokens);
    const uint32_t d = state_.block_shape.head_dim;
    LayerBlocks & layer = s.layers[il];
    s.pure_prefix = false;
    std::vector<float> row(d);
    std::vector<uint8_t> bytes;
    // Per head the kept positions, in slot order, become sinks, then consecutive.
    std::vector<int32_t> rank(state_.block_shape.n_head_kv, 0);
    for (size_t b = 0; b < layer.size(); ++b) {
        // Which slots move; a block that keeps its positions is left alone (and shared).
        std::vector<int32_t> target = state_.pool.meta(layer.ids[b]).pos;
        bool moves = false;
        const KvBlockLayout L0 = state_.layout_of(state_.pool.meta(layer.ids[b]));
        for (uint32_t g = 0; g < state_.block_shape.n_head_kv; ++g) {
            for (uint32_t sl = 0; sl < state_.block_shape.block_tokens; ++sl) {
                int32_t & p = target[L0.pos_index(g, sl)];
                if (p == kInvalidPos) continue;
                const int32_t t = p < sinks ? p : sinks + rank[g]++;
                moves = moves || t != p;
                p = t;
            }
        }
        if (!moves) continue;
        LR_RETURN_IF_ERROR(make_private(seq, il, b));
        const BlockId id = layer.ids[b];
        LR_ASSIGN_OR_RETURN(PinnedBlocks pins, placement_.pin_on_device(std::span(&id, 1), seq, il));
        BlockMeta & m = state_.pool.meta(id);
        const KvBlockLayout L = state_.layout_of(m);
        LR_RETURN_IF_ERROR(placement_.read_block(m, bytes));
        for (uint32_t g = 0; g < state_.block_shape.n_head_kv; ++g) {
            for (uint32_t sl = 0; sl < state_.block_shape.block_tokens; ++sl) {
                const size_t at = L.pos_index(g, sl);
                if (m.pos[at] == kInvalidPos || target[at] == m.pos[at]) continue;
                uint8_t * k = bytes.data() + L.k_row_offset(g, sl);
                kv_decode_row(m.k_codec, k, row.data(), d);
                rope_shift_row(row.data(), target[at] - m.pos[at], state_.config.rope);
                kv_encode_row(m.k_codec, row.data(), k, d);
            }
        }
        m.pos = std::move(target);
        std::memcpy(bytes.data() + L.pos_offset(), m.pos.data(), m.pos.size() * sizeof(int32_t));
        LR_RETURN_IF_ERROR(placement_.write_block(m, bytes));
        m.key_min.clear();
        m.key_max.clear();
        m.chain = 0;  // not the prefix block it was any more
        m.persisted = false;
    }
    return {};
}

bool KvLayerEditor::drop_positions_from(SeqId seq, int32_t from) {
    KvSequence & s = state_.seqs.at(seq);
    const uint32_t bt = state_.block_shape.block_tokens;
    bool ok = true;
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        LayerBlocks & layer = s.layers[il];
        uint32_t last_used = 0;
        for (uint32_t b = 0; b < layer.size(); ++b) {
            bool changes = false;
            {
                const BlockMeta & m = state_.pool.meta(layer.ids[b]);
                const KvBlockLayout L = state_.layout_of(m);
                for (uint32_t g = 0; g < L.shape.n_head_kv; ++g) {
                    for (uint32_t sl = 0; sl < bt; ++sl) {
                        const int32_t p = m.pos[L.pos_index(g, sl)];
                        if (p == kInvalidPos) continue;
                        if (p >= from) {
                            changes = true;
                        } else {
                            last_used = std::max(last_used, b * bt + sl + 1);
                        }
                    }
                }
            }
            if (!changes) continue;
            // Fetched (and made its own) before it changes: a restored block is read by its chain.
            if (!make_private(seq, il, b).ok()) {
                ok = false;
                continue;
            }
            const BlockId id = layer.ids[b];
            const bool resident = state_.pool.meta(id).place.home == BlockHome::device;
            Result<PinnedBlocks> pins = placement_.pin_on_device(std::span(&id, 1), seq, il, !resident);
            if (!pins.ok()) {
                ok = false;
                continue;
            }
            BlockMeta & m = state_.pool.meta(id);
            for (int32_t & p : m.pos) {
                if (p != kInvalidPos && p >= from) p = kInvalidPos;
            }
            m.chain = 0;  // no longer the full block the prefix cache knows
            m.persisted = false;
            ok = placement_.write_positions(m).ok() && ok;
        }
        // Trailing slots left empty go, with the blocks that held only them.
        layer.slots_used = last_used;
        while (layer.size() > (size_t(last_used) + bt - 1) / bt) {
            placement_.free_block(layer.ids.back());
            layer.pop();
        }
        // New rows are written in the full-precision codecs: a quantized block that will
        // take them is widened back first.
        if (last_used % bt != 0) {
            const BlockMeta & m = state_.pool.meta(layer.ids.back());
            if (m.k_codec != state_.layout.k_codec || m.v_codec != state_.layout.v_codec) {
                const BlockId last = layer.ids.back();
                Result<PinnedBlocks> pins = placement_.pin_on_device(std::span(&last, 1), seq, il);
                ok = pins.ok() && ok;
                if (pins.ok()) {
                    pins->release();
                    ok = recode(seq, il, layer.size() - 1, state_.layout.k_codec, state_.layout.v_codec).ok() && ok;
                }
            }
        }
    }
    return ok;
}

// ---- Sliding windows -------------------------------------------------------------------------

void KvLayerEditor::slide(SeqId seq) {
    KvSequence & s = state_.seqs.at(seq);
    const uint32_t bt = state_.block_shape.block_tokens;
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        const uint32_t window = state_.shape.window(il);
        if (window == 0) continue;
        // The next query, at next_pos, sees positions from next_pos - window + 1 on; a
        // sliding layer's slots are its positions (nothing is evicted or renumbered there).
        const int64_t oldest_seen = int64_t(s.next_pos) - window + 1;
        LayerBlocks & layer = s.layers[il];
        while (layer.size() > 1 && int64_t(layer.dropped + 1) * bt <= oldest_seen) {
            placement_.free_block(layer.ids.front());
            layer.pop_front();
            layer.slots_used -= bt;
        }
    }
}

uint32_t KvLayerEditor::resumable(const KvSequence & s, uint32_t n_keep) const {
    const uint32_t bt = state_.block_shape.block_tokens;
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        const uint32_t first_held = s.layers[il].dropped * bt;
        if (first_held > 0 && int64_t(n_keep) - state_.shape.window(il) + 1 < int64_t(first_held)) return 0;
    }
    return n_keep;
}

// ---- Quest's key bounds ---------------------------------------------------------------------

void KvLayerEditor::widen_slot_bounds(BlockMeta & m, const uint8_t * bytes, uint32_t slot, float * row) const {
    const uint32_t d = state_.block_shape.head_dim, n_kv = state_.block_shape.n_head_kv;
    const uint32_t page = state_.config.settings.quest_page_tokens();
    if (m.key_min.empty()) {
        m.key_min.assign(size_t(state_.block_shape.block_tokens / page) * n_kv * d, fp32_to_fp16(INFINITY));
        m.key_max.assign(m.key_min.size(), fp32_to_fp16(-INFINITY));
    }
    const KvBlockLayout L = state_.layout_of(m);
    for (uint32_t g = 0; g < n_kv; ++g) {
        if (m.pos[L.pos_index(g, slot)] == kInvalidPos) continue;
        kv_decode_row(m.k_codec, bytes + L.k_row_offset(g, slot), row, d);
        uint16_t * lo = &m.key_min[(size_t(slot / page) * n_kv + g) * d];
        uint16_t * hi = &m.key_max[(size_t(slot / page) * n_kv + g) * d];
        for (uint32_t c = 0; c < d; ++c) {
            if (row[c] < fp16_to_fp32(lo[c])) lo[c] = fp16_round_down(row[c]);
            if (row[c] > fp16_to_fp32(hi[c])) hi[c] = fp16_round_up(row[c]);
        }
    }
}

Status KvLayerEditor::widen_key_bounds(SeqId seq, uint32_t il, uint32_t first, uint32_t n) {
    const LayerBlocks & layer = state_.seqs.at(seq).layers[il];
    const uint32_t bt = state_.block_shape.block_tokens;
    std::vector<uint8_t> bytes;
    std::vector<float> row(state_.block_shape.head_dim);
    for (uint32_t b = first / bt; n > 0 && b * bt < first + n; ++b) {
        const BlockId id = layer.ids[b];
        LR_ASSIGN_OR_RETURN(PinnedBlocks pins, placement_.pin_on_device(std::span(&id, 1), seq, il, false));
        BlockMeta & m = state_.pool.meta(id);
        LR_RETURN_IF_ERROR(placement_.read_block(m, bytes));
        for (uint32_t slot = std::max(first, b * bt); slot < std::min(first + n, (b + 1) * bt); ++slot) {
            widen_slot_bounds(m, bytes.data(), slot % bt, row.data());
        }
    }
    return {};
}

Status KvLayerEditor::bound_blocks(SeqId seq, uint32_t il) {
    const LayerBlocks & layer = state_.seqs.at(seq).layers[il];
    const uint32_t bt = state_.block_shape.block_tokens;
    std::vector<uint8_t> bytes;
    std::vector<float> row(state_.block_shape.head_dim);
    for (size_t b = 0; b < layer.size() && b * bt < layer.slots_used; ++b) {
        const BlockId id = layer.ids[b];
        if (!state_.pool.meta(id).key_min.empty()) continue;
        // One block at a time, so that a device tier of a few blocks is enough.
        LR_ASSIGN_OR_RETURN(PinnedBlocks pins, placement_.pin_on_device(std::span(&id, 1), seq, il));
        BlockMeta & m = state_.pool.meta(id);
        LR_RETURN_IF_ERROR(placement_.read_block(m, bytes));
        const uint32_t end = std::min(bt, layer.slots_used - uint32_t(b) * bt);
        for (uint32_t slot = 0; slot < end; ++slot) widen_slot_bounds(m, bytes.data(), slot, row.data());
    }
    return {};
}

}  // namespace lr
