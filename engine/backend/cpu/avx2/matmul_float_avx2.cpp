// F32, F16 and BF16 weights on AVX2, bit-identical to float_dot.h: activations are rounded
// to the weight's type once (as the scalar path converts them to its vec_dot_type) and
// kept as floats; the 16 lanes of llama.cpp's AVX-512 order are two 8-lane registers.
//   gemv (one token, or rows not a multiple of 16): 4 x 16 lanes over steps of 64;
//   gemm (two tokens or more): one 16-lane accumulator per output, in tiles of 2 rows x
//   3 tokens, cut along the row into pieces that stay in L1 (partial accumulators go to
//   scratch and back unchanged, so the order is the same).

#include "engine/backend/cpu/avx2/avx2_util.h"
#include "engine/backend/cpu/matmul_kernels.h"

namespace lr::cpu {
namespace {

using namespace avx2;

enum class FloatType { f32, f16, bf16 };

template <FloatType W>
__m256 load_w(const uint8_t * row, int64_t i) {
    if constexpr (W == FloatType::f32) return _mm256_loadu_ps(reinterpret_cast<const float *>(row) + i);
    if constexpr (W == FloatType::f16) return load_f16x8(reinterpret_cast<const uint16_t *>(row) + i);
    if constexpr (W == FloatType::bf16) return load_bf16x8(reinterpret_cast<const uint16_t *>(row) + i);
}

template <FloatType W>
float load_w1(const uint8_t * row, int64_t i) {
    if constexpr (W == FloatType::f32) return reinterpret_cast<const float *>(row)[i];
    uint16_t h;
    std::memcpy(&h, row + 2 * i, 2);
    if constexpr (W == FloatType::f16) return f16_to_f32(h);
    uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// ---- activations: floats, rounded through the weight type ----------------------------------

size_t act_row_bytes(int64_t n_cols) { return (size_t(n_cols) * sizeof(float) + 63) / 64 * 64; }

template <FloatType W>
void convert_act(const float * x, int64_t n_cols, uint8_t * dst) {
    float * out = reinterpret_cast<float *>(dst);
    int64_t i = 0;
    for (; i + 8 <= n_cols; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        if constexpr (W == FloatType::f16) v = round_f16(v);
        if constexpr (W == FloatType::bf16) v = round_bf16(v);
        _mm256_storeu_ps(out + i, v);
    }
    if (i < n_cols) {
        float tmp[8] = {};
        for (int64_t j = i; j < n_cols; ++j) tmp[j - i] = x[j];
        __m256 v = _mm256_loadu_ps(tmp);
        if constexpr (W == FloatType::f16) v = round_f16(v);
        if constexpr (W == FloatType::bf16) v = round_bf16(v);
        _mm256_storeu_ps(tmp, v);
        for (int64_t j = i; j < n_cols; ++j) out[j] = tmp[j - i];
    }
}

// The rounded floats back as F32, F16 or BF16 (exact: they are representable).
template <FloatType W>
void act_to_standard(const uint8_t * act, int64_t n_cols, void * dst) {
    const float * a = reinterpret_cast<const float *>(act);
    if constexpr (W == FloatType::f32) {
        std::memcpy(dst, a, size_t(n_cols) * sizeof(float));
    } else {
        auto * out = static_cast<uint16_t *>(dst);
        for (int64_t i = 0; i < n_cols; ++i) {
            uint32_t bits;
            std::memcpy(&bits, a + i, 4);
            out[i] = W == FloatType::f16 ? _cvtss_sh(a[i], _MM_FROUND_TO_NEAREST_INT) : uint16_t(bits >> 16);
        }
    }
}

// ---- gemv order ------------------------------------------------------------------------------

template <FloatType W>
float dot_gemv(const uint8_t * w, const float * a, int64_t n) {
    if constexpr (W == FloatType::bf16) {
        // ggml_vec_dot_bf16 (AVX-512F): 2 x 16 lanes over steps of 32, multiply then add.
        __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
        int64_t i = 0;
        for (; i + 32 <= n; i += 32) {
            prefetch_ahead(w + 2 * size_t(i), 64);
            c0 = _mm256_add_ps(_mm256_mul_ps(load_w<W>(w, i), _mm256_loadu_ps(a + i)), c0);
            c1 = _mm256_add_ps(_mm256_mul_ps(load_w<W>(w, i + 8), _mm256_loadu_ps(a + i + 8)), c1);
            c2 = _mm256_add_ps(_mm256_mul_ps(load_w<W>(w, i + 16), _mm256_loadu_ps(a + i + 16)), c2);
            c3 = _mm256_add_ps(_mm256_mul_ps(load_w<W>(w, i + 24), _mm256_loadu_ps(a + i + 24)), c3);
        }
        double sum = double(reduce16(c0, c1)) + double(reduce16(c2, c3));
        for (; i < n; ++i) sum += double(load_w1<W>(w, i) * a[i]);
        return float(sum);
    } else {
        __m256 acc[8];
        for (__m256 & v : acc) v = _mm256_setzero_ps();
        int64_t i = 0;
        constexpr size_t kStepBytes = W == FloatType::f32 ? 256 : 128;
        for (; i + 64 <= n; i += 64) {
            prefetch_ahead(w + size_t(i) * (kStepBytes / 64), kStepBytes);
            for (int k = 0; k < 8; ++k) acc[k] = _mm256_fmadd_ps(load_w<W>(w, i + 8 * k), _mm256_loadu_ps(a + i + 8 * k), acc[k]);
        }
        // acc[2k], acc[2k+1] are lanes 0..7, 8..15 of the k-th 16-lane accumulator.
        const __m256 lo = _mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6]));
        const __m256 hi = _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7]));
        const float head = reduce16(lo, hi);
        if constexpr (W == FloatType::f32) {
            float sum = head;
            for (; i < n; ++i) sum += load_w1<W>(w, i) * a[i];
            return sum;
        } else {
            double sum = head;
            for (; i < n; ++i) sum += double(load_w1<W>(w, i) * a[i]);
            return float(sum);
        }
    }
}

