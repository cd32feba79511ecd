#include "cpu_isa.h"

namespace lr {

std::string_view cpu_isa_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::best: return "best";
        case CpuIsa::scalar: return "scalar";
        case CpuIsa::avx2: return "avx2";
        case CpuIsa::avx512: return "avx512";
    }
    return "?";
}

std::optional<CpuIsa> cpu_isa_from_name(std::string_view name) {
    for (CpuIsa isa : {CpuIsa::best, CpuIsa::scalar, CpuIsa::avx2, CpuIsa::avx512}) {
        if (cpu_isa_name(isa) == name) return isa;
    }
    return std::nullopt;
}

CpuIsa detect_cpu_isa() {
#if defined(LONGREAD_HAVE_AVX2_KERNELS) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c")) return CpuIsa::scalar;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512vnni"))
        return CpuIsa::avx512;
    return CpuIsa::avx2;
#endif
    return CpuIsa::scalar;
}

CpuIsa resolve_cpu_isa(CpuIsa requested) {
    const CpuIsa best = detect_cpu_isa();
    if (requested == CpuIsa::best) return best;
    return requested < best ? requested : best;
}

}  // namespace lr
