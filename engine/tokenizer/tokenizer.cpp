#include "tokenizer.h"

#include <algorithm>
#include <optional>
#include <span>

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

// Maps offsets in a fragment's escaped text (an optional U+2581 prefix, then the raw text
// with every ' ' as U+2581) back to offsets in the raw text. Queries must not decrease.
class EscapedOffsets {
public:
    EscapedOffsets(std::string_view raw, bool prefixed) : raw_(raw), escaped_at_(prefixed ? escaped_space.size() : 0) {}

    // Raw bytes wholly before escaped offset `e` (inside a space's U+2581: the space's start).
    size_t raw(size_t e) {
        while (at_ < raw_.size()) {
            const size_t width = raw_[at_] == ' ' ? escaped_space.size() : 1;
            if (escaped_at_ + width > e) break;
            escaped_at_ += width;
            ++at_;
        }
        return at_;
    }

private:
    std::string_view raw_;
    size_t at_ = 0;          // raw offset
    size_t escaped_at_ = 0;  // where raw_[at_] starts in the escaped text
};

// Byte-level BPE words are spelled in the GPT-2 alphabet, one or two bytes per byte of the
// word's UTF-8, which re-encodes its code points (U+FFFD for bytes that were not UTF-8).
// Maps every offset of such a word back to the input text.
std::vector<size_t> word_offsets(std::span<const uint32_t> cpts, std::span<const size_t> cpt_begin, size_t cpt_end) {
    std::vector<size_t> out;
    std::string utf8;
    for (size_t i = 0; i < cpts.size(); ++i) {
        utf8.clear();
        unicode::append_utf8(utf8, cpts[i]);
        const size_t n_input = (i + 1 < cpts.size() ? cpt_begin[i + 1] : cpt_end) - cpt_begin[i];
        for (size_t b = 0; b < utf8.size(); ++b) {
            const size_t width = unicode::byte_to_codepoint(static_cast<uint8_t>(utf8[b])) < 0x80 ? 1 : 2;
            out.insert(out.end(), width, cpt_begin[i] + std::min(b, n_input));
        }
    }
    out.push_back(cpt_end);
    return out;
}

// How one encode call runs.
struct EncodeFlags {
    bool add_bos = false;
    bool add_eos = false;
    bool parse_special = false;
    bool mid_text = false;  // the text continues a run of text (a resume point's mid_text)
};

}  // namespace

struct Tokenizer::Impl {
    Vocab vocab;
    TokenIndex index;
    SpecialTokenSplitter specials;
    std::optional<SpmModel> spm;
    BpeModel bpe;
    std::vector<std::string> pieces;  // token_to_piece(id, render_special = true)

    std::string make_piece(int32_t id) const;
    // Appends the tokens of `text`; with `spans` their bytes, and with `points` its
    // candidate resume points (spans needed).
    void encode(std::string_view text, const EncodeFlags & flags, std::vector<int32_t> & out, std::vector<TextSpan> * spans,
                std::vector<ResumePoint> * points) const;
    // The last of `e`'s points that is a resume point of text[0, limit) (else the start).
    ResumePoint resume_point(const EncodedText & e, std::string_view text, size_t limit, const EncodeFlags & flags) const;
    void encode_spm_fragment(std::string_view raw, size_t base, bool prefixed, std::vector<int32_t> & out,
                             std::vector<TextSpan> * spans) const;
    void encode_bpe_fragment(std::string_view text, size_t base, std::vector<int32_t> & out, std::vector<TextSpan> * spans) const;
    void encode_gemma4_fragment(std::string_view text, size_t base, std::vector<int32_t> & out, std::vector<TextSpan> * spans) const;
    // Normal tokens spell spaces as U+2581 (SentencePiece, Gemma 4), not in GPT-2's alphabet.
    bool escapes_spaces() const { return vocab.type == VocabType::spm || vocab.pre == PreTokenizer::gemma4; }
};

