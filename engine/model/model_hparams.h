#pragma once
// The hyper-parameters of a model, read from GGUF metadata and validated: every key the
// converted files of the supported families carry (others are ignored), with the defaults
// llama.cpp's loader sets per architecture.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/api/kv_layer.h"
#include "engine/backend/backend.h"
#include "engine/common/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/expert_router.h"

namespace lr {

// The families Longread runs; files name them by arch_name (general.architecture).
enum class ModelArch { llama, qwen2, qwen3, mistral3, phi3, gemma3, gemma4, qwen3moe, gpt_oss, qwen35, qwen35moe };

// The file's name of an architecture ("llama", "qwen3", ...).
std::string_view arch_name(ModelArch arch);

// rope.scaling.type: linear divides the frequencies by the factor; yarn also blends
// extrapolation and interpolation per dimension and scales the magnitude.
enum class RopeScaling { none, linear, yarn };

struct ModelHParams {
    ModelArch arch = ModelArch::llama;
    std::string arch_name;  // as in the file: "llama", "qwen2", ...
    std::string name;       // general.name, or the file name
    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;  // the most KV heads of any layer (n_head_kv_of: each layer's)
    uint32_t head_dim = 0;   // attention.key_length (= value_length), default n_embd / n_head
    uint32_t n_ff = 0;       // the widest dense FFN (0 in mixture-of-experts files that have none)
    // Per layer, when the file gives head_count_kv or feed_forward_length as an array
    // (gemma4); empty: the scalars above for every layer.
    std::vector<uint32_t> n_head_kv_layers;
    std::vector<uint32_t> n_ff_layers;
    float rms_eps = 1e-5f;

    // Mixture of experts (n_expert > 0): each layer's FFN is the weighted sum of n_expert_used
    // of its n_expert expert FFNs, chosen per token by a router (expert_router.h), plus
    // n_expert_shared shared experts that every token runs.
    uint32_t n_expert = 0;                               // expert_count
    uint32_t n_expert_used = 0;                          // expert_used_count
    uint32_t n_ff_exp = 0;                               // expert_feed_forward_length
    uint32_t n_expert_shared = 0;                        // expert_shared_count (1 when only the shared width is given)
    uint32_t n_ff_shexp = 0;                             // expert_shared_feed_forward_length (0: no shared expert)
    ExpertGating expert_gating = ExpertGating::softmax;  // expert_gating_func
    bool expert_weights_norm = false;                    // expert_weights_norm
    float expert_weights_scale = 0.0f;                   // expert_weights_scale (0: none)

    // Rope of the full-attention layers.
    RopeMode rope_mode = RopeMode::normal;
    uint32_t n_rot = 0;
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor (none: 1)
    RopeScaling rope_scaling = RopeScaling::none;
    uint32_t n_ctx_orig = 0;        // rope.scaling.original_context_length, default n_ctx_train
    float rope_attn_factor = 1.0f;  // rope.scaling.attn_factor (phi3's LongRoPE magnitude)
    float yarn_beta_fast = 32.0f;   // rope.scaling.yarn_beta_fast
    float yarn_beta_slow = 1.0f;    // rope.scaling.yarn_beta_slow
    float yarn_log_mul = 0.0f;      // rope.scaling.yarn_log_multiplier (HF's mscale_all_dim)

    // Sliding-window layers (gemma3): the window and, per layer, whether it is sliding.
    // Their rope has its own base and scale.
    uint32_t n_swa = 0;               // attention.sliding_window (0: no sliding layer)
    std::vector<uint8_t> swa_layers;  // [n_layer] 1: sliding
    float rope_freq_base_swa = 10000.0f;
    float rope_freq_scale_swa = 1.0f;
    uint32_t head_dim_swa = 0;  // attention.key_length_swa: the sliding layers' head size (0: head_dim)
    uint32_t n_rot_swa = 0;     // rope.dimension_count_swa (0: n_rot)

    // KV sharing (gemma4's attention.shared_kv_layers): the layers from n_layer_kv on keep no
    // KV of their own and attend over an earlier layer's (kv_source).
    uint32_t n_layer_kv = 0;
    // Per-layer inputs (gemma4's embedding_length_per_layer_input): each layer adds a
    // projection of a token's own n_embd_per_layer-wide input (per_layer_inputs.h); 0: none.
    uint32_t n_embd_per_layer = 0;