// ---- gemm order: tiles of up to 2 rows x 3 tokens ---------------------------------------------
// A chunk of rows is cut into panels whose rows are converted to floats once (in scratch,
// sized to stay in L2) and then serve every token. For each tile of 3 tokens the row is
// walked in pieces of kPiece columns, whose activations stay in L1 while every row pair
// of the panel passes over them; the 16-lane partial sums of each (row, token) wait in
// scratch between pieces (stored and reloaded unchanged, so the order is the same).

constexpr int kTileRows = 2;
constexpr int kTileTokens = 3;
constexpr int64_t kPiece = 512;              // columns per piece
constexpr int64_t kPanelBytes = 160 * 1024;  // float bytes of a panel
constexpr int64_t kMaxPanelRows = 64;

struct Partial {
    __m256 lo, hi;  // lanes 0..7 and 8..15
};

// part[r][t] += w[r][c0..c1) . a[t][c0..c1) in 16 lanes; (c1 - c0) % 16 == 0.
template <int R, int T>
void gemm_tile(const float * const * w, const float * const * a, int64_t c0, int64_t c1, Partial * part) {
    __m256 lo[R][T], hi[R][T];
    for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) {
            lo[r][t] = part[r * kTileTokens + t].lo;
            hi[r][t] = part[r * kTileTokens + t].hi;
        }
    }
    for (int64_t i = c0; i < c1; i += 16) {
        __m256 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = _mm256_loadu_ps(w[r] + i);
        for (int t = 0; t < T; ++t) {
            __m256 av = _mm256_loadu_ps(a[t] + i);
            keep_in_register(av);
            for (int r = 0; r < R; ++r) lo[r][t] = _mm256_fmadd_ps(wv[r], av, lo[r][t]);
        }
        for (int r = 0; r < R; ++r) wv[r] = _mm256_loadu_ps(w[r] + i + 8);
        for (int t = 0; t < T; ++t) {
            __m256 av = _mm256_loadu_ps(a[t] + i + 8);
            keep_in_register(av);
            for (int r = 0; r < R; ++r) hi[r][t] = _mm256_fmadd_ps(wv[r], av, hi[r][t]);
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) part[r * kTileTokens + t] = {lo[r][t], hi[r][t]};
    }
}

