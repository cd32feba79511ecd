#include "gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace lr::gguf {

const char * value_type_name(ValueType type) {
    switch (type) {
        case ValueType::uint8: return "uint8";
        case ValueType::int8: return "int8";
        case ValueType::uint16: return "uint16";
        case ValueType::int16: return "int16";
        case ValueType::uint32: return "uint32";
        case ValueType::int32: return "int32";
        case ValueType::float32: return "float32";
        case ValueType::boolean: return "bool";
        case ValueType::string: return "string";
        case ValueType::array: return "array";
        case ValueType::uint64: return "uint64";
        case ValueType::int64: return "int64";
        case ValueType::float64: return "float64";
    }
    return "unknown";
}

namespace {

constexpr uint32_t kMaxDims = 4;
constexpr uint32_t kMaxAlignment = 1u << 20;  // beyond this an alignment is surely corrupt

// Size in bytes of a fixed-size value type; 0 for string/array.
size_t scalar_size(ValueType t) {
    switch (t) {
        case ValueType::uint8:
        case ValueType::int8:
        case ValueType::boolean: return 1;
        case ValueType::uint16:
        case ValueType::int16: return 2;
        case ValueType::uint32:
        case ValueType::int32:
        case ValueType::float32: return 4;
        case ValueType::uint64:
        case ValueType::int64:
        case ValueType::float64: return 8;
        case ValueType::string:
        case ValueType::array: return 0;
    }
    return 0;
}

bool is_known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::float64); }

bool is_unsigned(ValueType t) {
    return t == ValueType::uint8 || t == ValueType::uint16 || t == ValueType::uint32 || t == ValueType::uint64;
}
bool is_signed(ValueType t) { return t == ValueType::int8 || t == ValueType::int16 || t == ValueType::int32 || t == ValueType::int64; }
bool is_float(ValueType t) { return t == ValueType::float32 || t == ValueType::float64; }

template <class T>
T load_le(const uint8_t * p) {
    T v;
    std::memcpy(&v, p, sizeof(T));  // GGUF is little-endian, like every platform we build for
    return v;
}

}  // namespace

struct GgufFile::Mapping {
    void * addr = nullptr;
    size_t size = 0;
    ~Mapping() {
        if (addr) munmap(addr, size);
    }
};

// Reads the file front to back; every read is bounds-checked against the buffer.
class GgufParser {
public:
    GgufParser(std::span<const uint8_t> bytes, const std::string & name) : bytes_(bytes), name_(name) {}

