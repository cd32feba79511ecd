#include "png_image.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace lr {
namespace {

constexpr std::array<uint32_t, 256> crc_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
        uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        t[n] = c;
    }
    return t;
}

void put_be32(std::vector<uint8_t> & out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(v >> shift));
}

// A chunk: length, type, data, CRC over type and data.
void put_chunk(std::vector<uint8_t> & out, const char (&type)[5], std::span<const uint8_t> data) {
    put_be32(out, uint32_t(data.size()));
    const size_t typed = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data.begin(), data.end());
    put_be32(out, crc32(std::span(out).subspan(typed)));
}

// zlib: header, stored deflate blocks of at most 65535 bytes, Adler-32 of the raw bytes.
std::vector<uint8_t> zlib_stored(std::span<const uint8_t> raw) {
    std::vector<uint8_t> z{0x78, 0x01};  // deflate, 32K window, no dictionary; (0x7801 % 31 == 0)
    size_t at = 0;
    do {
        const size_t n = std::min<size_t>(raw.size() - at, 65535);
        const bool last = at + n == raw.size();
        z.push_back(last ? 1 : 0);  // BFINAL, BTYPE 00 (stored)
        z.push_back(uint8_t(n));
        z.push_back(uint8_t(n >> 8));
        z.push_back(uint8_t(~n));
        z.push_back(uint8_t(~n >> 8));
        z.insert(z.end(), raw.begin() + std::ptrdiff_t(at), raw.begin() + std::ptrdiff_t(at + n));
        at += n;
    } while (at < raw.size());
    put_be32(z, adler32(raw));
    return z;
}

struct FileCloser {
    void operator()(std::FILE * f) const { std::fclose(f); }
};

}  // namespace

void RgbImage::fill(uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1, Rgb c) {
    x1 = std::min(x1, width);
    y1 = std::min(y1, height);
    for (uint32_t y = y0; y < y1; ++y) {
        for (uint32_t x = x0; x < x1; ++x) at(x, y) = c;
    }
}

uint32_t crc32(std::span<const uint8_t> bytes, uint32_t crc) {
    static constexpr std::array<uint32_t, 256> table = crc_table();
    crc = ~crc;
    for (uint8_t b : bytes) crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

uint32_t adler32(std::span<const uint8_t> bytes) {
    constexpr uint32_t kMod = 65521;
    uint32_t a = 1, b = 0;
    for (uint8_t x : bytes) {
        a = (a + x) % kMod;
        b = (b + a) % kMod;
    }
    return b << 16 | a;
}

std::vector<uint8_t> encode_png(const RgbImage & image) {
    if (image.width == 0 || image.height == 0) return {};
    std::vector<uint8_t> out{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    std::vector<uint8_t> ihdr;
    put_be32(ihdr, image.width);
    put_be32(ihdr, image.height);
    ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // bit depth 8, RGB, deflate, filter 0, no interlace
    put_chunk(out, "IHDR", ihdr);
    // Each row: filter type 0 (none), then its pixels.
    std::vector<uint8_t> raw;
    raw.reserve(size_t(image.height) * (1 + size_t(image.width) * 3));
    for (uint32_t y = 0; y < image.height; ++y) {
        raw.push_back(0);
        for (uint32_t x = 0; x < image.width; ++x) {
            const Rgb & p = image.at(x, y);
            raw.insert(raw.end(), {p.r, p.g, p.b});
        }
    }
    put_chunk(out, "IDAT", zlib_stored(raw));
    put_chunk(out, "IEND", {});
    return out;
}

Status write_png(const std::string & path, const RgbImage & image) {
    const std::vector<uint8_t> bytes = encode_png(image);
    if (bytes.empty()) return error(StatusCode::invalid_argument, path + ": the image is empty");
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
    if (!f) return error(StatusCode::io_error, path + ": cannot create (" + std::strerror(errno) + ")");
    if (std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size() || std::fflush(f.get()) != 0) {
        return error(StatusCode::io_error, path + ": write failed (" + std::strerror(errno) + ")");
    }
    return {};
}

}  // namespace lr
