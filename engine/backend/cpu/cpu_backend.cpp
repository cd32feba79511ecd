#include "cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/backend/cpu/float_dot.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/common/assert.h"
#include "engine/common/fp16.h"
#include "engine/quant/quant.h"

namespace lr {

CpuBackend::CpuBackend(CpuBackendOptions options)
    : pool_(options.n_threads > 0 ? options.n_threads : physical_core_count()) {}

std::string CpuBackend::name() const { return "cpu (" + std::to_string(pool_.n_threads()) + " threads)"; }

Result<DeviceBuffer> CpuBackend::alloc(size_t n_bytes) {
    void * p = std::aligned_alloc(64, (std::max<size_t>(n_bytes, 1) + 63) / 64 * 64);
    if (!p) return error(StatusCode::out_of_memory, "cannot allocate " + std::to_string(n_bytes) + " bytes of RAM");
    return DeviceBuffer(p, n_bytes, [](void * q) { std::free(q); });
}

Result<WeightView> CpuBackend::prepare_weight(const WeightView & host) {
    if (!quant::can_dequantize(host.type)) {
        return error(StatusCode::unsupported, "weight type " + std::string(dtype_name(host.type)) + " is not supported by the CPU backend");
    }
    return host;
}

void CpuBackend::copy_to_device(void * dst, const void * src_host, size_t n_bytes) { std::memcpy(dst, src_host, n_bytes); }
void CpuBackend::copy_to_host(void * dst_host, const void * src, size_t n_bytes) { std::memcpy(dst_host, src, n_bytes); }
void CpuBackend::copy_on_device(void * dst, const void * src, size_t n_bytes) { std::memcpy(dst, src, n_bytes); }

void CpuBackend::get_rows(const WeightView & w, const int32_t * ids_host, int64_t n, float * out) {
    const auto * base = static_cast<const uint8_t *>(w.data);
    pool_.parallel_for(n, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            LR_ASSERT(ids_host[i] >= 0 && ids_host[i] < w.n_rows);
            quant::dequantize_row(w.type, base + size_t(ids_host[i]) * w.row_bytes(), out + i * w.n_cols, size_t(w.n_cols));
        }
    });
}

void CpuBackend::matmul(const WeightView & w, const float * x, int64_t n_tokens, float * y) {
    const DType act_type = quant::vec_dot_type(w.type);
    const size_t n_cols = static_cast<size_t>(w.n_cols);
    const void * act = x;
    size_t act_row_bytes = n_cols * sizeof(float);
    if (act_type != DType::F32) {
        act_row_bytes = row_bytes(act_type, n_cols);
        if (act_scratch_.size() < act_row_bytes * size_t(n_tokens)) act_scratch_.resize(act_row_bytes * size_t(n_tokens));
        uint8_t * scratch = act_scratch_.data();
        pool_.parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; ++t) {
                quant::quantize_activations(act_type, x + t * w.n_cols, scratch + t * act_row_bytes, n_cols);
            }
        });
        act = scratch;
    }
    const auto * wbase = static_cast<const uint8_t *>(w.data);
    const auto * abase = static_cast<const uint8_t *>(act);
    const size_t w_row_bytes = w.row_bytes();
    const DotOrder order = dot_order(n_tokens, n_cols);
    auto dot = [&](const uint8_t * wrow, const uint8_t * arow) -> float {
        switch (w.type) {
            case DType::F32: return dot_f32(n_cols, reinterpret_cast<const float *>(wrow), reinterpret_cast<const float *>(arow), order);
            case DType::F16: return dot_f16(n_cols, reinterpret_cast<const uint16_t *>(wrow), reinterpret_cast<const uint16_t *>(arow), order);
            case DType::BF16: return dot_bf16(n_cols, reinterpret_cast<const uint16_t *>(wrow), reinterpret_cast<const uint16_t *>(arow), order);
            default: return quant::vec_dot(w.type, n_cols, wrow, arow);
        }
    };
    pool_.parallel_for(w.n_rows, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const uint8_t * wrow = wbase + size_t(r) * w_row_bytes;
            for (int64_t t = 0; t < n_tokens; ++t) y[t * w.n_rows + r] = dot(wrow, abase + size_t(t) * act_row_bytes);
        }
    });
}

