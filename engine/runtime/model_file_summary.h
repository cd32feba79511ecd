#pragma once
// What the engine says about a GGUF file from its header alone (no weights loaded): its
// quantization and whether the engine can run it (inspect_model_file in engine/api).

#include <string>

#include "engine/api/model_info.h"
#include "engine/gguf/gguf_file.h"

namespace lr {

// llama.cpp's general.file_type as its name ("Q4_K_M", "F16"); without the key, the type
// holding most of the weight bytes.
std::string quantization_name(const gguf::GgufFile & file);

// The summary of an opened file.
ModelFileSummary summarize_model_file(const gguf::GgufFile & file);

}  // namespace lr
