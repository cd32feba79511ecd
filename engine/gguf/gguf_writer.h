#pragma once
// Writes GGUF v3 files: metadata, then tensor infos, then the aligned tensor data,
// streamed tensor by tensor so multi-GiB models never sit in memory at once.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/common/dtype.h"
#include "engine/common/status.h"
#include "engine/gguf/gguf_file.h"

namespace lr::gguf {

class GgufWriter {
public:
    void set_uint32(const std::string & key, uint32_t v);
    void set_int32(const std::string & key, int32_t v);
    void set_uint64(const std::string & key, uint64_t v);
    void set_float32(const std::string & key, float v);
    void set_bool(const std::string & key, bool v);
    void set_string(const std::string & key, const std::string & v);
    void set_string_array(const std::string & key, const std::vector<std::string> & v);
    void set_float32_array(const std::string & key, const std::vector<float> & v);
    void set_int32_array(const std::string & key, const std::vector<int32_t> & v);
    // Copies an entry read from another file (e.g. a tokenizer) as it is.
    void copy_entry(const MetaEntry & entry);

    // Declares a tensor; its bytes are produced at write time, in declaration order.
    void add_tensor(const std::string & name, DType type, std::vector<uint64_t> ne);
    size_t n_tensors() const { return tensors_.size(); }

    // Produces rows [first_row, first_row + dst.size() / row_bytes) of tensor `index` (a
    // row is ne[0] elements) into `dst`. Called for consecutive pieces of about 16 MiB of
    // whole rows, in order, so a huge tensor never sits in memory at once.
    using TensorFiller = std::function<Status(size_t index, uint64_t first_row, std::span<uint8_t> dst)>;

    // Writes the whole file to `path` through "<path>.partial", renamed at the end: a
    // failure (the filler's, a full disk) leaves no file under either name.
    Status write_file(const std::string & path, const TensorFiller & fill) const;
    // The same bytes, in memory (tests).
    Result<std::vector<uint8_t>> write_bytes(const TensorFiller & fill) const;

private:
    struct Tensor {
        std::string name;
        DType type;
        std::vector<uint64_t> ne;
        uint64_t n_bytes;
        uint64_t offset;
        uint64_t row_bytes;  // bytes of ne[0] elements
    };
    void set_raw(const std::string & key, ValueType type, std::vector<uint8_t> payload);
    std::vector<uint8_t> header() const;
    // Calls `fill` for tensor i piece by piece; `sink` takes each filled piece.
    Status produce(size_t i, const TensorFiller & fill, const std::function<Status(std::span<const uint8_t>)> & sink) const;
    uint64_t data_size() const;

    struct Entry {
        std::string key;
        ValueType type;
        std::vector<uint8_t> payload;  // encoded value, without the type tag
    };
    std::vector<Entry> entries_;
    std::vector<Tensor> tensors_;
    uint32_t alignment_ = 32;
};

}  // namespace lr::gguf
