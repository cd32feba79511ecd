#pragma once
// Random-weight GGUF models of realistic shapes ("make-model"): for benchmarks and for
// machines that cannot download a model. The file loads like a converted model (llama,
// qwen2, qwen3, gemma3, qwen3moe, gpt-oss, qwen35 or qwen35moe architecture, the metadata
// keys model_hparams.cpp reads, a vocabulary), but its weights are noise: it runs at a real
// model's speed and writes gibberish.
//
// Values: 2-D weights ~ N(0, 0.02); norm weights 1 + N(0, 0.1) (near 1.0 so activations
// stay alive); biases N(0, 0.02). A Gated DeltaNet layer's own tensors follow the
// initialisation of Mamba-style layers, as the tiny-2026 reference models do: the
// convolution N(0, 0.3), the decay rate ssm_a = -U(1, 16), ssm_dt.bias the inverse softplus
// of a time step log-uniform in [1e-3, 1e-1]; each token's decay exp(ssm_a softplus(.))
// then lies in (0, 1) and the state stays bounded. Each tensor is drawn from a generator seeded by (seed, tensor name) and each
// row from (tensor, row index), so a tensor holds the same values in every weight type and
// for any thread count. Tensor data is generated and quantized chunk by chunk and streamed
// to disk: memory stays at about one tensor (GgufWriter fills a tensor at a time), never
// the whole model.

#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "engine/common/status.h"
#include "engine/model/model_presets.h"
#include "engine/model/weight_mix.h"

namespace lr {

// Called on the writing thread after each chunk of tensor data.
using MakeModelProgress = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

struct RandomModelSpec {
    std::string preset = "tiny";      // a model_presets() name; unused when `shape` is set
    std::optional<ModelShape> shape;  // an explicit shape instead of a preset
    WeightFormat weights{};           // F16 unless set; weight_format_from_name parses names
    std::string output_path;          // replaced if it exists
    uint64_t seed = 42;
    // A GGUF file whose tokenizer.* keys are all copied (a model or a vocab-only file). The
    // model's vocabulary size then is its token count, whatever the preset says. Empty: a
    // built-in byte-level vocabulary of the preset's size (at least 259 tokens).
    std::string vocab_from;
    std::string name;            // general.name; empty: "<preset>-random-<type>"
    int n_threads = 0;           // generation/quantization threads; 0: every core
    MakeModelProgress progress;  // optional
};

// Checks the spec alone (no file is opened): preset known or shape valid, weight type
// writable, paths set. invalid_argument / unsupported with a message naming the field
// and, for names, the accepted values.
Status validate(const RandomModelSpec & spec);

// How initial values are drawn (see the top of this file).
enum class TensorInit {
    weight,
    norm,
    bias,
    conv,            // a delta-net layer's causal convolution
    decay_rate,      // ssm_a
    time_step_bias,  // ssm_dt.bias
};

struct PlannedTensor {
    std::string name;
    uint64_t ne0 = 0;  // row length (GGUF ne[0])
    uint64_t ne1 = 1;  // rows; 1 for a vector (written as a 1-D tensor)
    uint64_t ne2 = 1;  // matrices: n_expert for a stack of experts (a 3-D tensor)
    DType type = DType::F32;
    TensorInit init = TensorInit::weight;
    uint64_t n_bytes = 0;

    bool is_vector() const { return ne1 == 1 && ne2 == 1; }
    uint64_t n_rows() const { return ne1 * ne2; }
    uint64_t n_elements() const { return ne0 * ne1 * ne2; }
    std::vector<uint64_t> dims() const;  // GGUF ne: {ne0}, {ne0, ne1} or {ne0, ne1, ne2}
};

// What write_random_model will write, worked out without writing anything.
struct RandomModelPlan {
    std::string name;  // general.name
    ModelShape shape;  // n_vocab as written (from the vocabulary file if any)
    WeightFormat weights;
    uint32_t file_type = 0;              // general.file_type (llama_ftype)
    std::vector<PlannedTensor> tensors;  // in file order
    // Things the user should know: type fallbacks (tensor, wanted type, written type),
    // the vocabulary size taken from the vocabulary file.
    std::vector<std::string> notes;
    uint64_t n_params = 0;
    uint64_t n_tensor_bytes = 0;  // tensor data, without metadata and alignment padding
};

// Validates the spec, resolves the shape (opening vocab_from for its token count) and
// lays out every tensor with its type. Errors: those of validate(), and a vocab_from
// that cannot be opened or has no token list.
Result<RandomModelPlan> plan_random_model(const RandomModelSpec & spec);

// Plans and writes the model to spec.output_path (through "<path>.partial", renamed at
// the end). On any failure — unwritable path, disk full, cancelled through `stop`
// (StatusCode::cancelled) — no file is left under either name. The notes of the plan are
// not logged: call plan_random_model first to show them.
Status write_random_model(const RandomModelSpec & spec, std::stop_token stop = {});

}  // namespace lr
