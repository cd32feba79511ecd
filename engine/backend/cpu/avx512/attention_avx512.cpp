// The attention kernels for CPUs with AVX-512: AVX2's, built with AVX-512 VL's 32 vector
// registers, which hold larger tiles of flash_scores and weighted_sum (the same bits).
#define LONGREAD_ATTENTION_KERNEL_TABLE avx512_attention_kernels
#define LONGREAD_ATTENTION_REGISTERS 32
#include "engine/backend/cpu/avx2/attention_avx2.cpp"
