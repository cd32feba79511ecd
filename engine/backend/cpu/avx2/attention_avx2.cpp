// The inner loops of the fused attention (attention.h) on AVX2. Row decoding is
// bit-identical to kv_decode_row and the q.k products keep float_dot.h's orders, so they
// are bit-identical to the scalar kernels; exp is a polynomial (within 2 ulp of std::exp)
// and the exp sum is taken in double in another order.
//
// Built twice: here for AVX2, and by avx512/attention_avx512.cpp, whose 32 vector
// registers hold larger tiles of the same sums (the same bits).

#include <cmath>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/avx2/avx2_util.h"
#include "engine/backend/cpu/float_dot.h"
#include "engine/backend/kv_codec_rows.h"

#if !defined(LONGREAD_ATTENTION_KERNEL_TABLE)
#define LONGREAD_ATTENTION_KERNEL_TABLE avx2_attention_kernels
#define LONGREAD_ATTENTION_REGISTERS 16
#endif

namespace lr::cpu {
namespace {

using namespace avx2;

// Tiles sized to the register file: flash_scores' queries per 4 keys, and weighted_sum's
// dims (registers of 8) per 4 queries.
constexpr int kScoreTileQueries = LONGREAD_ATTENTION_REGISTERS >= 32 ? 4 : 2;
constexpr int kValueTileRegisters = LONGREAD_ATTENTION_REGISTERS >= 32 ? 4 : 2;
// flash_scores_q8's keys per step: one int32 and one float sum per key.
constexpr int kQ8Keys = LONGREAD_ATTENTION_REGISTERS >= 32 ? 8 : 4;

void copy(const float * src, float * dst, uint32_t n, bool to_f16) {
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(src + i);
        _mm256_storeu_ps(dst + i, to_f16 ? round_f16(v) : v);
    }
    for (; i < n; ++i) dst[i] = to_f16 ? _cvtsh_ss(_cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT)) : src[i];
}

// ---- rows ----------------------------------------------------------------------------------

void decode_f16(const uint16_t * src, float * dst, uint32_t d) {
    uint32_t i = 0;
    for (; i + 8 <= d; i += 8) _mm256_storeu_ps(dst + i, load_f16x8(src + i));
    for (; i < d; ++i) dst[i] = f16_to_f32(src[i]);
}

// q8 groups: fp16 scale, then g int8 values: d * q.
void decode_q8(const uint8_t * src, float * dst, uint32_t d, uint32_t g) {
    for (uint32_t at = 0; at < d; at += g, src += 2 + g) {
        const __m256 dv = _mm256_set1_ps(f16_to_f32(load_as<uint16_t>(src)));
        for (uint32_t i = 0; i < g; i += 8) {
            const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(src + 2 + i)));
            _mm256_storeu_ps(dst + at + i, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(q)));
        }
    }
}

// q4 groups (g >= 16): fp16 scale, fp16 min, g/2 bytes: d * q + m, multiply then add.
void decode_q4(const uint8_t * src, float * dst, uint32_t d, uint32_t g) {
    for (uint32_t at = 0; at < d; at += g, src += 4 + g / 2) {
        const __m256 dv = _mm256_set1_ps(f16_to_f32(load_as<uint16_t>(src)));
        const __m256 mv = _mm256_set1_ps(f16_to_f32(load_as<uint16_t>(src + 2)));
        for (uint32_t i = 0; i < g / 2; i += 8) {
            const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(src + 4 + i)));
            const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(b, _mm256_set1_epi32(0x0F)));
            const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4));
            _mm256_storeu_ps(dst + at + i, _mm256_add_ps(_mm256_mul_ps(dv, lo), mv));
            _mm256_storeu_ps(dst + at + i + g / 2, _mm256_add_ps(_mm256_mul_ps(dv, hi), mv));
        }
    }
}

void decode_rows(KvCodec codec, const uint8_t * rows, size_t row_bytes, uint32_t n, uint32_t d, float * dst) {
    const uint32_t g = kv_codec_group(d);
    for (uint32_t s = 0; s < n; ++s, rows += row_bytes, dst += d) {
        switch (codec) {
            case KvCodec::f32: std::memcpy(dst, rows, d * sizeof(float)); break;
            case KvCodec::f16: decode_f16(reinterpret_cast<const uint16_t *>(rows), dst, d); break;
            case KvCodec::q8:
                if (g % 8 == 0) {
                    decode_q8(rows, dst, d, g);
                } else {
                    kv_decode_row(codec, rows, dst, d);
                }
                break;
            case KvCodec::q4:
                if (g % 16 == 0) {
                    decode_q4(rows, dst, d, g);
                } else {
                    kv_decode_row(codec, rows, dst, d);
                }
                break;
        }
    }
}

// ---- q.k -------------------------------------------------------------------------------------

