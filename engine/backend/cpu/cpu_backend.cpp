#include "cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "engine/backend/cpu/delta_rule.h"
#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/common/assert.h"
#include "engine/common/fp16.h"
#include "engine/quant/quant.h"

namespace lr {

namespace {

// Element-wise ops on fewer elements than this run on the calling thread: waking the
// pool costs more than it saves.
constexpr int64_t kInlineElements = 16 * 1024;

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

}  // namespace

CpuBackend::CpuBackend(CpuBackendOptions options)
    : pool_(options.n_threads > 0 ? options.n_threads : physical_core_count()), isa_(resolve_cpu_isa(options.isa)),
      attention_kernels_(&cpu::attention_kernels(isa_)), activation_kernels_(&cpu::activation_kernels(isa_)),
      scratch_(size_t(pool_.n_threads())) {}

std::string CpuBackend::name() const {
    return "cpu (" + std::string(cpu_isa_name(isa_)) + ", " + std::to_string(pool_.n_threads()) + " threads)";
}

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
    pool_.parallel_for(n, 4, [&](int64_t begin, int64_t end, int) {
        for (int64_t i = begin; i < end; ++i) {
            LR_ASSERT(ids_host[i] >= 0 && ids_host[i] < w.n_rows);
            quant::dequantize_row(w.type, base + size_t(ids_host[i]) * w.row_bytes(), out + i * w.n_cols, size_t(w.n_cols));
        }
    });
}

void CpuBackend::matmul(const WeightView & w, const float * x, int64_t n_tokens, float * y) {
    const cpu::MatmulKernel * k = cpu::matmul_kernel(isa_, w.type);
    LR_ASSERT(k != nullptr);
    const int64_t n_cols = w.n_cols;
    const size_t act_row_bytes = k->act_row_bytes(n_cols);
    uint8_t * act = act_.reserve(act_row_bytes * size_t(n_tokens));
    if (n_tokens * n_cols < kInlineElements) {
        for (int64_t t = 0; t < n_tokens; ++t) k->convert_act(x + t * n_cols, n_cols, act + size_t(t) * act_row_bytes);
    } else {
        pool_.parallel_for(n_tokens, 1, [&](int64_t begin, int64_t end, int) {
            for (int64_t t = begin; t < end; ++t) k->convert_act(x + t * n_cols, n_cols, act + size_t(t) * act_row_bytes);
        });
    }

    // About four chunks per thread, taken dynamically: a thread that runs late (another
    // process on its core) leaves its share to the others. Chunks are whole panels for
    // prefill (16 rows) and whole cache lines of output for decode.
    const int64_t n_threads = pool_.n_threads();
    const int64_t align = n_tokens == 1 ? 16 : 32;
    const int64_t rows_per_chunk = std::max(align, round_up((w.n_rows + 4 * n_threads - 1) / (4 * n_threads), align));
    const int64_t n_chunks = (w.n_rows + rows_per_chunk - 1) / rows_per_chunk;
    const size_t scratch_bytes = k->scratch_bytes(n_cols, rows_per_chunk, n_tokens);
    if (scratch_bytes > 0) {
        for (cpu::AlignedBuffer & s : scratch_) s.reserve(scratch_bytes);
    }
    const cpu::MatmulJob job{
        .w = static_cast<const uint8_t *>(w.data),
        .w_row_bytes = w.row_bytes(),
        .n_cols = n_cols,
        .act = act,
        .act_row_bytes = act_row_bytes,
        .n_tokens = n_tokens,
        .y = y,
        .y_stride = w.n_rows,
    };
    pool_.run(n_chunks, [&](int64_t chunk, int ith) {
        const int64_t r0 = chunk * rows_per_chunk;
        k->rows(job, r0, std::min(w.n_rows, r0 + rows_per_chunk), scratch_[size_t(ith)].data());
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
    auto norm_rows = [&](int64_t begin, int64_t end, int) {
        for (int64_t r = begin; r < end; ++r) {
            const float * xr = x + r * n;
            double sum = 0.0;  // in double, as ggml does
            for (int64_t i = 0; i < n; ++i) sum += double(xr[i] * xr[i]);
            const float scale = 1.0f / std::sqrt(float(sum / double(n)) + eps);
            for (int64_t i = 0; i < n; ++i) out[r * n + i] = (xr[i] * scale) * weight[i];
        }
    };
    if (n_rows * n < kInlineElements) {
        norm_rows(0, n_rows, 0);
    } else {
        pool_.parallel_for(n_rows, 1, norm_rows);
    }
}

void CpuBackend::add(float * x, const float * y, int64_t n) {
    auto add_range = [&](int64_t begin, int64_t end, int) {
        for (int64_t i = begin; i < end; ++i) x[i] += y[i];
    };
    if (n < 4 * kInlineElements) {
        add_range(0, n, 0);
    } else {
        pool_.parallel_for(n, kInlineElements, add_range);
    }
}

void CpuBackend::swiglu(const float * gate, const float * up, int64_t n_rows, int64_t n_cols, float * out) {
    auto swiglu_rows = [&](int64_t begin, int64_t end, int) {
        for (int64_t r = begin; r < end; ++r) activation_kernels_->swiglu(gate + r * n_cols, up + r * n_cols, n_cols, out + r * n_cols);
    };
    if (n_rows * n_cols < 1024) {
        swiglu_rows(0, n_rows, 0);
    } else {
        pool_.parallel_for(n_rows, std::max<int64_t>(1, 1024 / n_cols), swiglu_rows);
    }
}

void CpuBackend::geglu(const float * gate, const float * up, int64_t n, float * out) {
    const float * table = cpu::gelu_table();
    auto geglu_range = [&](int64_t begin, int64_t end, int) {
        activation_kernels_->geglu(gate + begin, up + begin, end - begin, out + begin, table);
    };
    if (n < 4096) {
        geglu_range(0, n, 0);
    } else {
        pool_.parallel_for(n, 4096, geglu_range);
    }
}

void CpuBackend::scale(float * x, int64_t n, float s) {
    auto scale_range = [&](int64_t begin, int64_t end, int) {
        for (int64_t i = begin; i < end; ++i) x[i] *= s;
    };
    if (n < 4 * kInlineElements) {
        scale_range(0, n, 0);
    } else {
        pool_.parallel_for(n, kInlineElements, scale_range);
    }
}

void CpuBackend::scale_tokens(float * x, int64_t n_tokens, int64_t n_cols, const float * scale_host) {
    auto scale_rows = [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) {
            for (int64_t c = 0; c < n_cols; ++c) x[t * n_cols + c] *= scale_host[t];
        }
    };
    if (n_tokens * n_cols < 4 * kInlineElements) {
        scale_rows(0, n_tokens, 0);
    } else {
        pool_.parallel_for(n_tokens, 1, scale_rows);
    }
}

void CpuBackend::softcap(float * x, int64_t n, float cap) {
    const float inv = 1.0f / cap;
    for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] * inv) * cap;
}

