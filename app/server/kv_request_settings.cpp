#include "kv_request_settings.h"

#include <algorithm>
#include <cstdio>

#include "app/cli/cli_common.h"

namespace lr::server {
namespace {

// Flags that shape the whole server's cache, not one sequence.
bool server_wide(const std::string & flag) {
    return flag == "--kv-dir" || flag == "--kv-device-mib" || flag == "--kv-host-mib" || flag == "--kv-disk-mib" ||
           flag == "--no-prefix-cache" || flag == "--kv-stats" || flag == "--kv-stats-json" || flag == "--kv-demotion" ||
           flag == "--kv-prefetch" || flag == "--kv-adapt";
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

std::string number(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return buf;
}

}  // namespace

KvFlags kv_flags_for(const KvSettings & k) {
    // Only what differs from the defaults, so that a request's own members (quest_blocks
    // for --quest-pages) meet no flag of the server's that would take precedence.
    const KvSettings d;
    KvFlags flags;
    auto add = [&](bool differs, const char * flag, std::string value) {
        if (differs) flags.emplace_back(flag, std::move(value));
    };
    add(k.policy != d.policy, "--kv-policy", std::string(kv_policy_name(k.policy)));
    add(k.then != d.then, "--then", std::string(kv_policy_name(k.then)));
    add(k.keep_ratio != d.keep_ratio, "--keep-ratio", number(k.keep_ratio));
    add(k.budget_tokens != d.budget_tokens, "--kv-budget", std::to_string(k.budget_tokens));
    add(k.recent_ratio != d.recent_ratio, "--recent-ratio", number(k.recent_ratio));
    add(k.sink_tokens != d.sink_tokens, "--sink-tokens", std::to_string(k.sink_tokens));
    add(k.obs_window != d.obs_window, "--obs-window", std::to_string(k.obs_window));
    add(k.quest_pages != d.quest_pages, "--quest-pages", std::to_string(k.quest_pages));
    add(k.quest_page != d.quest_page, "--quest-page", std::to_string(k.quest_page));
    add(k.k_bits != d.k_bits, "--kv-k-bits", std::to_string(k.k_bits));
    add(k.v_bits != d.v_bits, "--kv-v-bits", std::to_string(k.v_bits));
    add(k.residual_tokens != d.residual_tokens, "--kv-residual", std::to_string(k.residual_tokens));
    add(k.host_bits != d.host_bits, "--kv-host-bits", std::to_string(k.host_bits));
    add(k.disk_bits != d.disk_bits, "--kv-disk-bits", std::to_string(k.disk_bits));
    add(k.block_tokens != d.block_tokens, "--kv-block", std::to_string(k.block_tokens));
    add(k.device_mib != d.device_mib, "--kv-device-mib", number(k.device_mib));
    add(k.host_mib != d.host_mib, "--kv-host-mib", number(k.host_mib));
    add(k.disk_mib != d.disk_mib, "--kv-disk-mib", number(k.disk_mib));
    add(k.dir != d.dir, "--kv-dir", k.dir);
    add(k.prefix_cache != d.prefix_cache, "--no-prefix-cache", "");
    add(k.demotion != d.demotion, "--kv-demotion", std::string(kv_demotion_name(k.demotion)));
    add(k.prefetch_layers != d.prefetch_layers, "--kv-prefetch", std::to_string(k.prefetch_layers));
    add(k.adapt != d.adapt, "--kv-adapt", "");
    // Warm-up.
    add(k.warmup_tokens != d.warmup_tokens, "--warmup-tokens", std::to_string(k.warmup_tokens));
    add(k.layer_budget != d.layer_budget, "--layer-budget", std::string(kv_layer_budget_name(k.layer_budget)));
    return flags;
}

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
