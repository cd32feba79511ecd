#pragma once
// Helpers the dequantizers and KV codecs share. They are __host__ __device__ so that the
// host can run the same code (tests/gpu/test_cuda_host_codecs: the lane mappings and the
// codecs checked bit for bit against the CPU reference on machines without a GPU).
//
// Loads read bytes at any 2-byte-aligned address; arithmetic that the CPU reference rounds
// twice (a * b + c without FMA, under -ffp-contract=off) is written with the explicit
// round-to-nearest intrinsics on the device, and as separate statements on the host (whose
// code is compiled with -ffp-contract=off as well).

#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#define LR_HD __host__ __device__ __forceinline__

// #pragma unroll for the device pass only (the host compiler does not know it).
#if defined(__CUDA_ARCH__)
#define LR_UNROLL _Pragma("unroll")
#define LR_UNROLL_4 _Pragma("unroll 4")
#else
#define LR_UNROLL
#define LR_UNROLL_4
#endif

namespace lr::cuda {

LR_HD uint16_t load_u16(const uint8_t * p) {
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const uint16_t *>(p);
#else
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
#endif
}

// p 4-byte aligned.
LR_HD uint32_t load_u32_a4(const uint8_t * p) {
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const uint32_t *>(p);
#else
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
#endif
}

// p 2-byte aligned: two 16-bit loads.
LR_HD uint32_t load_u32_a2(const uint8_t * p) { return uint32_t(load_u16(p)) | (uint32_t(load_u16(p + 2)) << 16); }

// 16 bytes at a 16-byte-aligned p, as four little-endian words.
LR_HD void load_16(const uint8_t * p, uint32_t (&w)[4]) {
#if defined(__CUDA_ARCH__)
    const uint4 v = *reinterpret_cast<const uint4 *>(p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
#else
    std::memcpy(w, p, 16);
#endif
}

LR_HD float load_f32(const uint8_t * p) {
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const float *>(p);
#else
    float v;
    std::memcpy(&v, p, 4);
    return v;
#endif
}

LR_HD void store_f32(uint8_t * p, float v) {
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<float *>(p) = v;
#else
    std::memcpy(p, &v, 4);
#endif
}

LR_HD float half_bits_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }
LR_HD float half_at(const uint8_t * p) { return half_bits_to_float(load_u16(p)); }
// Round to nearest even, as fp32_to_fp16 (engine/common/fp16.h) for every non-NaN value.
LR_HD void store_half(uint8_t * p, float v) {
    const uint16_t h = __half_as_ushort(__float2half_rn(v));
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<uint16_t *>(p) = h;
#else
    std::memcpy(p, &h, 2);
#endif
}

LR_HD float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
}

LR_HD float bf16_bits_to_float(uint16_t b) { return bits_to_float(uint32_t(b) << 16); }

LR_HD uint32_t byte_of(uint32_t word, int k) { return (word >> (8 * k)) & 0xFFu; }

// Single roundings, never fused into an FMA.
LR_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
LR_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
LR_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}
LR_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}
// a * b + c and a * b - c in two roundings, as the CPU computes them.
LR_HD float mul_add(float a, float b, float c) { return add_rn(mul_rn(a, b), c); }
LR_HD float mul_sub(float a, float b, float c) { return sub_rn(mul_rn(a, b), c); }

}  // namespace lr::cuda
