#pragma once
// The instruction sets the CPU backend has kernels for, and which one this CPU runs.
// Kernels are compiled per ISA in their own translation units (with that ISA's target
// flags) and chosen once, at CpuBackend construction, from CPUID.

#include <optional>
#include <string_view>

namespace lr {

// In order: each runs the kernels of those before it where it has none of its own.
enum class CpuIsa {
    best,    // the best this CPU supports (the default)
    scalar,  // portable C++: the reference every SIMD kernel is tested against
    avx2,    // x86-64 with AVX2, FMA and F16C (Haswell, Zen and later)
    avx512,  // AVX2 and AVX-512 F, BW, VL and VNNI (Ice Lake, Zen 4 and later)
};

std::string_view cpu_isa_name(CpuIsa isa);
std::optional<CpuIsa> cpu_isa_from_name(std::string_view name);  // the names cpu_isa_name gives

// Whether `isa` runs the AVX2 kernels (where it has none of its own).
inline bool runs_avx2(CpuIsa isa) { return isa >= CpuIsa::avx2; }

// The best ISA this CPU supports and this build has kernels for (never CpuIsa::best).
CpuIsa detect_cpu_isa();

// `requested`, or the best supported ISA below it when this CPU lacks it (a test asking
// for avx2 on a machine without it gets scalar). Never CpuIsa::best.
CpuIsa resolve_cpu_isa(CpuIsa requested);

}  // namespace lr
