#pragma once
// exp as llama.cpp's CPU backend computes it in vectors (ggml_v_expf of its AVX-512 build,
// after ARM's optimized routines: within 1.45 + 0.5 ulp of exp), one lane with every
// rounding of the vector code. Its SiLU takes it for the whole vectors of 16 of a row and
// libm's expf for the rest; matching that makes our F32 models' logits llama.cpp's bits.
// Shared by the CPU's scalar kernels and the CUDA kernels (host and device).

#include <math.h>
#include <string.h>

#include <cstdint>

#if defined(__CUDACC__)
#define LR_GGML_EXPF_HD __host__ __device__ __forceinline__
#else
#define LR_GGML_EXPF_HD inline
#endif

namespace lr {

LR_GGML_EXPF_HD float ggml_expf(float x) {
    const float r = 0x1.8p23f;
    const float n = fmaf(x, 0x1.715476p+0f, r) - r;  // round(x / ln 2)
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    if (!(fabsf(n) <= 192.0f)) return n <= 0.0f ? 0.0f : n > 0.0f ? INFINITY : n;  // NaN stays NaN
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         fmaf(0x1.ffffecp-1f, b, 1.0f));
    // j * 2^n in one rounding (_mm512_scalef_ps); 2^n built from its bits where it is a normal
    // float (scalbnf is a slow call on the host).
#if !defined(__CUDA_ARCH__)
    if (n >= -126.0f && n <= 127.0f) {
        float p;
        const uint32_t bits = uint32_t(int32_t(n) + 127) << 23;
        memcpy(&p, &bits, sizeof p);
        return j * p;
    }
#endif
    return scalbnf(j, int(n));
}

// The columns [0, ggml_vector_cols(n_cols)) of a row that llama.cpp's SiLU computes with
// ggml_expf: whole vectors of 16.
LR_GGML_EXPF_HD int64_t ggml_vector_cols(int64_t n_cols) { return n_cols / 16 * 16; }

}  // namespace lr