// The q.k products of float_dot.h's orders, with the K row held in registers while every
// query of the group passes over it. Each query leaves its 16-lane sum folded to 8 lanes
// (t8[i] = lanes i + (8 + i)); eight of those are then finished together, in the order of
// reduce16: (t4[0] + t4[2]) + (t4[1] + t4[3]) with t4[i] = t8[i] + t8[4 + i].
inline __m256 finish8(const __m256 * t8) {
    __m256 s[4];
    for (int k = 0; k < 4; ++k) {
        const __m256 x = _mm256_permute2f128_ps(t8[2 * k], t8[2 * k + 1], 0x20);  // [lo(a) | lo(b)]
        const __m256 y = _mm256_permute2f128_ps(t8[2 * k], t8[2 * k + 1], 0x31);  // [hi(a) | hi(b)]
        s[k] = _mm256_add_ps(y, x);                                               // [t4(a) | t4(b)]
    }
    const __m256 g = _mm256_add_ps(_mm256_shuffle_ps(s[0], s[1], 0x44), _mm256_shuffle_ps(s[0], s[1], 0xEE));  // x0+x2, x1+x3
    const __m256 h = _mm256_add_ps(_mm256_shuffle_ps(s[2], s[3], 0x44), _mm256_shuffle_ps(s[2], s[3], 0xEE));
    const __m256 r = _mm256_add_ps(_mm256_shuffle_ps(g, h, 0x88), _mm256_shuffle_ps(g, h, 0xDD));  // [0 2 4 6 | 1 3 5 7]
    return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// t8 of one query against a K row of 64 held in k[8]: gemv order (one step of 4 x 16
// lanes: plain products, then acc0 + acc2 and acc1 + acc3, then their sum).
inline __m256 gemv64_t8(const __m256 * k, const float * q) {
    auto p = [&](int m) { return _mm256_mul_ps(k[m], _mm256_loadu_ps(q + 8 * m)); };
    const __m256 lo = _mm256_add_ps(_mm256_add_ps(p(0), p(4)), _mm256_add_ps(p(2), p(6)));
    const __m256 hi = _mm256_add_ps(_mm256_add_ps(p(1), p(5)), _mm256_add_ps(p(3), p(7)));
    return _mm256_add_ps(hi, lo);
}

// t8 of one query against a K row of 64 in k[8]: gemm order (16 lanes over steps of 16).
inline __m256 gemm64_t8(const __m256 * k, const float * q) {
    __m256 lo = _mm256_mul_ps(k[0], _mm256_loadu_ps(q));
    __m256 hi = _mm256_mul_ps(k[1], _mm256_loadu_ps(q + 8));
    for (int m = 2; m < 8; m += 2) {
        lo = _mm256_fmadd_ps(k[m], _mm256_loadu_ps(q + 8 * m), lo);
        hi = _mm256_fmadd_ps(k[m + 1], _mm256_loadu_ps(q + 8 * m + 8), hi);
    }
    return _mm256_add_ps(hi, lo);
}

// General d: gemv order over steps of 64 (d % 64 == 0), or gemm order (d % 16 == 0).
inline __m256 gemv_t8(const float * k, const float * q, uint32_t d) {
    __m256 acc[8];
    for (__m256 & v : acc) v = _mm256_setzero_ps();
    for (uint32_t i = 0; i < d; i += 64) {
        for (int m = 0; m < 8; ++m) acc[m] = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8 * m), _mm256_loadu_ps(k + i + 8 * m), acc[m]);
    }
    const __m256 lo = _mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6]));
    const __m256 hi = _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7]));
    return _mm256_add_ps(hi, lo);
}

inline __m256 gemm_t8(const float * k, const float * q, uint32_t d) {
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (uint32_t i = 0; i < d; i += 16) {
        lo = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), lo);
        hi = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(k + i + 8), hi);
    }
    return _mm256_add_ps(hi, lo);
}

// finish8 for four queries a, b, c, d: their scores as [a, c, ., ., b, d, ., .].
inline __m256 finish4(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 s01 = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x31), _mm256_permute2f128_ps(a, b, 0x20));  // [t4(a) | t4(b)]
    const __m256 s23 = _mm256_add_ps(_mm256_permute2f128_ps(c, d, 0x31), _mm256_permute2f128_ps(c, d, 0x20));  // [t4(c) | t4(d)]
    const __m256 g = _mm256_add_ps(_mm256_shuffle_ps(s01, s23, 0x44), _mm256_shuffle_ps(s01, s23, 0xEE));      // x0+x2, x1+x3
    return _mm256_add_ps(_mm256_shuffle_ps(g, g, 0x88), _mm256_shuffle_ps(g, g, 0xDD));
}

// Scores of head size 64 for queries [i0, i0 + 4) against the K row in kr: t8 of each
// query in registers, then finish4.
template <bool Gemm>
inline void score4(const __m256 * kr, const float * q, uint32_t i0, __m256 scale, float * out, size_t stride, uint32_t s) {
    const __m256 a = Gemm ? gemm64_t8(kr, q + size_t(i0) * 64) : gemv64_t8(kr, q + size_t(i0) * 64);
    const __m256 b = Gemm ? gemm64_t8(kr, q + size_t(i0 + 1) * 64) : gemv64_t8(kr, q + size_t(i0 + 1) * 64);
    const __m256 c = Gemm ? gemm64_t8(kr, q + size_t(i0 + 2) * 64) : gemv64_t8(kr, q + size_t(i0 + 2) * 64);
    const __m256 d = Gemm ? gemm64_t8(kr, q + size_t(i0 + 3) * 64) : gemv64_t8(kr, q + size_t(i0 + 3) * 64);
    const __m256 r = _mm256_mul_ps(finish4(a, b, c, d), scale);
    const __m128 lo = _mm256_castps256_ps128(r), hi = _mm256_extractf128_ps(r, 1);
    out[size_t(i0) * stride + s] = _mm_cvtss_f32(lo);
    out[size_t(i0 + 2) * stride + s] = _mm_cvtss_f32(_mm_movehdup_ps(lo));
    out[size_t(i0 + 1) * stride + s] = _mm_cvtss_f32(hi);
    out[size_t(i0 + 3) * stride + s] = _mm_cvtss_f32(_mm_movehdup_ps(hi));
}

