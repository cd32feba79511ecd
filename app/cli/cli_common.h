#pragma once
// What several commands share: loading the model through the engine facade (-m, or the
// bundled one; -t, --backend, --gpu-layers), the session settings (-c, --chunk) and the
// sampler flags.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/cli_args.h"
#include "engine/model/model.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/session.h"
#include "engine/sampling/sampler.h"

namespace lr::cli {

std::vector<FlagSpec> model_flags();     // -m -t --backend --gpu-layers
std::vector<FlagSpec> session_flags();   // -c --chunk
std::vector<FlagSpec> sampling_flags();  // --temp --seed --top-k --top-p --min-p --repeat-penalty ...
std::vector<FlagSpec> kv_flags();        // --kv-policy --keep-ratio ... --kv-device-mib ... --kv-stats
std::vector<FlagSpec> thinking_flags();  // --thinking --reasoning-effort
std::vector<FlagSpec> join(std::initializer_list<std::vector<FlagSpec>> groups);

// A command's flags, or nothing when the command should return `exit_code` now: a flag
// error (printed, 1) or -h (the usage line and the flags printed, 0).
std::optional<Args> parse_flags(const std::vector<std::string> & argv, const std::vector<FlagSpec> & specs, std::string_view usage,
                                int & exit_code);

// Loads the model into `engine` on the backend --backend asks for (a CUDA backend that
// cannot be used gives a one-line note on stderr and the CPU).
Status load_model(const Args & args, Engine & engine);
// -c, --chunk and the KV flags, checked against the model.
Result<SessionOptions> session_options(const Args & args, const Model & model);
// The same as a session's configuration (for sessions of their own).
SessionConfig session_config(const SessionOptions & options);
// --chunk: 1 to 8192 tokens, or auto (kAutoChunk); 256 when not given.
Result<uint32_t> chunk_tokens(const Args & args);
Result<SamplerParams> sampler_params(const Args & args);
// --thinking on|off and --reasoning-effort low|medium|high (unset: the template's default).
Result<ThinkingChoice> thinking_choice(const Args & args);
Result<KvSettings> kv_settings(const Args & args);
// --kv-stats prints the cache's stats to stderr; --kv-stats-json FILE writes them as JSON.
Status report_kv_stats(const Args & args, const KvStats & stats);

// A comma-separated list of token counts (1 to 1048576), as --depth and --doc take them.
Result<std::vector<uint32_t>> parse_token_counts(const std::string & text, std::string_view flag);
// The text of -p, or of the file -f names (read whole; a missing or unreadable file is an error).
Result<std::string> prompt_text(const Args & args);
Result<std::string> read_text_file(const std::string & path);

// A JSON string literal of UTF-8 text (invalid bytes as \u00XX, never broken JSON).
std::string json_string(std::string_view text);

}  // namespace lr::cli
