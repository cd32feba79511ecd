#include "engine/chat/chat_template.h"

#include "engine/chat/chat_builtin.h"
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
        list.emplace_back(message);
    }
    jinja::Value context = jinja::Value::object();
    jinja::Object & vars = context.as_mutable_object();
    vars.set("messages", jinja::Value(std::move(list)));
    vars.set("add_generation_prompt", jinja::Value(options.add_generation_prompt));
    vars.set("bos_token", jinja::Value(options.bos_token));
    vars.set("eos_token", jinja::Value(options.eos_token));
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
    }
    return "plain";
}

ChatFamily detect_family(std::string_view source) {
    // Most specific markers first: Llama 3 derivatives and DeepSeek also mention other tokens.
    if (has(source, "<｜User｜>") || has(source, "<｜Assistant｜>")) return ChatFamily::deepseek;
    if (has(source, "<|start_header_id|>")) return ChatFamily::llama3;
    if (has(source, "<|im_start|>")) return ChatFamily::chatml;
    if (has(source, "<start_of_turn>")) return ChatFamily::gemma;
    if (has(source, "<|assistant|>") && has(source, "<|end|>")) return ChatFamily::phi3;
    if (has(source, "<|assistant|>") || has(source, "<|user|>")) return ChatFamily::zephyr;
    if (has(source, "<<SYS>>")) return ChatFamily::llama2;
    if (has(source, "[INST]")) return ChatFamily::mistral;
    return ChatFamily::plain;
}

Result<ChatTemplate> ChatTemplate::parse(std::string_view jinja_source) {
    LR_ASSIGN_OR_RETURN(jinja::Template program, jinja::Template::parse(jinja_source));
    return ChatTemplate(std::move(program), detect_family(jinja_source));
}

ChatTemplate ChatTemplate::builtin(ChatFamily family) { return ChatTemplate(std::nullopt, family); }

ChatTemplate ChatTemplate::for_model(std::string_view jinja_source, std::string * fallback_reason) {
    if (fallback_reason) fallback_reason->clear();
    if (jinja::strip(jinja_source, std::nullopt, true, true).empty()) {
        if (fallback_reason) *fallback_reason = "the model has no chat template";
        return builtin(ChatFamily::plain);
    }
    Result<ChatTemplate> parsed = parse(jinja_source);
    if (parsed.ok()) return std::move(parsed).value();
    if (fallback_reason) *fallback_reason = parsed.status().message();
    return builtin(detect_family(jinja_source));
}

Result<std::string> ChatTemplate::render(std::span<const ChatMessage> messages, const ChatRenderOptions & options) const {
    if (!program_) return render_builtin(family_, messages, options);
    return program_->render(make_context(messages, options));
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