template <bool Gemm>
void scores64(const void * k, KvCodec k_codec, size_t k_row_bytes, uint32_t n_k, const float * q, uint32_t n_q, float scale, float * out,
              size_t stride) {
    const __m256 sc = _mm256_set1_ps(scale);
    for (uint32_t s = 0; s < n_k; ++s) {
        const uint8_t * row = static_cast<const uint8_t *>(k) + s * k_row_bytes;
        __m256 kr[8];
        for (int m = 0; m < 8; ++m) {
            kr[m] = k_codec == KvCodec::f16 ? load_f16x8(reinterpret_cast<const uint16_t *>(row) + 8 * m)
                                            : _mm256_loadu_ps(reinterpret_cast<const float *>(row) + 8 * m);
        }
        uint32_t i = 0;
        for (; i + 4 <= n_q; i += 4) score4<Gemm>(kr, q, i, sc, out, stride, s);
        for (; i < n_q; ++i) {
            const __m256 t = Gemm ? gemm64_t8(kr, q + size_t(i) * 64) : gemv64_t8(kr, q + size_t(i) * 64);
            out[size_t(i) * stride + s] = _mm_cvtss_f32(_mm256_castps256_ps128(finish4(t, t, t, t))) * scale;
        }
    }
}

// Row s of K as floats: in place for f32, converted into buf for f16 (exactly).
inline const float * k_row(const void * k, KvCodec codec, size_t row_bytes, uint32_t s, uint32_t d, float * buf) {
    const uint8_t * row = static_cast<const uint8_t *>(k) + s * row_bytes;
    if (codec == KvCodec::f32) return reinterpret_cast<const float *>(row);
    decode_f16(reinterpret_cast<const uint16_t *>(row), buf, d);
    return buf;
}

constexpr uint32_t kMaxHeadDim = 1024;

// Head sizes above kMaxHeadDim: one row at a time through float_dot.h.
void scores_general(const void * k, KvCodec k_codec, size_t k_row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d, bool gemm,
                    bool f64_tail, float scale, float * out, size_t stride) {
    const DotOrder order = gemm ? DotOrder::gemm : DotOrder::gemv;
    for (uint32_t s = 0; s < n_k; ++s) {
        float * row = new float[d];
        kv_decode_row(k_codec, static_cast<const uint8_t *>(k) + s * k_row_bytes, row, d);
        for (uint32_t i = 0; i < n_q; ++i) {
            const float dot = f64_tail ? dot_f16_as_f32(d, q + size_t(i) * d, row, order) : dot_f32(d, q + size_t(i) * d, row, order);
            out[i * stride + s] = dot * scale;
        }
        delete[] row;
    }
}

void scores(const void * k, KvCodec k_codec, size_t k_row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d, bool gemm,
            bool f64_tail, float scale, float * out, size_t stride) {
    float buf[kMaxHeadDim];
    if (d > kMaxHeadDim) return scores_general(k, k_codec, k_row_bytes, n_k, q, n_q, d, gemm, f64_tail, scale, out, stride);
    const bool fast = gemm ? d % 16 == 0 : d % 64 == 0;
    if (!fast) {
        const DotOrder order = gemm ? DotOrder::gemm : DotOrder::gemv;
        for (uint32_t s = 0; s < n_k; ++s) {
            const float * ks = k_row(k, k_codec, k_row_bytes, s, d, buf);
            for (uint32_t i = 0; i < n_q; ++i) {
                const float dot = f64_tail ? dot_f16_as_f32(d, q + size_t(i) * d, ks, order) : dot_f32(d, q + size_t(i) * d, ks, order);
                out[i * stride + s] = dot * scale;
            }
        }
        return;
    }
    // A multiple of 64 (gemv) or 16 (gemm) has no tail: f64_tail changes nothing.
    if (d == 64)
        return gemm ? scores64<true>(k, k_codec, k_row_bytes, n_k, q, n_q, scale, out, stride)
                    : scores64<false>(k, k_codec, k_row_bytes, n_k, q, n_q, scale, out, stride);
    const __m256 sc = _mm256_set1_ps(scale);
    for (uint32_t s = 0; s < n_k; ++s) {
        const uint8_t * row = static_cast<const uint8_t *>(k) + s * k_row_bytes;
        __m256 kr[8];
        const float * ks = nullptr;
        if (d == 64) {
            for (int m = 0; m < 8; ++m) {
                kr[m] = k_codec == KvCodec::f16 ? load_f16x8(reinterpret_cast<const uint16_t *>(row) + 8 * m)
                                                : _mm256_loadu_ps(reinterpret_cast<const float *>(row) + 8 * m);
            }
        } else {
            ks = k_row(k, k_codec, k_row_bytes, s, d, buf);
        }
        for (uint32_t i0 = 0; i0 < n_q; i0 += 8) {
            const uint32_t n = n_q - i0 < 8 ? n_q - i0 : 8;
            __m256 t8[8];
            for (uint32_t j = 0; j < 8; ++j) {
                const float * qi = q + size_t(i0 + (j < n ? j : 0)) * d;
                if (d == 64) {
                    t8[j] = gemm ? gemm64_t8(kr, qi) : gemv64_t8(kr, qi);
                } else {
                    t8[j] = gemm ? gemm_t8(ks, qi, d) : gemv_t8(ks, qi, d);
                }
            }
            float r[8];
            _mm256_storeu_ps(r, _mm256_mul_ps(finish8(t8), sc));
            for (uint32_t j = 0; j < n; ++j) out[(i0 + j) * stride + s] = r[j];
        }
    }
}

