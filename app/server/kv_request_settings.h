#pragma once
// The cache settings of one request: the server's --kv-* flags, overridden by the request's
// `longread` object, whose members are the CLI's flag names in JSON spelling
// (--kv-policy: "kv_policy", --keep-ratio: "keep_ratio", --kv-k-bits: "kv_k_bits" or
// "k_bits"). They go through the CLI's own parsing and validation, so the limits and the
// messages are the same. Server-wide settings (tier budgets, --kv-dir, the prefix cache,
// --kv-stats) are not per request.

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/server/api_error.h"
#include "engine/api/kv_settings.h"

namespace lr::server {

// Flag and value (empty for a flag without one), in the CLI's spelling.
using KvFlags = std::vector<std::pair<std::string, std::string>>;

// The flags that give `settings` back through kv_settings_for_request (the server's
// defaults when they come as settings: the desktop app's cache settings).
KvFlags kv_flags_for(const KvSettings & settings);

// `longread`: the request's object (null when absent). A bad member is a 400 whose param
// is "longread.<name>".
std::variant<KvSettings, ApiError> kv_settings_for_request(const KvFlags & server_flags, const nlohmann::json & longread);

}  // namespace lr::server
