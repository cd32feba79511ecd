#include "float_dot.h"

#include <cmath>

#include "engine/common/fp16.h"

namespace lr {
namespace {

// _mm512_reduce_add_ps as GCC implements it: halves, quarters, then pairs.
float reduce16(const float * v) {
    float t8[8], t4[4];
    for (int i = 0; i < 8; ++i) t8[i] = v[8 + i] + v[i];
    for (int i = 0; i < 4; ++i) t4[i] = t8[4 + i] + t8[i];
    return (t4[0] + t4[2]) + (t4[1] + t4[3]);
}

struct F32Load {
    const float * p;
    float operator()(size_t i) const { return p[i]; }
};
struct F16Load {
    const uint16_t * p;
    float operator()(size_t i) const { return fp16_to_fp32(p[i]); }
};
struct BF16Load {
    const uint16_t * p;
    float operator()(size_t i) const { return bf16_to_fp32(p[i]); }
};

template <class A, class B>
float dot_gemm(size_t n, A a, B b) {
    float lanes[16] = {};
    for (size_t i = 0; i < n; i += 16) {
        for (int j = 0; j < 16; ++j) lanes[j] = std::fma(a(i + size_t(j)), b(i + size_t(j)), lanes[j]);
    }
    return reduce16(lanes);
}

// The tail after the last whole step is summed in Acc: float for F32 (ggml_vec_dot_f32),
// double for F16 (ggml_vec_dot_f16).
template <class Acc, class A, class B>
float dot_gemv(size_t n, A a, B b) {
    float acc[4][16] = {};
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        for (int k = 0; k < 4; ++k) {
            for (int j = 0; j < 16; ++j) {
                const size_t e = i + size_t(16 * k + j);
                acc[k][j] = std::fma(a(e), b(e), acc[k][j]);
            }
        }
    }
    for (int j = 0; j < 16; ++j) {
        acc[0][j] += acc[2][j];
        acc[1][j] += acc[3][j];
    }
    for (int j = 0; j < 16; ++j) acc[0][j] += acc[1][j];
    Acc sum = reduce16(acc[0]);
    for (; i < n; ++i) sum += Acc(a(i) * b(i));
    return float(sum);
}

}  // namespace

float dot_f32(size_t n, const float * a, const float * b, DotOrder order) {
    return order == DotOrder::gemm ? dot_gemm(n, F32Load{a}, F32Load{b}) : dot_gemv<float>(n, F32Load{a}, F32Load{b});
}

float dot_f16(size_t n, const uint16_t * a, const uint16_t * b, DotOrder order) {
    return order == DotOrder::gemm ? dot_gemm(n, F16Load{a}, F16Load{b}) : dot_gemv<double>(n, F16Load{a}, F16Load{b});
}

float dot_f16_as_f32(size_t n, const float * a, const float * b, DotOrder order) {
    return order == DotOrder::gemm ? dot_gemm(n, F32Load{a}, F32Load{b}) : dot_gemv<double>(n, F32Load{a}, F32Load{b});
}

float dot_bf16(size_t n, const uint16_t * a, const uint16_t * b, DotOrder order) {
    if (order == DotOrder::gemm) return dot_gemm(n, BF16Load{a}, BF16Load{b});
    // ggml_vec_dot_bf16 (AVX-512F without BF16 instructions): two accumulators, multiply
    // then add, each reduced on its own.
    float c[2][16] = {};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int k = 0; k < 2; ++k) {
            for (int j = 0; j < 16; ++j) {
                const size_t e = i + size_t(16 * k + j);
                c[k][j] = bf16_to_fp32(a[e]) * bf16_to_fp32(b[e]) + c[k][j];
            }
        }
    }
    double sum = double(reduce16(c[0])) + double(reduce16(c[1]));
    for (; i < n; ++i) sum += double(bf16_to_fp32(a[i]) * bf16_to_fp32(b[i]));
    return float(sum);
}

}  // namespace lr