float max(const float * x, uint32_t n) {
    __m256 m = _mm256_set1_ps(-INFINITY);
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
    float r[8];
    _mm256_storeu_ps(r, m);
    float best = r[0];
    for (int j = 1; j < 8; ++j) best = r[j] > best ? r[j] : best;
    for (; i < n; ++i) best = x[i] > best ? x[i] : best;
    return best;
}

// ---- softmax ---------------------------------------------------------------------------------

// exp(x) for x <= 0 (Cephes' expf: a degree-5 polynomial on x - n ln 2); 0 below -87.3,
// where exp(x) is a subnormal float, and for -inf.
inline __m256 exp_nonpositive(__m256 x) {
    const __m256 lower = _mm256_set1_ps(-87.3f);
    const __m256 underflow = _mm256_cmp_ps(x, lower, _CMP_LT_OQ);
    x = _mm256_max_ps(x, lower);
    const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    const __m256 e = _mm256_mul_ps(y, _mm256_castsi256_ps(pow2n));
    return _mm256_andnot_ps(underflow, e);
}

double exp_sum(float * x, uint32_t n, float max) {
    const __m256 m = _mm256_set1_ps(max);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double tail[4];
    _mm256_storeu_pd(tail, _mm256_add_pd(s0, s1));
    double sum = (tail[0] + tail[1]) + (tail[2] + tail[3]);
    if (i < n) {
        float buf[8];
        for (uint32_t j = 0; j < 8; ++j) buf[j] = i + j < n ? x[i + j] - max : -INFINITY;
        _mm256_storeu_ps(buf, exp_nonpositive(_mm256_loadu_ps(buf)));
        for (uint32_t j = 0; i + j < n; ++j) {
            x[i + j] = buf[j];
            sum += buf[j];
        }
    }
    return sum;
}

void normalize(float * x, uint32_t n, float inv_sum, bool to_f16, float * mass) {
    const __m256 inv = _mm256_set1_ps(inv_sum);
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(x + i), inv);
        if (mass) {
            const __m256 m = _mm256_loadu_ps(mass + i);
            const __m256 nonzero = _mm256_cmp_ps(w, _mm256_setzero_ps(), _CMP_NEQ_UQ);
            _mm256_storeu_ps(mass + i, _mm256_blendv_ps(m, _mm256_add_ps(m, w), nonzero));
        }
        _mm256_storeu_ps(x + i, to_f16 ? round_f16(w) : w);
    }
    for (; i < n; ++i) {
        const float w = x[i] * inv_sum;
        if (mass && w != 0.0f) mass[i] += w;
        x[i] = to_f16 ? _cvtsh_ss(_cvtss_sh(w, _MM_FROUND_TO_NEAREST_INT)) : w;
    }
}

// ---- weights . V -------------------------------------------------------------------------------

// Eight values of a K or V row (f32 or f16) from element c.
template <bool F16>
inline __m256 row_lanes(const uint8_t * row, uint32_t c) {
    if constexpr (F16) return load_f16x8(reinterpret_cast<const uint16_t *>(row) + c);
    return _mm256_loadu_ps(reinterpret_cast<const float *>(row) + c);
}

// Where values c, c + 1 ... of a row in codec C lie (f32, f16, or q8 in groups of g, a
// multiple of 8), and how they widen to floats: as kv_decode_row does, so that rows read in
// place give the bits of rows decoded first.
template <KvCodec C>
struct ValueAt {
    size_t at = 0, scale_at = 0;  // bytes into the row: the value c, its group's scale
    ValueAt() = default;
    ValueAt(uint32_t c, uint32_t g) {
        if constexpr (C == KvCodec::q8) {
            scale_at = size_t(c / g) * (2 + g);
            at = scale_at + 2 + c % g;
        } else {
            at = size_t(c) * (C == KvCodec::f16 ? 2 : 4);
        }
    }
    // q8: the group's scale in every lane (zeros otherwise).
    __m256 scale(const uint8_t * row) const {
        if constexpr (C != KvCodec::q8) return _mm256_setzero_ps();
        return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(load_as<uint16_t>(row + scale_at))));
    }
    // Eight values at p (c % 8 == 0 for q8, whose group's scale is `scale`).
    static __m256 lanes_at(const uint8_t * p, __m256 scale) {
        if constexpr (C == KvCodec::f32) return _mm256_loadu_ps(reinterpret_cast<const float *>(p));
        if constexpr (C == KvCodec::f16) return load_f16x8(reinterpret_cast<const uint16_t *>(p));
        if constexpr (C == KvCodec::q8) {
            const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
            return _mm256_mul_ps(scale, _mm256_cvtepi32_ps(q));
        }
    }
    float one(const uint8_t * row) const {
        if constexpr (C == KvCodec::f32) return load_as<float>(row + at);
        if constexpr (C == KvCodec::f16) return f16_to_f32(load_as<uint16_t>(row + at));
        if constexpr (C == KvCodec::q8) return f16_to_f32(load_as<uint16_t>(row + scale_at)) * float(static_cast<int8_t>(row[at]));
    }
};

