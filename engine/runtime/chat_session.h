#pragma once
// A chat on top of a Session: the conversation is rendered with the model's chat template
// on every turn and synced into the session, so the KV cache of everything already said
// is reused and only the new message is evaluated.

#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/session.h"

namespace lr {

class ChatSession {
public:
    explicit ChatSession(Session & session) : session_(session) {}

    std::vector<chat::ChatMessage> & messages() { return messages_; }
    const std::vector<chat::ChatMessage> & messages() const { return messages_; }

    // The prompt tokens for the conversation so far plus the assistant's opening.
    std::vector<int32_t> prompt_tokens() const;

    // Adds the user's message, evaluates the prompt and generates the reply, which is
    // appended to the conversation (also when stopped: the partial reply stays).
    // context_full when the conversation itself no longer fits.
    Result<GenerateResult> reply(const std::string & user_message, const GenerateParams & params, const TokenSink & sink,
                                 const ProgressFn & progress = {}, std::stop_token stop = {});

private:
    Session & session_;
    std::vector<chat::ChatMessage> messages_;
};

// The model's template applied to `messages`, tokenized with special tokens parsed and a
// single BOS (templates that write the BOS text themselves do not get a second one).
std::vector<int32_t> render_chat_tokens(const Model & model, std::span<const chat::ChatMessage> messages,
                                        bool add_generation_prompt);

}  // namespace lr