void CpuBackend::sigmoid_mul(float * x, const float * gate, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] *= 1.0f / (1.0f + std::exp(-gate[i]));
}

void CpuBackend::copy_rows(const float * src, int64_t src_stride, int64_t n_rows, int64_t n_cols, float * dst, int64_t dst_stride) {
    for (int64_t r = 0; r < n_rows; ++r) std::memcpy(dst + r * dst_stride, src + r * src_stride, size_t(n_cols) * sizeof(float));
}

void CpuBackend::l2_norm(const float * x, int64_t n_rows, int64_t n_cols, float eps, float * out) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float * xr = x + r * n_cols;
        double sum = 0.0;  // ggml_float
        for (int64_t c = 0; c < n_cols; ++c) sum += double(xr[c] * xr[c]);
        const float scale = 1.0f / std::max(std::sqrt(float(sum)), eps);
        for (int64_t c = 0; c < n_cols; ++c) out[r * n_cols + c] = xr[c] * scale;
    }
}

void CpuBackend::causal_conv_silu(const float * x, int64_t n_tokens, const WeightView & kernel, float * state, float * out) {
    LR_ASSERT(kernel.type == DType::F32 && kernel.n_cols >= 2);
    const auto * w = static_cast<const float *>(kernel.data);
    const int64_t n_ch = kernel.n_rows, width = kernel.n_cols, kept = width - 1;
    auto conv_channels = [&](int64_t begin, int64_t end, int) {
        std::vector<float> window(size_t(kept + n_tokens));
        for (int64_t c = begin; c < end; ++c) {
            float * st = state + c * kept;
            std::copy(st, st + kept, window.begin());
            for (int64_t t = 0; t < n_tokens; ++t) window[size_t(kept + t)] = x[t * n_ch + c];
            const float * wc = w + c * width;
            for (int64_t t = 0; t < n_tokens; ++t) {
                float sum = 0.0f;
                for (int64_t i = 0; i < width; ++i) sum += window[size_t(t + i)] * wc[i];
                out[t * n_ch + c] = sum;
            }
            std::copy(window.end() - kept, window.end(), st);
        }
    };
    if (n_tokens * n_ch < kInlineElements) {
        conv_channels(0, n_ch, 0);
    } else {
        pool_.parallel_for(n_ch, 64, conv_channels);
    }
    // SiLU as swiglu's kernel computes it, over rows of n_channels (ggml_silu's rows).
    if (ones_.size() < size_t(n_ch)) ones_.assign(size_t(n_ch), 1.0f);
    for (int64_t t = 0; t < n_tokens; ++t) activation_kernels_->swiglu(out + t * n_ch, ones_.data(), n_ch, out + t * n_ch);
}

