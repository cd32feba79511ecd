#pragma once
// Whether the model thinks before it answers, where its chat template lets the caller
// choose; unset or empty: the template's default.

#include <optional>
#include <string>

namespace lr {

struct ThinkingChoice {
    std::optional<bool> enabled;  // the template's enable_thinking (Qwen3, Qwen3.5 / 3.6, Gemma 4)
    std::string effort;           // its reasoning_effort (gpt-oss: "low", "medium", "high")

    bool operator==(const ThinkingChoice &) const = default;
};

}  // namespace lr