    // Gated DeltaNet layers (qwen35, qwen35moe): every full_attention_interval-th layer is
    // attention, the others recurrent (is_recurrent). Their q/k heads have head_k_dim =
    // ssm_state_size, as do their v heads; v head h reads q/k head h % ssm_group_count.
    uint32_t full_attention_interval = 0;  // 0: no recurrent layer
    uint32_t ssm_conv_kernel = 0;          // ssm.conv_kernel: the causal convolution's width
    uint32_t ssm_state_size = 0;           // ssm.state_size: head_k_dim = head_v_dim
    uint32_t ssm_group_count = 0;          // ssm.group_count: q/k heads
    uint32_t ssm_time_step_rank = 0;       // ssm.time_step_rank: v heads
    uint32_t ssm_inner_size = 0;           // ssm.inner_size: v heads x head_v_dim

    float attention_scale = 0.0f;      // the q.k scale; 0: 1 / sqrt(head_dim)
    float attn_temp_scale = 0.0f;      // attention.temperature_scale (Llama 4 / Mistral 3); 0: off
    uint32_t attn_temp_floor = 0;      // its period (the original context)
    float final_logit_softcap = 0.0f;  // final_logit_softcapping; 0: off

    uint32_t n_embd_q() const { return n_head * head_dim; }
    uint32_t n_embd_kv() const { return n_head_kv * head_dim; }
    bool is_moe() const { return n_expert > 0; }
    RouterParams router() const {
        return {.n_expert = n_expert,
                .n_used = n_expert_used,
                .gating = expert_gating,
                .norm_weights = expert_weights_norm,
                .weights_scale = expert_weights_scale};
    }
    bool is_sliding(uint32_t il) const { return n_swa > 0 && il < swa_layers.size() && swa_layers[il] != 0; }
    bool is_recurrent(uint32_t il) const { return full_attention_interval > 0 && (il + 1) % full_attention_interval != 0; }
    // A delta-net layer's convolution channels: [q | k | v] of every head.
    uint32_t delta_net_channels() const { return 2 * ssm_group_count * ssm_state_size + ssm_inner_size; }
    // One sequence's state of one delta-net layer: the convolution's last conv_kernel - 1
    // inputs per channel and one head_k_dim x head_v_dim matrix per v head, in f32.
    uint64_t recurrent_state_bytes() const {
        return sizeof(float) *
               (uint64_t(ssm_conv_kernel - 1) * delta_net_channels() + uint64_t(ssm_time_step_rank) * ssm_state_size * ssm_state_size);
    }
    // The attention window of layer il (0: full attention).
    uint32_t window(uint32_t il) const { return is_sliding(il) ? n_swa : 0; }

    // Layer il's geometry.
    uint32_t n_head_kv_of(uint32_t il) const { return il < n_head_kv_layers.size() ? n_head_kv_layers[il] : n_head_kv; }
    uint32_t n_ff_of(uint32_t il) const { return il < n_ff_layers.size() ? n_ff_layers[il] : n_ff; }
    uint32_t head_dim_of(uint32_t il) const { return is_sliding(il) && head_dim_swa ? head_dim_swa : head_dim; }
    uint32_t n_rot_of(uint32_t il) const { return is_sliding(il) && n_rot_swa ? n_rot_swa : n_rot; }
    uint32_t n_embd_q_of(uint32_t il) const { return n_head * head_dim_of(il); }
    uint32_t n_embd_kv_of(uint32_t il) const { return n_head_kv_of(il) * head_dim_of(il); }
    // The widest layer's q (or K, V) row: what the graph's buffers hold.
    uint32_t max_n_embd_q() const;
    uint32_t max_n_embd_kv() const;
    // Whether layers differ in KV heads or head size.
    bool kv_geometry_varies() const;
    // The layer whose KV heads and head size a model's KV shape names: the first global
    // one (the layers the cache's policies work on), else layer 0.
    uint32_t kv_geometry_layer() const;

    // Whether layer il computes and keeps K/V, and the layer whose K/V it reads: itself, or
    // for a shared layer llama.cpp's choice, the last layer with KV but one when it slides
    // and the last when it is global (n_layer_kv - 2, n_layer_kv - 1).
    bool has_kv(uint32_t il) const { return il < n_layer_kv; }
    uint32_t kv_source(uint32_t il) const { return has_kv(il) ? il : n_layer_kv - (is_sliding(il) ? 2 : 1); }
};

// What each layer keeps (empty when every layer is full attention).
std::vector<KvLayerSpec> kv_layer_specs(const ModelHParams & hp);

// Reads and checks the hyper-parameters; an unknown architecture or scaling type is
// an `unsupported` error naming it.
Result<ModelHParams> read_hparams(const gguf::GgufFile & file);

}  // namespace lr
