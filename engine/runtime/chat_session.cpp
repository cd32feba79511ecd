#include "chat_session.h"

namespace lr {

std::vector<int32_t> render_chat_tokens(const Model & model, std::span<const chat::ChatMessage> messages,
                                        bool add_generation_prompt) {
    const Tokenizer & tok = model.tokenizer();
    chat::ChatRenderOptions options{.add_generation_prompt = add_generation_prompt};
    if (tok.bos() >= 0) options.bos_token = tok.token_to_piece(tok.bos(), true);
    if (tok.eos() >= 0) options.eos_token = tok.token_to_piece(tok.eos(), true);
    const std::string text = model.chat_template().render_or_fallback(messages, options);
    std::vector<int32_t> tokens = tok.encode(text, true, true);
    if (tokens.size() >= 2 && tokens[0] == tok.bos() && tokens[1] == tok.bos()) tokens.erase(tokens.begin());
    return tokens;
}

std::vector<int32_t> ChatSession::prompt_tokens() const {
    return render_chat_tokens(session_.model(), messages_, true);
}

Result<GenerateResult> ChatSession::reply(const std::string & user_message, const GenerateParams & params,
                                          const TokenSink & sink, const ProgressFn & progress, std::stop_token stop) {
    messages_.push_back({"user", user_message});
    const std::vector<int32_t> prompt = prompt_tokens();
    if (prompt.size() >= session_.n_ctx()) {
        messages_.pop_back();
        return error(StatusCode::context_full, "the conversation needs " + std::to_string(prompt.size()) +
                     " tokens but the context holds " + std::to_string(session_.n_ctx()) +
                     ": start a new chat, raise the context size, or enable a cache policy");
    }
    Status s = session_.sync(prompt, progress, stop);
    if (s.code() == StatusCode::cancelled) {
        messages_.push_back({"assistant", ""});
        return GenerateResult{.reason = StopReason::cancelled};
    }
    if (!s.ok()) {
        messages_.pop_back();
        return s;
    }
    Result<GenerateResult> result = generate(session_, params, sink, stop);
    if (result.ok()) messages_.push_back({"assistant", result->text});
    return result;
}

}  // namespace lr