std::string Tokenizer::Impl::make_piece(int32_t id) const {
    const TokenData & t = vocab.tokens[static_cast<size_t>(id)];
    if (t.attr & (token_attr::unknown | token_attr::control | token_attr::user_defined)) return t.text;
    if (t.attr & token_attr::normal) {
        return escapes_spaces() ? unescape_spaces(t.text) : decode_byte_level(t.text);
    }
    if (t.attr & token_attr::byte) {
        // NOTE: a byte-typed token not spelled <0xXX> would crash llama.cpp; show its text.
        if (const auto b = byte_of_token(t.text)) return std::string(1, static_cast<char>(*b));
        return t.text;
    }
    return {};  // unused / undefined tokens render as nothing, as in llama.cpp
}

void Tokenizer::Impl::encode_spm_fragment(std::string_view raw, size_t base, bool prefixed, std::vector<int32_t> & out,
                                          std::vector<TextSpan> * spans) const {
    std::string escaped;
    if (prefixed) escaped.append(escaped_space);
    escape_spaces(raw, escaped);
    if (!spans) {
        spm->encode(escaped, out);
        return;
    }
    const size_t first = spans->size();
    spm->encode(escaped, out, spans);
    EscapedOffsets offsets(raw, prefixed);
    for (size_t i = first; i < spans->size(); ++i) {
        TextSpan & t = (*spans)[i];
        t = {base + offsets.raw(t.begin), base + offsets.raw(t.end)};
    }
}

void Tokenizer::Impl::encode_bpe_fragment(std::string_view text, size_t base, std::vector<int32_t> & out,
                                          std::vector<TextSpan> * spans) const {
    const std::vector<uint32_t> cpts = unicode::codepoints_lenient(text);
    std::vector<size_t> cpt_begin;  // with spans: each code point's offset in `text`
    if (spans) {
        cpt_begin.reserve(cpts.size());
        for (size_t pos = 0; pos < text.size(); pos += unicode::decode_lenient(text, pos).n_bytes) cpt_begin.push_back(pos);
    }
    const std::vector<size_t> words = split_words(vocab.pre, cpts);
    std::string utf8;
    std::string word;
    size_t begin = 0;
    for (const size_t len : words) {
        utf8.clear();
        for (size_t i = begin; i < begin + len; ++i) unicode::append_utf8(utf8, cpts[i]);
        word.clear();
        for (const char c : utf8) unicode::append_utf8(word, unicode::byte_to_codepoint(static_cast<uint8_t>(c)));
        const size_t first = spans ? spans->size() : 0;
        bool whole = false;
        if (vocab.ignore_merges) {
            if (const auto id = find_token(index, word)) {
                out.push_back(*id);
                if (spans) spans->push_back({0, word.size()});
                whole = true;
            }
        }
        if (!whole) bpe.encode_word(word, index, out, spans);
        if (spans) {
            const size_t end = begin + len < cpts.size() ? cpt_begin[begin + len] : text.size();
            const std::vector<size_t> at = word_offsets(std::span(cpts).subspan(begin, len), std::span(cpt_begin).subspan(begin, len), end);
            for (size_t i = first; i < spans->size(); ++i) {
                TextSpan & t = (*spans)[i];
                t = {base + at[t.begin], base + at[t.end]};
            }
        }
        begin += len;
    }
}

void Tokenizer::Impl::encode_gemma4_fragment(std::string_view text, size_t base, std::vector<int32_t> & out,
                                             std::vector<TextSpan> * spans) const {
    // The text with spaces as U+2581, re-encoded from its code points as llama.cpp's split
    // does (U+FFFD for bytes that are not UTF-8); with spans, where each byte came from.
    std::vector<uint32_t> cpts;
    std::string escaped;
    std::vector<size_t> cpt_at;  // where each code point starts in `escaped`
    std::vector<size_t> raw_at;  // with spans: per byte of `escaped`, then its end, the offset in `text`
    for (size_t pos = 0; pos < text.size();) {
        const unicode::Decoded d = unicode::decode_lenient(text, pos);
        cpts.push_back(d.cpt);
        cpt_at.push_back(escaped.size());
        if (d.cpt == ' ') {
            escaped.append(escaped_space);
        } else {
            unicode::append_utf8(escaped, d.cpt);
        }
        if (spans) {
            for (size_t b = raw_at.size(); b < escaped.size(); ++b) raw_at.push_back(pos + std::min<size_t>(b - cpt_at.back(), d.n_bytes));
        }
        pos += d.n_bytes;
    }
    cpt_at.push_back(escaped.size());
    raw_at.push_back(text.size());

    size_t first_cpt = 0;
    for (const size_t len : split_words(PreTokenizer::gemma4, cpts)) {
        const size_t begin = cpt_at[first_cpt];
        const std::string_view word = std::string_view(escaped).substr(begin, cpt_at[first_cpt + len] - begin);
        first_cpt += len;
        const size_t first = spans ? spans->size() : 0;
        // A run of newlines that is a token stays whole (llama.cpp's fix for Gemma 4).
        const bool newlines = word.find_first_not_of('\n') == std::string_view::npos;
        const std::optional<int32_t> whole = vocab.ignore_merges || newlines ? find_token(index, word) : std::nullopt;
        if (whole) {
            out.push_back(*whole);
            if (spans) spans->push_back({0, word.size()});
        } else {
            bpe.encode_word(word, index, out, spans);
        }
        if (!spans) continue;
        for (size_t i = first; i < spans->size(); ++i) {
            TextSpan & t = (*spans)[i];
            t = {base + raw_at[begin + t.begin], base + raw_at[begin + t.end]};
        }
    }
}