    Status parse(GgufFile & file) {
        if (bytes_.size() < 4 || std::memcmp(bytes_.data(), "GGUF", 4) != 0) {
            return fail(StatusCode::corrupt_data, "not a GGUF file (wrong magic; expected 'GGUF')");
        }
        pos_ = 4;
        uint32_t version = 0;
        LR_RETURN_IF_ERROR(read_u32(version, "version"));
        if (version == 1) return fail(StatusCode::unsupported, "GGUF version 1 is not supported (convert the model again)");
        if (version != 2 && version != 3) {
            return fail(StatusCode::unsupported, "unknown GGUF version " + std::to_string(version));
        }
        file.version_ = version;

        uint64_t n_tensors = 0, n_kv = 0;
        LR_RETURN_IF_ERROR(read_u64(n_tensors, "tensor count"));
        LR_RETURN_IF_ERROR(read_u64(n_kv, "metadata count"));
        // Each entry takes at least 12 bytes: a count past what the file can hold is corrupt,
        // and must not drive an allocation.
        if (n_kv > remaining() / 12)
            return fail(StatusCode::corrupt_data, "metadata count " + std::to_string(n_kv) + " exceeds what the file can hold");
        if (n_tensors > remaining() / 24)
            return fail(StatusCode::corrupt_data, "tensor count " + std::to_string(n_tensors) + " exceeds what the file can hold");

        file.metadata_.reserve(n_kv);
        std::unordered_set<std::string_view> keys;
        for (uint64_t i = 0; i < n_kv; ++i) {
            MetaEntry entry;
            const std::string what = "metadata entry " + std::to_string(i);
            LR_RETURN_IF_ERROR(read_string(entry.key, what + " key"));
            if (!keys.insert(entry.key).second) {
                return fail(StatusCode::corrupt_data, "duplicate metadata key '" + std::string(entry.key) + "'");
            }
            LR_RETURN_IF_ERROR(read_value(entry.value, entry.key));
            file.metadata_.push_back(std::move(entry));
        }

        file.alignment_ = 32;
        for (const MetaEntry & e : file.metadata_) {
            if (e.key != "general.alignment") continue;
            if (e.value.type != ValueType::uint32) {
                return fail(StatusCode::corrupt_data,
                            "key 'general.alignment' has type " + std::string(value_type_name(e.value.type)) + ", expected uint32");
            }
            const uint64_t a = e.value.u;
            if (a == 0 || (a & (a - 1)) != 0 || a > kMaxAlignment) {
                return fail(StatusCode::corrupt_data,
                            "key 'general.alignment' = " + std::to_string(a) + " is not a power of two up to 1 MiB");
            }
            file.alignment_ = static_cast<uint32_t>(a);
        }

        file.tensors_.reserve(n_tensors);
        std::unordered_set<std::string> names;
        for (uint64_t i = 0; i < n_tensors; ++i) {
            TensorInfo info;
            LR_RETURN_IF_ERROR(read_tensor_info(info, i));
            if (!names.insert(info.name).second) {
                return fail(StatusCode::corrupt_data, "duplicate tensor name '" + info.name + "'");
            }
            file.tensors_.push_back(std::move(info));
        }

        const uint64_t data_start = (pos_ + file.alignment_ - 1) / file.alignment_ * file.alignment_;
        const uint64_t data_size = data_start <= bytes_.size() ? bytes_.size() - data_start : 0;
        for (TensorInfo & t : file.tensors_) {
            if (t.offset % file.alignment_ != 0) {
                return fail(StatusCode::corrupt_data, "tensor '" + t.name + "' offset " + std::to_string(t.offset) +
                                                          " is not a multiple of the alignment " + std::to_string(file.alignment_));
            }
            if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
                return fail(StatusCode::corrupt_data, "tensor '" + t.name + "' data (" + std::to_string(t.n_bytes) +
                                                          " bytes at data offset " + std::to_string(t.offset) +
                                                          ") lies past the end of the file (data section is " + std::to_string(data_size) +
                                                          " bytes); the file is truncated or corrupt");
            }
            t.data = bytes_.data() + data_start + t.offset;
        }
        return {};
    }

