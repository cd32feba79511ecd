#include "tokenizer.h"

#include <algorithm>
#include <optional>

#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/special_tokens.h"
#include "engine/tokenizer/spm_model.h"
#include "engine/tokenizer/token_index.h"
#include "engine/tokenizer/unicode.h"

namespace lr {

namespace {

constexpr std::string_view escaped_space = "\xe2\x96\x81";  // U+2581

void escape_spaces(std::string_view in, std::string & out) {
    out.reserve(out.size() + in.size() + in.size() / 4);
    for (const char c : in) {
        if (c == ' ') {
            out.append(escaped_space);
        } else {
            out.push_back(c);
        }
    }
}

std::string unescape_spaces(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (size_t pos = 0; pos < in.size();) {
        if (in.substr(pos, 3) == escaped_space) {
            out.push_back(' ');
            pos += 3;
        } else {
            out.push_back(in[pos++]);
        }
    }
    return out;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// "<0xXX>" -> the byte; nullopt for any other text.
std::optional<uint8_t> byte_of_token(std::string_view text) {
    if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
    const int hi = hex_digit(text[3]);
    const int lo = hex_digit(text[4]);
    if (hi < 0 || lo < 0) return std::nullopt;
    return static_cast<uint8_t>(hi * 16 + lo);
}

// A byte-level BPE token's text back to bytes (llama_decode_text), including llama.cpp's
// marker for code points outside the GPT-2 byte alphabet.
std::string decode_byte_level(std::string_view text) {
    std::string out;
    for (size_t pos = 0; pos < text.size();) {
        const unicode::Decoded d = unicode::decode_lenient(text, pos);
        pos += d.n_bytes;
        const int byte = unicode::codepoint_to_byte(d.cpt);
        if (byte >= 0) {
            out.push_back(static_cast<char>(byte));
            continue;
        }
        std::string utf8;
        unicode::append_utf8(utf8, d.cpt);
        out += "[UNK_BYTE_0x";
        for (const char c : utf8) {
            constexpr char hex[] = "0123456789abcdef";
            out.push_back(hex[(static_cast<uint8_t>(c) >> 4) & 15]);
            out.push_back(hex[static_cast<uint8_t>(c) & 15]);
        }
        out.append(text);
        out += "]";
    }
    return out;
}

// llama_detokenize's clean_up_tokenization_spaces passes.
std::string clean_up_spaces(std::string_view in) {
    std::string a;
    a.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {  // " ?", " !", " .", " ,"
        const char x = in[i];
        if (i > 0 && in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
        a.push_back(x);
    }
    std::string b;
    b.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {  // " ' " -> "'"
        const char x = a[i];
        if (i > 0 && x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
            b.pop_back();
            b.push_back(x);
            a[++i] = '\0';  // drop the space after it (and, as llama.cpp, never match it again)
            continue;
        }
        b.push_back(x);
    }
    std::string c;
    c.reserve(b.size());
    for (size_t i = 0; i < b.size(); ++i) {  // " 's", " 'm", " 're", " 've"
        const char x = b[i];
        if (i > 0 && b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
            const char x1 = b[i + 1];
            const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
            if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) c.pop_back();
        }
        c.push_back(x);
    }
    return c;
}

}  // namespace

struct Tokenizer::Impl {
    Vocab vocab;
    TokenIndex index;
    SpecialTokenSplitter specials;
    std::optional<SpmModel> spm;
    BpeModel bpe;
    std::vector<std::string> pieces;  // token_to_piece(id, render_special = true)

