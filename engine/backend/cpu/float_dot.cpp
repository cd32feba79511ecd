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

// vdpbf16ps on one lane: c += a[1] * b[1], then c += a[0] * b[0], each product exact and
// each sum rounded once; denormal inputs count as zeros and denormal sums are flushed to
// zero (the instruction's DAZ and FTZ). Checked against this machine's vdpbf16ps (Zen 4):
// 32 of 3.2 M lanes of random bits differed, all with results below 2^-100.
float dpbf16_lane(float c, const uint16_t * a, const uint16_t * b) {
    auto in = [](uint16_t h) { return (h & 0x7f80) == 0 ? std::copysign(0.0f, bf16_to_fp32(h)) : bf16_to_fp32(h); };
    auto out = [](float x) { return std::fabs(x) < 0x1p-126f ? std::copysign(0.0f, x) : x; };
    c = out(std::fma(in(a[1]), in(b[1]), c));
    return out(std::fma(in(a[0]), in(b[0]), c));
}

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
    if (order == DotOrder::gemm) {  // tinyBLAS<32, __m512, __m512bh>: one accumulator
        float lanes[16] = {};
        for (size_t i = 0; i < n; i += 32) {
            for (size_t j = 0; j < 16; ++j) lanes[j] = dpbf16_lane(lanes[j], a + i + 2 * j, b + i + 2 * j);
        }
        return reduce16(lanes);
    }
    // ggml_vec_dot_bf16 (AVX512BF16): two accumulators over steps of 64, each reduced on its
    // own and added in double, then the tail's float products.
    float c[2][16] = {};
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        for (size_t k = 0; k < 2; ++k) {
            for (size_t j = 0; j < 16; ++j) c[k][j] = dpbf16_lane(c[k][j], a + i + 32 * k + 2 * j, b + i + 32 * k + 2 * j);
        }
    }
    double sum = double(reduce16(c[0]));
    sum += double(reduce16(c[1]));
    for (; i < n; ++i) sum += double(bf16_to_fp32(a[i]) * bf16_to_fp32(b[i]));
    return float(sum);
}

}  // namespace lr
