#include "resources/bundled_model.h"

extern "C" const uint8_t longread_bundled_model_begin[];
extern "C" const uint8_t longread_bundled_model_end[];

namespace lr {

std::span<const uint8_t> bundled_model_bytes() { return {longread_bundled_model_begin, longread_bundled_model_end}; }

}  // namespace lr
