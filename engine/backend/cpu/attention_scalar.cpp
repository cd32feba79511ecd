// The scalar kernels of the CPU attention drivers (attention.h), and the choice of
// kernels per ISA.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/float_dot.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/common/fp16.h"

namespace lr::cpu {
namespace {

void copy_scalar(const float * src, float * dst, uint32_t n, bool to_f16) {
    for (uint32_t i = 0; i < n; ++i) dst[i] = to_f16 ? fp16_to_fp32(fp32_to_fp16(src[i])) : src[i];
}

void decode_rows_scalar(KvCodec codec, const uint8_t * rows, size_t row_bytes, uint32_t n, uint32_t d, float * dst) {
    for (uint32_t s = 0; s < n; ++s) kv_decode_row(codec, rows + s * row_bytes, dst + size_t(s) * d, d);
}

void scores_scalar(const void * k, KvCodec k_codec, size_t k_row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d, bool gemm,
                   bool f64_tail, float scale, float * scores, size_t stride) {
    const DotOrder order = gemm ? DotOrder::gemm : DotOrder::gemv;
    const auto dot = f64_tail ? dot_f16_as_f32 : dot_f32;
    std::vector<float> row(d);
    for (uint32_t s = 0; s < n_k; ++s) {
        kv_decode_row(k_codec, static_cast<const uint8_t *>(k) + s * k_row_bytes, row.data(), d);
        for (uint32_t i = 0; i < n_q; ++i) scores[i * stride + s] = dot(d, q + size_t(i) * d, row.data(), order) * scale;
    }
}

float max_scalar(const float * x, uint32_t n) {
    float m = -INFINITY;
    for (uint32_t i = 0; i < n; ++i) m = std::max(m, x[i]);
    return m;
}

double exp_sum_scalar(float * x, uint32_t n, float max) {
    double sum = 0.0;
    for (uint32_t i = 0; i < n; ++i) {
        x[i] = x[i] == -INFINITY ? 0.0f : std::exp(x[i] - max);
        sum += x[i];
    }
    return sum;
}

void normalize_scalar(float * x, uint32_t n, float inv_sum, bool round_f16, float * mass) {
    for (uint32_t i = 0; i < n; ++i) {
        const float w = x[i] * inv_sum;
        if (mass && w != 0.0f) mass[i] += w;
        x[i] = round_f16 ? fp16_to_fp32(fp32_to_fp16(w)) : w;
    }
}

void weighted_sum_scalar(const void * v, KvCodec codec, size_t row_bytes, uint32_t n, const float * w, size_t w_stride, uint32_t n_q,
                         uint32_t d, float * acc) {
    std::vector<float> vs(d);
    for (uint32_t s = 0; s < n; ++s) {
        kv_decode_row(codec, static_cast<const uint8_t *>(v) + s * row_bytes, vs.data(), d);
        for (uint32_t i = 0; i < n_q; ++i) {
            float * a = acc + size_t(i) * d;
            const float ws = w[i * w_stride + s];
            for (uint32_t j = 0; j < d; ++j) a[j] = std::fma(ws, vs[j], a[j]);
        }
    }
}

// flash_scores' order: eight lanes of fused multiply-adds, lane l over the terms c = l
// mod 8 in order, then ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
void flash_scores_scalar(const void * k, KvCodec codec, size_t row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d,
                         float scale, float * s, size_t stride) {
    std::vector<float> kj(d);
    for (uint32_t j = 0; j < n_k; ++j) {
        kv_decode_row(codec, static_cast<const uint8_t *>(k) + j * row_bytes, kj.data(), d);
        for (uint32_t i = 0; i < n_q; ++i) {
            const float * qi = q + size_t(i) * d;
            float lane[8] = {};
            for (uint32_t c = 0; c < d; ++c) lane[c % 8] = std::fma(qi[c], kj[c], lane[c % 8]);
            const float sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
            s[size_t(i) * stride + j] = sum * scale;
        }
    }
}

void flash_scores_q8_scalar(const uint8_t * k, size_t row_bytes, uint32_t n_k, const QueriesQ8 & q, float scale, float * s, size_t stride) {
    const uint32_t g = q.group;
    for (uint32_t j = 0; j < n_k; ++j) {
        const uint8_t * row = k + j * row_bytes;
        for (uint32_t i = 0; i < q.n_q; ++i) {
            float acc = 0.0f;
            for (uint32_t grp = 0; grp * g < q.d; ++grp) {
                const uint8_t * group = row + size_t(grp) * (2 + g);
                uint16_t k_scale;
                std::memcpy(&k_scale, group, 2);
                int32_t sum = 0;
                for (uint32_t c = 0; c < g; ++c) sum += int32_t(static_cast<int8_t>(group[2 + c])) * q.value(i, grp * g + c);
                acc = std::fma(float(sum), fp16_to_fp32(k_scale) * q.scale(i, grp), acc);
            }
            s[size_t(i) * stride + j] = acc * scale;
        }
    }
}

}  // namespace

const AttentionKernels & scalar_attention_kernels() {
    static const AttentionKernels k{copy_scalar,         decode_rows_scalar,  scores_scalar,
                                    max_scalar,          exp_sum_scalar,      normalize_scalar,
                                    weighted_sum_scalar, flash_scores_scalar, flash_scores_q8_scalar};
    return k;
}

// Builds without the AVX2 or AVX-512 translation units: the names still link.
#if !defined(LONGREAD_HAVE_AVX2_KERNELS)
const AttentionKernels & avx2_attention_kernels() { return scalar_attention_kernels(); }
#endif
#if !defined(LONGREAD_HAVE_AVX512_KERNELS)
const AttentionKernels & avx512_attention_kernels() { return avx2_attention_kernels(); }
#endif

const AttentionKernels & attention_kernels(CpuIsa isa) {
#if defined(LONGREAD_HAVE_AVX512_KERNELS)
    if (isa == CpuIsa::avx512) return avx512_attention_kernels();
#endif
#if defined(LONGREAD_HAVE_AVX2_KERNELS)
    if (runs_avx2(isa)) return avx2_attention_kernels();
#endif
    (void)isa;
    return scalar_attention_kernels();
}

}  // namespace lr::cpu
