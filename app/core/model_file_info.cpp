#include "model_file_info.h"

#include <map>

namespace lr::app {
namespace {

// llama.cpp's llama_ftype numbers (written to files: never renumber).
const char * fileTypeName(uint64_t type) {
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
        default: return nullptr;
    }
}

QString latin1(std::string_view s) { return QString::fromLatin1(s.data(), qsizetype(s.size())); }

}  // namespace

QString quantizationName(const gguf::GgufFile & file) {
    if (auto type = file.get_uint("general.file_type"); type.ok() && type->has_value()) {
        if (const char * name = fileTypeName(**type)) return QString::fromLatin1(name);
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
    return most ? latin1(dtype_name(best)) : QStringLiteral("unknown");
}

uint64_t tensorBytes(const gguf::GgufFile & file) {
    uint64_t n = 0;
    for (const gguf::TensorInfo & t : file.tensors()) n += t.n_bytes;
    return n;
}

std::optional<QString> unsupportedReason(const gguf::GgufFile & file, const Result<ModelHParams> & hparams) {
    if (!hparams.ok()) {
        // The engine's message starts with the path; the picker shows the path already.
        QString message = QString::fromStdString(hparams.status().message());
        const QString prefix = QString::fromStdString(file.path()) + QStringLiteral(": ");
        if (message.startsWith(prefix)) message = message.mid(prefix.size());
        return message;
    }
    for (const gguf::TensorInfo & t : file.tensors()) {
        if (!dtype_traits(t.type).supported) {
            return QStringLiteral("tensor '%1' has type %2, which the engine cannot compute with yet")
                .arg(QString::fromStdString(t.name), latin1(dtype_name(t.type)));
        }
        if (t.name.find("_exps") != std::string::npos) {
            return QStringLiteral("mixture-of-experts models are not supported yet");
        }
    }
    if (auto tokenizer = file.get_string("tokenizer.ggml.model"); tokenizer.ok() && tokenizer->has_value()) {
        const std::string_view model = **tokenizer;
        if (model != "llama" && model != "gpt2") {
            return QStringLiteral("its tokenizer '%1' is not supported (SentencePiece 'llama' and BPE 'gpt2' are)").arg(latin1(model));
        }
    }
    if (file.find_tensor("token_embd.weight") == nullptr) {
        return QStringLiteral("it has no token embedding tensor (a vocabulary-only or adapter file?)");
    }
    return std::nullopt;
}

}  // namespace lr::app
