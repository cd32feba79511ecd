// F32, F16 and BF16 prefill on AVX-512, bit-identical to float_dot.h's gemm order (as the
// AVX2 kernel is). That order keeps one 16-lane accumulator per output: one zmm register
// here, a pair of ymm registers on AVX2. With 32 registers a tile is 4 rows x 6 tokens (24
// sums, 10 loads per 24 FMAs) where AVX2's 16 hold 2 x 3 (5 loads per 6 FMAs), so the
// multiply-adds rather than the loads set the pace. Everything else (one token, rows not a
// multiple of 16 (BF16: 32), the activations, BF16's [odd | even] steps) is the AVX2
// kernel's: its results are the same bits.
//
// A chunk of rows is converted to floats in panels that stay in L2, and each tile of
// tokens walks whole rows of the panel.

#include "engine/backend/cpu/avx512/avx512_util.h"

namespace lr::cpu {

const MatmulKernel * avx2_float_matmul_kernel(DType type);

namespace {

using avx2::keep_in_register;
using avx2::min_i64;

constexpr int kTileRows = 4;
constexpr int kTileTokens = 6;
constexpr int64_t kPanelBytes = 160 * 1024;  // float bytes of a panel
constexpr int64_t kMaxPanelRows = 64;

// _mm512_reduce_add_ps's tree (float_dot.cpp's reduce16) on any compiler, from memory (GCC
// 12 warns about its own 512-to-256-bit extracts).
float reduce16(const __m512 & v) {
    const float * f = reinterpret_cast<const float *>(&v);
    return avx2::reduce16(_mm256_loadu_ps(f), _mm256_loadu_ps(f + 8));
}

// y[t][r] = w[r] . a[t] for the tile's R rows and T tokens, each in 16 lanes over the
// whole row (its n_cols % 16 == 0) and reduced as float_dot.cpp does. Both operands stream
// from L2 (the panel) and L2/L3 (the activations) at 10 loads per 24 FMAs: keeping the sums
// in registers for the whole row beats cutting it into pieces that fit L1 (saving and
// reloading the partial sums cost 10 % at 512-column pieces).
template <int R, int T>
void gemm_tile(const float * const * w, const float * const * a, int64_t n_cols, float * y, int64_t y_stride) {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < n_cols; i += 16) {
        __m512 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = _mm512_loadu_ps(w[r] + i);
        for (int t = 0; t < T; ++t) {
            __m512 av = _mm512_loadu_ps(a[t] + i);
            keep_in_register(av);
            for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], av, acc[r][t]);
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) y[t * y_stride + r] = reduce16(acc[r][t]);
    }
}

// Rows [p0, p0 + n_rows) (panel[i] is row p0 + i as floats) times tokens [t, t + T).
template <int T>
void gemm_panel_tokens(const MatmulJob & job, const float * const * panel, int64_t p0, int64_t n_rows, int64_t t) {
    const float * a[T];
    for (int i = 0; i < T; ++i) a[i] = reinterpret_cast<const float *>(job.act + size_t(t + i) * job.act_row_bytes);
    float * y = job.y + t * job.y_stride + p0;
    int64_t r = 0;
    for (; r + kTileRows <= n_rows; r += kTileRows) gemm_tile<kTileRows, T>(panel + r, a, job.n_cols, y + r, job.y_stride);
    switch (n_rows - r) {
        case 3: gemm_tile<3, T>(panel + r, a, job.n_cols, y + r, job.y_stride); break;
        case 2: gemm_tile<2, T>(panel + r, a, job.n_cols, y + r, job.y_stride); break;
        case 1: gemm_tile<1, T>(panel + r, a, job.n_cols, y + r, job.y_stride); break;
        default: break;
    }
}

int64_t panel_rows(int64_t n_cols) {
    int64_t rows = kPanelBytes / (n_cols > 0 ? n_cols * 4 : 1);
    rows = rows < kTileRows ? kTileRows : rows > kMaxPanelRows ? kMaxPanelRows : rows;
    return rows / kTileRows * kTileRows;
}

