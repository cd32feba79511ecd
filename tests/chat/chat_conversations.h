#pragma once
// What the chat template tests share: the shared chat templates and the fixed conversations
// they are rendered with.

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <QString>

#include "engine/chat/chat_template.h"

namespace lr::test {

inline std::string read_template(const QString & name) {
    std::ifstream in(std::string(LONGREAD_SHARED_DIR) + "/data/chat-templates/" + name.toStdString(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The conversations, by name. The last user turn ends in a newline so that templates which
// trim content (Llama 3, Gemma, Command R) and those that do not can be told apart.
inline std::vector<chat::ChatMessage> conversation(const QString & name) {
    const chat::ChatMessage system{"system", "You are a helpful assistant."};
    const chat::ChatMessage hello{"user", "Hello!"};
    const chat::ChatMessage hi{"assistant", "Hi there."};
    const chat::ChatMessage question{"user", "What is 2+2?\n"};
    if (name == "full") return {system, hello, hi, question};
    if (name == "user") return {hello};
    if (name == "no_system") return {hello, hi, question};
    if (name == "assistant_first") return {hi, hello};
    // A reply whose thinking is still in its text, then a new question.
    if (name == "think_in_text") return {hello, {"assistant", "<think>\nGreet back.\n</think>\n\nHi there."}, question};
    // A reply whose thinking was kept apart (ChatMessage::thinking), then a new question.
    if (name == "think_apart") return {hello, {"assistant", "Hi there.", "Greet back."}, question};
    // The reply being written: the last message, with its thinking.
    if (name == "reply") return {{"user", "What is 2+2?"}, {"assistant", "4.", "Add."}};
    // Two replies after the last question, the first without thinking.
    if (name == "two_replies") return {{"user", "What is 2+2?"}, {"assistant", "Let me see."}, {"assistant", "4.", "Add."}};
    // A developer message where the system message would be (Gemma 4 and gpt-oss take it so).
    if (name == "developer") return {{"developer", " Be brief. "}, hello};
    // A Gemma 4 reply whose thought channel is still in its text, then a new question.
    if (name == "channel_in_text") return {hello, {"assistant", "<|channel>thought\nGreet back.<channel|>Hi there."}, question};
    return {};
}

}  // namespace lr::test
