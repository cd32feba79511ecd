// F32, F16 and BF16 rows. Conversions are ggml's (round to nearest even, engine/common/fp16.h).

#include "engine/common/fp16.h"
#include "engine/quant/quant_internal.h"

namespace lr::quant::detail {

void dequantize_row_f16(const uint16_t * x, float * y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void dequantize_row_bf16(const uint16_t * x, float * y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(x[i]);
}

void quantize_row_f16(const float * x, uint16_t * y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

// NOTE: rounds (ggml_fp32_to_bf16_row_ref, what llama-quantize writes); ggml's older
// truncating conversion is not used anywhere in the file path.
void quantize_row_bf16(const float * x, uint16_t * y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}

// The three dot products multiply in float and accumulate in float, left to right.
// NOTE: ggml's scalar fallback accumulates these in double (ggml_float); the SIMD paths
// accumulate in float vectors. Kernels are compared to this with an error bound.

float vec_dot_f32(size_t n, const float * w, const float * a) {
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += w[i] * a[i];
    return sum;
}

float vec_dot_f16(size_t n, const uint16_t * w, const uint16_t * a) {
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += fp16_to_fp32(w[i]) * fp16_to_fp32(a[i]);
    return sum;
}

float vec_dot_bf16(size_t n, const uint16_t * w, const uint16_t * a) {
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += bf16_to_fp32(w[i]) * bf16_to_fp32(a[i]);
    return sum;
}

}  // namespace lr::quant::detail