// Row r of the weights as floats (F16 and BF16 converted exactly; F32 read in place);
// n_cols is a multiple of 16.
template <DType W>
const float * float_row(const MatmulJob & job, int64_t r, float * buf) {
    const uint8_t * w = job.w + size_t(r) * job.w_row_bytes;
    if constexpr (W == DType::F32) {
        (void)buf;
        return reinterpret_cast<const float *>(w);
    } else if constexpr (W == DType::BF16) {
        // [odd | even] per step of 32 (n_cols % 32 == 0), as the AVX2 kernel's activations.
        for (int64_t i = 0; i < job.n_cols; i += 32) {
            const __m512i pairs = _mm512_loadu_si512(w + 2 * i);
            _mm512_storeu_ps(buf + i, _mm512_castsi512_ps(_mm512_and_si512(pairs, _mm512_set1_epi32(int(0xffff0000u)))));
            _mm512_storeu_ps(buf + i + 16, _mm512_castsi512_ps(_mm512_slli_epi32(pairs, 16)));
        }
        return buf;
    } else {
        for (int64_t i = 0; i < job.n_cols; i += 16) {
            const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + 2 * i));
            _mm512_storeu_ps(buf + i, _mm512_cvtph_ps(h));
        }
        return buf;
    }
}

template <DType W>
void gemm_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    const int64_t step = panel_rows(job.n_cols);
    float * rows_f32 = reinterpret_cast<float *>(scratch);
    const float * panel[kMaxPanelRows];
    for (int64_t p0 = r0; p0 < r1; p0 += step) {
        const int64_t n = min_i64(step, r1 - p0);
        for (int64_t i = 0; i < n; ++i) panel[i] = float_row<W>(job, p0 + i, rows_f32 + size_t(i) * size_t(job.n_cols));
        int64_t t = 0;
        for (; t + kTileTokens <= job.n_tokens; t += kTileTokens) gemm_panel_tokens<kTileTokens>(job, panel, p0, n, t);
        switch (job.n_tokens - t) {
            case 5: gemm_panel_tokens<5>(job, panel, p0, n, t); break;
            case 4: gemm_panel_tokens<4>(job, panel, p0, n, t); break;
            case 3: gemm_panel_tokens<3>(job, panel, p0, n, t); break;
            case 2: gemm_panel_tokens<2>(job, panel, p0, n, t); break;
            case 1: gemm_panel_tokens<1>(job, panel, p0, n, t); break;
            default: break;
        }
    }
}

template <DType W>
const MatmulKernel & avx2_kernel() {
    return *avx2_float_matmul_kernel(W);
}

template <DType W>
size_t act_row_bytes(int64_t n_cols) {
    return avx2_kernel<W>().act_row_bytes(n_cols);
}

template <DType W>
void convert_act(const float * x, int64_t n_cols, uint8_t * dst) {
    avx2_kernel<W>().convert_act(x, n_cols, dst);
}

template <DType W>
void act_to_standard(const uint8_t * act, int64_t n_cols, void * dst) {
    avx2_kernel<W>().act_to_standard(act, n_cols, dst);
}

template <DType W>
size_t scratch_bytes(int64_t n_cols, int64_t max_rows, int64_t n_tokens) {
    const size_t rows = size_t(panel_rows(n_cols));
    const size_t own = rows * size_t(n_cols) * sizeof(float);
    const size_t avx2 = avx2_kernel<W>().scratch_bytes(n_cols, max_rows, n_tokens);
    return own > avx2 ? own : avx2;
}

template <DType W>
void rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    if (job.n_tokens < 2 || job.n_cols % (W == DType::BF16 ? 32 : 16) != 0) return avx2_kernel<W>().rows(job, r0, r1, scratch);
    if constexpr (W == DType::BF16) {
        const avx2::FlushDenormals vdpbf16ps_flushing;
        gemm_rows<W>(job, r0, r1, scratch);
    } else {
        gemm_rows<W>(job, r0, r1, scratch);
    }
}

template <DType W>
constexpr MatmulKernel kKernel{act_row_bytes<W>, convert_act<W>, act_to_standard<W>, scratch_bytes<W>, rows<W>};

}  // namespace

const MatmulKernel * avx512_float_matmul_kernel(DType type) {
    switch (type) {
        case DType::F32: return &kKernel<DType::F32>;
        case DType::F16: return &kKernel<DType::F16>;
        case DType::BF16: return &kKernel<DType::BF16>;
        default: return nullptr;
    }
}

}  // namespace lr::cpu
