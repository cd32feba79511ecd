// libFuzzer entry point for the tokenizers: encoding any bytes and decoding any ids, for a
// SentencePiece vocabulary (Llama's) and a byte-level BPE one (GPT-2's), loaded once.
// Beyond "no crash" it checks what the tokenizer promises (tokenizer.h):
// - every id is in the vocabulary;
// - encode_with_offsets gives encode's ids, with spans in order, apart, inside the text;
// - encode_reusing an earlier encoding of a prefix gives what encoding afresh gives;
// - decode(encode(x)) == x without special-token parsing, for valid UTF-8 x (without
//   U+2581 for SentencePiece, which reads it back as a space);
// - the streaming decoder's text is valid UTF-8, and decode's when decode's is;
// - any ids, in range or not, decode and stream without failing.
//
// Input: byte 0 picks the vocabulary and the flags, byte 1 where the text splits for
// encode_reusing; the rest is the text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

struct LoadedTokenizer {
    lr::gguf::GgufFile file;  // kept open while the tokenizer exists
    lr::Tokenizer tokenizer;
};

std::unique_ptr<LoadedTokenizer> load(const char * name) {
    const std::string path = std::string(LONGREAD_SHARED_DIR) + "/data/tokenizer/" + name;
    auto file = lr::gguf::GgufFile::open(path);
    if (!file.ok()) {
        std::fprintf(stderr, "fuzz_tokenizer: %s\n", file.status().message().c_str());
        std::abort();
    }
    auto vocab = lr::load_vocab(*file);
    auto tokenizer = vocab.ok() ? lr::Tokenizer::create(std::move(vocab).value()) : lr::Result<lr::Tokenizer>(vocab.status());
    if (!tokenizer.ok()) {
        std::fprintf(stderr, "fuzz_tokenizer: %s: %s\n", name, tokenizer.status().message().c_str());
        std::abort();
    }
    return std::make_unique<LoadedTokenizer>(LoadedTokenizer{std::move(file).value(), std::move(tokenizer).value()});
}

// The first 200 bytes of `s`, printable ASCII as it is and other bytes as \xNN.
std::string escaped(std::string_view s) {
    std::string out;
    for (const char c : s.substr(0, 200)) {
        char buf[8];
        std::snprintf(buf, sizeof buf, c >= 0x20 && c < 0x7f && c != '\\' ? "%c" : "\\x%02x", static_cast<unsigned char>(c));
        out += buf;
    }
    return out;
}

[[noreturn]] void fail(const char * what, std::string_view text, std::string_view got = {}) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n  text: \"%s\"\n  got:  \"%s\"\n", what, escaped(text).c_str(), escaped(got).c_str());
    std::abort();
}

// Strict UTF-8: no overlong forms, surrogates or code points past U+10FFFF.
bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        const size_t n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;  // continuation bytes
        if (c < 0xC2 || c > 0xF4 || i + n >= s.size()) return false;
        uint32_t cp = c & (0x3F >> n);
        for (size_t k = 1; k <= n; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return false;
        i += n + 1;
    }
    return true;
}

// Valid UTF-8 comes back. Byte-level BPE reads bad bytes as U+FFFD; SentencePiece, as
// llama.cpp, cuts characters by their lead byte, so a bad lead byte can swallow the U+2581
// of a following space (which then comes back as U+2581), and it reads a U+2581 of the
// text back as a space.
bool round_trips(const lr::Tokenizer & t, std::string_view text) {
    if (!valid_utf8(text)) return false;
    return t.vocab().type != lr::VocabType::spm || text.find("\xe2\x96\x81") == std::string_view::npos;
}

void check_ids(const lr::Tokenizer & t, const std::vector<int32_t> & ids, std::string_view text) {
    for (const int32_t id : ids) {
        if (id < 0 || id >= t.n_vocab()) fail("an id out of the vocabulary", text);
    }
}

std::string stream(const lr::Tokenizer & t, const std::vector<int32_t> & ids, lr::DecodeOptions options) {
    lr::StreamingDecoder decoder(t, options);
    std::string out;
    for (const int32_t id : ids) out += decoder.push(id);
    out += decoder.flush();
    return out;
}

void check_encoding(const lr::Tokenizer & t, std::string_view text, size_t split, bool add_special, bool parse_special) {
    const std::vector<int32_t> ids = t.encode(text, add_special, parse_special);
    check_ids(t, ids, text);

    const lr::EncodedText encoded = t.encode_with_offsets(text, add_special, parse_special);
    if (encoded.tokens != ids) fail("encode_with_offsets differs from encode", text);
    if (encoded.spans.size() != ids.size()) fail("not one span per token", text);
    size_t end = 0;
    for (const auto & span : encoded.spans) {
        if (span.end < span.begin || span.end > text.size()) fail("a span outside the text", text);
        if (span.begin != span.end && span.begin < end) fail("spans out of order or overlapping", text);
        if (span.begin != span.end) end = span.end;
    }

    const std::string_view earlier_text = text.substr(0, split);
    const lr::EncodedText earlier = t.encode_with_offsets(earlier_text, add_special, parse_special);
    const lr::EncodedText reused = t.encode_reusing(earlier, earlier_text, text, add_special, parse_special);
    if (reused.tokens != ids) fail("encode_reusing differs from encoding afresh", text);

    const std::string decoded = t.decode(ids);
    if (!parse_special && round_trips(t, text) && decoded != text) fail("decode(encode(text)) != text", text, decoded);
    const std::string streamed = stream(t, ids, {});
    if (!valid_utf8(streamed)) fail("the streaming decoder wrote invalid UTF-8", text, streamed);
    if (valid_utf8(decoded) && streamed != decoded) fail("the streaming decoder differs from decode", text, streamed);
}

// The text's bytes read as ids: many out of range, some negative.
void check_any_ids(const lr::Tokenizer & t, std::string_view text, bool render_special) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i + 4 <= text.size(); i += 4) {
        int32_t v = 0;
        std::memcpy(&v, text.data() + i, 4);
        ids.push_back(v % (t.n_vocab() + 16));
    }
    const lr::DecodeOptions options{.render_special = render_special, .strip_space_prefix = (text.size() & 1) != 0, .clean_spaces = true};
    (void)t.decode(ids, options);
    if (!valid_utf8(stream(t, ids, options))) fail("the streaming decoder wrote invalid UTF-8 for any ids", text);
}

const lr::Tokenizer & spm() {
    static const std::unique_ptr<LoadedTokenizer> loaded = load("ggml-vocab-llama-spm.gguf");
    return loaded->tokenizer;
}

const lr::Tokenizer & bpe() {
    static const std::unique_ptr<LoadedTokenizer> loaded = load("ggml-vocab-gpt-2.gguf");
    return loaded->tokenizer;
}

}  // namespace

// Loaded before fuzzing starts: building a vocabulary takes seconds under the sanitizers,
// longer than an input may take.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    (void)spm();
    (void)bpe();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size < 2) return 0;
    const uint8_t flags = data[0];
    const std::string_view text(reinterpret_cast<const char *>(data + 2), size - 2);
    const size_t split = text.empty() ? 0 : size_t(data[1]) * text.size() / 255;
    const lr::Tokenizer & t = (flags & 1) ? bpe() : spm();
    check_encoding(t, text, split, (flags & 2) != 0, (flags & 4) != 0);
    check_any_ids(t, text, (flags & 8) != 0);
    return 0;
}
