#pragma once
// Chat templates: turning a conversation into the prompt text a model was trained on.
// A GGUF chat model carries its template as Jinja source (tokenizer.chat_template).
// ChatTemplate renders it as Hugging Face's apply_chat_template does (trim_blocks and
// lstrip_blocks on; messages, add_generation_prompt, bos_token and eos_token defined, and
// enable_thinking / reasoning_effort / tools when the caller sets them; documents left
// undefined), and falls back to a builtin renderer of the template's family (or of the
// model's architecture) when the source cannot be used.

#include <ctime>
#include <functional>
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
    // An assistant reply's thinking, kept apart from its content (ThinkingSplitter). Templates
    // see it as `reasoning_content` and `thinking` when not empty, and decide: Qwen3 and
    // Qwen3.5 render it only for replies after the last user message, gpt-oss drops it from
    // earlier turns, Gemma 4 from every reply without tool calls.
    std::string thinking;
    // An assistant's tool calls: a JSON array of OpenAI's {"id", "type", "function": {"name",
    // "arguments"}}, the arguments an object (templates iterate them); the template sees it
    // as `tool_calls`. Empty: none.
    std::string tool_calls;
    std::string tool_call_id;  // a "tool" message's: the call it answers
};

struct ChatRenderOptions {
    bool add_generation_prompt = true;  // end with the header that opens the assistant's turn
    std::string bos_token;              // the model's BOS/EOS text, for templates that write them
    std::string eos_token;
    // `enable_thinking` for the template (Qwen3, Qwen3.5, Gemma 4); undefined when unset, so
    // each template keeps its default (Qwen3 thinks, Gemma 4 does not).
    std::optional<bool> enable_thinking;
    // `reasoning_effort` for the template (gpt-oss: "low", "medium", "high"); undefined when
    // empty (gpt-oss then says "medium").
    std::string reasoning_effort;
    // The tools the model may call: a JSON array as OpenAI's `tools`, the template's `tools`;
    // empty: undefined.
    std::string tools;
    // The clock of strftime_now() and of the builtins that write a date; empty: local time.
    std::function<std::tm()> local_time;
};

// Prompt formats with a builtin renderer (chat_builtin.h describes each). Shown to users by
// chat_family_name(); not written to disk.
enum class ChatFamily { plain, llama2, llama3, chatml, mistral, phi3, gemma, zephyr, deepseek, qwen3, harmony, mistral3, qwen35, gemma4 };

std::string_view chat_family_name(ChatFamily family);

// The family a template belongs to, from tell-tale markers in its source (<|im_start|>,
// <|start_header_id|>, [INST], <start_of_turn>, <|turn>, <|channel|>, [SYSTEM_PROMPT]...);
// plain when none is found.
ChatFamily detect_family(std::string_view jinja_source);

// The family of a model architecture (general.architecture) whose models all share one
// prompt format: qwen2* -> chatml, qwen35 and qwen35moe (Qwen3.5, Qwen3.6) -> qwen35, other
// qwen3* -> qwen3, gemma4 -> gemma4, other gemma* -> gemma, gpt-oss -> harmony, mistral3 ->
// mistral3, phi3 -> phi3. nullopt for the others ("llama" is used with several formats).
std::optional<ChatFamily> family_of_architecture(std::string_view architecture);

class ChatTemplate {
public:
    // A model's Jinja template. Status invalid_argument "line L:C: what" when it does not parse.
    static Result<ChatTemplate> parse(std::string_view jinja_source);

    // The builtin renderer of a family; never fails to render.
    static ChatTemplate builtin(ChatFamily family);

    // What the engine loads: the model's template when it parses, otherwise the builtin of
    // detect_family(source), or when that finds nothing (an empty or unrecognised source) of
    // family_of_architecture(architecture), else plain. `fallback_reason`, when given,
    // receives why the builtin was chosen, or is cleared.
    static ChatTemplate for_model(std::string_view jinja_source, std::string_view architecture, std::string * fallback_reason = nullptr);
    static ChatTemplate for_model(std::string_view jinja_source, std::string * fallback_reason = nullptr) {
        return for_model(jinja_source, {}, fallback_reason);
    }

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
