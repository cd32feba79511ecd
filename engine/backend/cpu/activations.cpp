// The gated activations (activations.h): the scalar kernels and the GELU table.

#include "engine/backend/cpu/activations.h"

#include <cmath>
#include <vector>

#include "engine/common/fp16.h"
#include "engine/common/ggml_expf.h"

namespace lr::cpu {
namespace {

void geglu_scalar(const float * gate, const float * up, int64_t n, float * out, const float * table) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        if (g <= -10.0f) {
            out[i] = 0.0f;
        } else if (g >= 10.0f) {
            out[i] = g * up[i];
        } else {
            out[i] = table[fp32_to_fp16(g)] * up[i];
        }
    }
}

void swiglu_scalar(const float * gate, const float * up, int64_t n_cols, float * out) {
    const int64_t n_vec = ggml_vector_cols(n_cols);
    for (int64_t c = 0; c < n_cols; ++c) {
        const float g = gate[c];
        const float e = c < n_vec ? ggml_expf(-g) : std::exp(-g);
        out[c] = g / (1.0f + e) * up[c];
    }
}

}  // namespace

float gelu_tanh(float x) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    const float coef_a = 0.044715f;
    return 0.5f * x * (1.0f + std::tanh(sqrt_2_over_pi * x * (1.0f + coef_a * x * x)));
}

const float * gelu_table() {
    static const std::vector<float> table = [] {
        std::vector<float> t(size_t(1) << 16);
        for (size_t h = 0; h < t.size(); ++h) t[h] = fp16_to_fp32(fp32_to_fp16(gelu_tanh(fp16_to_fp32(uint16_t(h)))));
        return t;
    }();
    return table.data();
}

const ActivationKernels & scalar_activation_kernels() {
    static const ActivationKernels k{geglu_scalar, swiglu_scalar};
    return k;
}

#if !defined(LONGREAD_HAVE_AVX2_KERNELS)
const ActivationKernels & avx2_activation_kernels() { return scalar_activation_kernels(); }
#endif

const ActivationKernels & activation_kernels(CpuIsa isa) {
#if defined(LONGREAD_HAVE_AVX2_KERNELS)
    if (runs_avx2(isa)) return avx2_activation_kernels();
#endif
    (void)isa;
    return scalar_activation_kernels();
}

}  // namespace lr::cpu
