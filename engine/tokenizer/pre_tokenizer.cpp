#include "pre_tokenizer.h"

#include <algorithm>

#include "unicode.h"

namespace lr {

namespace {

// The code points of a fragment with their classes, looked up once.
struct Text {
    std::span<const uint32_t> cpts;
    std::vector<unicode::CodepointFlags> flags;

    explicit Text(std::span<const uint32_t> c) : cpts(c), flags(c.size()) {
        for (size_t i = 0; i < c.size(); ++i) flags[i] = unicode::codepoint_flags(c[i]);
    }
};

// One segment [begin, end) being scanned; positions outside it read as "nothing", the way
// llama.cpp's splitters see OUT_OF_RANGE past a segment's end.
class Scanner {
public:
    Scanner(const Text & text, size_t begin, size_t end, std::vector<size_t> & out) : text_(text), end_(end), prev_end_(begin), out_(out) {}

    bool in(size_t pos) const { return pos < end_; }
    uint32_t cpt(size_t pos) const { return in(pos) ? text_.cpts[pos] : 0xFFFFFFFFu; }
    bool letter(size_t pos) const { return in(pos) && text_.flags[pos].is_letter; }
    bool number(size_t pos) const { return in(pos) && text_.flags[pos].is_number; }
    bool space(size_t pos) const { return in(pos) && text_.flags[pos].is_whitespace; }
    bool mark(size_t pos) const { return in(pos) && text_.flags[pos].is_mark; }
    // [^\s\p{L}\p{N}]: any code point that is not whitespace, letter or number.
    bool other(size_t pos) const {
        if (!in(pos)) return false;
        const auto & f = text_.flags[pos];
        return !(f.is_whitespace || f.is_letter || f.is_number);
    }
    bool crlf(size_t pos) const { return cpt(pos) == '\r' || cpt(pos) == '\n'; }
    // (?=[\p{L}])([^a-z]) and (?=[\p{L}])([^A-Z]): a non-ASCII letter is both.
    bool upper(size_t pos) const { return letter(pos) && !(cpt(pos) >= 'a' && cpt(pos) <= 'z'); }
    bool lower(size_t pos) const { return letter(pos) && !(cpt(pos) >= 'A' && cpt(pos) <= 'Z'); }

    // \s*[\r\n]+|\s+(?!\S)|\s+ at pos: where the match ends; pos + 1 when pos is no
    // whitespace (a code point no alternative matches is a word of its own).
    size_t whitespace_end(size_t pos) const {
        size_t n_ws = 0;
        size_t end_of_last_crlf = 0;
        while (space(pos + n_ws)) {
            if (crlf(pos + n_ws)) end_of_last_crlf = pos + n_ws + 1;
            ++n_ws;
        }
        if (end_of_last_crlf > 0) return end_of_last_crlf;      // \s*[\r\n]+
        if (n_ws > 1 && in(pos + n_ws)) return pos + n_ws - 1;  // \s+(?!\S)
        return pos + std::max<size_t>(n_ws, 1);                 // \s+
    }

    // Ends the current word at `end`; returns its length.
    size_t emit(size_t end) {
        const size_t len = end - prev_end_;
        if (len > 0) out_.push_back(len);
        prev_end_ = end;
        return len;
    }