// Rows [p0, p1) of the panel (panel[r - p0] is row r as floats) times tokens [t, t + T).
template <int T>
void gemm_panel_tokens(const MatmulJob & job, const float * const * panel, int64_t p0, int64_t p1, int64_t t, Partial * part) {
    const float * a[T];
    for (int i = 0; i < T; ++i) a[i] = reinterpret_cast<const float *>(job.act + size_t(t + i) * job.act_row_bytes);
    for (int64_t i = 0; i < (p1 - p0) * kTileTokens; ++i) part[i] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t c = 0; c < job.n_cols; c += kPiece) {
        const int64_t c1 = min_i64(c + kPiece, job.n_cols);
        int64_t r = p0;
        for (; r + kTileRows <= p1; r += kTileRows) gemm_tile<kTileRows, T>(panel + (r - p0), a, c, c1, part + (r - p0) * kTileTokens);
        if (r < p1) gemm_tile<1, T>(panel + (r - p0), a, c, c1, part + (r - p0) * kTileTokens);
    }
    for (int64_t r = p0; r < p1; ++r) {
        for (int j = 0; j < T; ++j) {
            const Partial & s = part[(r - p0) * kTileTokens + j];
            job.y[(t + j) * job.y_stride + r] = reduce16(s.lo, s.hi);
        }
    }
}

int64_t panel_rows(int64_t n_cols) {
    int64_t rows = kPanelBytes / (n_cols > 0 ? n_cols * 4 : 1);
    rows = rows < kTileRows ? kTileRows : rows > kMaxPanelRows ? kMaxPanelRows : rows;
    return rows / kTileRows * kTileRows;
}

// Row r of the weights as floats (F16 and BF16 converted exactly; F32 read in place).
template <FloatType W>
const float * float_row(const MatmulJob & job, int64_t r, float * buf) {
    const uint8_t * w = job.w + size_t(r) * job.w_row_bytes;
    if constexpr (W == FloatType::f32) {
        (void)buf;
        return reinterpret_cast<const float *>(w);
    } else {
        int64_t i = 0;
        for (; i + 8 <= job.n_cols; i += 8) _mm256_storeu_ps(buf + i, load_w<W>(w, i));
        for (; i < job.n_cols; ++i) buf[i] = load_w1<W>(w, i);
        return buf;
    }
}

template <FloatType W>
void gemm_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    const int64_t step = panel_rows(job.n_cols);
    Partial * part = reinterpret_cast<Partial *>(scratch);
    float * rows_f32 = reinterpret_cast<float *>(scratch + size_t(step) * kTileTokens * sizeof(Partial));
    const float * panel[kMaxPanelRows];
    for (int64_t p0 = r0; p0 < r1; p0 += step) {
        const int64_t p1 = min_i64(p0 + step, r1);
        for (int64_t r = p0; r < p1; ++r) panel[r - p0] = float_row<W>(job, r, rows_f32 + size_t(r - p0) * size_t(job.n_cols));
        int64_t t = 0;
        for (; t + kTileTokens <= job.n_tokens; t += kTileTokens) gemm_panel_tokens<kTileTokens>(job, panel, p0, p1, t, part);
        switch (job.n_tokens - t) {
            case 2: gemm_panel_tokens<2>(job, panel, p0, p1, t, part); break;
            case 1: gemm_panel_tokens<1>(job, panel, p0, p1, t, part); break;
            default: break;
        }
    }
}

template <FloatType W>
void rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    const bool gemm = job.n_tokens >= 2 && job.n_cols % 16 == 0;
    if (gemm) return gemm_rows<W>(job, r0, r1, scratch);
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t * w = job.w + size_t(r) * job.w_row_bytes;
        for (int64_t t = 0; t < job.n_tokens; ++t) {
            const float * a = reinterpret_cast<const float *>(job.act + size_t(t) * job.act_row_bytes);
            job.y[t * job.y_stride + r] = dot_gemv<W>(w, a, job.n_cols);
        }
    }
}

size_t scratch_bytes(int64_t n_cols, int64_t, int64_t) {
    const size_t rows = size_t(panel_rows(n_cols));
    return rows * kTileTokens * sizeof(Partial) + rows * size_t(n_cols) * sizeof(float);
}

template <FloatType W>
constexpr MatmulKernel kKernel{act_row_bytes, convert_act<W>, act_to_standard<W>, scratch_bytes, rows<W>};

}  // namespace

const MatmulKernel * avx2_float_matmul_kernel(DType type) {
    switch (type) {
        case DType::F32: return &kKernel<FloatType::f32>;
        case DType::F16: return &kKernel<FloatType::f16>;
        case DType::BF16: return &kKernel<FloatType::bf16>;
        default: return nullptr;
    }
}

}  // namespace lr::cpu
