#include "cli_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace lr::cli {

Result<Args> Args::parse(const std::vector<std::string> & argv, const std::vector<FlagSpec> & specs) {
    Args args;
    for (size_t i = 0; i < argv.size(); ++i) {
        std::string arg = argv[i];
        std::optional<std::string> inline_value;
        if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
            inline_value = arg.substr(arg.find('=') + 1);
            arg = arg.substr(0, arg.find('='));
        }
        const FlagSpec * spec = nullptr;
        for (const FlagSpec & s : specs) {
            if (s.name == arg || (!s.alias.empty() && s.alias == arg)) spec = &s;
        }
        if (!spec) return error(StatusCode::invalid_argument, "unknown option '" + arg + "' (see --help)");
        std::string value = "1";
        if (spec->takes_value) {
            if (inline_value) {
                value = *inline_value;
            } else {
                if (i + 1 >= argv.size()) return error(StatusCode::invalid_argument, "option " + spec->name + " needs a value");
                value = argv[++i];
            }
        } else if (inline_value) {
            return error(StatusCode::invalid_argument, "option " + spec->name + " takes no value");
        }
        std::vector<std::string> & slot = args.values_[spec->name];
        if (!slot.empty() && !spec->repeatable) {
            return error(StatusCode::invalid_argument, "option " + spec->name + " given more than once");
        }
        slot.push_back(value);
    }
    return args;
}

std::optional<std::string> Args::get(const std::string & name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return it->second.back();
}

std::vector<std::string> Args::get_all(const std::string & name) const {
    auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::get_or(const std::string & name, const std::string & fallback) const { return get(name).value_or(fallback); }

Result<long long> Args::get_int(const std::string & name, long long fallback, long long min, long long max) const {
    const std::optional<std::string> v = get(name);
    if (!v) return fallback;
    errno = 0;
    char * end = nullptr;
    const long long x = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno != 0) {
        return error(StatusCode::invalid_argument, "option " + name + " expects an integer, got '" + *v + "'");
    }
    if (x < min || x > max) {
        return error(StatusCode::invalid_argument,
                     "option " + name + " must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + *v);
    }
    return x;
}

Result<double> Args::get_double(const std::string & name, double fallback, double min, double max) const {
    const std::optional<std::string> v = get(name);
    if (!v) return fallback;
    errno = 0;
    char * end = nullptr;
    const double x = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || errno != 0 || !std::isfinite(x)) {
        return error(StatusCode::invalid_argument, "option " + name + " expects a number, got '" + *v + "'");
    }
    if (x < min || x > max) {
        return error(StatusCode::invalid_argument,
                     "option " + name + " must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + *v);
    }
    return x;
}

std::string usage_of(const std::vector<FlagSpec> & specs) {
    std::string out;
    for (const FlagSpec & s : specs) {
        std::string left = "  " + s.name + (s.alias.empty() ? "" : ", " + s.alias) + (s.takes_value ? " V" : "");
        if (left.size() < 28) left.resize(28, ' ');
        out += left + " " + s.help + "\n";
    }
    return out;
}

}  // namespace lr::cli
