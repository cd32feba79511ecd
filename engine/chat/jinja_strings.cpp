#include "engine/chat/jinja_strings.h"

#include <algorithm>

namespace lr::jinja {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

namespace {

// Length of the UTF-8 sequence starting at s[i], or 1 for a stray byte.
size_t char_bytes(std::string_view s, size_t i) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = 1;
    if (b >= 0xF0 && b <= 0xF4) n = 4;
    else if (b >= 0xE0) n = (b <= 0xEF) ? 3 : 1;
    else if (b >= 0xC2 && b <= 0xDF) n = 2;
    if (n == 1 || i + n > s.size()) return 1;
    for (size_t k = 1; k < n; ++k) {
        if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
    }
    return n;
}

char upper_ascii(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }
char lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool is_alpha_ascii(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

size_t utf8_length(std::string_view s) {
    size_t n = 0;
    for (size_t i = 0; i < s.size(); i += char_bytes(s, i)) ++n;
    return n;
}

std::vector<std::string_view> utf8_chars(std::string_view s) {
    std::vector<std::string_view> out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const size_t n = char_bytes(s, i);
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

std::vector<size_t> slice_indices(size_t length, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
    // Python's PySlice_AdjustIndices.
    const auto len = static_cast<int64_t>(length);
    auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
        if (!v) return dflt;
        int64_t x = *v;
        if (x < 0) {
            x += len;
            if (x < 0) x = (step < 0) ? -1 : 0;
        } else if (x >= len) {
            x = (step < 0) ? len - 1 : len;
        }
        return x;
    };
    const int64_t lo = adjust(start, step < 0 ? len - 1 : 0);
    const int64_t hi = adjust(stop, step < 0 ? -1 : len);
    std::vector<size_t> out;
    if (step > 0) {
        for (int64_t i = lo; i < hi; i += step) out.push_back(static_cast<size_t>(i));
    } else {
        for (int64_t i = lo; i > hi; i += step) out.push_back(static_cast<size_t>(i));
    }
    return out;
}

std::string_view strip(std::string_view s, std::optional<std::string_view> chars, bool left, bool right) {
    size_t b = 0;
    size_t e = s.size();
    if (!chars) {
        if (left) {
            while (b < e && is_space(s[b])) ++b;
        }
        if (right) {
            while (e > b && is_space(s[e - 1])) --e;
        }
        return s.substr(b, e - b);
    }
    // Python strips characters, not bytes: compare whole UTF-8 sequences.
    const std::vector<std::string_view> set = utf8_chars(*chars);
    const std::vector<std::string_view> text = utf8_chars(s);
    auto strippable = [&](std::string_view ch) { return std::find(set.begin(), set.end(), ch) != set.end(); };
    size_t first = 0;
    size_t last = text.size();
    if (left) {
        while (first < last && strippable(text[first])) b += text[first++].size();
    }
    if (right) {
        while (last > first && strippable(text[last - 1])) e -= text[--last].size();
    }
    return s.substr(b, e - b);
}

std::vector<std::string> split(std::string_view s, std::optional<std::string_view> sep, int64_t max_split) {
    std::vector<std::string> out;
    if (!sep) {
        size_t i = 0;
        while (true) {
            while (i < s.size() && is_space(s[i])) ++i;
            if (i == s.size()) break;
            if (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split) {
                out.emplace_back(s.substr(i));  // Python keeps the remainder's trailing space
                break;
            }
            size_t j = i;
            while (j < s.size() && !is_space(s[j])) ++j;
            out.emplace_back(s.substr(i, j - i));
            i = j;
        }
        return out;
    }
    size_t i = 0;
    while (true) {
        const size_t j = (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split) ? std::string_view::npos : s.find(*sep, i);
        if (j == std::string_view::npos) {
            out.emplace_back(s.substr(i));
            break;
        }
        out.emplace_back(s.substr(i, j - i));
        i = j + sep->size();
    }
    return out;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
    std::string out;
    out.reserve(replaced_size(s, from, to, count));
    if (from.empty()) {
        // Python inserts `to` before every character and at the end.
        int64_t done = 0;
        for (std::string_view ch : utf8_chars(s)) {
            if (count < 0 || done < count) {
                out += to;
                ++done;
            }
            out += ch;
        }
        if (count < 0 || done < count) out += to;
        return out;
    }
    size_t i = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t j = s.find(from, i);
        if (j == std::string_view::npos) break;
        out.append(s.substr(i, j - i));
        out.append(to);
        i = j + from.size();
        ++done;
    }
    out.append(s.substr(i));
    return out;
}

size_t replaced_size(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
    size_t n = 0;
    if (from.empty()) {
        n = utf8_length(s) + 1;
    } else {
        for (size_t i = s.find(from); i != std::string_view::npos; i = s.find(from, i + from.size())) ++n;
    }
    if (count >= 0) n = std::min(n, static_cast<size_t>(count));
    return s.size() - n * from.size() + n * to.size();
}

std::string to_upper(std::string_view s) {
    std::string out(s);
    for (char & c : out) c = upper_ascii(c);
    return out;
}

std::string to_lower(std::string_view s) {
    std::string out(s);
    for (char & c : out) c = lower_ascii(c);
    return out;
}

std::string capitalize(std::string_view s) {
    std::string out = to_lower(s);
    if (!out.empty()) out[0] = upper_ascii(out[0]);
    return out;
}

std::string title_case(std::string_view s) {
    // Python: a letter after a non-letter starts a word.
    std::string out(s);
    bool prev_letter = false;
    for (char & c : out) {
        const bool letter = is_alpha_ascii(c) || (static_cast<unsigned char>(c) >= 0x80);
        if (is_alpha_ascii(c)) c = prev_letter ? lower_ascii(c) : upper_ascii(c);
        prev_letter = letter;
    }
    return out;
}

std::vector<std::string_view> split_lines(std::string_view s) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
        size_t j = i;
        while (j < s.size() && s[j] != '\n' && s[j] != '\r') ++j;
        out.push_back(s.substr(i, j - i));
        if (j == s.size()) break;
        i = j + ((s[j] == '\r' && j + 1 < s.size() && s[j + 1] == '\n') ? 2 : 1);
    }
    return out;
}

}  // namespace lr::jinja
