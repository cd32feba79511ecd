// The gated activations with AVX2 (activations.h): GELU's table read by an 8-lane gather
// at the f16 bits of the gate (F16C rounds to nearest even, as fp32_to_fp16), so the
// results are the scalar kernel's bits.

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

}  // namespace

const ActivationKernels & avx2_activation_kernels() {
    static const ActivationKernels k{geglu_avx2};
    return k;
}

}  // namespace lr::cpu
