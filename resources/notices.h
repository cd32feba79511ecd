#pragma once
// What Longread's binaries contain or link that others wrote, and under which licence: the
// About box, `longread-cli --licenses` and the packages' documentation all read this list.

#include <span>
#include <string_view>

namespace lr {

struct Notice {
    std::string_view component;
    std::string_view use;
    std::string_view licence;
};

// Longread's own licence and version.
inline constexpr std::string_view kLongreadLicence = "MIT";

std::span<const Notice> third_party_notices();

}  // namespace lr
