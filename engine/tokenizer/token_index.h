#pragma once
// Token text -> id, looked up with string_views (no temporary strings on the hot path).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace lr {

struct StringViewHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using TokenIndex = std::unordered_map<std::string, int32_t, StringViewHash, std::equal_to<>>;

inline std::optional<int32_t> find_token(const TokenIndex & index, std::string_view text) {
    const auto it = index.find(text);
    if (it == index.end()) return std::nullopt;
    return it->second;
}

}  // namespace lr
