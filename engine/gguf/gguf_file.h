#pragma once
// A GGUF file (v2 or v3) opened for reading: metadata, tensor infos and tensor data,
// memory-mapped. Everything read is validated: a truncated, corrupt, hostile or
// unsupported file gives a Status naming the file, the key or tensor, and what is wrong.
// Spec: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/dtype.h"
#include "engine/common/status.h"

namespace lr::gguf {

// Value types as numbered in the file.
enum class ValueType : uint32_t {
    uint8 = 0,
    int8 = 1,
    uint16 = 2,
    int16 = 3,
    uint32 = 4,
    int32 = 5,
    float32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    uint64 = 10,
    int64 = 11,
    float64 = 12,
};

const char * value_type_name(ValueType type);

// One metadata value. Scalars are widened on read; arrays keep their element type
// and point into the file (no copy of large vocabularies).
struct MetaValue {
    ValueType type = ValueType::uint8;
    ValueType array_type = ValueType::uint8;  // element type when type == array
    uint64_t array_size = 0;

    // Scalars (type != string/array).
    uint64_t u = 0;        // unsigned integers and bool
    int64_t i = 0;         // signed integers
    double f = 0;          // float32 / float64
    std::string_view str;  // type == string

    // Arrays: raw little-endian elements (numeric), or the strings (string arrays).
    const uint8_t * array_data = nullptr;
    std::vector<std::string_view> strings;
};

struct MetaEntry {
    std::string_view key;
    MetaValue value;
};

struct TensorInfo {
    std::string name;
    DType type = DType::F32;
    uint32_t n_dims = 0;
    std::array<uint64_t, 4> ne{1, 1, 1, 1};  // ne[0] is the contiguous (row) dimension
    uint64_t offset = 0;                     // from the start of the data section
    uint64_t n_bytes = 0;
    const uint8_t * data = nullptr;  // inside the mapping

    uint64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
public:
    // Maps `path` read-only and parses it.
    static Result<GgufFile> open(const std::string & path);
    // Parses a buffer the caller keeps alive (tests, fuzzing). `name` is used in messages.
    static Result<GgufFile> parse(std::span<const uint8_t> bytes, std::string name = "<memory>");

    GgufFile(GgufFile &&) noexcept;
    GgufFile & operator=(GgufFile &&) noexcept;
    ~GgufFile();

    const std::string & path() const { return path_; }
    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t file_size() const { return bytes_.size(); }
    std::span<const uint8_t> bytes() const { return bytes_; }

    const std::vector<MetaEntry> & metadata() const { return metadata_; }
    const MetaValue * find(std::string_view key) const;

    // Typed getters. nullopt when the key is absent; a Status when it is present
    // with a type that cannot represent the request (message names the key).
    Result<std::optional<uint64_t>> get_uint(std::string_view key) const;
    Result<std::optional<int64_t>> get_int(std::string_view key) const;
    Result<std::optional<double>> get_float(std::string_view key) const;
    Result<std::optional<bool>> get_bool(std::string_view key) const;
    Result<std::optional<std::string_view>> get_string(std::string_view key) const;
    // Numeric arrays converted element by element; strings arrays as views.
    Result<std::optional<std::vector<float>>> get_float_array(std::string_view key) const;
    Result<std::optional<std::vector<int64_t>>> get_int_array(std::string_view key) const;
    Result<std::optional<std::vector<std::string_view>>> get_string_array(std::string_view key) const;

    const std::vector<TensorInfo> & tensors() const { return tensors_; }
    const TensorInfo * find_tensor(std::string_view name) const;

private:
    GgufFile() = default;
    struct Mapping;

    std::string path_;
    std::unique_ptr<Mapping> mapping_;
    std::span<const uint8_t> bytes_;
    uint32_t version_ = 0;
    uint32_t alignment_ = 32;
    std::vector<MetaEntry> metadata_;
    std::vector<TensorInfo> tensors_;

    friend class GgufParser;
};

}  // namespace lr::gguf
