#include "engine/chat/chat_builtin.h"

#include <ctime>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_strings.h"

namespace lr::chat {

namespace {

using jinja::strip;

std::string trimmed(std::string_view s) { return std::string(strip(s, std::nullopt, true, true)); }

// The leading system message, if any, and where the rest of the conversation starts.
struct Split {
    std::optional<std::string_view> system;
    std::span<const ChatMessage> rest;
};

Split split_system(std::span<const ChatMessage> messages) {
    if (!messages.empty() && messages[0].role == "system") return {messages[0].content, messages.subspan(1)};
    return {std::nullopt, messages};
}

std::string render_plain(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    std::string out = options.bos_token;
    for (const ChatMessage & m : messages) out += jinja::capitalize(m.role) + ": " + m.content + "\n";
    if (options.add_generation_prompt) out += "Assistant:";
    return out;
}

std::string render_llama2(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    const Split s = split_system(messages);
    std::string out;
    bool first = true;
    for (const ChatMessage & m : s.rest) {
        std::string content = m.content;
        if (first && s.system) content = "<<SYS>>\n" + std::string(*s.system) + "\n<</SYS>>\n\n" + content;
        first = false;
        if (m.role == "assistant") {
            out += ' ';
            out += trimmed(content);
            out += ' ';
            out += options.eos_token;
        } else {
            out += options.bos_token + "[INST] " + trimmed(content) + " [/INST]";
        }
    }
    return out;
}

std::string render_llama3(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    std::string out = options.bos_token;
    for (const ChatMessage & m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trimmed(m.content) + "<|eot_id|>";
    }
    if (options.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

std::string render_chatml(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    std::string out;
    for (const ChatMessage & m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

std::string render_mistral(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    const Split s = split_system(messages);
    size_t last_user = s.rest.size();
    for (size_t i = 0; i < s.rest.size(); ++i) {
        if (s.rest[i].role != "assistant") last_user = i;
    }
    std::string out = options.bos_token;
    for (size_t i = 0; i < s.rest.size(); ++i) {
        const ChatMessage & m = s.rest[i];
        if (m.role == "assistant") {
            out += m.content + options.eos_token;
        } else if (i == last_user && s.system) {
            out += "[INST]" + std::string(*s.system) + "\n\n" + m.content + "[/INST]";
        } else {
            out += "[INST]" + m.content + "[/INST]";
        }
    }
    return out;
}

std::string render_phi3(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    std::string out;
    for (const ChatMessage & m : messages) {
        if (m.role == "system" && m.content.empty()) continue;
        const std::string_view role = (m.role == "system" || m.role == "assistant") ? std::string_view(m.role) : "user";
        out += "<|" + std::string(role) + "|>\n" + m.content + "<|end|>\n";
    }
    out += options.add_generation_prompt ? "<|assistant|>\n" : options.eos_token;
    return out;
}

std::string render_gemma(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    const Split s = split_system(messages);
    std::string out = options.bos_token;
    bool first = true;
    for (const ChatMessage & m : s.rest) {
        const bool is_model = m.role == "assistant";
        std::string content = trimmed(m.content);
        // NOTE: Gemma 3's template trims each message but not the system text it prepends.
        if (first && s.system && !is_model) content = std::string(*s.system) + "\n\n" + content;
        first = false;
        out += std::string("<start_of_turn>") + (is_model ? "model" : "user") + "\n" + content + "<end_of_turn>\n";
    }
    if (options.add_generation_prompt) out += "<start_of_turn>model\n";
    return out;
}

std::string render_zephyr(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    std::string out;
    for (const ChatMessage & m : messages) out += "<|" + m.role + "|>\n" + m.content + options.eos_token + "\n";
    if (options.add_generation_prompt) out += "<|assistant|>\n";
    return out;
}

std::string render_deepseek(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    std::string system;
    for (const ChatMessage & m : messages) {
        if (m.role == "system") system = m.content;  // the reference template keeps the last one
    }
    std::string out = options.bos_token + system;
    for (const ChatMessage & m : messages) {
        if (m.role == "user") {
            out += "<｜User｜>" + m.content;
        } else if (m.role == "assistant") {
            std::string_view content = m.content;
            const size_t think_end = content.rfind("</think>");
            if (think_end != std::string_view::npos) content = content.substr(think_end + 8);
            out += "<｜Assistant｜>" + std::string(content) + "<｜end▁of▁sentence｜>";
        }
    }
    if (options.add_generation_prompt) out += "<｜Assistant｜><think>\n";
    return out;
}

// Qwen3 splits an assistant message's own "<think>...</think>" off its content.
struct Reply {
    std::string thinking;
    std::string content;
};

Reply split_qwen3_reply(const ChatMessage & m) {
    const std::string_view content = m.content;
    const size_t close = content.find("</think>");
    if (!m.thinking.empty() || close == std::string_view::npos) return {m.thinking, m.content};
    std::string_view thinking = strip(content.substr(0, close), "\n", false, true);
    if (const size_t open = thinking.rfind("<think>"); open != std::string_view::npos) thinking.remove_prefix(open + 7);
    const std::string_view after = content.substr(content.rfind("</think>") + 8);
    return {std::string(strip(thinking, "\n", true, false)), std::string(strip(after, "\n", true, false))};
}

std::string render_qwen3(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    // The last user message: replies after it (the turn being continued) keep their thinking.
    size_t last_query = messages.empty() ? 0 : messages.size() - 1;
    for (size_t i = messages.size(); i-- > 0;) {
        if (messages[i].role == "user") {
            last_query = i;
            break;
        }
    }
    std::string out;
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage & m = messages[i];
        if (m.role == "user" || m.role == "system") {
            out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            const Reply r = split_qwen3_reply(m);
            out += "<|im_start|>assistant\n";
            if (i > last_query && (i + 1 == messages.size() || !r.thinking.empty())) {
                out += "<think>\n" + std::string(strip(r.thinking, "\n", true, true)) + "\n</think>\n\n" +
                       std::string(strip(r.content, "\n", true, false));
            } else {
                out += r.content;
            }
            out += "<|im_end|>\n";
        }
    }
    if (options.add_generation_prompt) {
        out += "<|im_start|>assistant\n";
        if (options.enable_thinking == false) out += "<think>\n\n</think>\n\n";
    }
    return out;
}

// Qwen3.5 / 3.6: like qwen3, but every message is trimmed, every reply after the last user
// message carries a think block (an empty one too), and the generation prompt opens the
// thinking unless enable_thinking is false.
std::string render_qwen35(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    // The last user message that is not a tool response wrapped as a user turn.
    size_t last_query = messages.empty() ? 0 : messages.size() - 1;
    for (size_t i = messages.size(); i-- > 0;) {
        const std::string content = trimmed(messages[i].content);
        const bool tool_response = content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
        if (messages[i].role == "user" && !tool_response) {
            last_query = i;
            break;
        }
    }
    std::string out;
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage & m = messages[i];
        if (m.role == "user" || m.role == "system") {
            out += "<|im_start|>" + m.role + "\n" + trimmed(m.content) + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            std::string content = trimmed(m.content);
            std::string thinking = m.thinking;
            if (thinking.empty() && content.find("</think>") != std::string::npos) {
                const Reply r = split_qwen3_reply({.role = m.role, .content = content});
                thinking = r.thinking;
                content = r.content;
            }
            out += "<|im_start|>assistant\n";
            if (i > last_query) out += "<think>\n" + trimmed(thinking) + "\n</think>\n\n";
            out += content + "<|im_end|>\n";
        }
    }
    if (options.add_generation_prompt) {
        out += "<|im_start|>assistant\n";
        out += options.enable_thinking == false ? "<think>\n\n</think>\n\n" : "<think>\n";
    }
    return out;
}

// Gemma 4 drops a reply's thought channels ("<|channel>thought\n...<channel|>").
std::string strip_gemma4_thinking(std::string_view text) {
    std::string out;
    for (size_t begin = 0;;) {
        const size_t close = text.find("<channel|>", begin);
        const std::string_view part = text.substr(begin, close == std::string_view::npos ? std::string_view::npos : close - begin);
        out += part.substr(0, part.find("<|channel>"));
        if (close == std::string_view::npos) break;
        begin = close + std::string_view("<channel|>").size();
    }
    return trimmed(out);
}

// Gemma 4: "<|turn>role\ntext<turn|>\n", the system turn (with <|think|> when thinking is
// on) first; replies as "model", without their thinking, consecutive replies in one turn.
std::string render_gemma4(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    const bool thinking = options.enable_thinking == true;
    std::string out = options.bos_token;
    std::span<const ChatMessage> rest = messages;
    const bool has_system = !rest.empty() && (rest[0].role == "system" || rest[0].role == "developer");
    if (thinking || has_system) {
        out += "<|turn>system\n";
        if (thinking) out += "<|think|>\n";
        if (has_system) {
            out += trimmed(rest[0].content);
            rest = rest.subspan(1);
        }
        out += "<turn|>\n";
    }
    std::string_view previous_role;  // of the last message that was not a tool's
    for (const ChatMessage & m : rest) {
        if (m.role == "tool") continue;
        const bool is_model = m.role == "assistant";
        if (!(is_model && previous_role == "assistant")) out += "<|turn>" + (is_model ? std::string("model") : m.role) + "\n";
        out += is_model ? strip_gemma4_thinking(m.content) : trimmed(m.content);
        out += "<turn|>\n";
        previous_role = m.role;
    }
    if (options.add_generation_prompt) {
        out += "<|turn>model\n";
        if (!thinking) out += "<|channel>thought\n<channel|>";
    }
    return out;
}

std::string render_harmony(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    std::tm now{};
    if (options.local_time) {
        now = options.local_time();
    } else {
        const std::time_t t = std::time(nullptr);
        localtime_r(&t, &now);
    }
    const std::string effort = options.reasoning_effort.empty() ? "medium" : options.reasoning_effort;
    std::string out =
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\n"
        "Current date: " +
        jinja::format_time("%Y-%m-%d", now) + "\n\nReasoning: " + effort +
        "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>";
    std::span<const ChatMessage> rest = messages;
    if (!rest.empty() && (rest[0].role == "system" || rest[0].role == "developer")) {
        if (!rest[0].content.empty()) out += "<|start|>developer<|message|># Instructions\n\n" + rest[0].content + "\n\n<|end|>";
        rest = rest.subspan(1);
    }
    for (size_t i = 0; i < rest.size(); ++i) {
        const ChatMessage & m = rest[i];
        if (m.role == "user") {
            out += "<|start|>user<|message|>" + m.content + "<|end|>";
        } else if (m.role == "assistant" && i + 1 == rest.size() && !options.add_generation_prompt) {
            // The thinking of earlier turns is dropped; a final reply (training only) keeps it.
            if (!m.thinking.empty()) out += "<|start|>assistant<|channel|>analysis<|message|>" + m.thinking + "<|end|>";
            out += "<|start|>assistant<|channel|>final<|message|>" + m.content + "<|return|>";
        } else if (m.role == "assistant") {
            out += "<|start|>assistant<|channel|>final<|message|>" + m.content + "<|end|>";
        }
    }
    if (options.add_generation_prompt) out += "<|start|>assistant";
    return out;
}

std::string render_mistral3(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    std::string out = options.bos_token;
    for (const ChatMessage & m : messages) {
        if (m.role == "system") {
            out += "[SYSTEM_PROMPT]" + m.content + "[/SYSTEM_PROMPT]";
        } else if (m.role == "user") {
            out += "[INST]" + m.content + "[/INST]";
        } else if (m.role == "assistant") {
            out += m.content + options.eos_token;
        }
    }
    return out;
}

}  // namespace

std::string render_builtin(ChatFamily family, std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    switch (family) {
        case ChatFamily::plain: return render_plain(messages, options);
        case ChatFamily::llama2: return render_llama2(messages, options);
        case ChatFamily::llama3: return render_llama3(messages, options);
        case ChatFamily::chatml: return render_chatml(messages, options);
        case ChatFamily::mistral: return render_mistral(messages, options);
        case ChatFamily::phi3: return render_phi3(messages, options);
        case ChatFamily::gemma: return render_gemma(messages, options);
        case ChatFamily::zephyr: return render_zephyr(messages, options);
        case ChatFamily::deepseek: return render_deepseek(messages, options);
        case ChatFamily::qwen3: return render_qwen3(messages, options);
        case ChatFamily::harmony: return render_harmony(messages, options);
        case ChatFamily::mistral3: return render_mistral3(messages, options);
        case ChatFamily::qwen35: return render_qwen35(messages, options);
        case ChatFamily::gemma4: return render_gemma4(messages, options);
    }
    return render_plain(messages, options);
}

}  // namespace lr::chat
