#pragma once
// Python str operations on UTF-8 text. Lengths, indices and slices count code points, as
// Python does; case mapping and whitespace are ASCII-only (other characters pass unchanged).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lr::jinja {

bool is_space(char c);  // ASCII whitespace, as Python's str.strip() sees it for ASCII

// Code points in `s`; a byte that does not start a valid sequence counts as one.
size_t utf8_length(std::string_view s);
// Splits `s` into its characters (each a UTF-8 sequence, or one stray byte).
std::vector<std::string_view> utf8_chars(std::string_view s);

// Which indices a Python slice [start:stop:step] visits over a sequence of `length` items.
// step must not be 0.
std::vector<size_t> slice_indices(size_t length, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step);

std::string_view strip(std::string_view s, std::optional<std::string_view> chars, bool left, bool right);
// str.split(): with no separator, on runs of whitespace, dropping empty pieces.
std::vector<std::string> split(std::string_view s, std::optional<std::string_view> sep, int64_t max_split);
std::string replace_all(std::string_view s, std::string_view from, std::string_view to, int64_t count);
// The size replace_all() would produce, computed without building it.
size_t replaced_size(std::string_view s, std::string_view from, std::string_view to, int64_t count);

std::string to_upper(std::string_view s);
std::string to_lower(std::string_view s);
std::string capitalize(std::string_view s);  // first letter upper, the rest lower
std::string title_case(std::string_view s);  // each word's first letter upper, the rest lower

// Lines as Python's str.splitlines() (on \n, \r\n and \r), without the line ends.
std::vector<std::string_view> split_lines(std::string_view s);

}  // namespace lr::jinja
