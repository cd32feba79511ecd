#pragma once
// A stretch of a UTF-8 text by byte offsets: what a token spells, where a document sits in
// a prompt. Plain value; offsets are into the text the producer names.

#include <cstddef>

namespace lr {

struct TextSpan {
    size_t begin = 0;  // first byte
    size_t end = 0;    // one past the last byte; begin == end: nothing of the text

    size_t size() const { return end - begin; }
    bool operator==(const TextSpan &) const = default;
};

}  // namespace lr
