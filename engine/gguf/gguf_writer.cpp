#include "gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "engine/common/assert.h"

namespace lr::gguf {
namespace {

template <class T>
void put(std::vector<uint8_t> & out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_string(std::vector<uint8_t> & out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

size_t element_size(ValueType t) {
    switch (t) {
        case ValueType::uint8:
        case ValueType::int8:
        case ValueType::boolean: return 1;
        case ValueType::uint16:
        case ValueType::int16: return 2;
        case ValueType::uint32:
        case ValueType::int32:
        case ValueType::float32: return 4;
        default: return 8;
    }
}

struct FileCloser {
    void operator()(std::FILE * f) const { std::fclose(f); }
};

}  // namespace

void GgufWriter::set_raw(const std::string & key, ValueType type, std::vector<uint8_t> payload) {
    for (Entry & e : entries_) {
        if (e.key == key) {
            e.type = type;
            e.payload = std::move(payload);
            return;
        }
    }
    entries_.push_back({key, type, std::move(payload)});
}

void GgufWriter::set_uint32(const std::string & key, uint32_t v) {
    std::vector<uint8_t> p;
    put(p, v);
    set_raw(key, ValueType::uint32, std::move(p));
    if (key == "general.alignment" && v != 0 && (v & (v - 1)) == 0) alignment_ = v;
}
void GgufWriter::set_int32(const std::string & key, int32_t v) {
    std::vector<uint8_t> p;
    put(p, v);
    set_raw(key, ValueType::int32, std::move(p));
}
void GgufWriter::set_uint64(const std::string & key, uint64_t v) {
    std::vector<uint8_t> p;
    put(p, v);
    set_raw(key, ValueType::uint64, std::move(p));
}
void GgufWriter::set_float32(const std::string & key, float v) {
    std::vector<uint8_t> p;
    put(p, v);
    set_raw(key, ValueType::float32, std::move(p));
}
void GgufWriter::set_bool(const std::string & key, bool v) { set_raw(key, ValueType::boolean, {static_cast<uint8_t>(v ? 1 : 0)}); }
void GgufWriter::set_string(const std::string & key, const std::string & v) {
    std::vector<uint8_t> p;
    put_string(p, v);
    set_raw(key, ValueType::string, std::move(p));
}
void GgufWriter::set_string_array(const std::string & key, const std::vector<std::string> & v) {
    std::vector<uint8_t> p;
    put<uint32_t>(p, static_cast<uint32_t>(ValueType::string));
    put<uint64_t>(p, v.size());
    for (const std::string & s : v) put_string(p, s);
    set_raw(key, ValueType::array, std::move(p));
}
void GgufWriter::set_float32_array(const std::string & key, const std::vector<float> & v) {
    std::vector<uint8_t> p;
    put<uint32_t>(p, static_cast<uint32_t>(ValueType::float32));
    put<uint64_t>(p, v.size());
    for (float x : v) put(p, x);
    set_raw(key, ValueType::array, std::move(p));
}
void GgufWriter::set_int32_array(const std::string & key, const std::vector<int32_t> & v) {
    std::vector<uint8_t> p;
    put<uint32_t>(p, static_cast<uint32_t>(ValueType::int32));
    put<uint64_t>(p, v.size());
    for (int32_t x : v) put(p, x);
    set_raw(key, ValueType::array, std::move(p));
}

void GgufWriter::copy_entry(const MetaEntry & entry) {
    const MetaValue & v = entry.value;
    std::vector<uint8_t> p;
    switch (v.type) {
        case ValueType::string: put_string(p, v.str); break;
        case ValueType::array:
            put<uint32_t>(p, static_cast<uint32_t>(v.array_type));
            put<uint64_t>(p, v.array_size);
            if (v.array_type == ValueType::string) {
                for (std::string_view s : v.strings) put_string(p, s);
            } else {
                const size_t n = v.array_size * element_size(v.array_type);
                p.insert(p.end(), v.array_data, v.array_data + n);
            }
            break;
        case ValueType::float32: put(p, static_cast<float>(v.f)); break;
        case ValueType::float64: put(p, v.f); break;
        case ValueType::int8: put(p, static_cast<int8_t>(v.i)); break;
        case ValueType::int16: put(p, static_cast<int16_t>(v.i)); break;
        case ValueType::int32: put(p, static_cast<int32_t>(v.i)); break;
        case ValueType::int64: put(p, v.i); break;
        case ValueType::uint8:
        case ValueType::boolean: put(p, static_cast<uint8_t>(v.u)); break;
        case ValueType::uint16: put(p, static_cast<uint16_t>(v.u)); break;
        case ValueType::uint32: put(p, static_cast<uint32_t>(v.u)); break;
        case ValueType::uint64: put(p, v.u); break;
    }
    set_raw(std::string(entry.key), v.type, std::move(p));
}

void GgufWriter::add_tensor(const std::string & name, DType type, std::vector<uint64_t> ne) {
    LR_ASSERT(!ne.empty() && ne.size() <= 4);
    uint64_t n = 1;
    for (uint64_t d : ne) n *= d;
    const DTypeTraits & t = dtype_traits(type);
    LR_ASSERT(ne[0] % t.block_elems == 0);
    const uint64_t n_bytes = n / t.block_elems * t.block_bytes;
    const uint64_t offset = tensors_.empty() ? 0 : align_up(tensors_.back().offset + tensors_.back().n_bytes, alignment_);
    const uint64_t row = ne[0] / t.block_elems * t.block_bytes;
    tensors_.push_back({name, type, std::move(ne), n_bytes, offset, row});
}

std::vector<uint8_t> GgufWriter::header() const {
    std::vector<uint8_t> out;
    put<uint32_t>(out, 0x46554747u);  // "GGUF" read as a little-endian uint32
    put<uint32_t>(out, 3);
    put<uint64_t>(out, tensors_.size());
    put<uint64_t>(out, entries_.size());
    for (const Entry & e : entries_) {
        put_string(out, e.key);
        put<uint32_t>(out, static_cast<uint32_t>(e.type));
        out.insert(out.end(), e.payload.begin(), e.payload.end());
    }
    for (const Tensor & t : tensors_) {
        put_string(out, t.name);
        put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
        for (uint64_t d : t.ne) put<uint64_t>(out, d);
        put<uint32_t>(out, static_cast<uint32_t>(t.type));
        put<uint64_t>(out, t.offset);
    }
    out.resize(align_up(out.size(), alignment_), 0);
    return out;
}

uint64_t GgufWriter::data_size() const { return tensors_.empty() ? 0 : tensors_.back().offset + tensors_.back().n_bytes; }

Status GgufWriter::produce(size_t i, const TensorFiller & fill, const std::function<Status(std::span<const uint8_t>)> & sink) const {
    constexpr uint64_t kPieceBytes = 16u << 20;
    const Tensor & t = tensors_[i];
    const uint64_t n_rows = t.n_bytes / t.row_bytes;
    const uint64_t rows_per_piece = std::max<uint64_t>(1, kPieceBytes / t.row_bytes);
    std::vector<uint8_t> piece;
    for (uint64_t row = 0; row < n_rows; row += rows_per_piece) {
        const uint64_t n = std::min(rows_per_piece, n_rows - row);
        piece.assign(n * t.row_bytes, 0);
        LR_RETURN_IF_ERROR(fill(i, row, piece));
        LR_RETURN_IF_ERROR(sink(piece));
    }
    return {};
}

Result<std::vector<uint8_t>> GgufWriter::write_bytes(const TensorFiller & fill) const {
    std::vector<uint8_t> out = header();
    const size_t data_start = out.size();
    out.resize(data_start + data_size(), 0);
    for (size_t i = 0; i < tensors_.size(); ++i) {
        size_t at = data_start + tensors_[i].offset;
        LR_RETURN_IF_ERROR(produce(i, fill, [&](std::span<const uint8_t> piece) {
            std::copy(piece.begin(), piece.end(), out.begin() + std::ptrdiff_t(at));
            at += piece.size();
            return Status{};
        }));
    }
    return out;
}

Status GgufWriter::write_file(const std::string & path, const TensorFiller & fill) const {
    const std::string tmp = path + ".partial";
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(tmp.c_str(), "wb"));
    if (!f) return error(StatusCode::io_error, tmp + ": cannot create (" + std::strerror(errno) + ")");
    auto write_all = [&](const void * p, size_t n) -> Status {
        if (n != 0 && std::fwrite(p, 1, n, f.get()) != n) {
            return error(StatusCode::io_error, path + ": write failed (" + std::strerror(errno) + ")");
        }
        return {};
    };
    auto write_everything = [&]() -> Status {
        const std::vector<uint8_t> head = header();
        LR_RETURN_IF_ERROR(write_all(head.data(), head.size()));
        uint64_t written = 0;
        for (size_t i = 0; i < tensors_.size(); ++i) {
            const std::vector<uint8_t> pad(tensors_[i].offset - written, 0);
            LR_RETURN_IF_ERROR(write_all(pad.data(), pad.size()));
            LR_RETURN_IF_ERROR(produce(i, fill, [&](std::span<const uint8_t> piece) { return write_all(piece.data(), piece.size()); }));
            written = tensors_[i].offset + tensors_[i].n_bytes;
        }
        if (std::fflush(f.get()) != 0) return error(StatusCode::io_error, path + ": write failed (" + std::strerror(errno) + ")");
        return {};
    };
    Status s = write_everything();
    if (std::fclose(f.release()) != 0 && s.ok()) s = error(StatusCode::io_error, path + ": write failed (" + std::strerror(errno) + ")");
    if (s.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
        s = error(StatusCode::io_error, path + ": cannot rename the finished file into place (" + std::strerror(errno) + ")");
    }
    if (!s.ok()) std::remove(tmp.c_str());
    return s;
}

}  // namespace lr::gguf
