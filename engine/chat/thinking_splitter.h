#pragma once
// A reply's thinking told apart from its answer, as the reply streams in. Models that think
// write it in their reply's text:
// - think tags (Qwen3, QwQ, DeepSeek R1): "<think>\nthinking\n</think>\n\nanswer". Templates
//   that end their prompt inside the tag ("<think>\n": Qwen3.5, DeepSeek R1) make the reply
//   start in the thinking; prompt_opens_thinking() says so.
// - [THINK]...[/THINK] (Ministral 3 Reasoning, Magistral), the same way.
// - Gemma 4's thought channel: "<|channel>thought\nthinking<channel|>answer" (llama.cpp's
//   thinking tags for Gemma 4 are "<|channel>thought" and "<channel|>"), the same way; a
//   prompt that ends in an empty channel ("<|channel>thought\n<channel|>", thinking off)
//   leaves the reply in the answer.
// - harmony (gpt-oss): messages "<|channel|>analysis<|message|>thinking<|end|>" and
//   "<|start|>assistant<|channel|>final<|message|>answer", after a prompt that ends with
//   "<|start|>assistant". The analysis channel is thinking; final, commentary and any other
//   channel are answer. Headers (role, channel, recipient, <|constrain|>) are dropped.
//
// The splitter is a pure function of the text: fed in any pieces (tokens, characters), the
// concatenated outputs of push() and flush() are always those of split_thinking() on the
// whole text. A piece that may be the start of a tag is held back until the next piece
// decides it, so nothing is shown that later turns out to be a tag.
//
// Tags count only where the format puts them: think tags (and brackets, and Gemma 4's
// channel) open the thinking only before any answer text (whitespace aside) and close it
// once; later tags are answer text. With think tags the thinking is trimmed of surrounding
// whitespace and the answer of the whitespace after the closing tag; a reply that never
// closes its thinking is all thinking. Harmony message texts are kept as they are; messages
// of the same kind are joined with "\n\n".

#include <string>
#include <string_view>

#include "engine/chat/chat_template.h"

namespace lr::chat {

enum class ThinkingFormat {
    none,             // the whole reply is answer
    think_tags,       // <think> ... </think>
    think_brackets,   // [THINK] ... [/THINK]
    thought_channel,  // Gemma 4: <|channel>thought ... <channel|>
    harmony,          // gpt-oss channels
};

// The format replies of a template family use: qwen3, qwen35, chatml and deepseek ->
// think_tags, mistral3 -> think_brackets, gemma4 -> thought_channel, harmony -> harmony,
// others none.
ThinkingFormat thinking_format_of(ChatFamily family);

// True when `prompt` (a rendered chat prompt) leaves the reply inside the thinking: its last
// opening tag is not closed (Qwen3.5's and DeepSeek R1's "<think>\n" generation prompt).
// Gemma 4's template never ends so (its model writes "<|channel>thought" itself).
bool prompt_opens_thinking(ThinkingFormat format, std::string_view prompt);

// What a piece of reply adds to each part.
struct ThinkingSplit {
    std::string thinking;
    std::string answer;

    bool empty() const { return thinking.empty() && answer.empty(); }
};

class ThinkingSplitter {
public:
    // `in_thinking`: the reply starts inside the thinking (prompt_opens_thinking).
    explicit ThinkingSplitter(ThinkingFormat format, bool in_thinking = false);

    // The next piece of the reply's text; returns what is now known of each part.
    ThinkingSplit push(std::string_view piece);
    // The end of the reply: what was held back (a partial tag is text after all). The
    // splitter is then as new, for the next reply.
    ThinkingSplit flush();

    // True while the reply is in its thinking (for a "thinking..." indicator).
    bool in_thinking() const { return state_ == State::thinking; }

private:
    enum class State {
        start,     // think tags: only whitespace yet, an opening tag may come
        thinking,  // inside the thinking
        answer,    // after the thinking, or no thinking at all
        header,    // harmony: between messages, up to <|message|>
    };

    // Decides as much of buffer_ as can be decided (all of it when `final`).
    void scan(ThinkingSplit & out, bool final);
    // Text of the current state: to a part, trimmed as the format says, or into a header.
    void write_text(std::string_view text, ThinkingSplit & out);
    void on_marker(std::string_view marker);
    // Enters the thinking or the answer with its whitespace rules; a harmony message of a
    // part that has text already is set apart from it by a blank line.
    void enter(State part, bool skip_ws, bool hold_ws);

    ThinkingFormat format_;
    bool starts_in_thinking_ = false;
    State state_ = State::answer;
    std::string buffer_;                     // text not decided yet: the start of a tag, maybe
    std::string start_ws_;                   // think tags: whitespace seen in State::start
    std::string header_;                     // harmony: the current header's text
    size_t channel_at_ = std::string::npos;  // harmony: where the channel name starts in header_
    bool skip_ws_ = false;                   // drop whitespace until the part's first other character
    bool hold_ws_ = false;                   // hold whitespace back until more text follows (trailing trim)
    std::string pending_ws_;                 // the whitespace held back
    std::string separator_;                  // written before the part's next text
    bool wrote_thinking_ = false;
    bool wrote_answer_ = false;
};

// The whole reply at once (what a streamed split adds up to).
ThinkingSplit split_thinking(ThinkingFormat format, std::string_view reply, bool in_thinking = false);

}  // namespace lr::chat
