#pragma once
// What the app shows about a GGUF model file from its header alone (no weights loaded):
// quantization, weight bytes, and why the engine cannot run it, if it cannot.

#include <QString>

#include <optional>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_hparams.h"

namespace lr::app {

// llama.cpp's general.file_type as its name ("Q4_K_M", "F16"); without the key, the type
// holding most of the weight bytes.
QString quantizationName(const gguf::GgufFile & file);

// Bytes of every tensor in the file.
uint64_t tensorBytes(const gguf::GgufFile & file);

// Why the engine cannot run the file (an unknown architecture, a weight type it cannot
// compute with, mixture-of-experts tensors...), or nullopt when it can.
std::optional<QString> unsupportedReason(const gguf::GgufFile & file, const Result<ModelHParams> & hparams);

}  // namespace lr::app
