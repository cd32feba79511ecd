#include "dtype.h"

#include <array>
#include <cctype>

#include "assert.h"

namespace lr {
namespace {

struct Entry {
    uint32_t number;
    DTypeTraits traits;
};

constexpr std::array kTypes = {
    Entry{0, {"F32", 1, 4, true}},         Entry{1, {"F16", 1, 2, true}},         Entry{2, {"Q4_0", 32, 18, true}},
    Entry{3, {"Q4_1", 32, 20, true}},      Entry{6, {"Q5_0", 32, 22, true}},      Entry{7, {"Q5_1", 32, 24, true}},
    Entry{8, {"Q8_0", 32, 34, true}},      Entry{9, {"Q8_1", 32, 36, false}},     Entry{10, {"Q2_K", 256, 84, true}},
    Entry{11, {"Q3_K", 256, 110, true}},   Entry{12, {"Q4_K", 256, 144, true}},   Entry{13, {"Q5_K", 256, 176, true}},
    Entry{14, {"Q6_K", 256, 210, true}},   Entry{15, {"Q8_K", 256, 292, false}},  Entry{16, {"IQ2_XXS", 256, 66, true}},
    Entry{17, {"IQ2_XS", 256, 74, true}},  Entry{18, {"IQ3_XXS", 256, 98, true}}, Entry{19, {"IQ1_S", 256, 50, true}},
    Entry{20, {"IQ4_NL", 32, 18, true}},   Entry{21, {"IQ3_S", 256, 110, true}},  Entry{22, {"IQ2_S", 256, 82, true}},
    Entry{23, {"IQ4_XS", 256, 136, true}}, Entry{24, {"I8", 1, 1, false}},        Entry{25, {"I16", 1, 2, false}},
    Entry{26, {"I32", 1, 4, false}},       Entry{27, {"I64", 1, 8, false}},       Entry{28, {"F64", 1, 8, false}},
    Entry{29, {"IQ1_M", 256, 56, true}},   Entry{30, {"BF16", 1, 2, true}},       Entry{34, {"TQ1_0", 256, 54, false}},
    Entry{35, {"TQ2_0", 256, 66, true}},   Entry{39, {"MXFP4", 32, 17, true}},
};

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) {
            return false;
        }
    }
    return true;
}

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t type_number) {
    for (const Entry & e : kTypes) {
        if (e.number == type_number) return e.traits;
    }
    return std::nullopt;
}

const DTypeTraits & dtype_traits(DType type) {
    for (const Entry & e : kTypes) {
        if (e.number == static_cast<uint32_t>(type)) return e.traits;
    }
    LR_ASSERT(false && "DType without traits");
    return kTypes[0].traits;
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (const Entry & e : kTypes) {
        if (iequals(e.traits.name, name)) return static_cast<DType>(e.number);
    }
    return std::nullopt;
}

}  // namespace lr