private:
    size_t remaining() const { return bytes_.size() - pos_; }

    Status fail(StatusCode code, const std::string & what) const { return error(code, name_ + ": " + what); }

    Status truncated(const std::string & what, size_t need) const {
        return fail(StatusCode::corrupt_data, "truncated file: " + what + " needs " + std::to_string(need) + " bytes at offset " +
                                                  std::to_string(pos_) + " but only " + std::to_string(remaining()) + " remain");
    }

    Status read_bytes(const uint8_t *& out, size_t n, const std::string & what) {
        if (n > remaining()) return truncated(what, n);
        out = bytes_.data() + pos_;
        pos_ += n;
        return {};
    }

    Status read_u32(uint32_t & v, const std::string & what) {
        const uint8_t * p = nullptr;
        LR_RETURN_IF_ERROR(read_bytes(p, 4, what));
        v = load_le<uint32_t>(p);
        return {};
    }

    Status read_u64(uint64_t & v, const std::string & what) {
        const uint8_t * p = nullptr;
        LR_RETURN_IF_ERROR(read_bytes(p, 8, what));
        v = load_le<uint64_t>(p);
        return {};
    }

    Status read_string(std::string_view & s, const std::string & what) {
        uint64_t len = 0;
        LR_RETURN_IF_ERROR(read_u64(len, what + " length"));
        if (len > remaining()) return truncated(what + " (string of " + std::to_string(len) + " bytes)", len);
        const uint8_t * p = nullptr;
        LR_RETURN_IF_ERROR(read_bytes(p, len, what));
        s = std::string_view(reinterpret_cast<const char *>(p), len);
        return {};
    }

    Status read_value(MetaValue & v, std::string_view key) {
        const std::string what = "value of key '" + std::string(key) + "'";
        uint32_t type = 0;
        LR_RETURN_IF_ERROR(read_u32(type, "type of key '" + std::string(key) + "'"));
        if (!is_known_value_type(type)) {
            return fail(StatusCode::corrupt_data, "key '" + std::string(key) + "' has unknown value type " + std::to_string(type));
        }
        v.type = static_cast<ValueType>(type);
        if (v.type == ValueType::string) return read_string(v.str, what);
        if (v.type == ValueType::array) return read_array(v, key);
        const uint8_t * p = nullptr;
        LR_RETURN_IF_ERROR(read_bytes(p, scalar_size(v.type), what));
        decode_scalar(v, p);
        return {};
    }

    static void decode_scalar(MetaValue & v, const uint8_t * p) {
        switch (v.type) {
            case ValueType::uint8: v.u = load_le<uint8_t>(p); break;
            case ValueType::uint16: v.u = load_le<uint16_t>(p); break;
            case ValueType::uint32: v.u = load_le<uint32_t>(p); break;
            case ValueType::uint64: v.u = load_le<uint64_t>(p); break;
            case ValueType::boolean: v.u = load_le<uint8_t>(p) != 0; break;
            case ValueType::int8: v.i = load_le<int8_t>(p); break;
            case ValueType::int16: v.i = load_le<int16_t>(p); break;
            case ValueType::int32: v.i = load_le<int32_t>(p); break;
            case ValueType::int64: v.i = load_le<int64_t>(p); break;
            case ValueType::float32: v.f = load_le<float>(p); break;
            case ValueType::float64: v.f = load_le<double>(p); break;
            case ValueType::string:
            case ValueType::array: break;
        }
    }

    Status read_array(MetaValue & v, std::string_view key) {
        const std::string what = "array '" + std::string(key) + "'";
        uint32_t elem_type = 0;
        LR_RETURN_IF_ERROR(read_u32(elem_type, what + " element type"));
        if (!is_known_value_type(elem_type)) {
            return fail(StatusCode::corrupt_data, what + " has unknown element type " + std::to_string(elem_type));
        }
        v.array_type = static_cast<ValueType>(elem_type);
        if (v.array_type == ValueType::array) {
            return fail(StatusCode::unsupported, what + " is an array of arrays, which GGUF readers do not support");
        }
        LR_RETURN_IF_ERROR(read_u64(v.array_size, what + " length"));
        if (v.array_type == ValueType::string) {
            // Every string takes at least its 8-byte length.
            if (v.array_size > remaining() / 8) {
                return truncated(what + " (" + std::to_string(v.array_size) + " strings)", v.array_size * 8);
            }
            v.array_data = bytes_.data() + pos_;
            v.strings.resize(v.array_size);
            for (uint64_t i = 0; i < v.array_size; ++i) {
                LR_RETURN_IF_ERROR(read_string(v.strings[i], what + " element " + std::to_string(i)));
            }
            return {};
        }
        const size_t elem = scalar_size(v.array_type);
        if (v.array_size > remaining() / elem) {
            return truncated(what + " (" + std::to_string(v.array_size) + " elements)", v.array_size * elem);
        }
        const uint8_t * p = nullptr;
        LR_RETURN_IF_ERROR(read_bytes(p, v.array_size * elem, what));
        v.array_data = p;
        return {};
    }

    Status read_tensor_info(TensorInfo & t, uint64_t index) {
        std::string_view name;
        LR_RETURN_IF_ERROR(read_string(name, "name of tensor " + std::to_string(index)));
        t.name = std::string(name);
        const std::string what = "tensor '" + t.name + "'";
        LR_RETURN_IF_ERROR(read_u32(t.n_dims, what + " dimension count"));
        if (t.n_dims == 0 || t.n_dims > kMaxDims) {
            return fail(StatusCode::corrupt_data, what + " has " + std::to_string(t.n_dims) + " dimensions (1 to 4 allowed)");
        }
        uint64_t n_elements = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            LR_RETURN_IF_ERROR(read_u64(t.ne[d], what + " shape"));
            if (t.ne[d] == 0 || t.ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / n_elements) {
                return fail(StatusCode::corrupt_data,
                            what + " has an invalid shape (dimension " + std::to_string(d) + " = " + std::to_string(t.ne[d]) + ")");
            }
            n_elements *= t.ne[d];
        }
        uint32_t type = 0;
        LR_RETURN_IF_ERROR(read_u32(type, what + " type"));
        const std::optional<DTypeTraits> traits = dtype_traits(type);
        if (!traits) return fail(StatusCode::corrupt_data, what + " has unknown type number " + std::to_string(type));
        t.type = static_cast<DType>(type);
        if (t.ne[0] % traits->block_elems != 0) {
            return fail(StatusCode::corrupt_data, what + " of type " + std::string(traits->name) + " has a row of " +
                                                      std::to_string(t.ne[0]) + " elements, not a multiple of its block size " +
                                                      std::to_string(traits->block_elems));
        }
        const uint64_t n_blocks = n_elements / traits->block_elems;
        if (n_blocks > std::numeric_limits<uint64_t>::max() / traits->block_bytes) {
            return fail(StatusCode::corrupt_data, what + " is too large");
        }
        t.n_bytes = n_blocks * traits->block_bytes;
        LR_RETURN_IF_ERROR(read_u64(t.offset, what + " offset"));
        return {};
    }

    std::span<const uint8_t> bytes_;
    const std::string & name_;
    size_t pos_ = 0;
};

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes, std::string name) {
    GgufFile file;
    file.path_ = std::move(name);
    file.bytes_ = bytes;
    GgufParser parser(bytes, file.path_);
    LR_RETURN_IF_ERROR(parser.parse(file));
    return file;
}