// acc_i[0..8*M) += w_i[s] * v[s][c0..c0+8*M) for queries i < Q, the slots in order (a zero
// weight adds a zero, as in the scalar kernel); rows are widened as they are read. Packed:
// the 8 * M values lie together (f32, f16, or q8 within one group, whose scale is read once).
template <int Q, int M, KvCodec C, bool Packed>
void accumulate(const uint8_t * v, size_t row_bytes, uint32_t n, uint32_t c0, uint32_t g, const float * const * w, float * const * acc) {
    __m256 a[Q][M];
    for (int i = 0; i < Q; ++i) {
        for (int m = 0; m < M; ++m) a[i][m] = _mm256_loadu_ps(acc[i] + 8 * m);
    }
    constexpr size_t kStep = C == KvCodec::f32 ? 32 : C == KvCodec::f16 ? 16 : 8;  // bytes of 8 values
    ValueAt<C> at[M];
    for (int m = 0; m < M; ++m) at[m] = ValueAt<C>(c0 + 8 * uint32_t(m), g);
    for (uint32_t s = 0; s < n; ++s) {
        const uint8_t * vs = v + s * row_bytes;
        __m256 vr[M];
        __m256 scale = C == KvCodec::q8 && Packed ? at[0].scale(vs) : _mm256_setzero_ps();
        for (int m = 0; m < M; ++m) {
            if constexpr (Packed) {
                vr[m] = ValueAt<C>::lanes_at(vs + at[0].at + size_t(m) * kStep, scale);
            } else {
                vr[m] = ValueAt<C>::lanes_at(vs + at[m].at, at[m].scale(vs));
            }
            keep_in_register(vr[m]);
        }
        for (int i = 0; i < Q; ++i) {
            const __m256 ws = _mm256_broadcast_ss(w[i] + s);
            for (int m = 0; m < M; ++m) a[i][m] = _mm256_fmadd_ps(ws, vr[m], a[i][m]);
        }
    }
    for (int i = 0; i < Q; ++i) {
        for (int m = 0; m < M; ++m) _mm256_storeu_ps(acc[i] + 8 * m, a[i][m]);
    }
}

// The dims [c0, c0 + 8 * M) of queries wi[0..Q) into ai[0..Q).
template <int Q, int M, KvCodec C>
void accumulate_piece(const uint8_t * v, size_t row_bytes, uint32_t n, uint32_t c0, uint32_t g, const float * const * w,
                      float * const * acc) {
    if (C != KvCodec::q8 || g % (8 * M) == 0) return accumulate<Q, M, C, true>(v, row_bytes, n, c0, g, w, acc);
    accumulate<Q, M, C, false>(v, row_bytes, n, c0, g, w, acc);
}

// Queries [i, i + Q) over all of d: pieces of 8 * M dims, then single registers.
template <int Q, int M, KvCodec C>
void accumulate_queries(const uint8_t * v, size_t row_bytes, uint32_t n, const float * w, size_t w_stride, uint32_t i, uint32_t d,
                        float * acc) {
    const uint32_t g = kv_codec_group(d);
    const float * wi[Q];
    for (int k = 0; k < Q; ++k) wi[k] = w + (i + uint32_t(k)) * w_stride;
    uint32_t c = 0;
    for (; c + 8 * M <= d; c += 8 * M) {
        float * ai[Q];
        for (int k = 0; k < Q; ++k) ai[k] = acc + size_t(i + uint32_t(k)) * d + c;
        accumulate_piece<Q, M, C>(v, row_bytes, n, c, g, wi, ai);
    }
    for (; c + 8 <= d; c += 8) {
        float * ai[Q];
        for (int k = 0; k < Q; ++k) ai[k] = acc + size_t(i + uint32_t(k)) * d + c;
        accumulate_piece<Q, 1, C>(v, row_bytes, n, c, g, wi, ai);
    }
    for (; c < d; ++c) {
        const ValueAt<C> at(c, g);
        for (int k = 0; k < Q; ++k) {
            float & a = acc[size_t(i + uint32_t(k)) * d + c];
            for (uint32_t s = 0; s < n; ++s)
                a = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(wi[k][s]), _mm_set_ss(at.one(v + s * row_bytes)), _mm_set_ss(a)));
        }
    }
}

template <KvCodec C>
void weighted_sum_rows(const uint8_t * v, size_t row_bytes, uint32_t n, const float * w, size_t w_stride, uint32_t n_q, uint32_t d,
                       float * acc) {
    uint32_t i = 0;
    for (; i + 4 <= n_q; i += 4) accumulate_queries<4, kValueTileRegisters, C>(v, row_bytes, n, w, w_stride, i, d, acc);
    for (; i < n_q; ++i) accumulate_queries<1, 4, C>(v, row_bytes, n, w, w_stride, i, d, acc);
}