void CpuBackend::add_bias(float * x, const WeightView & b, int64_t n_rows) {
    LR_ASSERT(b.type == DType::F32);
    const auto * bias = static_cast<const float *>(b.data);
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t c = 0; c < b.n_cols; ++c) x[r * b.n_cols + c] += bias[c];
    }
}

void CpuBackend::rms_norm(const float * x, const WeightView & w, float eps, int64_t n_rows, float * out) {
    LR_ASSERT(w.type == DType::F32);
    const auto * weight = static_cast<const float *>(w.data);
    const int64_t n = w.n_cols;
    pool_.parallel_for(n_rows, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float * xr = x + r * n;
            double sum = 0.0;  // in double, as ggml does
            for (int64_t i = 0; i < n; ++i) sum += double(xr[i] * xr[i]);
            const float scale = 1.0f / std::sqrt(float(sum / double(n)) + eps);
            for (int64_t i = 0; i < n; ++i) out[r * n + i] = (xr[i] * scale) * weight[i];
        }
    });
}

void CpuBackend::add(float * x, const float * y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void CpuBackend::swiglu(const float * gate, const float * up, int64_t n, float * out) {
    pool_.parallel_for(n, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const float g = gate[i];
            out[i] = g / (1.0f + std::exp(-g)) * up[i];
        }
    });
}

void CpuBackend::rope(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos_host, const RopeParams & p) {
    LR_ASSERT(p.n_rot % 2 == 0 && p.n_rot <= p.head_dim);
    const float theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
    pool_.parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
        std::vector<float> cos_sin(size_t(p.n_rot));
        for (int64_t t = begin; t < end; ++t) {
            // Angles by repeated multiplication, as ggml computes its rope cache.
            float theta = float(pos_host[t]);
            for (int32_t i0 = 0; i0 < p.n_rot; i0 += 2) {
                const float ff = p.freq_factors ? p.freq_factors[i0 / 2] : 1.0f;
                const float angle = p.freq_scale * (theta / ff);
                cos_sin[size_t(i0)] = std::cos(angle);
                cos_sin[size_t(i0) + 1] = std::sin(angle);
                theta *= theta_scale;
            }
            for (int64_t h = 0; h < n_heads; ++h) {
                float * v = x + (t * n_heads + h) * p.head_dim;
                for (int32_t i0 = 0; i0 < p.n_rot; i0 += 2) {
                    const float c = cos_sin[size_t(i0)], s = cos_sin[size_t(i0) + 1];
                    const int32_t a = p.mode == RopeMode::normal ? i0 : i0 / 2;
                    const int32_t b = p.mode == RopeMode::normal ? i0 + 1 : i0 / 2 + p.n_rot / 2;
                    const float x0 = v[a], x1 = v[b];
                    v[a] = x0 * c - x1 * s;
                    v[b] = x0 * s + x1 * c;
                }
            }
        }
    });
}

void CpuBackend::kv_write(const PagedKvView & view, const float * k, const float * v, const int32_t * pos_host,
                          int64_t n_tokens) {
    const KvBlockShape & shape = view.shape;
    LR_ASSERT(int64_t(view.write_slots.size()) == n_tokens);
    for (int64_t i = 0; i < n_tokens; ++i) {
        const uint32_t slot = view.write_slots[size_t(i)];
        const uint32_t b = slot / shape.block_tokens;
        const uint32_t s = slot % shape.block_tokens;
        const KvBlockLayout L = view.layout(b);
        uint8_t * block = view.blocks[b].data;
        auto * pos = reinterpret_cast<int32_t *>(block + L.pos_offset());
        for (uint32_t g = 0; g < shape.n_head_kv; ++g) {
            const size_t src = (size_t(i) * shape.n_head_kv + g) * shape.head_dim;
            kv_encode_row(L.k_codec, k + src, block + L.k_row_offset(g, s), shape.head_dim);
            kv_encode_row(L.v_codec, v + src, block + L.v_row_offset(g, s), shape.head_dim);
            pos[L.pos_index(g, s)] = pos_host[i];
        }
    }
}