Result<GgufFile> GgufFile::open(const std::string & path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        return error(err == ENOENT ? StatusCode::not_found : StatusCode::io_error, path + ": cannot open (" + std::strerror(err) + ")");
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return error(StatusCode::io_error, path + ": not a regular file");
    }
    if (st.st_size == 0) {
        ::close(fd);
        return error(StatusCode::corrupt_data, path + ": the file is empty, not a GGUF model");
    }
    auto mapping = std::make_unique<Mapping>();
    mapping->size = static_cast<size_t>(st.st_size);
    void * addr = mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);  // the mapping keeps the file alive
    if (addr == MAP_FAILED) return error(StatusCode::io_error, path + ": mmap failed (" + std::strerror(errno) + ")");
    mapping->addr = addr;

    Result<GgufFile> parsed = parse({static_cast<const uint8_t *>(addr), mapping->size}, path);
    if (!parsed.ok()) return parsed.status();
    GgufFile file = std::move(parsed).value();
    file.mapping_ = std::move(mapping);
    return file;
}

GgufFile::GgufFile(GgufFile &&) noexcept = default;
GgufFile & GgufFile::operator=(GgufFile &&) noexcept = default;
GgufFile::~GgufFile() = default;

const MetaValue * GgufFile::find(std::string_view key) const {
    for (const MetaEntry & e : metadata_) {
        if (e.key == key) return &e.value;
    }
    return nullptr;
}

namespace {

Status wrong_type(const std::string & path, std::string_view key, const MetaValue & v, const char * expected) {
    std::string got = value_type_name(v.type);
    if (v.type == ValueType::array) got += std::string(" of ") + value_type_name(v.array_type);
    return error(StatusCode::corrupt_data, path + ": key '" + std::string(key) + "' has type " + got + ", expected " + expected);
}

// Reads element i of a numeric array as double (exact for every integer GGUF tensors use).
double array_element(const MetaValue & v, uint64_t i) {
    const uint8_t * p = v.array_data + i * scalar_size(v.array_type);
    switch (v.array_type) {
        case ValueType::uint8: return load_le<uint8_t>(p);
        case ValueType::int8: return load_le<int8_t>(p);
        case ValueType::uint16: return load_le<uint16_t>(p);
        case ValueType::int16: return load_le<int16_t>(p);
        case ValueType::uint32: return load_le<uint32_t>(p);
        case ValueType::int32: return load_le<int32_t>(p);
        case ValueType::float32: return load_le<float>(p);
        case ValueType::boolean: return load_le<uint8_t>(p) != 0;
        case ValueType::uint64: return static_cast<double>(load_le<uint64_t>(p));
        case ValueType::int64: return static_cast<double>(load_le<int64_t>(p));
        case ValueType::float64: return load_le<double>(p);
        case ValueType::string:
        case ValueType::array: return 0;
    }
    return 0;
}

}  // namespace

