#include "model_identity.h"

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>

namespace lr {

uint64_t model_identity(const gguf::GgufFile & file) {
    const std::span<const uint8_t> bytes = file.bytes();
    XXH3_state_t * state = XXH3_createState();
    XXH3_64bits_reset(state);
    const uint64_t size = bytes.size();
    XXH3_64bits_update(state, &size, sizeof size);
    struct stat st {};
    if (stat(file.path().c_str(), &st) == 0) {
        const int64_t mtime[2] = {int64_t(st.st_mtim.tv_sec), int64_t(st.st_mtim.tv_nsec)};
        XXH3_64bits_update(state, mtime, sizeof mtime);
    }
    // The header: everything before the first tensor's data.
    size_t header_end = bytes.size();
    for (const gguf::TensorInfo & t : file.tensors()) header_end = std::min<size_t>(header_end, size_t(t.data - bytes.data()));
    XXH3_64bits_update(state, bytes.data(), header_end);
    // 64 samples of 4 KiB spread over the data (all of it when it is small).
    constexpr size_t kSamples = 64, kSample = 4096;
    const size_t data = bytes.size() - header_end;
    if (data <= kSamples * kSample) {
        XXH3_64bits_update(state, bytes.data() + header_end, data);
    } else {
        for (size_t i = 0; i < kSamples; ++i) {
            const size_t at = header_end + (data - kSample) / (kSamples - 1) * i;
            XXH3_64bits_update(state, bytes.data() + at, kSample);
        }
    }
    const uint64_t id = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return id == 0 ? 1 : id;  // 0 means "no prefix cache"
}

}  // namespace lr