void weighted_sum(const void * v, KvCodec codec, size_t row_bytes, uint32_t n, const float * w, size_t w_stride, uint32_t n_q, uint32_t d,
                  float * acc) {
    const auto * rows = static_cast<const uint8_t *>(v);
    switch (codec) {
        case KvCodec::f16: return weighted_sum_rows<KvCodec::f16>(rows, row_bytes, n, w, w_stride, n_q, d, acc);
        case KvCodec::q8: return weighted_sum_rows<KvCodec::q8>(rows, row_bytes, n, w, w_stride, n_q, d, acc);
        default: return weighted_sum_rows<KvCodec::f32>(rows, row_bytes, n, w, w_stride, n_q, d, acc);
    }
}

// ---- flash q.k ---------------------------------------------------------------------------------

// The sums ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)) of the lanes of a[0..8), in
// that order: [sum a0 .. sum a7].
inline __m256 lane_sums8(const __m256 * a) {
    const __m256 s01 = _mm256_hadd_ps(a[0], a[1]);  // [a0 01, a0 23, a1 01, a1 23 | a0 45, a0 67, a1 45, a1 67]
    const __m256 s23 = _mm256_hadd_ps(a[2], a[3]);
    const __m256 s45 = _mm256_hadd_ps(a[4], a[5]);
    const __m256 s67 = _mm256_hadd_ps(a[6], a[7]);
    const __m256 lo = _mm256_hadd_ps(s01, s23);  // [a0..a3 lanes 0-3 | a0..a3 lanes 4-7]
    const __m256 hi = _mm256_hadd_ps(s45, s67);  // the same for a4..a7
    return _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31));
}

// Eight lanes of d - c0 (< 8) dims of a K row at c0, zeros past d.
inline __m256 k_tail(const uint8_t * row, KvCodec codec, uint32_t c0, uint32_t d) {
    float t[8] = {};
    for (uint32_t c = c0; c < d; ++c) {
        t[c - c0] = codec == KvCodec::f16 ? f16_to_f32(reinterpret_cast<const uint16_t *>(row)[c])
                                          : reinterpret_cast<const float *>(row)[c];
    }
    return _mm256_loadu_ps(t);
}

inline __m256 k_lanes(const uint8_t * row, KvCodec codec, uint32_t c) {
    return codec == KvCodec::f16 ? load_f16x8(reinterpret_cast<const uint16_t *>(row) + c)
                                 : _mm256_loadu_ps(reinterpret_cast<const float *>(row) + c);
}

// Head sizes that are not a multiple of 8: one K row at a time, 64 of its dims in
// registers (converted once), against eight queries at a time: eight independent
// accumulators, one load per multiply-add. Hoisted: head sizes up to 64 load the row once
// for every query.
template <bool Hoisted>
void flash_scores_rows(const uint8_t * k, KvCodec codec, size_t row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d,
                       float scale, float * s, size_t stride) {
    const __m256 sc = _mm256_set1_ps(scale);
    const uint32_t full = d & ~7u;
    const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(d - full)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (uint32_t j = 0; j < n_k; ++j) {
        const uint8_t * row = k + j * row_bytes;
        __m256 kr[8];
        auto load_chunk = [&](uint32_t c0) {
            for (uint32_t m = 0; m < 8 && c0 + 8 * m < d; ++m) {
                const uint32_t c = c0 + 8 * m;
                kr[m] = c + 8 <= d ? k_lanes(row, codec, c) : k_tail(row, codec, c, d);
            }
        };
        if (Hoisted) load_chunk(0);
        for (uint32_t i0 = 0; i0 < n_q; i0 += 8) {
            const float * qi[8];
            for (uint32_t r = 0; r < 8; ++r) qi[r] = q + size_t(i0 + r < n_q ? i0 + r : n_q - 1) * d;
            __m256 acc[8];
            for (__m256 & a : acc) a = _mm256_setzero_ps();
            for (uint32_t c0 = 0; c0 < d; c0 += 64) {
                if (!Hoisted) load_chunk(c0);
                for (uint32_t m = 0; m < 8 && c0 + 8 * m < d; ++m) {
                    const uint32_t c = c0 + 8 * m;
                    if (c + 8 <= d) {
                        for (uint32_t r = 0; r < 8; ++r) acc[r] = _mm256_fmadd_ps(kr[m], _mm256_loadu_ps(qi[r] + c), acc[r]);
                    } else {
                        for (uint32_t r = 0; r < 8; ++r) acc[r] = _mm256_fmadd_ps(kr[m], _mm256_maskload_ps(qi[r] + c, tail), acc[r]);
                    }
                }
            }
            float r8[8];
            _mm256_storeu_ps(r8, _mm256_mul_ps(lane_sums8(acc), sc));
            for (uint32_t r = 0; r < 8 && i0 + r < n_q; ++r) s[size_t(i0 + r) * stride + j] = r8[r];
        }
    }
}

