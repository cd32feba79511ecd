// Device probing for `longread-cli info` and the backend choice. Every call may fail on a
// machine without a driver or a GPU: each failure becomes CudaProbe::problem.

#include <cuda_runtime_api.h>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_check.h"

namespace lr {

namespace {

std::string describe(cudaError_t err) { return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err); }

}  // namespace

CudaProbe probe_cuda_devices() {
    CudaProbe probe;
    (void)cudaRuntimeGetVersion(&probe.runtime_version);
    if (cudaDriverGetVersion(&probe.driver_version) != cudaSuccess || probe.driver_version == 0) {
        (void)cudaGetLastError();
        probe.driver_version = 0;
        probe.problem = "no NVIDIA driver";
        return probe;
    }
    int count = 0;
    if (const cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
        (void)cudaGetLastError();
        if (err == cudaErrorInsufficientDriver) {
            probe.problem = "the NVIDIA driver (CUDA " + std::to_string(probe.driver_version / 1000) + "." +
                            std::to_string(probe.driver_version % 1000 / 10) + ") is older than this build's CUDA " +
                            std::to_string(probe.runtime_version / 1000) + "." + std::to_string(probe.runtime_version % 1000 / 10);
        } else if (err == cudaErrorNoDevice) {
            probe.problem = "no CUDA device";
        } else {
            probe.problem = "CUDA is unusable (" + describe(err) + ")";
        }
        return probe;
    }
    if (count == 0) {
        probe.problem = "no CUDA device";
        return probe;
    }
    for (int i = 0; i < count; ++i) {
        CudaDeviceInfo d;
        d.index = i;
        cudaDeviceProp prop{};
        if (const cudaError_t err = cudaGetDeviceProperties(&prop, i); err != cudaSuccess) {
            (void)cudaGetLastError();
            probe.problem = "device " + std::to_string(i) + ": " + describe(err);
            continue;
        }
        d.name = prop.name;
        d.cc_major = prop.major;
        d.cc_minor = prop.minor;
        d.total_bytes = prop.totalGlobalMem;
        d.n_sm = prop.multiProcessorCount;
        int clock_khz = 0, bus_bits = 0, map_host = 0, uva = 0;
        if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, i) == cudaSuccess &&
            cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, i) == cudaSuccess) {
            d.peak_bandwidth_gbs = 2.0 * double(clock_khz) * 1e3 * double(bus_bits) / 8.0 / 1e9;  // double data rate
        }
        (void)cudaDeviceGetAttribute(&map_host, cudaDevAttrCanMapHostMemory, i);
        (void)cudaDeviceGetAttribute(&uva, cudaDevAttrUnifiedAddressing, i);
        d.can_map_host = map_host != 0 && uva != 0;
        (void)cudaGetLastError();
        // Free memory needs a context on the device.
        size_t free_b = 0, total_b = 0;
        if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
            d.free_bytes = free_b;
        } else {
            (void)cudaGetLastError();
        }
        probe.devices.push_back(std::move(d));
    }
    return probe;
}

}  // namespace lr
