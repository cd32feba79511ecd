// The i-quant kernels (IQ4_XS, IQ3_XXS ... IQ1_M, TQ2_0) for CPUs with AVX-512 VNNI: the
// AVX2 decode with the signs as mask registers (IQ4_XS: its own), and the K-quants'
// prefill (avx512/kquant_prefill_vnni.h) on their form.
#define LONGREAD_IQUANT_VNNI 1
#define LONGREAD_IQUANT_KERNEL_TABLE avx512_iquant_matmul_kernel
#include "engine/backend/cpu/avx2/matmul_iquant_avx2.cpp"
