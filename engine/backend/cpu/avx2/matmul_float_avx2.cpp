// F32, F16 and BF16 weights on AVX2, bit-identical to float_dot.h: activations are rounded
// to the weight's type once (as the scalar path converts them to its vec_dot_type) and
// kept as floats; the 16 lanes of llama.cpp's AVX-512 order are two 8-lane registers.
// BF16 follows vdpbf16ps (lane j of a 32-element step adds element 2j + 1, then 2j): its
// activations and panel rows keep each whole step as [odd elements | even elements], so
// the F32/F16 tiles, walking 16 columns at a time, add them in that order; the
// instruction's flushing of denormals is MXCSR's DAZ and FTZ while a BF16 job runs.
//   gemv (one token, or rows not a multiple of 16, BF16: 32): 4 x 16 lanes over steps of 64;
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
    static_assert(W != FloatType::bf16, "BF16 rows are read as pairs (vdpbf16ps's order)");
    if constexpr (W == FloatType::f32) return _mm256_loadu_ps(reinterpret_cast<const float *>(row) + i);
    else return load_f16x8(reinterpret_cast<const uint16_t *>(row) + i);
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

// A BF16 row's element i in the [odd | even] layout of its whole 32-element steps (the
// tail after the last whole step stays in order).
inline int64_t bf16_pos(int64_t i, int64_t n) {
    if (i >= n / 32 * 32) return i;
    const int64_t r = i % 32;
    return i - r + (r % 2 ? r / 2 : 16 + r / 2);
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
    if constexpr (W == FloatType::bf16) {
        for (int64_t c = 0; c + 32 <= n_cols; c += 32) {
            float step[32];
            for (int64_t j = 0; j < 32; ++j) step[bf16_pos(j, 32)] = out[c + j];
            std::memcpy(out + c, step, sizeof step);
        }
    }
}

// The rounded floats back as F32, F16 or BF16 (exact: they are representable).
template <FloatType W>
void act_to_standard(const uint8_t * act, int64_t n_cols, void * dst) {
    const float * a = reinterpret_cast<const float *>(act);
    if constexpr (W == FloatType::bf16) {
        auto * out = static_cast<uint16_t *>(dst);
        for (int64_t i = 0; i < n_cols; ++i) out[i] = uint16_t(load_as<uint32_t>(a + bf16_pos(i, n_cols)) >> 16);
        return;
    }
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
        // ggml_vec_dot_bf16 (AVX512BF16): 2 x 16 vdpbf16ps lanes over steps of 64. Lane j of
        // a 32-element step holds the pair 2j, 2j + 1: one dword of the weights, split here
        // into its odd (high) and even (low) halves; the activations come as [odd | even].
        const __m256i high = _mm256_set1_epi32(int(0xffff0000u));
        __m256 c[4];  // c[2k], c[2k + 1]: lanes 0-7 and 8-15 of accumulator k
        for (__m256 & v : c) v = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 64 <= n; i += 64) {
            prefetch_ahead(w + 2 * size_t(i), 128);
            for (int k = 0; k < 2; ++k) {
                const uint8_t * wk = w + 2 * size_t(i + 32 * k);
                const float * ak = a + i + 32 * k;
                for (int h = 0; h < 2; ++h) {
                    const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(wk + 32 * h));
                    const __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(pairs, high));
                    const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16));
                    c[2 * k + h] = _mm256_fmadd_ps(odd, _mm256_loadu_ps(ak + 8 * h), c[2 * k + h]);
                    c[2 * k + h] = _mm256_fmadd_ps(even, _mm256_loadu_ps(ak + 16 + 8 * h), c[2 * k + h]);
                }
            }
        }
        double sum = double(reduce16(c[0], c[1]));
        sum += double(reduce16(c[2], c[3]));
        for (; i < n; ++i) sum += double(load_w1<W>(w, i) * a[bf16_pos(i, n)]);
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
    } else if constexpr (W == FloatType::bf16) {
        // [odd | even] per step of 32 (gemm: n_cols % 32 == 0), as the activations.
        const __m256i high = _mm256_set1_epi32(int(0xffff0000u));
        for (int64_t i = 0; i < job.n_cols; i += 32) {
            for (int h = 0; h < 2; ++h) {
                const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + 2 * (i + 16 * h)));
                _mm256_storeu_ps(buf + i + 8 * h, _mm256_castsi256_ps(_mm256_and_si256(pairs, high)));
                _mm256_storeu_ps(buf + i + 16 + 8 * h, _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16)));
            }
        }
        return buf;
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
void job_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    const bool gemm = job.n_tokens >= 2 && job.n_cols % (W == FloatType::bf16 ? 32 : 16) == 0;
    if (gemm) return gemm_rows<W>(job, r0, r1, scratch);
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t * w = job.w + size_t(r) * job.w_row_bytes;
        for (int64_t t = 0; t < job.n_tokens; ++t) {
            const float * a = reinterpret_cast<const float *>(job.act + size_t(t) * job.act_row_bytes);
            job.y[t * job.y_stride + r] = dot_gemv<W>(w, a, job.n_cols);
        }
    }
}

template <FloatType W>
void rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    if constexpr (W == FloatType::bf16) {
        const FlushDenormals vdpbf16ps_flushing;
        job_rows<W>(job, r0, r1, scratch);
    } else {
        job_rows<W>(job, r0, r1, scratch);
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
