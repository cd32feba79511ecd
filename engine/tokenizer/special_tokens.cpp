#include "special_tokens.h"

#include <algorithm>

namespace lr {

namespace {

bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

}  // namespace

SpecialTokenSplitter::SpecialTokenSplitter(const Vocab & vocab) {
    constexpr uint32_t special_attrs = token_attr::control | token_attr::user_defined | token_attr::unknown;
    for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
        const TokenData & t = vocab.tokens[static_cast<size_t>(id)];
        if (t.attr & special_attrs) specials_.push_back({t.text, id, t.attr});
    }
    // NOTE: llama.cpp sorts by length only (std::sort, so ties in any order); ties only
    // matter for overlapping texts of equal length, resolved here by the lower id.
    std::stable_sort(specials_.begin(), specials_.end(),
                     [](const Special & a, const Special & b) { return a.text.size() > b.text.size(); });
}

std::vector<Fragment> SpecialTokenSplitter::split(std::string_view text, bool parse_special) const {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({-1, 0, text.size()});

    std::vector<Fragment> next;
    for (const Special & s : specials_) {
        if (!parse_special && (s.attr & (token_attr::control | token_attr::unknown))) continue;
        if (s.text.empty()) continue;
        next.clear();
        bool found_any = false;
        for (const Fragment & f : fragments) {
            if (f.is_token()) {
                next.push_back(f);
                continue;
            }
            size_t base = f.offset;
            size_t len = f.length;
            while (true) {
                const size_t match = text.substr(0, base + len).find(s.text, base);
                if (match == std::string_view::npos) {
                    if (len > 0) next.push_back({-1, base, len});
                    break;
                }
                found_any = true;
                size_t left_len = match - base;
                if (s.attr & token_attr::lstrip) {
                    while (left_len > 0 && is_ascii_space(text[base + left_len - 1])) --left_len;
                }
                if (left_len > 0) next.push_back({-1, base, left_len});
                next.push_back({s.id, match, s.text.size()});

                size_t right = match + s.text.size();
                const size_t end = base + len;
                if (right >= end) break;
                if (s.attr & token_attr::rstrip) {
                    while (right < end && is_ascii_space(text[right])) ++right;
                }
                base = right;
                len = end - right;
            }
        }
        if (found_any) fragments.swap(next);
    }
    return fragments;
}

bool SpecialTokenSplitter::may_straddle_end(std::string_view text, size_t from, bool parse_special) const {
    from = std::min(from, text.size());
    for (const Special & s : specials_) {
        if (!parse_special && (s.attr & (token_attr::control | token_attr::unknown))) continue;
        const size_t n = s.text.size();
        // It would start at `at` < from, and its text would run past the end: text[at...]
        // is a proper prefix of it.
        for (size_t at = text.size() + 1 > n ? text.size() + 1 - n : 0; at < from; ++at) {
            if (std::string_view(s.text).substr(0, text.size() - at) == text.substr(at)) return true;
        }
    }
    return false;
}

}  // namespace lr
