#include "kvcache/page_bounds.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "engine/common/fp16.h"

namespace lr {

void page_bounds_portable(const float * q_pos, const float * q_neg, uint32_t group, const uint16_t * min, const uint16_t * max, uint32_t d,
                          float * out) {
    for (uint32_t h = 0; h < group; ++h) {
        float sum = 0;
        for (uint32_t c = 0; c < d; ++c)
            sum += q_pos[size_t(h) * d + c] * fp16_to_fp32(max[c]) + q_neg[size_t(h) * d + c] * fp16_to_fp32(min[c]);
        out[h] = sum;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma,f16c"))) void page_bounds_avx2(const float * q_pos, const float * q_neg, uint32_t group,
                                                               const uint16_t * min, const uint16_t * max, uint32_t d, float * out) {
    for (uint32_t h = 0; h < group; ++h) {
        const float * qp = q_pos + size_t(h) * d;
        const float * qn = q_neg + size_t(h) * d;
        __m256 acc = _mm256_setzero_ps();
        uint32_t c = 0;
        for (; c + 8 <= d; c += 8) {
            const __m256 hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(max + c)));
            const __m256 lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(min + c)));
            acc = _mm256_fmadd_ps(_mm256_loadu_ps(qp + c), hi, acc);
            acc = _mm256_fmadd_ps(_mm256_loadu_ps(qn + c), lo, acc);
        }
        __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
        s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
        float sum = _mm_cvtss_f32(_mm_add_ss(s4, _mm_movehdup_ps(s4)));
        for (; c < d; ++c) sum += qp[c] * fp16_to_fp32(max[c]) + qn[c] * fp16_to_fp32(min[c]);
        out[h] = sum;
    }
}

PageBounds best_page_bounds() {
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    return avx2 ? page_bounds_avx2 : page_bounds_portable;
}
#else
PageBounds best_page_bounds() { return page_bounds_portable; }
#endif

}  // namespace lr
