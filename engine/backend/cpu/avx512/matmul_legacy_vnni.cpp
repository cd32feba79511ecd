// The legacy block kernels (Q4_0 ... IQ4_NL, MXFP4) for CPUs with AVX-512 VNNI: the AVX2
// kernels built again with dpbusd (256-bit, EVEX) in their integer dot products.
#define LONGREAD_LEGACY_VNNI 1
#define LONGREAD_LEGACY_KERNEL_TABLE avx512_legacy_matmul_kernel
#include "engine/backend/cpu/avx2/matmul_legacy_avx2.cpp"