    // 's|'t|'re|'ve|'m|'ll|'d at pos (ASCII case folded when `fold`); its length or 0.
    size_t contraction(size_t pos, bool fold) const {
        if (cpt(pos) != '\'' || !in(pos + 1)) return 0;
        const auto lower = [&](size_t p) {
            const uint32_t c = cpt(p);
            return fold && c >= 'A' && c <= 'Z' ? c + 32 : c;
        };
        const uint32_t c1 = lower(pos + 1);
        if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
        if (!in(pos + 2)) return 0;
        const uint32_t c2 = lower(pos + 2);
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
        return 0;
    }

private:
    const Text & text_;
    size_t end_;
    size_t prev_end_;
    std::vector<size_t> & out_;
};

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
void split_gpt2(const Text & text, size_t begin, size_t end, std::vector<size_t> & out) {
    Scanner s(text, begin, end, out);
    for (size_t pos = begin; pos < end;) {
        if (const size_t n = s.contraction(pos, false)) {
            pos += s.emit(pos + n);
            continue;
        }
        // The optional leading space of the next three alternatives.
        const size_t at = s.cpt(pos) == ' ' ? pos + 1 : pos;
        if (s.letter(at)) {
            pos = at;
            while (s.letter(pos)) ++pos;
            s.emit(pos);
            continue;
        }
        if (s.number(at)) {
            pos = at;
            while (s.number(pos)) ++pos;
            s.emit(pos);
            continue;
        }
        if (s.other(at)) {
            pos = at;
            while (s.other(pos)) ++pos;
            s.emit(pos);
            continue;
        }
        size_t n_ws = 0;
        while (s.space(pos + n_ws)) ++n_ws;
        if (n_ws > 1 && s.in(pos + n_ws)) {
            // \s+(?!\S): the run minus its last space, which goes with the next word.
            pos += n_ws - 1;
            s.emit(pos);
            continue;
        }
        if (n_ws > 0) {
            pos += n_ws;
            s.emit(pos);
            continue;
        }
        s.emit(++pos);  // matched by nothing: a word of its own
    }
}

// How the Llama 3 family of regexes differ.
struct Llama3Variant {
    size_t max_digits;   // \p{N}{1,max_digits}
    bool marks = false;  // qwen35: [\p{L}\p{M}]+ for words, [^\s\p{L}\p{M}\p{N}]+ for the rest
};

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?W+|\p{N}{1,max_digits}|
//  ?[^\s W \p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+   with W = \p{L} (or [\p{L}\p{M}])
void split_llama3(const Text & text, size_t begin, size_t end, Llama3Variant variant, std::vector<size_t> & out) {
    Scanner s(text, begin, end, out);
    const auto word = [&](size_t pos) { return s.letter(pos) || (variant.marks && s.mark(pos)); };
    const auto other = [&](size_t pos) { return s.other(pos) && !(variant.marks && s.mark(pos)); };
    for (size_t pos = begin; pos < end;) {
        if (const size_t n = s.contraction(pos, true)) {
            pos += s.emit(pos + n);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?W+ (a mark at pos is both the optional prefix and a W)
        if (!s.crlf(pos) && !s.number(pos) && (word(pos) || word(pos + 1))) {
            ++pos;
            while (word(pos)) ++pos;
            s.emit(pos);
            continue;
        }
        // \p{N}{1,max_digits}
        if (s.number(pos)) {
            size_t first = pos;
            while (s.number(pos)) {
                if (++pos - first >= variant.max_digits) {
                    s.emit(pos);
                    first = pos;
                }
            }
            s.emit(pos);
            continue;
        }
        //  ?[^\s W \p{N}]+[\r\n]*
        // NOTE: like llama.cpp, a lone space ending the segment is taken here too; the
        // words come out the same as through \s+.
        const bool lead_space = s.cpt(pos) == ' ';
        const size_t at = lead_space ? pos + 1 : pos;
        if (other(at) || (lead_space && !s.in(at))) {
            pos = at;
            while (other(pos)) ++pos;
            while (s.crlf(pos)) ++pos;
            s.emit(pos);
            continue;
        }
        pos = s.whitespace_end(pos);
        s.emit(pos);
    }
}

// The gpt-4o / tekken regex (see pre_tokenizer.h), alternatives tried in order with
// std::regex's backtracking: U* gives back letters until L+ can match one.
void split_o200k(const Text & text, size_t begin, size_t end, bool contractions, size_t max_digits, std::vector<size_t> & out) {
    Scanner s(text, begin, end, out);
    // The end of a word whose letters start at `at`, or `at` when neither letter
    // alternative matches there.
    const auto letters_end = [&](size_t at) {
        size_t n_upper = 0;
        while (s.upper(at + n_upper)) ++n_upper;
        // [U]*[L]+ : the longest run of U that still leaves an L after it.
        size_t k = n_upper + 1;
        while (k > 0 && !s.lower(at + k - 1)) --k;
        size_t pos = k > 0 ? at + k - 1 : at + n_upper;  // [U]+[L]* when no L follows
        if (k == 0 && n_upper == 0) return at;
        while (s.lower(pos)) ++pos;
        return contractions ? pos + s.contraction(pos, true) : pos;
    };
    for (size_t pos = begin; pos < end;) {
        // [^\r\n\p{L}\p{N}]? before the letters.
        const size_t at = s.in(pos) && !s.crlf(pos) && !s.letter(pos) && !s.number(pos) ? pos + 1 : pos;
        if (const size_t word_end = letters_end(at); word_end > at) {
            pos = word_end;
            s.emit(pos);
            continue;
        }
        // \p{N}{1,max_digits}
        if (s.number(pos)) {
            const size_t first = pos;
            while (s.number(pos) && pos - first < max_digits) ++pos;
            s.emit(pos);
            continue;
        }
        //  ?[^\s\p{L}\p{N}]+[\r\n/]*
        const size_t other_at = s.cpt(pos) == ' ' ? pos + 1 : pos;
        if (s.other(other_at)) {
            pos = other_at;
            while (s.other(pos)) ++pos;
            while (s.crlf(pos) || s.cpt(pos) == '/') ++pos;
            s.emit(pos);
            continue;
        }
        pos = s.whitespace_end(pos);
        s.emit(pos);
    }
}

// Applies `split` to every current word; `split` appends the lengths of the pieces of
// [begin, end) to its output.
template <class Split>
std::vector<size_t> refine(const std::vector<size_t> & words, Split && split) {
    std::vector<size_t> out;
    out.reserve(words.size());
    size_t begin = 0;
    for (const size_t len : words) {
        split(begin, begin + len, out);
        begin += len;
    }
    return out;
}

// Splits [begin, end) into the maximal runs of code points for which `in_class` holds and
// the stretches between them (a regex `[class]+` applied by llama.cpp's regex split).
template <class Pred>
void split_runs(size_t begin, size_t end, Pred && in_class, std::vector<size_t> & out) {
    size_t pos = begin;
    while (pos < end) {
        const bool matched = in_class(pos);
        const size_t start = pos;
        while (pos < end && in_class(pos) == matched) ++pos;
        out.push_back(pos - start);
    }
}

// [0-9][0-9][0-9], leftmost matches: "1234567" -> "123" "456" "7".
void split_digit_triples(std::span<const uint32_t> cpts, size_t begin, size_t end, std::vector<size_t> & out) {
    const auto digit = [&](size_t p) { return cpts[p] >= '0' && cpts[p] <= '9'; };
    size_t gap_start = begin;
    size_t pos = begin;
    while (pos + 3 <= end) {
        if (digit(pos) && digit(pos + 1) && digit(pos + 2)) {
            if (pos > gap_start) out.push_back(pos - gap_start);
            out.push_back(3);
            pos += 3;
            gap_start = pos;
        } else {
            ++pos;
        }
    }
    if (end > gap_start) out.push_back(end - gap_start);
}

std::vector<size_t> split_default(const Text & text) {
    const auto & f = text.flags;
    const auto cpts = text.cpts;
    std::vector<size_t> words{cpts.size()};
    words = refine(words, [&](size_t b, size_t e, std::vector<size_t> & out) {
        split_runs(
            b, e,
            [&](size_t p) {
                const uint32_t c = cpts[p];
                return f[p].is_punctuation || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' || c == '|';
            },
            out);
    });
    words = refine(words, [&](size_t b, size_t e, std::vector<size_t> & out) { split_gpt2(text, b, e, out); });
    words = refine(words, [&](size_t b, size_t e, std::vector<size_t> & out) {
        split_runs(
            b, e, [&](size_t p) { return f[p].is_number; }, out);
    });
    words = refine(words, [&](size_t b, size_t e, std::vector<size_t> & out) { split_digit_triples(cpts, b, e, out); });
    return words;
}

}  // namespace

std::string_view pre_tokenizer_name(PreTokenizer kind) {
    switch (kind) {
        case PreTokenizer::llama_default: return "default";
        case PreTokenizer::gpt2: return "gpt-2";
        case PreTokenizer::llama3: return "llama-bpe";
        case PreTokenizer::qwen2: return "qwen2";
        case PreTokenizer::qwen35: return "qwen35";
        case PreTokenizer::gpt4o: return "gpt-4o";
        case PreTokenizer::tekken: return "tekken";
        case PreTokenizer::gemma4: return "gemma4";
    }
    return "?";
}

std::vector<size_t> split_words(PreTokenizer kind, std::span<const uint32_t> cpts) {
    std::vector<size_t> words;
    if (cpts.empty()) return words;
    const Text text(cpts);
    switch (kind) {
        case PreTokenizer::llama_default: return split_default(text);
        case PreTokenizer::gpt2: split_gpt2(text, 0, cpts.size(), words); break;
        case PreTokenizer::llama3: split_llama3(text, 0, cpts.size(), {.max_digits = 3}, words); break;
        case PreTokenizer::qwen2: split_llama3(text, 0, cpts.size(), {.max_digits = 1}, words); break;
        case PreTokenizer::qwen35: split_llama3(text, 0, cpts.size(), {.max_digits = 1, .marks = true}, words); break;
        case PreTokenizer::gpt4o: split_o200k(text, 0, cpts.size(), true, 3, words); break;
        case PreTokenizer::tekken: split_o200k(text, 0, cpts.size(), false, 1, words); break;
        case PreTokenizer::gemma4:
            split_runs(
                0, cpts.size(), [&](size_t p) { return cpts[p] == '\n'; }, words);
            break;
    }
    return words;
}

}  // namespace lr
