#pragma once
// What a model is, as values: the loaded model (name, format, template, where it runs, its
// memory shape), and a model file judged from its header alone (the model picker).

#include <cstdint>
#include <string>

#include "engine/api/memory_plan.h"
#include "engine/common/status.h"

namespace lr {

// The model compiled into Longread, as a model path (-m, the app's model picker).
inline constexpr const char * kBundledModelName = "bundled:stories260K";

struct ModelInfo {
    std::string path;                    // as loaded (kBundledModelName for the bundled model)
    std::string name;                    // general.name; empty when the file has none
    std::string architecture;            // "llama", "qwen2"
    std::string quantization;            // "Q4_K_M", "F16", ...
    std::string chat_template;           // the template's family: "chatml", "llama3", "plain", ...
    bool chat_template_builtin = false;  // true: Longread's renderer of that family, not the model's own
    // Which ThinkingChoice the template reacts to: thinking on / off, the reasoning effort.
    bool thinking_switch = false;
    bool reasoning_effort = false;
    // How its template teaches tool calls: "hermes", "qwen-xml" (chat::ToolCallFormat); empty:
    // it shows no tools, or in a format Longread does not read.
    std::string tool_call_format;
    std::string backend;       // "CPU, 2 threads" or "CUDA cuda:0 (NVIDIA ..., compute 8.9)"
    std::string backend_note;  // why a CUDA device was not used, or empty
    uint64_t file_bytes = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_layer = 0;
    uint32_t n_vocab = 0;
    ModelMemoryShape shape;  // what the memory planner plans with
    double load_ms = 0;
};

// A model file from its header (the weights are not read).
struct ModelFileSummary {
    std::string name;          // general.name; empty when the file has none
    std::string architecture;  // empty when unknown
    std::string quantization;  // llama.cpp's file type name, else the type of most weight bytes
    uint64_t file_bytes = 0;
    uint32_t n_ctx_train = 0;
    ModelMemoryShape shape;  // valid when the hyper-parameters could be read
    bool supported = false;
    std::string problem;  // why the engine cannot run it, when !supported
};

// A GGUF file's summary; an error (naming the file) when it is not a readable GGUF file.
Result<ModelFileSummary> inspect_model_file(const std::string & path);
// The bundled model's.
Result<ModelFileSummary> inspect_bundled_model();

}  // namespace lr