void Tokenizer::Impl::encode(std::string_view text, const EncodeFlags & flags, std::vector<int32_t> & out, std::vector<TextSpan> * spans,
                             std::vector<ResumePoint> * points) const {
    const auto push = [&](int32_t id, TextSpan span) {
        out.push_back(id);
        if (spans) spans->push_back(span);
    };
    const auto candidate = [&](ResumePoint p) {
        if (points->size() == EncodedText::kResumePointsKept) points->erase(points->begin());
        points->push_back(p);
    };
    if (flags.add_bos && vocab.add_bos) push(vocab.bos_id, {0, 0});
    bool prev_special = !flags.mid_text;  // the start of the input counts as "after a special token"
    for (const Fragment & f : specials.split(text, flags.parse_special)) {
        if (f.is_token()) {
            if (points) candidate({.n_tokens = out.size(), .byte = f.offset});
            push(f.token, {f.offset, f.offset + f.length});
            prev_special = true;
            continue;
        }
        const std::string_view raw = text.substr(f.offset, f.length);
        if (vocab.type != VocabType::spm) {
            if (vocab.pre == PreTokenizer::gemma4) {
                encode_gemma4_fragment(raw, f.offset, out, spans);
            } else {
                encode_bpe_fragment(raw, f.offset, out, spans);
            }
            continue;
        }
        const size_t first = out.size();
        encode_spm_fragment(raw, f.offset, vocab.add_space_prefix && prev_special, out, spans);
        prev_special = false;
        if (!points) continue;
        // Just after each character nothing merges across (not ' ': it is escaped). The
        // characters are those llama.cpp cuts from the escaped text, by their lead byte: a
        // bad lead byte takes the bytes after it along (an escaped space counts three), and
        // an isolating byte taken along is no boundary.
        size_t n = first;
        size_t taken = 0;  // escaped bytes the character being read still takes
        for (size_t i = 0; i < raw.size(); ++i) {
            if (taken > 0) {
                const size_t width = raw[i] == ' ' ? 3 : 1;
                taken = taken > width ? taken - width : 0;
                continue;
            }
            if (raw[i] == ' ') continue;
            taken = unicode::lead_byte_len(static_cast<uint8_t>(raw[i])) - 1;
            if (taken > 0 || !spm->isolates(raw[i])) continue;
            const size_t byte = f.offset + i + 1;
            while (n < out.size() && (*spans)[n].begin < byte) ++n;
            candidate({.n_tokens = n, .byte = byte, .mid_text = true});
        }
    }
    if (flags.add_eos && vocab.add_eos) push(vocab.eos_id, {text.size(), text.size()});
}

