#pragma once
// Chat templates: turning a conversation into the prompt text a model was trained on.
// A GGUF chat model carries its template as Jinja source (tokenizer.chat_template).
// ChatTemplate renders it as Hugging Face's apply_chat_template does (trim_blocks and
// lstrip_blocks on; messages, add_generation_prompt, bos_token and eos_token defined;
// tools and documents left undefined), and falls back to a builtin renderer of the
// template's family when the source cannot be used.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/chat/jinja_template.h"
#include "engine/common/status.h"

namespace lr::chat {

struct ChatMessage {
    std::string role;  // "system", "user", "assistant" (templates may know others, e.g. "tool")
    std::string content;
};

struct ChatRenderOptions {
    bool add_generation_prompt = true;  // end with the header that opens the assistant's turn
    std::string bos_token;              // the model's BOS/EOS text, for templates that write them
    std::string eos_token;
};

// Prompt formats with a builtin renderer (chat_builtin.h describes each).
enum class ChatFamily { plain, llama2, llama3, chatml, mistral, phi3, gemma, zephyr, deepseek };

std::string_view chat_family_name(ChatFamily family);

// The family a template belongs to, from tell-tale markers in its source (<|im_start|>,
// <|start_header_id|>, [INST], <start_of_turn>...); plain when none is found.
ChatFamily detect_family(std::string_view jinja_source);

class ChatTemplate {
public:
    // A model's Jinja template. Status invalid_argument "line L:C: what" when it does not parse.
    static Result<ChatTemplate> parse(std::string_view jinja_source);

    // The builtin renderer of a family; never fails to render.
    static ChatTemplate builtin(ChatFamily family);

    // What the engine loads: the model's template when it parses, otherwise the builtin of
    // detect_family(source) (plain for an empty or unrecognised source). `fallback_reason`,
    // when given, receives why the builtin was chosen, or is cleared.
    static ChatTemplate for_model(std::string_view jinja_source, std::string * fallback_reason = nullptr);

    // Renders the conversation. A Jinja template may fail: its raise_exception(message)
    // gives invalid_argument with exactly that message (Gemma's "System role not supported"),
    // other errors "line L:C: what". A builtin never fails.
    Result<std::string> render(std::span<const ChatMessage> messages, const ChatRenderOptions & options) const;

    // What the engine calls for each prompt: render(), and when that fails the builtin of
    // family(). `fallback_reason`, when given, receives render()'s error, or is cleared.
    std::string render_or_fallback(std::span<const ChatMessage> messages, const ChatRenderOptions & options,
                                   std::string * fallback_reason = nullptr) const;

    // The builtin's family, or the family detected from the Jinja source.
    ChatFamily family() const { return family_; }
    bool is_builtin() const { return !program_.has_value(); }

private:
    ChatTemplate(std::optional<jinja::Template> program, ChatFamily family) : program_(std::move(program)), family_(family) {}

    std::optional<jinja::Template> program_;  // none for a builtin
    ChatFamily family_ = ChatFamily::plain;
};

}  // namespace lr::chat
