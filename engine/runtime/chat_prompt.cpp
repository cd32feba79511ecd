#include "chat_prompt.h"

namespace lr {

std::string document_context(std::string_view title, std::string_view text) {
    std::string out = "You answer questions about the document below. Use only what it says; when it does not say, say so.\n\n";
    if (!title.empty()) out += "Document: " + std::string(title) + "\n\n";
    out += text;
    return out;
}

std::vector<chat::ChatMessage> conversation_messages(const Conversation & conversation, std::string_view user_text) {
    std::vector<chat::ChatMessage> messages;
    messages.reserve(conversation.turns.size() + 2);
    if (conversation.has_document()) {
        messages.push_back({"system", document_context(conversation.document_title, conversation.document_text)});
    }
    for (const ChatTurn & t : conversation.turns) messages.push_back({t.role, t.text, t.thinking, t.tool_calls, t.tool_call_id});
    if (!user_text.empty()) messages.push_back({"user", std::string(user_text)});
    return messages;
}

std::string render_chat_text(const Model & model, std::span<const chat::ChatMessage> messages, bool add_generation_prompt,
                             const ThinkingChoice & thinking, std::string_view tools) {
    const Tokenizer & tok = model.tokenizer();
    chat::ChatRenderOptions options{.add_generation_prompt = add_generation_prompt,
                                    .enable_thinking = thinking.enabled,
                                    .reasoning_effort = thinking.effort,
                                    .tools = std::string(tools)};
    if (tok.bos() >= 0) options.bos_token = tok.token_to_piece(tok.bos(), true);
    if (tok.eos() >= 0) options.eos_token = tok.token_to_piece(tok.eos(), true);
    return model.chat_template().render_or_fallback(messages, options);
}

namespace {

// The conversation the probes below render: what a template does with a choice or a tool.
const chat::ChatMessage kProbe[] = {{"user", "Hi", "", "", ""}};

}  // namespace

chat::ToolCallFormat tool_call_format(const Model & model) {
    constexpr std::string_view kTool =
        R"([{"type": "function", "function": {"name": "longread_probe_tool", "description": "A probe.", "parameters": {"type": "object", "properties": {}}}}])";
    const std::string rendered = render_chat_text(model, kProbe, true, {}, kTool);
    if (rendered.find("longread_probe_tool") == std::string::npos) return chat::ToolCallFormat::none;  // tools are not shown
    return chat::tool_call_format_of(rendered);
}

bool thinking_choice_matters(const Model & model, const ThinkingChoice & a, const ThinkingChoice & b) {
    return render_chat_text(model, kProbe, true, a) != render_chat_text(model, kProbe, true, b);
}

std::vector<int32_t> render_chat_tokens(const Model & model, std::span<const chat::ChatMessage> messages, bool add_generation_prompt,
                                        const ThinkingChoice & thinking, std::string_view tools) {
    const Tokenizer & tok = model.tokenizer();
    std::vector<int32_t> tokens = tok.encode(render_chat_text(model, messages, add_generation_prompt, thinking, tools), true, true);
    if (tokens.size() >= 2 && tokens[0] == tok.bos() && tokens[1] == tok.bos()) tokens.erase(tokens.begin());
    return tokens;
}

}  // namespace lr
