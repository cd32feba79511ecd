#pragma once
// The API key check: "Authorization: Bearer KEY", compared in constant time so that the
// time of a refusal tells nothing about how much of a guess was right.

#include <string_view>

namespace lr::server {

// Equal strings; the time taken depends only on the lengths, never on where they differ.
bool constant_time_equals(std::string_view a, std::string_view b);

// Whether an Authorization header value carries `key` (an empty key accepts anything).
bool authorized(std::string_view authorization_header, std::string_view key);

}  // namespace lr::server
