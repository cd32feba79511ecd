#pragma once
// IQ4_XS decode (included by matmul_iquant_avx2.cpp inside its namespace, in both builds).
// The generic i-quant form spends 19 instructions on a sub-block of 32 for one token, most
// of them unpacking it: decode was compute-bound, at about 13 GB/s a core on Zen 4. Here a
// 32-byte load holds two sub-blocks' nibbles: its low nibbles are both sub-blocks' first
// halves, its high nibbles their second halves, and the activations are regrouped once per
// call to match (iq4xs_regroup_act). The eight scales come from one vector per super-block,
// and a token's products from sign, maddubs and a madd by the scales (AVX-512 VNNI: a dpwssd
// that applies the scale as it adds): 8.5 instructions a sub-block and token (7.5).
//
// The integers are the generic form's lane for lane: lane l < 4 of its sums holds elements
// 4l..4l+3 of every sub-block's first half, lane 4 + l those of the second halves; the two
// 128-bit lanes of the low and high sums here add up to exactly that, so the floats after
// them are the generic form's bits.

// Each token's Q8_K activations with the bytes 64p .. 64p + 63 of every super-block (its
// sub-blocks 2p and 2p + 1) regrouped as [2p: 0-15, 2p+1: 0-15, 2p: 16-31, 2p+1: 16-31].
inline void iq4xs_regroup_act(const MatmulJob & job, uint8_t * dst) {
    const int64_t nsb = job.n_cols / QK_K;
    for (int64_t t = 0; t < job.n_tokens; ++t) {
        const uint8_t * a = job.act + size_t(t) * job.act_row_bytes;
        uint8_t * out = dst + size_t(t) * job.act_row_bytes;
        for (int64_t s = 0; s < nsb; ++s, a += kActBlockBytes, out += kActBlockBytes) {
            std::memcpy(out + QK_K, a + QK_K, kActBlockBytes - QK_K);  // block sums and d
            for (int p = 0; p < 4; ++p) {
                const __m256i first = load32(a + 64 * p), second = load32(a + 64 * p + 32);
                _mm256_store_si256(reinterpret_cast<__m256i *>(out + 64 * p), _mm256_permute2x128_si256(first, second, 0x20));
                _mm256_store_si256(reinterpret_cast<__m256i *>(out + 64 * p + 32), _mm256_permute2x128_si256(first, second, 0x31));
            }
        }
    }
}

// act: activations regrouped by iq4xs_regroup_act.
template <int Tn>
void dot_row_iq4xs(const block_iq4_xs * w, const uint8_t * const * act, int64_t nsb, float * y, int64_t y_stride) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kvalues_iq4nl)));
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i scale_l_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i scale_h_shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    Acc acc[Tn];
    for (int64_t s = 0; s < nsb; ++s) {
        const block_iq4_xs & b = w[s];
        prefetch_ahead(&b, sizeof(b));
        const size_t at = size_t(s) * kActBlockBytes;
        // The eight 6-bit scales minus 32, one per 32-bit lane, as int16 in both its halves.
        const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(u32_at(b.scales_l))), scale_l_shift),
                                            _mm256_set1_epi32(15));
        const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(b.scales_h), scale_h_shift), _mm256_set1_epi32(3));
        const __m256i scales = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
        const __m256i scale_words = _mm256_or_si256(_mm256_and_si256(scales, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(scales, 16));
        __m256i first[Tn], second[Tn];  // sums of the sub-blocks' first and second halves
        for (int t = 0; t < Tn; ++t) first[t] = second[t] = _mm256_setzero_si256();
        for (int p = 0; p < 4; ++p) {
            const __m256i q = load32(b.qs + 32 * p);
            const __m256i lv = _mm256_shuffle_epi8(table, _mm256_and_si256(q, m4));
            const __m256i hv = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
            const __m256i lmag = _mm256_abs_epi8(lv), hmag = _mm256_abs_epi8(hv);
            // Words 0-7: sub-block 2p's scale, 8-15: 2p + 1's.
            const __m256i sc = _mm256_permutevar8x32_epi32(scale_words, _mm256_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1, 2 * p + 1,
                                                                                          2 * p + 1, 2 * p + 1));
            for (int t = 0; t < Tn; ++t) {
                const __m256i al = _mm256_load_si256(act_qs(act[t] + at) + 2 * p), ah = _mm256_load_si256(act_qs(act[t] + at) + 2 * p + 1);
                const __m256i pl = _mm256_maddubs_epi16(lmag, _mm256_sign_epi8(al, lv));
                const __m256i ph = _mm256_maddubs_epi16(hmag, _mm256_sign_epi8(ah, hv));
#if defined(LONGREAD_IQUANT_VNNI)
                first[t] = _mm256_dpwssd_epi32(first[t], pl, sc);
                second[t] = _mm256_dpwssd_epi32(second[t], ph, sc);
#else
                first[t] = _mm256_add_epi32(first[t], _mm256_madd_epi16(pl, sc));
                second[t] = _mm256_add_epi32(second[t], _mm256_madd_epi16(ph, sc));
#endif
            }
        }
        const float dw = f16_to_f32(b.d);
        for (int t = 0; t < Tn; ++t) {
            const __m256i sum = _mm256_add_epi32(_mm256_permute2x128_si256(first[t], second[t], 0x20),
                                                 _mm256_permute2x128_si256(first[t], second[t], 0x31));
            add_super_block<IQ4XS>(acc[t], dw * act_d(act[t] + at), sum, sum);
        }
    }
    for (int t = 0; t < Tn; ++t) y[t * y_stride] = finish<IQ4XS>(acc[t]);
}
