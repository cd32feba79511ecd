#include "kv_request_settings.h"

#include <algorithm>
#include <cstdio>

#include "app/cli/cli_common.h"

namespace lr::server {
namespace {

// Flags that shape the whole server's cache, not one sequence.
bool server_wide(const std::string & flag) {
    return flag == "--kv-dir" || flag == "--kv-device-mib" || flag == "--kv-host-mib" || flag == "--kv-disk-mib" ||
           flag == "--no-prefix-cache" || flag == "--kv-stats" || flag == "--kv-stats-json";
}

std::string json_name(const std::string & flag) {
    std::string name = flag.substr(2);
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

// The per-request flag a `longread` member names, or "".
std::string flag_for(const std::string & member) {
    for (const cli::FlagSpec & spec : cli::kv_flags()) {
        if (server_wide(spec.name) || !spec.takes_value) continue;
        const std::string name = json_name(spec.name);
        if (member == name || (name.starts_with("kv_") && member == name.substr(3))) return spec.name;
    }
    return {};
}

std::string per_request_names() {
    std::string out;
    for (const cli::FlagSpec & spec : cli::kv_flags()) {
        if (server_wide(spec.name) || !spec.takes_value) continue;
        out += (out.empty() ? "" : ", ") + json_name(spec.name);
    }
    return out;
}

std::variant<std::string, ApiError> value_text(const std::string & member, const nlohmann::json & value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_number_integer()) return value.dump();
    if (value.is_number_float()) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", value.get<double>());
        return std::string(buf);
    }
    return invalid_request("longread." + member + " must be a number or a string", "longread." + member);
}

}  // namespace

std::variant<KvSettings, ApiError> kv_settings_for_request(const KvFlags & server_flags, const nlohmann::json & longread) {
    if (!longread.is_null() && !longread.is_object()) return invalid_request("longread must be an object", "longread");
    KvFlags request_flags;
    std::vector<std::pair<std::string, std::string>> names;  // flag, member
    if (longread.is_object()) {
        for (const auto & [member, value] : longread.items()) {
            std::string flag = flag_for(member);
            if (member == "kv_cache_policy") flag = "--kv-policy";
            if (member == "h2o_keep_ratio") {
                request_flags.emplace_back("--kv-policy", "h2o");
                flag = "--keep-ratio";
            }
            if (flag.empty()) {
                return invalid_request("unknown setting longread." + member + " (known: " + per_request_names() + ")",
                                       "longread." + member);
            }
            auto text = value_text(member, value);
            if (auto * e = std::get_if<ApiError>(&text)) return *e;
            request_flags.emplace_back(flag, std::get<std::string>(text));
            names.emplace_back(flag, member);
        }
    }
    std::vector<std::string> argv;
    auto overridden = [&](const std::string & flag) {
        return std::any_of(request_flags.begin(), request_flags.end(), [&](const auto & f) { return f.first == flag; });
    };
    for (const auto & [flag, value] : server_flags) {
        if (overridden(flag)) continue;
        argv.push_back(flag);
        if (!value.empty()) argv.push_back(value);
    }
    for (const auto & [flag, value] : request_flags) {
        if (std::find(argv.begin(), argv.end(), flag) != argv.end()) continue;  // h2o_keep_ratio with kv_policy
        argv.push_back(flag);
        argv.push_back(value);
    }
    auto fail = [&](std::string message) -> ApiError {
        // Name the setting as the request spelled it.
        for (const auto & [flag, member] : names) {
            const size_t at = message.find(flag);
            if (at == std::string::npos) continue;
            message.replace(at, flag.size(), "longread." + member);
            return invalid_request(message, "longread." + member);
        }
        return invalid_request(message, "longread");
    };
    auto args = cli::Args::parse(argv, cli::kv_flags());
    if (!args.ok()) return fail(args.status().message());
    auto settings = cli::kv_settings(*args);
    if (!settings.ok()) return fail(settings.status().message());
    return *settings;
}

}  // namespace lr::server
