#include "engine/chat/chat_template.h"

#include "engine/chat/chat_builtin.h"
#include "engine/chat/jinja_json.h"
#include "engine/chat/jinja_strings.h"

namespace lr::chat {

namespace {

bool has(std::string_view source, std::string_view marker) { return source.find(marker) != std::string_view::npos; }

jinja::Value make_context(std::span<const ChatMessage> messages, const ChatRenderOptions & options) {
    jinja::Array list;
    list.reserve(messages.size());
    for (const ChatMessage & m : messages) {
        auto message = std::make_shared<jinja::Object>();
        message->entries = {{"role", jinja::Value(m.role)}, {"content", jinja::Value(m.content)}};
        if (!m.thinking.empty()) {
            message->set("reasoning_content", jinja::Value(m.thinking));
            message->set("thinking", jinja::Value(m.thinking));
        }
        if (!m.tool_calls.empty()) {
            if (Result<jinja::Value> calls = jinja::parse_json(m.tool_calls); calls.ok()) message->set("tool_calls", *calls);
        }
        if (!m.tool_call_id.empty()) message->set("tool_call_id", jinja::Value(m.tool_call_id));
        list.emplace_back(message);
    }
    jinja::Value context = jinja::Value::object();
    jinja::Object & vars = context.as_mutable_object();
    vars.set("messages", jinja::Value(std::move(list)));
    vars.set("add_generation_prompt", jinja::Value(options.add_generation_prompt));
    vars.set("bos_token", jinja::Value(options.bos_token));
    vars.set("eos_token", jinja::Value(options.eos_token));
    if (options.enable_thinking) vars.set("enable_thinking", jinja::Value(*options.enable_thinking));
    if (!options.reasoning_effort.empty()) vars.set("reasoning_effort", jinja::Value(options.reasoning_effort));
    if (!options.tools.empty()) {
        if (Result<jinja::Value> tools = jinja::parse_json(options.tools); tools.ok()) vars.set("tools", *tools);
    }
    return context;
}

}  // namespace

std::string_view chat_family_name(ChatFamily family) {
    switch (family) {
        case ChatFamily::plain: return "plain";
        case ChatFamily::llama2: return "llama2";
        case ChatFamily::llama3: return "llama3";
        case ChatFamily::chatml: return "chatml";
        case ChatFamily::mistral: return "mistral";
        case ChatFamily::phi3: return "phi3";
        case ChatFamily::gemma: return "gemma";
        case ChatFamily::zephyr: return "zephyr";
        case ChatFamily::deepseek: return "deepseek";
        case ChatFamily::qwen3: return "qwen3";
        case ChatFamily::harmony: return "harmony";
        case ChatFamily::mistral3: return "mistral3";
        case ChatFamily::qwen35: return "qwen35";
        case ChatFamily::gemma4: return "gemma4";
    }
    return "plain";
}

ChatFamily detect_family(std::string_view source) {
    // Most specific markers first: Llama 3 derivatives and DeepSeek also mention other tokens.
    if (has(source, "<｜User｜>") || has(source, "<｜Assistant｜>")) return ChatFamily::deepseek;
    if (has(source, "<|start_header_id|>")) return ChatFamily::llama3;
    if (has(source, "<|channel|>") && has(source, "<|message|>")) return ChatFamily::harmony;
    // Qwen3.5 and 3.6 call tools in Qwen3-Coder's XML (<function=...>) and think by default.
    if (has(source, "<|im_start|>") && has(source, "enable_thinking") && has(source, "<function=")) return ChatFamily::qwen35;
    if (has(source, "<|im_start|>") && has(source, "enable_thinking")) return ChatFamily::qwen3;
    if (has(source, "<|im_start|>")) return ChatFamily::chatml;
    if (has(source, "<|turn>") && has(source, "<turn|>")) return ChatFamily::gemma4;
    if (has(source, "<start_of_turn>")) return ChatFamily::gemma;
    if (has(source, "<|assistant|>") && has(source, "<|end|>")) return ChatFamily::phi3;
    if (has(source, "<|assistant|>") || has(source, "<|user|>")) return ChatFamily::zephyr;
    if (has(source, "<<SYS>>")) return ChatFamily::llama2;
    if (has(source, "[SYSTEM_PROMPT]")) return ChatFamily::mistral3;
    if (has(source, "[INST]")) return ChatFamily::mistral;
    return ChatFamily::plain;
}

std::optional<ChatFamily> family_of_architecture(std::string_view arch) {
    const auto starts = [&](std::string_view prefix) { return arch.substr(0, prefix.size()) == prefix; };
    if (starts("qwen35")) return ChatFamily::qwen35;  // qwen35, qwen35moe
    if (starts("qwen3")) return ChatFamily::qwen3;    // qwen3, qwen3moe
    if (starts("qwen2")) return ChatFamily::chatml;
    if (arch == "gemma4") return ChatFamily::gemma4;
    if (starts("gemma")) return ChatFamily::gemma;
    if (arch == "gpt-oss") return ChatFamily::harmony;
    if (arch == "mistral3") return ChatFamily::mistral3;
    if (arch == "phi3") return ChatFamily::phi3;
    return std::nullopt;
}

Result<ChatTemplate> ChatTemplate::parse(std::string_view jinja_source) {
    LR_ASSIGN_OR_RETURN(jinja::Template program, jinja::Template::parse(jinja_source));
    return ChatTemplate(std::move(program), detect_family(jinja_source));
}

ChatTemplate ChatTemplate::builtin(ChatFamily family) { return ChatTemplate(std::nullopt, family); }

ChatTemplate ChatTemplate::for_model(std::string_view jinja_source, std::string_view architecture, std::string * fallback_reason) {
    if (fallback_reason) fallback_reason->clear();
    std::string reason;
    if (jinja::strip(jinja_source, std::nullopt, true, true).empty()) {
        reason = "the model has no chat template";
    } else {
        Result<ChatTemplate> parsed = parse(jinja_source);
        if (parsed.ok()) return std::move(parsed).value();
        reason = parsed.status().message();
    }
    ChatFamily family = detect_family(jinja_source);
    if (const std::optional<ChatFamily> of_arch = family_of_architecture(architecture); family == ChatFamily::plain && of_arch) {
        family = *of_arch;
        reason += "; using the " + std::string(chat_family_name(family)) + " format of architecture '" + std::string(architecture) + "'";
    }
    if (fallback_reason) *fallback_reason = std::move(reason);
    return builtin(family);
}

Result<std::string> ChatTemplate::render(std::span<const ChatMessage> messages, const ChatRenderOptions & options) const {
    if (!program_) return render_builtin(family_, messages, options);
    return program_->render(make_context(messages, options), jinja::RenderOptions{.local_time = options.local_time});
}

std::string ChatTemplate::render_or_fallback(std::span<const ChatMessage> messages, const ChatRenderOptions & options,
                                             std::string * fallback_reason) const {
    if (fallback_reason) fallback_reason->clear();
    Result<std::string> rendered = render(messages, options);
    if (rendered.ok()) return std::move(rendered).value();
    if (fallback_reason) *fallback_reason = rendered.status().message();
    return render_builtin(family_, messages, options);
}

}  // namespace lr::chat
