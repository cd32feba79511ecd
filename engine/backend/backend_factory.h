#pragma once
// Which backend a program runs on (--backend auto|cpu|cuda, --gpu-layers), and what the
// machine offers (longread-cli info). Asking for CUDA never fails: when it cannot be used
// (not compiled in, no driver, no device, a GPU older than compute 8.0, too little VRAM)
// the CPU backend runs and a one-line note says why.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_isa.h"

namespace lr {

enum class BackendChoice { automatic, cpu, cuda };

std::optional<BackendChoice> backend_choice_from_name(std::string_view name);  // "auto", "cpu", "cuda"
std::string_view backend_choice_name(BackendChoice choice);

struct GpuDevice {
    int index = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;
    uint64_t total_bytes = 0;
    uint64_t free_bytes = 0;
    int n_sm = 0;
    double peak_bandwidth_gbs = 0;  // 0 when the driver does not say
};

struct BackendInventory {
    std::vector<std::string> compiled;  // "cpu", and "cuda" in builds with it
    std::vector<GpuDevice> devices;     // every CUDA device found
    std::string cuda_problem;           // why there is none: "not compiled in", "no NVIDIA driver", ...
};

// Never crashes without a driver. Reading free memory creates a context on each device.
BackendInventory probe_backends();

// The weight bytes of a model by layer, from its file: what --gpu-layers moves.
struct LayerWeightBytes {
    uint64_t global_bytes = 0;          // token embedding, output, output norm, rope factors
    std::vector<uint64_t> layer_bytes;  // [n_layer] everything under blk.<il>.
};

// Bytes a weight tensor takes in VRAM: its file bytes for the types the CUDA kernels read,
// F32 for the others (dequantized once at load: the IQ types, TQ2_0, MXFP4). The file bytes
// in builds without CUDA.
uint64_t cuda_weight_bytes(DType type, uint64_t n_elements, uint64_t file_bytes);

struct GpuOffloadPlan {
    bool usable = false;  // false: not even the global tensors fit in VRAM
    uint32_t n_layer = 0;
    uint32_t n_gpu_layers = 0;         // layers whose weights are in VRAM; the rest stream from RAM
    uint64_t weight_budget_bytes = 0;  // for CudaBackendOptions (UINT64_MAX: every weight)
    uint64_t weight_vram_bytes = 0;    // what that puts in VRAM
    std::string note;                  // one line when fewer layers than asked fit, or when unusable
};

// requested_layers < 0: automatic: every layer if the weights leave a fifth of the usable
// VRAM (free minus kDeviceOpsReserveBytes) to the KV cache, else as many as do. Otherwise the
// requested count, lowered (with a note) to what fits in the usable VRAM.
GpuOffloadPlan plan_gpu_offload(const LayerWeightBytes & weights, uint64_t free_vram_bytes, int64_t requested_layers);

struct BackendOptions {
    BackendChoice choice = BackendChoice::automatic;
    int n_threads = 0;                           // CPU backend threads (0: the physical cores)
    CpuIsa cpu_isa = CpuIsa::best;               // the CPU backend's kernels (an ISA this CPU lacks falls back)
    int device = 0;                              // CUDA device index
    int64_t gpu_layers = -1;                     // --gpu-layers; -1: automatic
    const LayerWeightBytes * weights = nullptr;  // the model's, for the plan; null: every weight in VRAM
};

struct BackendSelection {
    std::unique_ptr<Backend> backend;    // never null
    std::string note;                    // one line for the user, or empty
    std::optional<GpuOffloadPlan> plan;  // when the backend is CUDA and weights were given
};

// The CPU backend for `cpu`; for `cuda` and `automatic` the CUDA backend when a device is
// usable, else the CPU backend. The note is set whenever `cuda` was asked for and is not
// used, and for `automatic` when a device exists but cannot be used (a machine without a
// GPU runs silently on the CPU).
BackendSelection create_backend(const BackendOptions & options);

}  // namespace lr