void CpuBackend::gated_delta_rule(const float * q, const float * k, const float * v, const float * g_host, const float * beta_host,
                                  int64_t n_tokens, const DeltaRuleParams & p, float * state, float * out) {
    LR_ASSERT(p.n_k_heads > 0 && p.n_v_heads % p.n_k_heads == 0 && p.chunk_tokens >= 0);
    const int64_t dk = p.head_k_dim, dv = p.head_v_dim;
    pool_.parallel_for(p.n_v_heads, 1, [&](int64_t begin, int64_t end, int) {
        for (int64_t h = begin; h < end; ++h) {
            const int64_t kh = h % p.n_k_heads;  // tiled: v head h reads q/k head h % n_k_heads
            const cpu::DeltaRuleHead head{.q = q + kh * dk,
                                          .k = k + kh * dk,
                                          .v = v + h * dv,
                                          .g = g_host + h,
                                          .beta = beta_host + h,
                                          .state = state + h * dv * dk,
                                          .out = out + h * dv};
            if (p.chunk_tokens == 0) {
                cpu::delta_rule_recurrent(head, n_tokens, p);
            } else {
                cpu::delta_rule_chunked(head, n_tokens, p);
            }
        }
    });
}

void CpuBackend::moe_ffn(const ExpertWeights & w, const float * x, int64_t n_tokens, const ExpertRoutes & routes, float * out) {
    const cpu::ExpertFfnArgs args{.w = &w, .x = x, .n_tokens = n_tokens, .routes = &routes, .out = out};
    cpu::expert_ffn(pool_, isa_, args, expert_scratch_, scratch_);
}

void CpuBackend::rope(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos_host, const RopeParams & p) {
    LR_ASSERT(p.n_rot % 2 == 0 && p.n_rot <= p.head_dim);
    const float theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
    // ggml's rope_yarn: the magnitude gains 1 + 0.1 ln(1 / freq_scale) with YaRN.
    float mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    auto rope_tokens = [&](int64_t begin, int64_t end, int) {
        float cos_sin[1024];
        LR_ASSERT(p.n_rot <= 1024);
        for (int64_t t = begin; t < end; ++t) {
            // Angles by repeated multiplication, as ggml computes its rope cache.
            float theta = float(pos_host[t]);
            for (int32_t i0 = 0; i0 < p.n_rot; i0 += 2) {
                const float ff = p.freq_factors ? p.freq_factors[i0 / 2] : 1.0f;
                const float extrap = theta / ff;
                const float interp = p.freq_scale * extrap;
                float angle = interp;
                if (p.ext_factor != 0.0f) {
                    const float y = (float(i0 / 2) - p.corr_low) / std::max(0.001f, p.corr_high - p.corr_low);
                    const float mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
                    angle = interp * (1.0f - mix) + extrap * mix;
                }
                cos_sin[i0] = std::cos(angle) * mscale;
                cos_sin[i0 + 1] = std::sin(angle) * mscale;
                theta *= theta_scale;
            }
            for (int64_t h = 0; h < n_heads; ++h) {
                float * v = x + (t * n_heads + h) * p.head_dim;
                for (int32_t i0 = 0; i0 < p.n_rot; i0 += 2) {
                    const float c = cos_sin[i0], s = cos_sin[i0 + 1];
                    const int32_t a = p.mode == RopeMode::normal ? i0 : i0 / 2;
                    const int32_t b = p.mode == RopeMode::normal ? i0 + 1 : i0 / 2 + p.n_rot / 2;
                    const float x0 = v[a], x1 = v[b];
                    v[a] = x0 * c - x1 * s;
                    v[b] = x0 * s + x1 * c;
                }
            }
        }
    };
    if (n_tokens == 1) {
        rope_tokens(0, 1, 0);
    } else {
        pool_.parallel_for(n_tokens, 8, rope_tokens);
    }
}

void CpuBackend::kv_write(const PagedKvView & view, const float * k, const float * v, const int32_t * pos_host, int64_t n_tokens) {
    const KvBlockShape & shape = view.shape;
    LR_ASSERT(int64_t(view.write_slots.size()) == n_tokens);
    auto write_tokens = [&](int64_t begin, int64_t end, int) {
        for (int64_t i = begin; i < end; ++i) {
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
    };
    if (n_tokens == 1) {
        write_tokens(0, 1, 0);
    } else {
        pool_.parallel_for(n_tokens, 8, write_tokens);
    }
}

void CpuBackend::attention(const float * q, int64_t n_tokens, const int32_t * pos_host, const PagedKvView & view, const AttentionParams & p,
                           float * out) {
    const cpu::AttentionArgs args{.q = q, .n_tokens = n_tokens, .pos = pos_host, .view = &view, .params = p, .out = out};
    if (isa_ == CpuIsa::scalar) {
        cpu::attention_reference(pool_, args);
    } else {
        cpu::attention(pool_, *attention_kernels_, args, attention_scratch_);
    }
}

}  // namespace lr
