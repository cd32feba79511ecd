#pragma once
// A copy of a GGUF file with one string key set to another value (a model with another
// chat template, say), tensors byte for byte.

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace lr::test {

inline Status copy_gguf_with_string(const std::string & from, const std::string & to, const std::string & key, const std::string & value) {
    LR_ASSIGN_OR_RETURN(const gguf::GgufFile src, gguf::GgufFile::open(from));
    gguf::GgufWriter w;
    for (const gguf::MetaEntry & e : src.metadata()) {
        if (e.key != key) w.copy_entry(e);
    }
    w.set_string(key, value);
    for (const gguf::TensorInfo & t : src.tensors()) w.add_tensor(t.name, t.type, {t.ne.begin(), t.ne.begin() + t.n_dims});
    return w.write_file(to, [&](size_t i, uint64_t first_row, std::span<uint8_t> dst) {
        const gguf::TensorInfo & t = src.tensors()[i];
        const uint64_t row_bytes = t.n_bytes / std::max<uint64_t>(1, t.n_elements() / t.ne[0]);
        std::memcpy(dst.data(), t.data + first_row * row_bytes, dst.size());
        return Status{};
    });
}

}  // namespace lr::test
