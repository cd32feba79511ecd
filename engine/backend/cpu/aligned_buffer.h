#pragma once
// A growable, 64-byte aligned byte buffer for scratch (converted activations, unpacked
// weight panels). Its contents are not kept when it grows.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace lr::cpu {

class AlignedBuffer {
public:
    AlignedBuffer() = default;
    AlignedBuffer(AlignedBuffer && o) noexcept : data_(o.data_), bytes_(o.bytes_) {
        o.data_ = nullptr;
        o.bytes_ = 0;
    }
    AlignedBuffer & operator=(AlignedBuffer && o) noexcept {
        if (this != &o) {
            std::free(data_);
            data_ = o.data_;
            bytes_ = o.bytes_;
            o.data_ = nullptr;
            o.bytes_ = 0;
        }
        return *this;
    }
    AlignedBuffer(const AlignedBuffer &) = delete;
    AlignedBuffer & operator=(const AlignedBuffer &) = delete;
    ~AlignedBuffer() { std::free(data_); }

    // At least n_bytes of 64-aligned memory; throws std::bad_alloc when there is none.
    uint8_t * reserve(size_t n_bytes) {
        if (n_bytes > bytes_) {
            std::free(data_);
            bytes_ = (n_bytes + 4095) / 4096 * 4096;
            data_ = static_cast<uint8_t *>(std::aligned_alloc(64, bytes_));
            if (!data_) {
                bytes_ = 0;
                throw std::bad_alloc();
            }
        }
        return data_;
    }
    uint8_t * data() const { return data_; }

private:
    uint8_t * data_ = nullptr;
    size_t bytes_ = 0;
};

}  // namespace lr::cpu
