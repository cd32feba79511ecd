#pragma once
// The model compiled into Longread (stories260K: a tiny story-telling model), so that the
// app and the CLI work with no download.

#include <cstdint>
#include <span>
#include <string>

namespace lr {

// The GGUF bytes of the bundled model.
std::span<const uint8_t> bundled_model_bytes();
// What -m accepts and messages show for it.
inline constexpr const char * kBundledModelName = "bundled:stories260K";

}  // namespace lr