Result<std::optional<uint64_t>> GgufFile::get_uint(std::string_view key) const {
    const MetaValue * v = find(key);
    if (!v) return std::optional<uint64_t>{};
    if (is_unsigned(v->type)) return std::optional<uint64_t>(v->u);
    if (is_signed(v->type) && v->i >= 0) return std::optional<uint64_t>(static_cast<uint64_t>(v->i));
    return wrong_type(path_, key, *v, "a non-negative integer");
}

Result<std::optional<int64_t>> GgufFile::get_int(std::string_view key) const {
    const MetaValue * v = find(key);
    if (!v) return std::optional<int64_t>{};
    if (is_signed(v->type)) return std::optional<int64_t>(v->i);
    if (is_unsigned(v->type) && v->u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::optional<int64_t>(static_cast<int64_t>(v->u));
    }
    return wrong_type(path_, key, *v, "an integer");
}

Result<std::optional<double>> GgufFile::get_float(std::string_view key) const {
    const MetaValue * v = find(key);
    if (!v) return std::optional<double>{};
    if (is_float(v->type)) return std::optional<double>(v->f);
    if (is_unsigned(v->type)) return std::optional<double>(static_cast<double>(v->u));
    if (is_signed(v->type)) return std::optional<double>(static_cast<double>(v->i));
    return wrong_type(path_, key, *v, "a number");
}

Result<std::optional<bool>> GgufFile::get_bool(std::string_view key) const {
    const MetaValue * v = find(key);
    if (!v) return std::optional<bool>{};
    if (v->type == ValueType::boolean) return std::optional<bool>(v->u != 0);
    return wrong_type(path_, key, *v, "bool");
}

Result<std::optional<std::string_view>> GgufFile::get_string(std::string_view key) const {
    const MetaValue * v = find(key);
    if (!v) return std::optional<std::string_view>{};
    if (v->type == ValueType::string) return std::optional<std::string_view>(v->str);
    return wrong_type(path_, key, *v, "string");
}

Result<std::optional<std::vector<float>>> GgufFile::get_float_array(std::string_view key) const {
    const MetaValue * v = find(key);
    if (!v) return std::optional<std::vector<float>>{};
    if (v->type != ValueType::array || v->array_type == ValueType::string) return wrong_type(path_, key, *v, "a numeric array");
    std::vector<float> out(v->array_size);
    for (uint64_t i = 0; i < v->array_size; ++i) out[i] = static_cast<float>(array_element(*v, i));
    return std::optional<std::vector<float>>(std::move(out));
}

Result<std::optional<std::vector<int64_t>>> GgufFile::get_int_array(std::string_view key) const {
    const MetaValue * v = find(key);
    if (!v) return std::optional<std::vector<int64_t>>{};
    if (v->type != ValueType::array || !(is_signed(v->array_type) || is_unsigned(v->array_type) || v->array_type == ValueType::boolean)) {
        return wrong_type(path_, key, *v, "an integer array");
    }
    std::vector<int64_t> out(v->array_size);
    for (uint64_t i = 0; i < v->array_size; ++i) {
        const uint8_t * p = v->array_data + i * scalar_size(v->array_type);
        out[i] = v->array_type == ValueType::uint64  ? static_cast<int64_t>(load_le<uint64_t>(p))
                 : v->array_type == ValueType::int64 ? load_le<int64_t>(p)
                                                     : static_cast<int64_t>(array_element(*v, i));
    }
    return std::optional<std::vector<int64_t>>(std::move(out));
}

Result<std::optional<std::vector<std::string_view>>> GgufFile::get_string_array(std::string_view key) const {
    const MetaValue * v = find(key);
    if (!v) return std::optional<std::vector<std::string_view>>{};
    if (v->type != ValueType::array || v->array_type != ValueType::string) return wrong_type(path_, key, *v, "a string array");
    return std::optional<std::vector<std::string_view>>(v->strings);
}

const TensorInfo * GgufFile::find_tensor(std::string_view name) const {
    for (const TensorInfo & t : tensors_) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

}  // namespace lr::gguf
