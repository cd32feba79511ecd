#include "model_file_summary.h"

#include <map>
#include <optional>

#include "engine/model/layer_weight_bytes.h"
#include "engine/model/model_hparams.h"
#include "engine/runtime/session.h"
#include "resources/bundled_model.h"

namespace lr {
namespace {

// llama.cpp's llama_ftype numbers (written to files: never renumber).
const char * file_type_name(uint64_t type) {
    switch (type) {
        case 0: return "F32";
        case 1: return "F16";
        case 2: return "Q4_0";
        case 3: return "Q4_1";
        case 7: return "Q8_0";
        case 8: return "Q5_0";
        case 9: return "Q5_1";
        case 10: return "Q2_K";
        case 11: return "Q3_K_S";
        case 12: return "Q3_K_M";
        case 13: return "Q3_K_L";
        case 14: return "Q4_K_S";
        case 15: return "Q4_K_M";
        case 16: return "Q5_K_S";
        case 17: return "Q5_K_M";
        case 18: return "Q6_K";
        case 19: return "IQ2_XXS";
        case 20: return "IQ2_XS";
        case 21: return "Q2_K_S";
        case 22: return "IQ3_XS";
        case 23: return "IQ3_XXS";
        case 24: return "IQ1_S";
        case 25: return "IQ4_NL";
        case 26: return "IQ3_S";
        case 27: return "IQ3_M";
        case 28: return "IQ2_S";
        case 29: return "IQ2_M";
        case 30: return "IQ4_XS";
        case 31: return "IQ1_M";
        case 32: return "BF16";
        case 36: return "TQ1_0";
        case 37: return "TQ2_0";
        case 38: return "MXFP4_MOE";
        default: return nullptr;
    }
}

uint64_t tensor_bytes(const gguf::GgufFile & file) {
    uint64_t n = 0;
    for (const gguf::TensorInfo & t : file.tensors()) n += t.n_bytes;
    return n;
}

// The file's path at the start of a message, dropped (the picker shows the path already).
std::string without_path(const gguf::GgufFile & file, std::string message) {
    const std::string prefix = file.path() + ": ";
    if (message.starts_with(prefix)) message.erase(0, prefix.size());
    return message;
}

// Why the engine cannot run the file (an unknown architecture, a weight type it cannot
// compute with, a tokenizer it lacks...), or nullopt when it can. Experts in a family
// without them are refused by read_hparams.
std::optional<std::string> unsupported_reason(const gguf::GgufFile & file, const Result<ModelHParams> & hparams) {
    if (!hparams.ok()) return without_path(file, hparams.status().message());
    for (const gguf::TensorInfo & t : file.tensors()) {
        if (!dtype_traits(t.type).supported) {
            return "tensor '" + t.name + "' has type " + std::string(dtype_name(t.type)) + ", which the engine cannot compute with yet";
        }
    }
    if (auto tokenizer = file.get_string("tokenizer.ggml.model"); tokenizer.ok() && tokenizer->has_value()) {
        const std::string_view model = **tokenizer;
        if (model != "llama" && model != "gpt2" && model != "gemma4") {
            return "its tokenizer '" + std::string(model) + "' is not supported (SentencePiece 'llama', BPE 'gpt2' and 'gemma4' are)";
        }
    }
    if (file.find_tensor("token_embd.weight") == nullptr) return "it has no token embedding tensor (a vocabulary-only or adapter file?)";
    return std::nullopt;
}

}  // namespace

std::string quantization_name(const gguf::GgufFile & file) {
    if (auto type = file.get_uint("general.file_type"); type.ok() && type->has_value()) {
        if (const char * name = file_type_name(**type)) return name;
    }
    std::map<DType, uint64_t> bytes;
    for (const gguf::TensorInfo & t : file.tensors()) {
        if (t.n_dims >= 2) bytes[t.type] += t.n_bytes;
    }
    DType best = DType::F32;
    uint64_t most = 0;
    for (const auto & [type, n] : bytes) {
        if (n > most) {
            most = n;
            best = type;
        }
    }
    return most ? std::string(dtype_name(best)) : std::string("unknown");
}

ModelFileSummary summarize_model_file(const gguf::GgufFile & file) {
    const Result<ModelHParams> hp = read_hparams(file);
    ModelFileSummary s;
    s.file_bytes = file.file_size();
    s.quantization = quantization_name(file);
    if (hp.ok()) {
        s.architecture = hp->arch_name;
        s.name = hp->name;
        s.n_ctx_train = hp->n_ctx_train;
        s.shape = memory_shape(*hp, tensor_bytes(file), expert_weight_bytes(file), file.file_size());
    } else if (auto arch = file.get_string("general.architecture"); arch.ok() && arch->has_value()) {
        s.architecture = std::string(**arch);
    }
    const std::optional<std::string> reason = unsupported_reason(file, hp);
    s.supported = !reason;
    s.problem = reason.value_or("");
    return s;
}

Result<ModelFileSummary> inspect_model_file(const std::string & path) {
    LR_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
    return summarize_model_file(file);
}

Result<ModelFileSummary> inspect_bundled_model() {
    LR_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::parse(bundled_model_bytes(), kBundledModelName));
    return summarize_model_file(file);
}

}  // namespace lr
