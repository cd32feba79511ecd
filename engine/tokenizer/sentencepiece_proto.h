#pragma once
// A SentencePiece ModelProto (sentencepiece_model.proto) serialized by hand: Debian's
// libsentencepiece-dev ships no generated header, and the few fields needed are plain
// protobuf wire format. Only what Longread sets is written; the library fills the rest
// with the proto defaults.
//
//   ModelProto      { repeated SentencePiece pieces = 1; TrainerSpec trainer_spec = 2;
//                     NormalizerSpec normalizer_spec = 3; }
//   SentencePiece   { string piece = 1; float score = 2; Type type = 3; }
//   TrainerSpec     { ModelType model_type = 3; int32 vocab_size = 4; bool byte_fallback = 35;
//                     int32 unk_id = 40; int32 bos_id = 41; int32 eos_id = 42; int32 pad_id = 43; }
//   NormalizerSpec  { string name = 1; bool add_dummy_prefix = 3;
//                     bool remove_extra_whitespaces = 4; bool escape_whitespaces = 5; }

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lr::spm_proto {

// SentencePiece.Type; the numbers are the proto's.
enum class PieceType : int32_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

struct Piece {
    std::string_view text;  // must outlive serialize()
    float score = 0.0f;
    PieceType type = PieceType::normal;
};

// A BPE model with an identity normalizer: no NFKC, no dummy prefix, no whitespace
// removal or escaping (the caller escapes spaces itself, as llama.cpp does).
struct BpeModelSpec {
    std::vector<Piece> pieces;
    bool byte_fallback = false;
    int32_t unk_id = 0;
};

std::string serialize(const BpeModelSpec & spec);

}  // namespace lr::spm_proto
