// kv_write: the ubatch's K and V rows into their slots, one thread per (token, KV head,
// K or V), encoding with kv_encode_row_device: the same bytes as the CPU's kv_write. The
// K thread also writes the slot's position.

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/kv_codec.cuh"

namespace lr::cuda {
namespace {

constexpr int kThreads = 64;

__global__ void __launch_bounds__(kThreads) kv_write_kernel(const KvDevBlock * blocks, const uint32_t * slots, int64_t n_tokens,
                                                            const float * k, const float * v, const int32_t * pos, KvDims dims) {
    const int64_t item = int64_t(blockIdx.x) * kThreads + threadIdx.x;  // ((token * n_head_kv) + head) * 2 + (V ? 1 : 0)
    if (item >= n_tokens * dims.n_head_kv * 2) return;
    const bool is_v = item % 2 == 1;
    const uint32_t head = uint32_t((item / 2) % dims.n_head_kv);
    const int64_t t = item / 2 / dims.n_head_kv;
    const KvDevBlock b = blocks[t];
    const uint32_t slot = slots[t];
    uint8_t * block = b.data;
    const size_t index = size_t(head) * dims.block_tokens + slot;  // KvBlockLayout::pos_index(head, slot)
    const float * src = (is_v ? v : k) + (t * dims.n_head_kv + head) * dims.head_dim;
    if (is_v) {
        kv_encode_row_device(b.v_codec, src, block + b.v_offset + index * b.v_row_bytes, dims.head_dim, dims.codec_group);
    } else {
        kv_encode_row_device(b.k_codec, src, block + index * b.k_row_bytes, dims.head_dim, dims.codec_group);
        reinterpret_cast<int32_t *>(block + b.pos_offset)[index] = pos[t];
    }
}

}  // namespace

void launch_kv_write(const KvDevBlock * blocks, const uint32_t * slots, int64_t n_tokens, const float * k, const float * v,
                     const int32_t * pos, const KvDims & dims, cudaStream_t stream) {
    const int64_t n = n_tokens * dims.n_head_kv * 2;
    if (n == 0) return;
    kv_write_kernel<<<unsigned((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(blocks, slots, n_tokens, k, v, pos, dims);
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda
