#pragma once
// Helpers shared by the AVX2 kernels. Include only from translation units compiled with
// the AVX2 flags (engine/backend/CMakeLists.txt).
// NOTE: these TUs use no standard-library templates or inline functions that other TUs
// also instantiate (std::min, lr::fp16_to_fp32 ...): the linker keeps one copy of such a
// function, and an AVX2-compiled one would crash a CPU without AVX2.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace lr::cpu::avx2 {

inline float f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

// 8 halves at p as floats.
inline __m256 load_f16x8(const uint16_t * p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))); }

// _mm512_reduce_add_ps's tree over 16 lanes held as lo (0..7) and hi (8..15): halves,
// quarters, then pairs, exactly as float_dot.cpp's reduce16.
inline float reduce16(__m256 lo, __m256 hi) {
    const __m256 t8 = _mm256_add_ps(hi, lo);
    const __m128 t4 = _mm_add_ps(_mm256_extractf128_ps(t8, 1), _mm256_castps256_ps128(t8));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));    // [t0+t2, t1+t3, ...]
    return _mm_cvtss_f32(_mm_add_ss(t2, _mm_movehdup_ps(t2)));  // (t0+t2) + (t1+t3)
}

// Sum of 8 float lanes (order unspecified).
inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Sum of 8 int32 lanes.
inline int hsum8_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_extracti128_si256(v, 1), _mm256_castsi256_si128(v));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

// Round to f16 and back (round to nearest even, as fp32_to_fp16).
inline __m256 round_f16(__m256 x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }

// Round to bf16 and back, as fp32_to_bf16 (nearest even; NaNs stay quiet NaNs).
inline __m256 round_bf16(__m256 x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    r = _mm256_and_si256(r, _mm256_set1_epi32(int(0xffff0000u)));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i qnan = _mm256_and_si256(_mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), _mm256_set1_epi32(int(0xffff0000u)));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(r, qnan, nan));
}

// v[r][c] -> v[c][r] for 8 x 8 dwords: pairs, quads, then the 128-bit lanes.
inline void transpose8(__m256i * v) {
    __m256i t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {  // v[i + e]: element e (low lane) and 4 + e (high) of rows i..i+3
        v[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
        v[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
        v[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
        v[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int e = 0; e < 4; ++e) {
        t[e] = _mm256_permute2x128_si256(v[e], v[4 + e], 0x20);
        t[4 + e] = _mm256_permute2x128_si256(v[e], v[4 + e], 0x31);
    }
    for (int i = 0; i < 8; ++i) v[i] = t[i];
}

// Stores the first n (1..8) lanes of v at y.
inline void store_lanes(float * y, __m256 v, int n) {
    if (n == 8) {
        _mm256_storeu_ps(y, v);
    } else {
        _mm256_maskstore_ps(y, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), v);
    }
}

// Keeps a loaded value in a register: without this the compiler may fold the load into
// every instruction that uses the value, loading it once per use.
template <class V>
inline void keep_in_register(V & v) {
    asm("" : "+x"(v));
}

template <class T>
inline T load_as(const void * p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

// Denormal inputs read as zeros and denormal results flushed to zero (MXCSR's DAZ and FTZ)
// while it lives: vdpbf16ps's rules, for the kernels that reproduce it.
class FlushDenormals {
public:
    FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040); }
    ~FlushDenormals() { _mm_setcsr(saved_); }
    FlushDenormals(const FlushDenormals &) = delete;
    FlushDenormals & operator=(const FlushDenormals &) = delete;

private:
    unsigned saved_;
};

// Decode streams every weight from memory once: each kernel prefetches the bytes it will
// read kPrefetchBytes ahead of those it reads now, one cache line at a time. (Without it a
// core alternates between waiting for memory and computing; the hardware prefetcher alone
// keeps too few lines in flight.) Prefetches past the end of the data are harmless.
constexpr size_t kPrefetchBytes = 4096;

// Prefetches the cache lines of [p, p + n) + kPrefetchBytes.
inline void prefetch_ahead(const void * p, size_t n) {
    const char * c = static_cast<const char *>(p) + kPrefetchBytes;
    for (size_t at = 0; at < n; at += 64) _mm_prefetch(c + at, _MM_HINT_T0);
}

}  // namespace lr::cpu::avx2
