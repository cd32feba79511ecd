#include "reply_generator.h"

#include <algorithm>
#include <string>

#include "engine/chat/thinking_splitter.h"
#include "engine/model/model.h"
#include "engine/runtime/generator.h"

namespace lr {
namespace {

// The text of the prompt's last tokens: enough to see whether the template left the reply
// inside an opened thinking tag (Qwen3.5's "<think>\n").
std::string prompt_tail(const Model & model, std::span<const int32_t> tokens) {
    constexpr size_t kTailTokens = 16;
    std::string text;
    for (size_t i = tokens.size() - std::min(tokens.size(), kTailTokens); i < tokens.size(); ++i) {
        text += model.tokenizer().token_to_piece(tokens[i], true);
    }
    return text;
}

}  // namespace

chat::ThinkingSplitter reply_splitter(const Model & model, std::span<const int32_t> prompt) {
    const chat::ThinkingFormat format = chat::thinking_format_of(model.chat_template().family());
    return chat::ThinkingSplitter(format, chat::prompt_opens_thinking(format, prompt_tail(model, prompt)));
}

Result<GenerateResult> generate_reply(Session & session, const GenerateParams & params, const ThinkingSink & thinking_sink,
                                      const TokenSink & sink, std::stop_token stop) {
    chat::ThinkingSplitter splitter = reply_splitter(session.model(), session.tokens());
    std::string thinking, answer;
    auto deliver = [&](int32_t token, const chat::ThinkingSplit & split) {
        thinking += split.thinking;
        answer += split.answer;
        if (!split.thinking.empty() && thinking_sink) thinking_sink(split.thinking);
        return !sink || sink(token, split.answer);
    };
    LR_ASSIGN_OR_RETURN(GenerateResult result,
                        generate(
                            session, params, [&](int32_t token, std::string_view piece) { return deliver(token, splitter.push(piece)); },
                            stop));
    if (const chat::ThinkingSplit rest = splitter.flush(); !rest.empty()) deliver(-1, rest);
    result.text = std::move(answer);
    result.thinking = std::move(thinking);
    return result;
}

}  // namespace lr
