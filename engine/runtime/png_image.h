#pragma once
// An 8-bit RGB image and its PNG encoding, for the plots the CLI writes (eval-kv
// --attention-out). The deflate stream uses stored (uncompressed) blocks, so PNG needs no
// compression library: the file is about 3 bytes per pixel, fine for plots.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/common/status.h"

namespace lr {

struct Rgb {
    uint8_t r = 0, g = 0, b = 0;
    bool operator==(const Rgb &) const = default;
};

struct RgbImage {
    uint32_t width = 0;
    uint32_t height = 0;
    std::vector<Rgb> pixels;  // [height][width]

    RgbImage() = default;
    RgbImage(uint32_t w, uint32_t h, Rgb fill) : width(w), height(h), pixels(size_t(w) * h, fill) {}
    Rgb & at(uint32_t x, uint32_t y) { return pixels[size_t(y) * width + x]; }
    const Rgb & at(uint32_t x, uint32_t y) const { return pixels[size_t(y) * width + x]; }
    // Fills [x0, x1) x [y0, y1), clipped to the image.
    void fill(uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1, Rgb c);
};

// CRC-32 (ISO 3309, as PNG's chunks) and Adler-32 (zlib's trailer).
uint32_t crc32(std::span<const uint8_t> bytes, uint32_t crc = 0);
uint32_t adler32(std::span<const uint8_t> bytes);

// The PNG file of `image` (colour type 2, bit depth 8, no interlace, filter 0 per row).
// An image with no pixels encodes nothing (empty).
std::vector<uint8_t> encode_png(const RgbImage & image);
// Writes it to `path`; io_error names the path.
Status write_png(const std::string & path, const RgbImage & image);

}  // namespace lr
