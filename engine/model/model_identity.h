#pragma once
// A 64-bit identity of a model file for the prefix cache: a changed file must never reuse
// another file's KV blocks. It hashes the file's size and modification time, its whole
// header (metadata and tensor infos) and samples of the tensor data, so it is quick to
// compute for a multi-GB file and changes whenever the file is rewritten.

#include <cstdint>

#include "engine/gguf/gguf_file.h"

namespace lr {

uint64_t model_identity(const gguf::GgufFile & file);

}  // namespace lr