// Scalar attention with llama.cpp's roundings and orders: its non-flash path with an f16
// cache rounds q and the softmax weights to f16 before the two products, which it computes
// as matrix products. So with f16 blocks logits match its reference outputs to ~1e-6; other
// codecs are decoded to f32 and computed without rounding.
void CpuBackend::attention(const float * q, int64_t n_tokens, const int32_t * pos_host, const PagedKvView & view,
                           const AttentionParams & p, float * out) {
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
    const DotOrder kq_order = dot_order(n_tokens, d);
    const DotOrder kqv_order = dot_order(n_tokens, n_slots);
    const auto kq_dot = all_f16_k ? dot_f16_as_f32 : dot_f32;
    const auto kqv_dot = all_f16_v ? dot_f16_as_f32 : dot_f32;

    // One task per KV head, so that attention-mass updates never race.
    pool_.parallel_for(p.n_head_kv, [&](int64_t g_begin, int64_t g_end) {
        std::vector<float> keys(n_slots * d), values_t(d * n_slots);  // [slot][d], [d][slot]
        std::vector<int32_t> pos(n_slots);
        std::vector<float> scores(n_slots), qrow(d), row(d);
        for (int64_t g = g_begin; g < g_end; ++g) {
            // Decode this head's K and V once; V transposed, as llama.cpp's cache holds it.
            for (uint32_t b = 0; b < view.n_blocks(); ++b) {
                const KvBlockLayout L = view.layout(b);
                const uint8_t * block = view.blocks[b].data;
                const auto * bpos = reinterpret_cast<const int32_t *>(block + L.pos_offset());
                for (uint32_t s = 0; s < bt; ++s) {
                    const size_t slot = size_t(b) * bt + s;
                    pos[slot] = bpos[L.pos_index(uint32_t(g), s)];
                    if (pos[slot] == kInvalidPos) {  // never decode unwritten bytes
                        std::fill_n(keys.data() + slot * d, d, 0.0f);
                        for (uint32_t i = 0; i < d; ++i) values_t[i * n_slots + slot] = 0.0f;
                        continue;
                    }
                    kv_decode_row(L.k_codec, block + L.k_row_offset(uint32_t(g), s), keys.data() + slot * d, d);
                    kv_decode_row(L.v_codec, block + L.v_row_offset(uint32_t(g), s), row.data(), d);
                    for (uint32_t i = 0; i < d; ++i) values_t[i * n_slots + slot] = row[i];
                }
            }
            for (int64_t t = 0; t < n_tokens; ++t) {
                for (int32_t hq = 0; hq < group; ++hq) {
                    const int64_t h = g * group + hq;
                    const float * qh = q + (t * p.n_head + h) * d;
                    for (uint32_t i = 0; i < d; ++i) qrow[i] = all_f16_k ? fp16_to_fp32(fp32_to_fp16(qh[i])) : qh[i];
                    float max_score = -INFINITY;
                    for (size_t slot = 0; slot < n_slots; ++slot) {
                        if (pos[slot] == kInvalidPos || pos[slot] > pos_host[t]) {
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
                    const float inv_sum = sum > 0 ? float(1.0 / sum) : 0.0f;
                    for (size_t slot = 0; slot < n_slots; ++slot) {
                        const float w = scores[slot] * inv_sum;
                        if (view.attn_mass && w != 0.0f) view.attn_mass[(slot / bt * shape.n_head_kv + size_t(g)) * bt + slot % bt] += w;
                        scores[slot] = all_f16_v ? fp16_to_fp32(fp32_to_fp16(w)) : w;
                    }
                    float * oh = out + (t * p.n_head + h) * d;
                    for (uint32_t i = 0; i < d; ++i) oh[i] = kqv_dot(n_slots, values_t.data() + i * n_slots, scores.data(), kqv_order);
                }
            }
        }
    });
}

}  // namespace lr
