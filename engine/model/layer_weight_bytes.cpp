#include "layer_weight_bytes.h"

#include <cstdio>

namespace lr {

LayerWeightBytes layer_weight_bytes(const gguf::GgufFile & file, const StoredBytesFn & stored) {
    LayerWeightBytes w;
    for (const gguf::TensorInfo & t : file.tensors()) {
        const uint64_t n_bytes = stored ? stored(t.type, t.n_elements(), t.n_bytes) : t.n_bytes;
        unsigned il = 0;
        int used = 0;
        if (std::sscanf(t.name.c_str(), "blk.%u.%n", &il, &used) == 1 && used > 0) {
            if (w.layer_bytes.size() <= il) w.layer_bytes.resize(size_t(il) + 1, 0);
            w.layer_bytes[il] += n_bytes;
        } else {
            w.global_bytes += n_bytes;
        }
    }
    return w;
}

uint64_t expert_weight_bytes(const gguf::GgufFile & file) {
    uint64_t n = 0;
    for (const gguf::TensorInfo & t : file.tensors()) {
        if (t.name.find("_exps.") != std::string::npos) n += t.n_bytes;
    }
    return n;
}

}  // namespace lr
