#pragma once
// IQ4_XS decode on AVX-512 VNNI (included by matmul_iquant_avx2.cpp's VNNI build, inside its
// namespace). The AVX2 form spends 19 instructions on a sub-block of 32 for one token, most
// of them unpacking it: decode is compute-bound, at about 13 GB/s a core on Zen 4. Here the
// nibbles come from one broadcast load and one variable shift, the eight scales from one
// vector per super-block, and a token's products from sign, maddubs and a dpwssd that
// applies the scale while it adds: 10 instructions. Zen 4 runs it only 10-15 % faster
// (bench_cpu_kernels matmul/IQ4_XS/avx512/l2/1): the instruction count is not all it pays.
//
// The integers are the AVX2 form's lane for lane (lane l of a sub-block: its elements
// 4l..4l+3, times the scale), so the floats after them are its bits too.

template <int Tn>
void dot_row_iq4xs_vnni(const block_iq4_xs * w, const uint8_t * const * act, int64_t nsb, float * y, int64_t y_stride) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kvalues_iq4nl)));
    const __m256i nibble_shift = _mm256_setr_epi64x(0, 0, 4, 4);  // elements 0-15: low nibbles, 16-31: high
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i scale_l_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i scale_h_shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    Acc acc[Tn];
    for (int64_t s = 0; s < nsb; ++s) {
        const block_iq4_xs & b = w[s];
        prefetch_ahead(&b, sizeof(b));
        const size_t at = size_t(s) * kActBlockBytes;
        // The eight 6-bit scales minus 32, one per 32-bit lane (its low 16 bits: the int16).
        const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(u32_at(b.scales_l))), scale_l_shift),
                                            _mm256_set1_epi32(15));
        const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(b.scales_h), scale_h_shift), _mm256_set1_epi32(3));
        const __m256i scales = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
        __m256i isum[Tn];
        for (int t = 0; t < Tn; ++t) isum[t] = _mm256_setzero_si256();
        for (int j = 0; j < 8; ++j) {
            const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b.qs + 16 * j)));
            const __m256i levels = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srlv_epi64(q, nibble_shift), m4));
            const __m256i mag = _mm256_abs_epi8(levels);
            const __m256i sc = _mm256_permutexvar_epi16(_mm256_set1_epi16(int16_t(2 * j)), scales);
            for (int t = 0; t < Tn; ++t) {
                const __m256i a = _mm256_load_si256(act_qs(act[t] + at) + j);
                isum[t] = _mm256_dpwssd_epi32(isum[t], _mm256_maddubs_epi16(mag, _mm256_sign_epi8(a, levels)), sc);
            }
        }
        const float dw = f16_to_f32(b.d);
        for (int t = 0; t < Tn; ++t) add_super_block<IQ4XS>(acc[t], dw * act_d(act[t] + at), isum[t], isum[t]);
    }
    for (int t = 0; t < Tn; ++t) y[t * y_stride] = finish<IQ4XS>(acc[t]);
}