    std::string make_piece(int32_t id) const;
    void encode_bpe_fragment(std::string_view text, std::vector<int32_t> & out) const;
};

std::string Tokenizer::Impl::make_piece(int32_t id) const {
    const TokenData & t = vocab.tokens[static_cast<size_t>(id)];
    if (t.attr & (token_attr::unknown | token_attr::control | token_attr::user_defined)) return t.text;
    if (t.attr & token_attr::normal) {
        return vocab.type == VocabType::spm ? unescape_spaces(t.text) : decode_byte_level(t.text);
    }
    if (t.attr & token_attr::byte) {
        // NOTE: a byte-typed token not spelled <0xXX> would crash llama.cpp; show its text.
        if (const auto b = byte_of_token(t.text)) return std::string(1, static_cast<char>(*b));
        return t.text;
    }
    return {};  // unused / undefined tokens render as nothing, as in llama.cpp
}

void Tokenizer::Impl::encode_bpe_fragment(std::string_view text, std::vector<int32_t> & out) const {
    const std::vector<uint32_t> cpts = unicode::codepoints_lenient(text);
    const std::vector<size_t> words = split_words(vocab.pre, cpts);
    std::string utf8;
    std::string word;
    size_t begin = 0;
    for (const size_t len : words) {
        utf8.clear();
        for (size_t i = begin; i < begin + len; ++i) unicode::append_utf8(utf8, cpts[i]);
        begin += len;
        word.clear();
        for (const char c : utf8) unicode::append_utf8(word, unicode::byte_to_codepoint(static_cast<uint8_t>(c)));
        if (vocab.ignore_merges) {
            if (const auto id = find_token(index, word)) {
                out.push_back(*id);
                continue;
            }
        }
        bpe.encode_word(word, index, out);
    }
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer &&) noexcept = default;
Tokenizer & Tokenizer::operator=(Tokenizer &&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::create(Vocab vocab) {
    if (vocab.tokens.empty()) return error(StatusCode::invalid_argument, "tokenizer: the vocabulary is empty");
    for (const int32_t id : {vocab.bos_id, vocab.eos_id, vocab.unk_id, vocab.pad_id, vocab.eot_id, vocab.eom_id}) {
        if (id != -1 && !vocab.in_range(id)) {
            return error(StatusCode::invalid_argument, "tokenizer: special token id " + std::to_string(id) +
                                                           " is outside the vocabulary of " +
                                                           std::to_string(vocab.n_tokens()) + " tokens");
        }
    }
    if ((vocab.add_bos && vocab.bos_id < 0) || (vocab.add_eos && vocab.eos_id < 0)) {
        return error(StatusCode::invalid_argument, "tokenizer: the vocabulary adds BOS/EOS but has no such token");
    }

    auto impl = std::make_unique<Impl>();
    impl->index.reserve(vocab.tokens.size());
    for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
        const std::string & text = vocab.tokens[static_cast<size_t>(id)].text;
        const auto [it, inserted] = impl->index.emplace(text, id);
        if (!inserted) {
            return error(StatusCode::corrupt_data, "tokenizer.ggml.tokens: duplicate token '" + text + "' (ids " +
                                                       std::to_string(it->second) + " and " + std::to_string(id) +
                                                       ")");
        }
    }
    impl->specials = SpecialTokenSplitter(vocab);
    if (vocab.type == VocabType::spm) {
        LR_ASSIGN_OR_RETURN(SpmModel spm, SpmModel::create(vocab, impl->index));
        impl->spm.emplace(std::move(spm));
    } else {
        impl->bpe = BpeModel::build(vocab.merges, impl->index, vocab.n_tokens());
    }
    impl->vocab = std::move(vocab);
    impl->pieces.resize(impl->vocab.tokens.size());
    for (int32_t id = 0; id < impl->vocab.n_tokens(); ++id) impl->pieces[static_cast<size_t>(id)] = impl->make_piece(id);
    return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    const Vocab & v = impl_->vocab;
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    const std::vector<Fragment> fragments = impl_->specials.split(text, parse_special);

    if (add_special && v.add_bos) out.push_back(v.bos_id);
    if (v.type == VocabType::spm) {
        bool prev_special = true;  // the start of the input counts as "after a special token"
        std::string escaped;
        for (const Fragment & f : fragments) {
            if (f.is_token()) {
                out.push_back(f.token);
                prev_special = true;
                continue;
            }
            escaped.clear();
            if (adds_space_prefix() && prev_special) escaped.append(escaped_space);
            escape_spaces(text.substr(f.offset, f.length), escaped);
            impl_->spm->encode(escaped, out);
            prev_special = false;
        }
    } else {
        for (const Fragment & f : fragments) {
            if (f.is_token()) {
                out.push_back(f.token);
            } else {
                impl_->encode_bpe_fragment(text.substr(f.offset, f.length), out);
            }
        }
    }
    if (add_special && v.add_eos) out.push_back(v.eos_id);
    return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
    if (!impl_->vocab.in_range(id)) return {};
    const uint32_t attr = impl_->vocab.tokens[static_cast<size_t>(id)].attr;
    if (!render_special && (attr & (token_attr::unknown | token_attr::control))) return {};
    return impl_->pieces[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, const DecodeOptions & options) const {
    std::string out;
    bool at_start = true;
    for (const int32_t id : ids) {
        std::string piece = token_to_piece(id, options.render_special);
        if (is_special(id)) {
            at_start = true;
            out += piece;
            continue;
        }
        if (at_start && options.strip_space_prefix && adds_space_prefix() && !piece.empty() && piece[0] == ' ') {
            piece.erase(0, 1);
        }
        at_start = false;
        out += piece;
    }
    if (options.clean_spaces && impl_->vocab.clean_spaces) return clean_up_spaces(out);
    return out;
}

bool Tokenizer::is_eog(int32_t id) const {
    const auto & eog = impl_->vocab.eog_ids;
    return std::binary_search(eog.begin(), eog.end(), id);
}

bool Tokenizer::adds_space_prefix() const {
    return impl_->vocab.type == VocabType::spm && impl_->vocab.add_space_prefix;
}

bool Tokenizer::is_special(int32_t id) const {
    if (!impl_->vocab.in_range(id)) return false;
    constexpr uint32_t special_attrs = token_attr::control | token_attr::user_defined | token_attr::unknown;
    return (impl_->vocab.tokens[static_cast<size_t>(id)].attr & special_attrs) != 0;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view text) const { return find_token(impl_->index, text); }

int32_t Tokenizer::bos() const { return impl_->vocab.bos_id; }
int32_t Tokenizer::eos() const { return impl_->vocab.eos_id; }
int32_t Tokenizer::n_vocab() const { return impl_->vocab.n_tokens(); }
const Vocab & Tokenizer::vocab() const { return impl_->vocab; }

}  // namespace lr
