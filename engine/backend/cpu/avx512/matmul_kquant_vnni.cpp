// The K-quant kernels (Q2_K ... Q6_K) for CPUs with AVX-512 VNNI: the AVX2 decode, and the
// prefill of avx512/kquant_prefill_vnni.h.
#define LONGREAD_KQUANT_VNNI 1
#define LONGREAD_KQUANT_KERNEL_TABLE avx512_kquant_matmul_kernel
#include "engine/backend/cpu/avx2/matmul_kquant_avx2.cpp"
