#include "engine/backend/backend_factory.h"

#include <algorithm>

#include "engine/backend/cpu/cpu_backend.h"
#if defined(LONGREAD_HAVE_CUDA)
#include "engine/backend/cuda/cuda_backend.h"
#endif

namespace lr {

namespace {

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// Less free VRAM than this is not worth a GPU backend.
constexpr uint64_t kMinFreeVramBytes = uint64_t(1) << 30;

}  // namespace

std::optional<BackendChoice> backend_choice_from_name(std::string_view name) {
    if (name == "auto") return BackendChoice::automatic;
    if (name == "cpu") return BackendChoice::cpu;
    if (name == "cuda") return BackendChoice::cuda;
    return std::nullopt;
}

std::string_view backend_choice_name(BackendChoice choice) {
    switch (choice) {
        case BackendChoice::automatic: return "auto";
        case BackendChoice::cpu: return "cpu";
        case BackendChoice::cuda: return "cuda";
    }
    return "?";
}

BackendInventory probe_backends() {
    BackendInventory inv;
    inv.compiled.push_back("cpu");
#if defined(LONGREAD_HAVE_CUDA)
    inv.compiled.push_back("cuda");
    const CudaProbe probe = probe_cuda_devices();
    inv.cuda_problem = probe.problem;
    for (const CudaDeviceInfo & d : probe.devices) {
        inv.devices.push_back({.index = d.index,
                               .name = d.name,
                               .cc_major = d.cc_major,
                               .cc_minor = d.cc_minor,
                               .total_bytes = d.total_bytes,
                               .free_bytes = d.free_bytes,
                               .n_sm = d.n_sm,
                               .peak_bandwidth_gbs = d.peak_bandwidth_gbs});
    }
#else
    inv.cuda_problem = "CUDA is not compiled into this build";
#endif
    return inv;
}

uint64_t cuda_weight_bytes(DType type, uint64_t n_elements, uint64_t file_bytes) {
#if defined(LONGREAD_HAVE_CUDA)
    if (!cuda_reads_weight_type(type)) return n_elements * sizeof(float);
#else
    (void)type;
    (void)n_elements;
#endif
    return file_bytes;
}

GpuOffloadPlan plan_gpu_offload(const LayerWeightBytes & w, uint64_t free_vram_bytes, int64_t requested_layers) {
    GpuOffloadPlan plan;
    plan.n_layer = uint32_t(w.layer_bytes.size());
    const uint64_t usable = free_vram_bytes > kDeviceOpsReserveBytes ? free_vram_bytes - kDeviceOpsReserveBytes : 0;
    if (w.global_bytes > usable) {
        plan.note = "the model's embedding and output need " + mib(w.global_bytes) + " of VRAM and " + mib(usable) + " is usable";
        return plan;
    }
    plan.usable = true;
    // The most layers whose weights, with the global ones, fit in `room`.
    auto layers_within = [&](uint64_t room) {
        uint64_t bytes = w.global_bytes;
        uint32_t n = 0;
        while (n < plan.n_layer && bytes + w.layer_bytes[n] <= room) bytes += w.layer_bytes[n++];
        return n;
    };
    if (requested_layers < 0) {
        plan.n_gpu_layers = layers_within(usable / 5 * 4);
    } else {
        const uint32_t wanted = uint32_t(std::min<int64_t>(requested_layers, plan.n_layer));
        plan.n_gpu_layers = std::min(wanted, layers_within(usable));
        if (plan.n_gpu_layers < wanted) {
            plan.note = "--gpu-layers " + std::to_string(requested_layers) + ": only " + std::to_string(plan.n_gpu_layers) + " of " +
                        std::to_string(plan.n_layer) + " layers fit in " + mib(usable) + " of usable VRAM";
        }
    }
    plan.weight_vram_bytes = w.global_bytes;
    for (uint32_t il = 0; il < plan.n_gpu_layers; ++il) plan.weight_vram_bytes += w.layer_bytes[il];
    plan.weight_budget_bytes = plan.n_gpu_layers == plan.n_layer ? UINT64_MAX : plan.weight_vram_bytes;
    return plan;
}

BackendSelection create_backend(const BackendOptions & options) {
    BackendSelection sel;
    auto on_cpu = [&](std::string note) {
        sel.backend = std::make_unique<CpuBackend>(CpuBackendOptions{.n_threads = options.n_threads, .isa = options.cpu_isa});
        sel.note = std::move(note);
        sel.plan.reset();
        return std::move(sel);
    };
    if (options.choice == BackendChoice::cpu) return on_cpu("");
    const bool asked = options.choice == BackendChoice::cuda;
#if !defined(LONGREAD_HAVE_CUDA)
    return on_cpu(asked ? "CUDA is not compiled into this build: running on the CPU" : "");
#else
    const CudaProbe probe = probe_cuda_devices();
    const auto it = std::find_if(probe.devices.begin(), probe.devices.end(),
                                 [&](const CudaDeviceInfo & d) { return d.index == options.device; });
    if (it == probe.devices.end()) {
        if (!asked && probe.devices.empty()) return on_cpu("");  // no GPU here: nothing to say
        return on_cpu("CUDA: " + (probe.devices.empty() ? probe.problem : "there is no device " + std::to_string(options.device)) +
                      ": running on the CPU");
    }
    const CudaDeviceInfo & dev = *it;
    if (dev.free_bytes < kMinFreeVramBytes) {
        return on_cpu("CUDA: only " + mib(dev.free_bytes) + " of VRAM is free on " + dev.name + ": running on the CPU");
    }
    CudaBackendOptions cuda_options{.device = dev.index};
    if (options.weights) {
        const GpuOffloadPlan plan = plan_gpu_offload(*options.weights, dev.free_bytes, options.gpu_layers);
        if (!plan.usable) return on_cpu("CUDA: " + plan.note + " on " + dev.name + ": running on the CPU");
        cuda_options.weight_vram_budget_bytes = plan.weight_budget_bytes;
        sel.plan = plan;
        sel.note = plan.note;
    }
    Result<std::unique_ptr<CudaBackend>> cuda = CudaBackend::create(cuda_options);
    if (!cuda.ok()) return on_cpu(cuda.status().message() + ": running on the CPU");
    sel.backend = std::move(cuda).value();
    return sel;
#endif
}

}  // namespace lr
