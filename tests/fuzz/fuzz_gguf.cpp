// libFuzzer entry point for the GGUF reader: any input must parse or give a Status,
// and every tensor it accepts must lie inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "engine/gguf/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    auto file = lr::gguf::GgufFile::parse({data, size}, "fuzz");
    if (!file.ok()) return 0;
    for (const auto & t : file->tensors()) {
        if (t.data < data || t.data + t.n_bytes > data + size) std::abort();
    }
    for (const auto & e : file->metadata()) {
        (void)file->get_string_array(e.key);
        (void)file->get_float_array(e.key);
        (void)file->get_int_array(e.key);
    }
    return 0;
}
