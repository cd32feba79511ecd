#include "engine/chat/chat_builtin.h"

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
        if (first && s.system && !is_model) content = trimmed(*s.system) + "\n\n" + content;
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
    }
    return render_plain(messages, options);
}

}  // namespace lr::chat
