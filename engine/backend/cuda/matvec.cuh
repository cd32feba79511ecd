#pragma once
// The decode product's per-lane work (matvec.cu runs it on the GPU; the host emulation in
// tests/gpu runs the same code lane by lane). See matvec.cu for the design.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/dequant.cuh"

namespace lr::cuda::mv {

constexpr int kWarps = 4;        // per block
constexpr int kRowsPerWarp = 2;  // rows a warp owns: x is read once for both
constexpr int kMaxTokens = int(kMatvecMaxTokens);

struct Params {
    const uint8_t * w;  // [n_rows] rows of row_bytes
    size_t row_bytes;
    int64_t n_rows, n_cols;
    const float * x;  // [n_tokens][n_cols]
    int n_tokens;
    float * y;  // [n_tokens][y_stride]
    int64_t y_stride;
    bool w_aligned16;  // every row starts on 16 bytes
    bool x_vec4;       // every x row starts on 16 bytes
};

// x as the CPU converts it for a dot product with weights of type T (vec_dot_type): F16
// and BF16 weights round it, the quantized types keep it (the CPU quantizes it to q8).
template <DType T>
LR_HD float act(float x) {
    if constexpr (T == DType::F16) return __half2float(__float2half_rn(x));
    else if constexpr (T == DType::BF16) return __bfloat162float(__float2bfloat16_rn(x));
    else return x;
}

template <DType T>
LR_HD void load_x(const float * x, bool vec4, float (&out)[4]) {
#if defined(__CUDA_ARCH__)
    if (vec4) {
        const float4 f = *reinterpret_cast<const float4 *>(x);
        out[0] = f.x, out[1] = f.y, out[2] = f.z, out[3] = f.w;
    } else {
        for (int k = 0; k < 4; ++k) out[k] = x[k];
    }
#else
    (void)vec4;
    for (int k = 0; k < 4; ++k) out[k] = x[k];
#endif
    for (int k = 0; k < 4; ++k) out[k] = act<T>(out[k]);
}

// The first row of a warp's kRowsPerWarp rows, and how many of them exist.
LR_HD int64_t first_row(int64_t warp) { return warp * kRowsPerWarp; }
LR_HD int rows_of(const Params & p, int64_t row0) { return p.n_rows - row0 < kRowsPerWarp ? int(p.n_rows - row0) : kRowsPerWarp; }

// Lane `lane` of the warp owning rows row0.. : its partial sums acc[r][t].
template <DType T>
LR_HD void lane_sums(const Params & p, int64_t row0, int lane, float (&acc)[kRowsPerWarp][kMaxTokens]) {
    const int n_rows = rows_of(p, row0);
    const uint8_t * rows[kRowsPerWarp];
    for (int r = 0; r < kRowsPerWarp; ++r) rows[r] = p.w + size_t(row0 + (r < n_rows ? r : n_rows - 1)) * p.row_bytes;
    for (int r = 0; r < kRowsPerWarp; ++r) {
        for (int t = 0; t < kMaxTokens; ++t) acc[r][t] = 0.0f;
    }
    const int64_t n_steps = p.n_cols / 256;
    // Unrolled so that the loads of several steps are in flight at once: decode is bound by
    // how many bytes each multiprocessor keeps in flight.
    LR_UNROLL_4
    for (int64_t step = 0; step < n_steps; ++step) {
        float w[kRowsPerWarp][8];
        int a0 = 0, a1 = 0;
        LR_UNROLL
        for (int r = 0; r < kRowsPerWarp; ++r) dequant_step<T>(rows[r], step, lane, p.w_aligned16, w[r], a0, a1);
        const int64_t c0 = step * 256 + a0, c1 = step * 256 + a1;
        LR_UNROLL
        for (int t = 0; t < kMaxTokens; ++t) {
            if (t >= p.n_tokens) break;
            float x0[4], x1[4];
            load_x<T>(p.x + t * p.n_cols + c0, p.x_vec4, x0);
            load_x<T>(p.x + t * p.n_cols + c1, p.x_vec4, x1);
            LR_UNROLL
            for (int r = 0; r < kRowsPerWarp; ++r) {
                LR_UNROLL
                for (int k = 0; k < 4; ++k) acc[r][t] = fmaf(w[r][k], x0[k], acc[r][t]);
                LR_UNROLL
                for (int k = 0; k < 4; ++k) acc[r][t] = fmaf(w[r][4 + k], x1[k], acc[r][t]);
            }
        }
    }
    // The tail: columns past the last whole step, one per lane.
    for (int64_t c = n_steps * 256 + lane; c < p.n_cols; c += 32) {
        float w[kRowsPerWarp];
        LR_UNROLL
        for (int r = 0; r < kRowsPerWarp; ++r) w[r] = dequant_one<T>(rows[r], c);
        LR_UNROLL
        for (int t = 0; t < kMaxTokens; ++t) {
            if (t >= p.n_tokens) break;
            const float xv = act<T>(p.x[t * p.n_cols + c]);
            LR_UNROLL
            for (int r = 0; r < kRowsPerWarp; ++r) acc[r][t] = fmaf(w[r], xv, acc[r][t]);
        }
    }
}

}  // namespace lr::cuda::mv
