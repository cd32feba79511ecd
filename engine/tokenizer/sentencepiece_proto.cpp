#include "sentencepiece_proto.h"

#include <bit>

namespace lr::spm_proto {

namespace {

enum class WireType : uint32_t { varint = 0, i64 = 1, len = 2, i32 = 5 };

void put_varint(std::string & out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

void put_tag(std::string & out, uint32_t field, WireType type) {
    put_varint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint32_t>(type));
}

// int32 fields are varints of the sign-extended 64-bit value (negatives take 10 bytes).
void put_int32(std::string & out, uint32_t field, int32_t v) {
    put_tag(out, field, WireType::varint);
    put_varint(out, static_cast<uint64_t>(static_cast<int64_t>(v)));
}

void put_bool(std::string & out, uint32_t field, bool v) {
    put_tag(out, field, WireType::varint);
    put_varint(out, v ? 1 : 0);
}

void put_float(std::string & out, uint32_t field, float v) {
    put_tag(out, field, WireType::i32);
    const uint32_t bits = std::bit_cast<uint32_t>(v);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

void put_bytes(std::string & out, uint32_t field, std::string_view bytes) {
    put_tag(out, field, WireType::len);
    put_varint(out, bytes.size());
    out.append(bytes);
}

constexpr int32_t model_type_bpe = 2;

}  // namespace

std::string serialize(const BpeModelSpec & spec) {
    std::string out;
    std::string message;
    for (const Piece & p : spec.pieces) {
        message.clear();
        put_bytes(message, 1, p.text);
        put_float(message, 2, p.score);
        put_int32(message, 3, static_cast<int32_t>(p.type));
        put_bytes(out, 1, message);
    }

    message.clear();
    put_int32(message, 3, model_type_bpe);
    put_int32(message, 4, static_cast<int32_t>(spec.pieces.size()));
    put_bool(message, 35, spec.byte_fallback);
    put_int32(message, 40, spec.unk_id);
    put_int32(message, 41, -1);  // bos/eos/pad: Longread adds them itself
    put_int32(message, 42, -1);
    put_int32(message, 43, -1);
    put_bytes(out, 2, message);

    message.clear();
    put_bytes(message, 1, "identity");
    put_bool(message, 3, false);
    put_bool(message, 4, false);
    put_bool(message, 5, false);
    put_bytes(out, 3, message);
    return out;
}

}  // namespace lr::spm_proto