ResumePoint Tokenizer::Impl::resume_point(const EncodedText & e, std::string_view text, size_t limit, const EncodeFlags & flags) const {
    for (auto it = e.resume_points.rbegin(); it != e.resume_points.rend(); ++it) {
        if (it->byte > limit) continue;
        // A special token must be all there, and no special token may start before it
        // and run past the limit.
        if (!it->mid_text && e.spans[it->n_tokens].end > limit) continue;
        if (specials.may_straddle_end(text.substr(0, limit), it->byte, flags.parse_special)) continue;
        return *it;
    }
    return {.n_tokens = flags.add_bos && vocab.add_bos ? 1u : 0u, .byte = 0, .mid_text = flags.mid_text};
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
                                                           " is outside the vocabulary of " + std::to_string(vocab.n_tokens()) + " tokens");
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
                                                       std::to_string(it->second) + " and " + std::to_string(id) + ")");
        }
    }
    impl->specials = SpecialTokenSplitter(vocab);
    if (vocab.type == VocabType::spm) {
        LR_ASSIGN_OR_RETURN(SpmModel spm, SpmModel::create(vocab, impl->index));
        impl->spm.emplace(std::move(spm));
    } else {
        const ByteFallback fallback = vocab.pre == PreTokenizer::gemma4 ? ByteFallback::hex : ByteFallback::raw;
        impl->bpe = BpeModel::build(vocab.merges, impl->index, vocab.n_tokens(), fallback);
    }
    impl->vocab = std::move(vocab);
    impl->pieces.resize(impl->vocab.tokens.size());
    for (int32_t id = 0; id < impl->vocab.n_tokens(); ++id) impl->pieces[static_cast<size_t>(id)] = impl->make_piece(id);
    return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    impl_->encode(text, {.add_bos = add_special, .add_eos = add_special, .parse_special = parse_special}, out, nullptr, nullptr);
    return out;
}

EncodedText Tokenizer::encode_with_offsets(std::string_view text, bool add_special, bool parse_special) const {
    EncodedText e;
    e.tokens.reserve(text.size() / 3 + 2);
    e.spans.reserve(text.size() / 3 + 2);
    impl_->encode(text, {.add_bos = add_special, .add_eos = add_special, .parse_special = parse_special}, e.tokens, &e.spans,
                  &e.resume_points);
    return e;
}

EncodedText Tokenizer::encode_reusing(const EncodedText & earlier, std::string_view earlier_text, std::string_view text, bool add_special,
                                      bool parse_special) const {
    const EncodeFlags flags{.add_bos = add_special, .add_eos = add_special, .parse_special = parse_special};
    const size_t common = size_t(std::mismatch(earlier_text.begin(), earlier_text.end(), text.begin(), text.end()).first -
                                 earlier_text.begin());
    const ResumePoint r = impl_->resume_point(earlier, earlier_text, common, flags);
    EncodedText rest;
    impl_->encode(text.substr(r.byte), {.add_eos = add_special, .parse_special = parse_special, .mid_text = r.mid_text}, rest.tokens,
                  &rest.spans, &rest.resume_points);
    // Resuming at a special token assumes the new text has it there too.
    if (r.byte > 0 && !r.mid_text && (rest.tokens.empty() || rest.tokens[0] != earlier.tokens[r.n_tokens])) {
        return encode_with_offsets(text, add_special, parse_special);
    }
    EncodedText e;
    e.reused_bytes = r.byte;
    e.tokens.assign(earlier.tokens.begin(), earlier.tokens.begin() + std::ptrdiff_t(r.n_tokens));
    e.tokens.insert(e.tokens.end(), rest.tokens.begin(), rest.tokens.end());
    e.spans.assign(earlier.spans.begin(), earlier.spans.begin() + std::ptrdiff_t(r.n_tokens));
    for (const TextSpan & t : rest.spans) e.spans.push_back({r.byte + t.begin, r.byte + t.end});
    for (const ResumePoint & p : earlier.resume_points) {
        if (p.byte < r.byte) e.resume_points.push_back(p);
    }
    if (r.mid_text && r.byte > 0) e.resume_points.push_back(r);  // a special token's start is among rest's
    for (const ResumePoint & p : rest.resume_points) {
        e.resume_points.push_back({.n_tokens = r.n_tokens + p.n_tokens, .byte = r.byte + p.byte, .mid_text = p.mid_text});
    }
    if (e.resume_points.size() > EncodedText::kResumePointsKept) {
        e.resume_points.erase(e.resume_points.begin(), e.resume_points.end() - EncodedText::kResumePointsKept);
    }
    return e;
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

bool Tokenizer::adds_space_prefix() const { return impl_->vocab.type == VocabType::spm && impl_->vocab.add_space_prefix; }

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
