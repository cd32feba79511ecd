// The gated activations with AVX2 (activations.h): GELU's table read by an 8-lane gather
// at the f16 bits of the gate (F16C rounds to nearest even, as fp32_to_fp16), and SiLU's
// ggml_expf in eight lanes with the same roundings, so the results are the scalar kernel's
// bits.

#include <cmath>

#include "engine/backend/cpu/activations.h"
#include "engine/backend/cpu/avx2/avx2_util.h"

namespace lr::cpu {
namespace {

void geglu_avx2(const float * gate, const float * up, int64_t n, float * out, const float * table) {
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 u = _mm256_loadu_ps(up + i);
        const __m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT));
        __m256 y = _mm256_mul_ps(_mm256_i32gather_ps(table, h, 4), u);
        y = _mm256_blendv_ps(y, _mm256_mul_ps(g, u), _mm256_cmp_ps(g, hi, _CMP_GE_OQ));
        y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(g, lo, _CMP_LE_OQ));
        _mm256_storeu_ps(out + i, y);
    }
    // The tail: the scalar kernel (its own translation unit, so no AVX2 code is shared).
    if (i < n) scalar_activation_kernels().geglu(gate + i, up + i, n - i, out + i, table);
}

// 2^e for integer e in [-126, 127].
inline __m256 pow2(__m256i e) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23)); }

// ggml_expf (engine/common/ggml_expf.h), eight lanes.
inline __m256 ggml_expf8(__m256 x) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r), r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                                                     _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
                                     u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
    // j * 2^n in one rounding, as scalbnf: where 2^n is not a normal float, j is first scaled
    // exactly into range by 2^(n -+ 127/126) and rounded once by the second factor.
    const __m256i e = _mm256_cvttps_epi32(n);
    const __m256i over = _mm256_cmpgt_epi32(e, _mm256_set1_epi32(127));
    const __m256i under = _mm256_cmpgt_epi32(_mm256_set1_epi32(-126), e);
    const __m256i e2 = _mm256_blendv_epi8(_mm256_blendv_epi8(_mm256_setzero_si256(), _mm256_set1_epi32(127), over), _mm256_set1_epi32(-126),
                                          under);
    const __m256 res = _mm256_mul_ps(_mm256_mul_ps(j, pow2(_mm256_sub_epi32(e, e2))), pow2(e2));
    // |n| > 192: 0 or inf (an ordered compare: NaN stays NaN).
    const __m256 far = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), n), _mm256_set1_ps(192.0f), _CMP_GT_OQ);
    const __m256 alt = _mm256_blendv_ps(_mm256_set1_ps(INFINITY), _mm256_setzero_ps(), _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ));
    return _mm256_blendv_ps(res, alt, far);
}

void swiglu_avx2(const float * gate, const float * up, int64_t n_cols, float * out) {
    const int64_t n_vec = n_cols / 16 * 16;  // ggml_vector_cols, whose inline copy stays out of this TU
    const __m256 one = _mm256_set1_ps(1.0f);
    for (int64_t c = 0; c < n_vec; c += 8) {
        const __m256 g = _mm256_loadu_ps(gate + c);
        const __m256 e = ggml_expf8(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)));
        _mm256_storeu_ps(out + c, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + c)));
    }
    // The rest of the row (expf): the scalar kernel.
    if (n_vec < n_cols) scalar_activation_kernels().swiglu(gate + n_vec, up + n_vec, n_cols - n_vec, out + n_vec);
}

}  // namespace

const ActivationKernels & avx2_activation_kernels() {
    static const ActivationKernels k{geglu_avx2, swiglu_avx2};
    return k;
}

}  // namespace lr::cpu
