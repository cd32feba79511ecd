// The reference attention: llama.cpp's roundings and orders, one query at a time. Its
// non-flash path with an f16 cache rounds q and the softmax weights to f16 before the two
// products, which it computes as matrix products (float_dot.h's orders). So with f16
// blocks logits match its reference outputs to ~1e-6; other codecs are decoded to f32
// and computed without rounding. A sink joins the max and the sum (attention.h).

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/float_dot.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/common/fp16.h"

namespace lr::cpu {

void attention_reference(ThreadPool & pool, const AttentionArgs & a) {
    const PagedKvView & view = *a.view;
    const AttentionParams & p = a.params;
    const KvBlockShape & shape = view.shape;
    const uint32_t bt = shape.block_tokens;
    const uint32_t d = shape.head_dim;
    const int32_t group = p.n_head / p.n_head_kv;
    const size_t n_slots = size_t(view.n_blocks()) * bt;
    bool all_f16_k = true, all_f16_v = true;
    for (const KvBlockRef & b : view.blocks) {
        all_f16_k = all_f16_k && b.k_codec == KvCodec::f16;
        all_f16_v = all_f16_v && b.v_codec == KvCodec::f16;
    }
    const DotOrder kq_order = dot_order(a.n_tokens, d);
    const DotOrder kqv_order = dot_order(a.n_tokens, n_slots);
    const auto kq_dot = all_f16_k ? dot_f16_as_f32 : dot_f32;
    const auto kqv_dot = all_f16_v ? dot_f16_as_f32 : dot_f32;

    // One task per KV head, so that attention-mass updates never race.
    pool.run(p.n_head_kv, [&](int64_t g, int) {
        std::vector<float> keys(n_slots * d), values_t(d * n_slots);  // [slot][d], [d][slot]
        std::vector<int32_t> pos(n_slots);
        std::vector<float> scores(n_slots), qrow(d), row(d);
        // Decode this head's K and V once; V transposed, as llama.cpp's cache holds it.
        for (uint32_t b = 0; b < view.n_blocks(); ++b) {
            const KvBlockLayout L = view.layout(b);
            const uint8_t * block = view.blocks[b].data;
            const auto * bpos = reinterpret_cast<const int32_t *>(block + L.pos_offset());
            for (uint32_t s = 0; s < bt; ++s) {
                const size_t slot = size_t(b) * bt + s;
                pos[slot] = view.reads(b, uint32_t(g), s) ? bpos[L.pos_index(uint32_t(g), s)] : kInvalidPos;
                if (pos[slot] == kInvalidPos) {  // never decode unwritten (or unread) bytes
                    std::fill_n(keys.data() + slot * d, d, 0.0f);
                    for (uint32_t i = 0; i < d; ++i) values_t[i * n_slots + slot] = 0.0f;
                    continue;
                }
                kv_decode_row(L.k_codec, block + L.k_row_offset(uint32_t(g), s), keys.data() + slot * d, d);
                kv_decode_row(L.v_codec, block + L.v_row_offset(uint32_t(g), s), row.data(), d);
                for (uint32_t i = 0; i < d; ++i) values_t[i * n_slots + slot] = row[i];
            }
        }
        for (int64_t t = 0; t < a.n_tokens; ++t) {
            for (int32_t hq = 0; hq < group; ++hq) {
                const int64_t h = g * group + hq;
                const float * qh = a.q + (t * p.n_head + h) * d;
                for (uint32_t i = 0; i < d; ++i) qrow[i] = all_f16_k ? fp16_to_fp32(fp32_to_fp16(qh[i])) : qh[i];
                const float sink = sink_logit(p, h);
                float max_score = sink;
                for (size_t slot = 0; slot < n_slots; ++slot) {
                    if (pos[slot] == kInvalidPos || pos[slot] > a.pos[t] || (p.window > 0 && a.pos[t] - pos[slot] >= p.window)) {
                        scores[slot] = -INFINITY;
                        continue;
                    }
                    scores[slot] = kq_dot(d, qrow.data(), keys.data() + slot * d, kq_order) * p.scale;
                    max_score = std::max(max_score, scores[slot]);
                }
                double sum = 0.0;
                for (size_t slot = 0; slot < n_slots; ++slot) {
                    scores[slot] = scores[slot] == -INFINITY ? 0.0f : std::exp(scores[slot] - max_score);
                    sum += scores[slot];
                }
                sum += sink_exp(sink, max_score);
                const float inv_sum = sum > 0 ? float(1.0 / sum) : 0.0f;
                for (size_t slot = 0; slot < n_slots; ++slot) {
                    const float w = scores[slot] * inv_sum;
                    if (view.attn_mass && w != 0.0f) view.attn_mass[(slot / bt * shape.n_head_kv + size_t(g)) * bt + slot % bt] += w;
                    scores[slot] = all_f16_v ? fp16_to_fp32(fp32_to_fp16(w)) : w;
                }
                float * oh = a.out + (t * p.n_head + h) * d;
                for (uint32_t i = 0; i < d; ++i) oh[i] = kqv_dot(n_slots, values_t.data() + i * n_slots, scores.data(), kqv_order);
            }
        }
    });
}

}  // namespace lr::cpu
