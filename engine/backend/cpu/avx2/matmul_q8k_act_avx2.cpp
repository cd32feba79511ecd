// The Q8_K activation conversion shared by the AVX2 kernels (q8k_act_avx2.h).

#include "engine/backend/cpu/avx2/q8k_act_avx2.h"

#include "engine/backend/cpu/avx2/avx2_util.h"
#include "engine/quant/quant_blocks.h"

namespace lr::cpu::avx2 {

using namespace lr::quant;

size_t q8k_act_row_bytes(int64_t n_cols) { return size_t(n_cols / QK_K) * kActBlockBytes; }

// quantize_row_q8_K_ref: the value of largest magnitude (the first on ties) maps to -127.
void q8k_convert_act(const float * x, int64_t n_cols, uint8_t * dst) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t sb = 0; sb < n_cols / QK_K; ++sb, x += QK_K, dst += kActBlockBytes) {
        __m256 amax = _mm256_setzero_ps();
        for (int k = 0; k < 32; ++k) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
        __m128 m = _mm_max_ps(_mm256_extractf128_ps(amax, 1), _mm256_castps256_ps128(amax));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_movehdup_ps(m));
        const float max_abs = _mm_cvtss_f32(m);
        if (max_abs == 0.0f) {
            std::memset(dst, 0, kActBlockBytes);
            continue;
        }
        const __m256 amax_v = _mm256_set1_ps(max_abs);
        float max = 0.0f;
        for (int k = 0; k < 32; ++k) {
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)), amax_v, _CMP_EQ_OQ));
            if (hit) {
                max = x[8 * k + __builtin_ctz(unsigned(hit))];
                break;
            }
        }
        const float iscale = -127.f / max;
        const __m256 is = _mm256_set1_ps(iscale);
        const __m256i cap = _mm256_set1_epi32(127);
        auto * q = reinterpret_cast<__m256i *>(dst);
        auto * bsums = reinterpret_cast<int16_t *>(dst + kActBsums);
        for (int k = 0; k < 8; ++k) {
            __m256i i32[4];
            for (int u = 0; u < 4; ++u) {
                const __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 8 * u), is),
                                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                i32[u] = _mm256_min_epi32(_mm256_cvtps_epi32(v), cap);
            }
            // s01 holds elements 32k + 0..15 as int16 and s23 elements 32k + 16..31, each in
            // some order (packs interleaves 128-bit lanes): right for the sums.
            const __m256i s01 = _mm256_packs_epi32(i32[0], i32[1]);
            const __m256i s23 = _mm256_packs_epi32(i32[2], i32[3]);
            const __m256i ones = _mm256_set1_epi16(1);
            bsums[2 * k] = int16_t(hsum8_i32(_mm256_madd_epi16(s01, ones)));
            bsums[2 * k + 1] = int16_t(hsum8_i32(_mm256_madd_epi16(s23, ones)));
            __m256i p8 = _mm256_packs_epi16(s01, s23);
            p8 = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_store_si256(q + k, p8);
        }
        const float d = 1 / iscale;
        std::memcpy(dst + kActD, &d, sizeof d);
        std::memset(dst + kActD + 4, 0, kActBlockBytes - kActD - 4);
    }
}

void q8k_act_to_standard(const uint8_t * act, int64_t n_cols, void * dst) {
    auto * out = static_cast<block_q8_K *>(dst);
    for (int64_t sb = 0; sb < n_cols / QK_K; ++sb, act += kActBlockBytes) {
        std::memcpy(&out[sb].d, act + kActD, sizeof(float));
        std::memcpy(out[sb].qs, act, QK_K);
        std::memcpy(out[sb].bsums, act + kActBsums, sizeof(out[sb].bsums));
    }
}

}  // namespace lr::cpu::avx2
