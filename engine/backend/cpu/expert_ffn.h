#pragma once
// The CPU backend's routed-expert FFN (Backend::moe_ffn), llama.cpp's mul_mat_id idea:
// the ubatch's (token, expert) pairs are grouped by expert (ExpertGroups), so each selected expert's
// gate, up and down rows are streamed once per call whatever the number of tokens that
// chose it, and never an unselected expert's. Activations are converted once per token
// to the matmul kernel's format (as CpuBackend::matmul does) and copied into expert
// order; every product is the ISA's ordinary matmul kernel on an expert's rows, so the
// AVX2 path differs from the scalar one exactly as their matmuls do.
//
// Numerics: biases added to the products in float, the activation in float (SwiGLU by the
// ISA's activation kernel on each slot's row, as CpuBackend::swiglu on a row of n_ff; the
// clamped SwiGLU element by element with expf, as ggml), then (down + bias) * weight summed
// over the token's experts in routing order, as llama.cpp's graph adds them.

#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/aligned_buffer.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/backend/cpu/thread_pool.h"
#include "engine/backend/expert_groups.h"

namespace lr::cpu {

// What expert_ffn keeps between calls (grown on demand).
struct ExpertScratch {
    ExpertGroups groups;
    AlignedBuffer act_x;           // [n_tokens] rows of x in the gate kernel's format
    AlignedBuffer act_x_up;        // [n_tokens] in the up kernel's format, when it differs
    AlignedBuffer act_grouped;     // [n_slots] rows of act_x in slot order
    AlignedBuffer act_grouped_up;  // [n_slots] rows of act_x_up
    AlignedBuffer gate;            // [n_slots][n_ff] f32, then act(gate, up)
    AlignedBuffer up;              // [n_slots][n_ff] f32
    AlignedBuffer act_hidden;      // [n_slots] rows of act(gate, up) in the down kernel's format
    AlignedBuffer down;            // [n_slots][n_embd] f32
};

struct ExpertFfnArgs {
    const ExpertWeights * w = nullptr;
    const float * x = nullptr;  // [n_tokens][n_embd]
    int64_t n_tokens = 0;
    const ExpertRoutes * routes = nullptr;
    float * out = nullptr;  // [n_tokens][n_embd], not x
};

// Computes Backend::moe_ffn with isa's matmul kernels on the pool. thread_scratch:
// [pool.n_threads()] per-thread kernel scratch (shared with the backend's matmul).
void expert_ffn(ThreadPool & pool, CpuIsa isa, const ExpertFfnArgs & args, ExpertScratch & scratch,
                std::vector<AlignedBuffer> & thread_scratch);

}  // namespace lr::cpu
