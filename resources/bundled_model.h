#pragma once
// The model compiled into Longread (stories260K: a tiny story-telling model), so that the
// app and the CLI work with no download.

#include <cstdint>
#include <span>
#include <string>

#include "engine/api/model_info.h"  // kBundledModelName: what -m accepts and messages show for it

namespace lr {

// The GGUF bytes of the bundled model.
std::span<const uint8_t> bundled_model_bytes();

}  // namespace lr