// The lane sums of four accumulators in flash_scores' order, ((l0 + l1) + (l2 + l3)) +
// ((l4 + l5) + (l6 + l7)): [sum a0, sum a1, sum a2, sum a3].
inline __m128 lane_sums4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));  // [(l0+l1)+(l2+l3) | (l4+l5)+(l6+l7)]
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// Q queries x R (<= 4) keys of head size d (a multiple of 8; D when known): a step loads
// the R keys' and the Q queries' next 8 dims once for Q x R multiply-adds.
template <int Q, int R, bool F16, uint32_t D>
inline void flash_tile(const uint8_t * k, size_t row_bytes, const float * q, uint32_t d, __m128 scale, float * s, size_t stride) {
    if constexpr (D != 0) d = D;
    __m256 acc[Q][4];
    for (auto & row : acc) {
        for (__m256 & a : row) a = _mm256_setzero_ps();
    }
    for (uint32_t c = 0; c < d; c += 8) {
        __m256 kr[R];
        for (int r = 0; r < R; ++r) kr[r] = row_lanes<F16>(k + size_t(r) * row_bytes, c);
        for (int i = 0; i < Q; ++i) {
            const __m256 qi = _mm256_loadu_ps(q + size_t(i) * d + c);
            for (int r = 0; r < R; ++r) acc[i][r] = _mm256_fmadd_ps(kr[r], qi, acc[i][r]);
        }
    }
    for (int i = 0; i < Q; ++i) {
        const __m128 out = _mm_mul_ps(lane_sums4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]), scale);
        float * row = s + size_t(i) * stride;
        if constexpr (R == 4) {
            _mm_storeu_ps(row, out);
        } else {
            float t[4];
            _mm_storeu_ps(t, out);
            for (int r = 0; r < R; ++r) row[r] = t[r];
        }
    }
}

// The last n (< Q) queries against R keys.
template <int Q, int R, bool F16, uint32_t D>
inline void flash_query_tail(uint32_t n, const uint8_t * k, size_t row_bytes, const float * q, uint32_t d, __m128 scale, float * s,
                             size_t stride) {
    if constexpr (Q > 1) {
        if (n == Q - 1) return flash_tile<Q - 1, R, F16, D>(k, row_bytes, q, d, scale, s, stride);
        flash_query_tail<Q - 1, R, F16, D>(n, k, row_bytes, q, d, scale, s, stride);
    }
}

// Every query against the R keys at k.
template <int R, bool F16, uint32_t D>
void flash_keys(const uint8_t * k, size_t row_bytes, const float * q, uint32_t n_q, uint32_t d, __m128 scale, float * s, size_t stride) {
    uint32_t i = 0;
    for (; i + kScoreTileQueries <= n_q; i += kScoreTileQueries)
        flash_tile<kScoreTileQueries, R, F16, D>(k, row_bytes, q + size_t(i) * d, d, scale, s + i * stride, stride);
    flash_query_tail<kScoreTileQueries, R, F16, D>(n_q - i, k, row_bytes, q + size_t(i) * d, d, scale, s + i * stride, stride);
}

// Head sizes that are a multiple of 8, in tiles of keys and queries.
template <bool F16, uint32_t D>
void flash_scores_tiled(const uint8_t * k, size_t row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d, float scale,
                        float * s, size_t stride) {
    const __m128 sc = _mm_set1_ps(scale);
    uint32_t j = 0;
    for (; j + 4 <= n_k; j += 4) flash_keys<4, F16, D>(k + j * row_bytes, row_bytes, q, n_q, d, sc, s + j, stride);
    switch (n_k - j) {
        case 3: return flash_keys<3, F16, D>(k + j * row_bytes, row_bytes, q, n_q, d, sc, s + j, stride);
        case 2: return flash_keys<2, F16, D>(k + j * row_bytes, row_bytes, q, n_q, d, sc, s + j, stride);
        case 1: return flash_keys<1, F16, D>(k + j * row_bytes, row_bytes, q, n_q, d, sc, s + j, stride);
        default: return;
    }
}

template <bool F16>
void flash_scores_of(const uint8_t * k, size_t row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d, float scale, float * s,
                     size_t stride) {
    switch (d) {  // the common head sizes with every offset known
        case 64: return flash_scores_tiled<F16, 64>(k, row_bytes, n_k, q, n_q, d, scale, s, stride);
        case 128: return flash_scores_tiled<F16, 128>(k, row_bytes, n_k, q, n_q, d, scale, s, stride);
        case 256: return flash_scores_tiled<F16, 256>(k, row_bytes, n_k, q, n_q, d, scale, s, stride);
        default: return flash_scores_tiled<F16, 0>(k, row_bytes, n_k, q, n_q, d, scale, s, stride);
    }
}

void flash_scores(const void * k, KvCodec codec, size_t row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d, float scale,
                  float * s, size_t stride) {
    const auto * rows = static_cast<const uint8_t *>(k);
    if (d % 8 != 0) {
        if (d <= 64) return flash_scores_rows<true>(rows, codec, row_bytes, n_k, q, n_q, d, scale, s, stride);
        return flash_scores_rows<false>(rows, codec, row_bytes, n_k, q, n_q, d, scale, s, stride);
    }
    if (codec == KvCodec::f16) return flash_scores_of<true>(rows, row_bytes, n_k, q, n_q, d, scale, s, stride);
    flash_scores_of<false>(rows, row_bytes, n_k, q, n_q, d, scale, s, stride);
}

// ---- q8 q.k ------------------------------------------------------------------------------------

