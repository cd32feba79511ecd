#include "api_key.h"

#include <cstddef>

namespace lr::server {

bool constant_time_equals(std::string_view a, std::string_view b) {
    // Walk the expected length whatever the guess is, so a short guess is not faster.
    unsigned diff = a.size() == b.size() ? 0u : 1u;
    for (size_t i = 0; i < b.size(); ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        diff |= unsigned(x ^ static_cast<unsigned char>(b[i]));
    }
    return diff == 0;
}

bool authorized(std::string_view authorization_header, std::string_view key) {
    if (key.empty()) return true;
    constexpr std::string_view kBearer = "Bearer ";
    if (!authorization_header.starts_with(kBearer)) return false;
    return constant_time_equals(authorization_header.substr(kBearer.size()), key);
}

}  // namespace lr::server
