#include "rouge.h"

#include <algorithm>
#include <unordered_map>

#include <unicode/uchar.h>
#include <unicode/uscript.h>

#include "engine/common/utf8.h"

namespace lr {
namespace {

// The code point at text[pos] and its length; a byte that does not start a well-formed
// sequence is U+FFFD (a separator) for that byte alone.
std::pair<char32_t, size_t> next_codepoint(std::string_view text, size_t pos) {
    const auto b0 = static_cast<unsigned char>(text[pos]);
    if (b0 < 0x80) return {b0, 1};
    const size_t len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC2 ? 2 : 0;
    if (len == 0 || b0 > 0xF4 || pos + len > text.size()) return {0xFFFD, 1};
    char32_t cp = b0 & (0x7F >> len);
    for (size_t i = 1; i < len; ++i) {
        const auto b = static_cast<unsigned char>(text[pos + i]);
        if ((b & 0xC0) != 0x80) return {0xFFFD, 1};
        cp = (cp << 6) | (b & 0x3F);
    }
    constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};  // shorter forms are overlong
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return {0xFFFD, 1};
    return {cp, len};
}

bool is_word_char(char32_t cp) { return (U_GET_GC_MASK(UChar32(cp)) & (U_GC_L_MASK | U_GC_N_MASK | U_GC_M_MASK)) != 0; }

// Scripts written without spaces between words: each character counts as a word, as ROUGE
// is usually applied to Chinese and Japanese.
bool is_word_by_itself(char32_t cp) {
    if (u_hasBinaryProperty(UChar32(cp), UCHAR_IDEOGRAPHIC)) return true;
    UErrorCode status = U_ZERO_ERROR;
    const UScriptCode script = uscript_getScript(UChar32(cp), &status);
    return U_SUCCESS(status) && (script == USCRIPT_HIRAGANA || script == USCRIPT_KATAKANA);
}

std::string join(const std::vector<std::string> & words, size_t first, size_t n) {
    std::string key = words[first];
    for (size_t i = 1; i < n; ++i) key.append(" ").append(words[first + i]);  // words hold no spaces
    return key;
}

RougeScore score(size_t matches, size_t n_candidate, size_t n_reference) {
    if (n_candidate == 0 && n_reference == 0) return {1, 1, 1};
    if (n_candidate == 0 || n_reference == 0) return {};
    RougeScore s;
    s.precision = double(matches) / double(n_candidate);
    s.recall = double(matches) / double(n_reference);
    s.f1 = s.precision + s.recall > 0 ? 2 * s.precision * s.recall / (s.precision + s.recall) : 0;
    return s;
}

}  // namespace

std::vector<std::string> rouge_words(std::string_view text) {
    std::vector<std::string> words;
    std::string word;
    auto end_word = [&] {
        if (!word.empty()) words.push_back(std::move(word));
        word.clear();
    };
    for (size_t pos = 0; pos < text.size();) {
        const auto [cp, len] = next_codepoint(text, pos);
        pos += len;
        if (!is_word_char(cp)) {
            end_word();
        } else if (is_word_by_itself(cp)) {
            end_word();
            append_utf8(word, uint32_t(u_tolower(UChar32(cp))));
            end_word();
        } else {
            append_utf8(word, uint32_t(u_tolower(UChar32(cp))));
        }
    }
    end_word();
    return words;
}

RougeScore rouge_n(const std::vector<std::string> & candidate, const std::vector<std::string> & reference, size_t n) {
    const size_t n_candidate = candidate.size() >= n ? candidate.size() - n + 1 : 0;
    const size_t n_reference = reference.size() >= n ? reference.size() - n + 1 : 0;
    std::unordered_map<std::string, size_t> reference_counts;
    for (size_t i = 0; i < n_reference; ++i) ++reference_counts[join(reference, i, n)];
    size_t matches = 0;
    for (size_t i = 0; i < n_candidate; ++i) {
        // Clipped counts: each reference n-gram matches at most as often as it occurs.
        auto it = reference_counts.find(join(candidate, i, n));
        if (it != reference_counts.end() && it->second > 0) {
            --it->second;
            ++matches;
        }
    }
    return score(matches, n_candidate, n_reference);
}

RougeScore rouge_l(const std::vector<std::string> & candidate, const std::vector<std::string> & reference) {
    // The longest common subsequence by dynamic programming, one row at a time.
    std::vector<size_t> previous(reference.size() + 1, 0), current(reference.size() + 1, 0);
    for (const std::string & word : candidate) {
        for (size_t j = 1; j <= reference.size(); ++j) {
            current[j] = word == reference[j - 1] ? previous[j - 1] + 1 : std::max(previous[j], current[j - 1]);
        }
        std::swap(previous, current);
    }
    return score(previous[reference.size()], candidate.size(), reference.size());
}

RougeScores rouge(std::string_view candidate, std::string_view reference) {
    const std::vector<std::string> c = rouge_words(candidate), r = rouge_words(reference);
    return {.rouge1 = rouge_n(c, r, 1), .rouge2 = rouge_n(c, r, 2), .rouge_l = rouge_l(c, r)};
}

}  // namespace lr