// R q8 keys against eight queries held in lanes (queries_q8.h): each key's next four values
// broadcast to every lane, one multiply for 8 queries x 4 dims, a group's sums exact in
// int32, then the scalar kernel's float steps. AVX2 multiplies |k| by q carrying k's sign
// (maddubs: a pair sums to at most 2 x 128 x 127, never saturating; exact for any k, -128
// too) and adds pairs with madd; VNNI's vpdpbusd takes unsigned bytes: (k + 128) . q, less
// 128 x the group's sum of q.
// G: the group size when known (0: q.group). out[r]: the scores of key r, query lanes.
template <int R, uint32_t G>
inline void q8_keys(const uint8_t * k, size_t row_bytes, const QueriesQ8 & q, uint32_t lane0, __m256 scale, __m256 * out) {
    const uint32_t g = G ? G : q.group, lanes = q.lanes, d = q.d;
    const size_t chunk_step = size_t(lanes) * 4;
    const int8_t * qv = q.values.data() + size_t(lane0) * 4;
    const float * q_scales = q.scales.data() + lane0;
    const int32_t * q_sums = q.sums.data() + lane0;
    const uint8_t * rows[R];
    for (int r = 0; r < R; ++r) rows[r] = k + size_t(r) * row_bytes;
    __m256 acc[R];
    for (__m256 & a : acc) a = _mm256_setzero_ps();
    for (uint32_t at = 0; at < d; at += g, qv += (g / 4) * chunk_step, q_scales += lanes, q_sums += lanes) {
        const size_t group = size_t(at / g) * (2 + g);
        __m256i sum[R];
        for (__m256i & x : sum) x = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (uint32_t c = 0; c < g; c += 4) {
            const __m256i qc = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(qv + (c / 4) * chunk_step));
            for (int r = 0; r < R; ++r) {
                const __m256i kc = _mm256_set1_epi32(load_as<int32_t>(rows[r] + group + 2 + c));
#if defined(__AVX512VNNI__)
                sum[r] = _mm256_dpbusd_epi32(sum[r], _mm256_xor_si256(kc, _mm256_set1_epi8(char(0x80))), qc);
#else
                const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(kc), _mm256_sign_epi8(qc, kc));
                sum[r] = _mm256_add_epi32(sum[r], _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
                keep_in_register(sum[r]);  // else GCC regroups the adds into a tree and spills the products
#endif
            }
        }
#if defined(__AVX512VNNI__)
        const __m256i bias = _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(q_sums)), 7);
        for (__m256i & x : sum) x = _mm256_sub_epi32(x, bias);
#endif
        const __m256 q_scale = _mm256_loadu_ps(q_scales);
        for (int r = 0; r < R; ++r) {
            const __m256 k_scale = _mm256_set1_ps(f16_to_f32(load_as<uint16_t>(rows[r] + group)));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[r]), _mm256_mul_ps(k_scale, q_scale), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r) out[r] = _mm256_mul_ps(acc[r], scale);
}

// The scores of R keys (out[r], query lanes) into rows s[i * stride] of n queries.
template <int R>
inline void store_q8_scores(const __m256 * out, uint32_t n, float * s, size_t stride) {
    __m256i t[8];
    for (int r = 0; r < 8; ++r) t[r] = r < R ? _mm256_castps_si256(out[r]) : _mm256_setzero_si256();
    transpose8(t);
    for (uint32_t i = 0; i < n; ++i) store_lanes(s + i * stride, _mm256_castsi256_ps(t[i]), R);
}

template <uint32_t G>
void flash_scores_q8_of(const uint8_t * k, size_t row_bytes, uint32_t n_k, const QueriesQ8 & q, float scale, float * s, size_t stride) {
    const __m256 sc = _mm256_set1_ps(scale);
    for (uint32_t lane0 = 0; lane0 < q.n_q; lane0 += 8) {
        const uint32_t n = q.n_q - lane0 < 8 ? q.n_q - lane0 : 8;
        float * rows = s + size_t(lane0) * stride;
        uint32_t j = 0;
        __m256 out[kQ8Keys];
        for (; j + kQ8Keys <= n_k; j += kQ8Keys) {
            q8_keys<kQ8Keys, G>(k + j * row_bytes, row_bytes, q, lane0, sc, out);
            store_q8_scores<kQ8Keys>(out, n, rows + j, stride);
        }
        for (; j < n_k; ++j) {
            q8_keys<1, G>(k + j * row_bytes, row_bytes, q, lane0, sc, out);
            store_q8_scores<1>(out, n, rows + j, stride);
        }
    }
}

void flash_scores_q8(const uint8_t * k, size_t row_bytes, uint32_t n_k, const QueriesQ8 & q, float scale, float * s, size_t stride) {
    if (q.group == 32) return flash_scores_q8_of<32>(k, row_bytes, n_k, q, scale, s, stride);  // every head size divisible by 32
    flash_scores_q8_of<0>(k, row_bytes, n_k, q, scale, s, stride);
}

}  // namespace

const AttentionKernels & LONGREAD_ATTENTION_KERNEL_TABLE() {
    static const AttentionKernels k{copy, decode_rows, scores, max, exp_sum, normalize, weighted_sum, flash_scores, flash_scores_q8};
    return k;
}

}  // namespace lr::cpu
