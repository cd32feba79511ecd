#include "spm_model.h"

#include <sentencepiece_processor.h>

#include <cstdio>
#include <string>
#include <utility>

#include "engine/common/assert.h"
#include "engine/tokenizer/sentencepiece_proto.h"
#include "engine/tokenizer/unicode.h"

namespace lr {

namespace {

constexpr std::string_view escaped_space = "\xe2\x96\x81";  // U+2581

std::string byte_piece(uint8_t b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    return buf;
}

// The library rejects empty pieces, pieces with NUL and pieces of 8000+ bytes. Such a
// token gets a stand-in text that is not UTF-8, so no input (which reaches the library
// only as well-formed UTF-8) can produce it.
bool library_accepts(std::string_view piece) { return !piece.empty() && piece.find('\0') == std::string_view::npos && piece.size() < 8000; }

}  // namespace

SpmModel::SpmModel() = default;
SpmModel::SpmModel(SpmModel &&) noexcept = default;
SpmModel & SpmModel::operator=(SpmModel &&) noexcept = default;
SpmModel::~SpmModel() = default;

Result<SpmModel> SpmModel::create(const Vocab & vocab, const TokenIndex & tokens) {
    SpmModel model;
    model.n_vocab_ = vocab.n_tokens();
    model.unk_id_ = vocab.unk_id;
    model.text_bytes_.reserve(vocab.tokens.size());
    for (const TokenData & t : vocab.tokens) model.text_bytes_.push_back(static_cast<uint32_t>(t.text.size()));
    for (int b = 0; b < 256; ++b) {
        // llama.cpp's byte_to_token: "<0xXX>", else the byte as a one-character token.
        const auto byte = static_cast<uint8_t>(b);
        std::optional<int32_t> id = find_token(tokens, byte_piece(byte));
        if (!id) id = find_token(tokens, std::string(1, static_cast<char>(byte)));
        model.byte_ids_[byte] = id.value_or(-1);
    }

    std::array<bool, 128> in_longer_token{};
    model.cut_before_space_ = true;
    for (const TokenData & t : vocab.tokens) {
        for (size_t q = t.text.find(escaped_space, 1); q != std::string::npos; q = t.text.find(escaped_space, q + 1)) {
            const size_t n = escaped_space.size();
            if (q < n || t.text.compare(q - n, n, escaped_space) != 0) model.cut_before_space_ = false;
        }
        if (t.text.size() < 2) continue;
        for (const char c : t.text) {
            if (static_cast<uint8_t>(c) < 128) in_longer_token[static_cast<uint8_t>(c)] = true;
        }
    }
    for (size_t c = 0; c < 128; ++c) {
        if (in_longer_token[c]) {
            model.isolated_ascii_[c] = -1;
        } else {
            // What llama.cpp's merges leave for a lone character: its token, else its byte.
            model.isolated_ascii_[c] = find_token(tokens, std::string(1, static_cast<char>(c))).value_or(-2);
        }
    }

    // Pieces: [0, n) the vocabulary, n the library's UNKNOWN, n+1+b the BYTE piece of b.
    std::vector<std::string> stand_ins;
    std::vector<std::string> byte_pieces(256);
    spm_proto::BpeModelSpec spec;
    spec.pieces.reserve(vocab.tokens.size() + 257);
    for (size_t i = 0; i < vocab.tokens.size(); ++i) {
        if (!library_accepts(vocab.tokens[i].text))
            stand_ins.push_back(
                "\xff"
                "lr-stand-in-" +
                std::to_string(i));
    }
    size_t i_stand_in = 0;
    for (const TokenData & t : vocab.tokens) {
        const std::string_view text = library_accepts(t.text) ? std::string_view(t.text) : stand_ins[i_stand_in++];
        spec.pieces.push_back({text, t.score, spm_proto::PieceType::normal});
    }
    spec.unk_id = vocab.n_tokens();
    spec.pieces.push_back(
        {"\xff"
         "lr-unknown",
         0.0f, spm_proto::PieceType::unknown});
    for (int b = 0; b < 256; ++b) {
        byte_pieces[static_cast<size_t>(b)] = byte_piece(static_cast<uint8_t>(b));
        spec.pieces.push_back({byte_pieces[static_cast<size_t>(b)], 0.0f, spm_proto::PieceType::byte});
    }
    spec.byte_fallback = true;

    model.processor_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const sentencepiece::util::Status st = model.processor_->LoadFromSerializedProto(spm_proto::serialize(spec));
    if (!st.ok()) {
        return error(StatusCode::internal, std::string("sentencepiece rejected the vocabulary: ") + st.ToString());
    }
    return model;
}

bool SpmModel::isolates(char c) const {
    const auto b = static_cast<uint8_t>(c);
    return b < 128 && isolated_ascii_[b] != -1;
}

void SpmModel::push_byte(std::string_view byte, Sink & sink) const {
    // NOTE: a vocabulary without the byte token: llama.cpp aborts; Longread drops the byte.
    const int32_t id = byte_ids_[static_cast<uint8_t>(byte[0])];
    if (id >= 0) sink.push(id, byte);
}

void SpmModel::encode_valid_run(std::string_view run, Sink & sink) const {
    size_t start = 0;
    for (size_t pos = 0; pos < run.size(); ++pos) {
        const auto c = static_cast<uint8_t>(run[pos]);
        if (c >= 128 || isolated_ascii_[c] == -1) continue;
        encode_chunk(run.substr(start, pos - start), sink);
        if (isolated_ascii_[c] >= 0) {
            sink.push(isolated_ascii_[c], run.substr(pos, 1));
        } else {
            push_byte(run.substr(pos, 1), sink);
        }
        start = pos + 1;
    }
    encode_chunk(run.substr(start), sink);
}

void SpmModel::encode_chunk(std::string_view run, Sink & sink) const {
    constexpr size_t cut_after_bytes = 4096;
    if (cut_before_space_) {
        while (run.size() > 2 * cut_after_bytes) {
            size_t cut = run.find(escaped_space, cut_after_bytes);
            while (cut != std::string_view::npos && run.compare(cut - escaped_space.size(), escaped_space.size(), escaped_space) == 0) {
                cut = run.find(escaped_space, cut + 1);
            }
            if (cut == std::string_view::npos) break;
            encode_with_library(run.substr(0, cut), sink);
            run.remove_prefix(cut);
        }
    }
    encode_with_library(run, sink);
}

void SpmModel::encode_with_library(std::string_view run, Sink & sink) const {
    if (run.empty()) return;
    std::vector<int> ids;
    const sentencepiece::util::Status st = processor_->Encode(run, &ids);
    if (!st.ok()) {
        // The model loaded and the input is well-formed UTF-8: the library cannot fail.
        std::fprintf(stderr, "sentencepiece: %s\n", st.ToString().c_str());
        LR_ASSERT(st.ok());
    }
    // The pieces spell `run` in order: a vocabulary piece its text, a byte piece one byte,
    // and the library's unknown piece (unused with byte fallback) what the others leave.
    size_t unknown_bytes = run.size();
    for (const int id : ids) unknown_bytes -= id < n_vocab_ ? text_bytes_[static_cast<size_t>(id)] : id > n_vocab_ ? 1 : 0;
    size_t at = 0;
    for (const int id : ids) {
        if (id < n_vocab_) {
            const size_t n = text_bytes_[static_cast<size_t>(id)];
            sink.push(id, run.substr(at, n));
            at += n;
        } else if (id == n_vocab_) {
            const size_t n = std::exchange(unknown_bytes, 0);
            if (unk_id_ >= 0) sink.push(unk_id_, run.substr(at, n));
            at += n;
        } else {
            push_byte(run.substr(at, 1), sink);
            at += 1;
        }
    }
}

void SpmModel::encode(std::string_view escaped, std::vector<int32_t> & out, std::vector<TextSpan> * spans) const {
    // Characters are cut as llama.cpp cuts them (by the lead byte). A run of well-formed
    // ones goes to the library; a malformed one becomes byte tokens. No merge can cross a
    // malformed character (no token contains one), so this matches merging the whole text.
    Sink sink{out, spans, escaped.data()};
    size_t run_start = 0;
    size_t pos = 0;
    while (pos < escaped.size()) {
        const size_t len = std::min(unicode::lead_byte_len(static_cast<uint8_t>(escaped[pos])), escaped.size() - pos);
        if (unicode::valid_sequence_len(escaped, pos) == len) {
            pos += len;
            continue;
        }
        encode_valid_run(escaped.substr(run_start, pos - run_start), sink);
        for (size_t i = 0; i < len; ++i) push_byte(escaped.substr(pos + i, 1), sink);
        pos += len;
        run_start = pos;
    }
    encode_valid_run(escaped.substr(run_start), sink);
}

}  // namespace lr
