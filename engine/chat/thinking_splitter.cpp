#include "engine/chat/thinking_splitter.h"

#include <algorithm>
#include <array>
#include <optional>
#include <span>

#include "engine/chat/jinja_strings.h"

namespace lr::chat {

namespace {

constexpr std::string_view think_open = "<think>";
constexpr std::string_view think_close = "</think>";
constexpr std::string_view bracket_open = "[THINK]";
constexpr std::string_view bracket_close = "[/THINK]";
constexpr std::string_view channel_open = "<|channel>thought";
constexpr std::string_view channel_close = "<channel|>";

// The opening and closing tag of a tag format (think tags, brackets, Gemma 4's channel).
struct TagPair {
    std::string_view open;
    std::string_view close;
};

std::optional<TagPair> tags_of(ThinkingFormat format) {
    switch (format) {
        case ThinkingFormat::think_tags: return TagPair{think_open, think_close};
        case ThinkingFormat::think_brackets: return TagPair{bracket_open, bracket_close};
        case ThinkingFormat::thought_channel: return TagPair{channel_open, channel_close};
        case ThinkingFormat::none:
        case ThinkingFormat::harmony: break;
    }
    return std::nullopt;
}

// Harmony's structure tokens (their text, as the tokenizer renders them).
constexpr std::string_view h_start = "<|start|>";
constexpr std::string_view h_channel = "<|channel|>";
constexpr std::string_view h_message = "<|message|>";
constexpr std::string_view h_end = "<|end|>";
constexpr std::string_view h_return = "<|return|>";
constexpr std::string_view h_call = "<|call|>";

constexpr std::array<std::string_view, 6> harmony_markers{h_start, h_channel, h_message, h_end, h_return, h_call};

bool is_ws(char c) { return jinja::is_space(c); }

// The longest end of `text` that is the start of one of `markers` (shorter than it).
size_t partial_marker_at_end(std::string_view text, std::span<const std::string_view> markers) {
    size_t best = 0;
    for (const std::string_view m : markers) {
        for (size_t n = std::min(text.size(), m.size() - 1); n > best; --n) {
            if (text.substr(text.size() - n) == m.substr(0, n)) {
                best = n;
                break;
            }
        }
    }
    return best;
}

}  // namespace

ThinkingFormat thinking_format_of(ChatFamily family) {
    switch (family) {
        case ChatFamily::qwen3:
        case ChatFamily::qwen35:
        case ChatFamily::chatml:
        case ChatFamily::deepseek: return ThinkingFormat::think_tags;
        case ChatFamily::mistral3: return ThinkingFormat::think_brackets;
        case ChatFamily::gemma4: return ThinkingFormat::thought_channel;
        case ChatFamily::harmony: return ThinkingFormat::harmony;
        default: return ThinkingFormat::none;
    }
}

bool prompt_opens_thinking(ThinkingFormat format, std::string_view prompt) {
    const std::optional<TagPair> tags = tags_of(format);
    if (!tags) return false;
    const size_t at = prompt.rfind(tags->open);
    return at != std::string_view::npos && prompt.find(tags->close, at) == std::string_view::npos;
}

ThinkingSplitter::ThinkingSplitter(ThinkingFormat format, bool in_thinking) : format_(format), starts_in_thinking_(in_thinking) {
    switch (format) {
        case ThinkingFormat::none: state_ = State::answer; break;
        case ThinkingFormat::think_tags:
        case ThinkingFormat::think_brackets:
        case ThinkingFormat::thought_channel:
            state_ = State::start;
            if (in_thinking) enter(State::thinking, true, true);
            break;
        case ThinkingFormat::harmony: state_ = State::header; break;
    }
}

void ThinkingSplitter::enter(State part, bool skip_ws, bool hold_ws) {
    state_ = part;
    skip_ws_ = skip_ws;
    hold_ws_ = hold_ws;
    pending_ws_.clear();
    const bool wrote = part == State::thinking ? wrote_thinking_ : wrote_answer_;
    separator_ = format_ == ThinkingFormat::harmony && wrote ? "\n\n" : "";
}

void ThinkingSplitter::write_text(std::string_view text, ThinkingSplit & out) {
    if (text.empty()) return;
    if (state_ == State::header) {
        header_ += text;
        return;
    }
    if (state_ == State::start) {
        // Whitespace may still come before an opening tag; anything else is the answer.
        const size_t first = std::find_if_not(text.begin(), text.end(), is_ws) - text.begin();
        if (first == text.size()) {
            start_ws_ += text;
            return;
        }
        enter(State::answer, false, false);
        out.answer += start_ws_;
        start_ws_.clear();
    }
    if (skip_ws_) {
        const size_t first = std::find_if_not(text.begin(), text.end(), is_ws) - text.begin();
        text.remove_prefix(first);
        if (text.empty()) return;
        skip_ws_ = false;
    }
    std::string & part = state_ == State::thinking ? out.thinking : out.answer;
    (state_ == State::thinking ? wrote_thinking_ : wrote_answer_) = true;
    part += separator_;
    separator_.clear();
    if (!hold_ws_) {
        part += text;
        return;
    }
    const size_t end = text.size() - (std::find_if_not(text.rbegin(), text.rend(), is_ws) - text.rbegin());
    if (end == 0) {
        pending_ws_ += text;
        return;
    }
    part += pending_ws_;
    part += text.substr(0, end);
    pending_ws_ = std::string(text.substr(end));
}

void ThinkingSplitter::on_marker(std::string_view marker) {
    if (format_ != ThinkingFormat::harmony) {
        if (marker == tags_of(format_)->open) {
            start_ws_.clear();
            enter(State::thinking, true, true);
        } else {
            enter(State::answer, true, false);  // the closing tag; the thinking's trailing space is dropped
        }
        return;
    }
    if (state_ != State::header) {
        // The end of a message, or the start of the next one without its <|end|>.
        state_ = State::header;
        header_.clear();
        channel_at_ = std::string::npos;
    }
    if (marker == h_channel) {
        channel_at_ = header_.size();
    } else if (marker == h_message) {
        std::string_view channel;
        if (channel_at_ != std::string::npos) {
            channel = jinja::strip(std::string_view(header_).substr(channel_at_), std::nullopt, true, false);
            channel = channel.substr(0, std::find_if(channel.begin(), channel.end(), is_ws) - channel.begin());
        }
        enter(channel == "analysis" ? State::thinking : State::answer, false, false);
        header_.clear();
        channel_at_ = std::string::npos;
    } else {  // <|start|>, <|end|>, <|return|>, <|call|>: a new header begins
        header_.clear();
        channel_at_ = std::string::npos;
    }
}

void ThinkingSplitter::scan(ThinkingSplit & out, bool final) {
    while (!buffer_.empty()) {
        // The tags that count in the current state.
        std::array<std::string_view, 6> active{};
        size_t n_active = 0;
        if (format_ == ThinkingFormat::harmony) {
            for (const std::string_view m : harmony_markers) active[n_active++] = m;
        } else if (const std::optional<TagPair> tags = tags_of(format_)) {
            if (state_ == State::start) active[n_active++] = tags->open;
            if (state_ == State::start || state_ == State::thinking) active[n_active++] = tags->close;
        }
        const std::span<const std::string_view> markers(active.data(), n_active);

        size_t at = std::string::npos;
        std::string_view found;
        for (const std::string_view m : markers) {
            const size_t p = buffer_.find(m);
            if (p < at) {
                at = p;
                found = m;
            }
        }
        const State before = state_;
        if (at != std::string::npos) {
            write_text(std::string_view(buffer_).substr(0, at), out);
            buffer_.erase(0, at);
            if (state_ != before) continue;  // text before the tag changed what counts: look again
            buffer_.erase(0, found.size());
            on_marker(found);
            continue;
        }
        const size_t hold = final ? 0 : partial_marker_at_end(buffer_, markers);
        write_text(std::string_view(buffer_).substr(0, buffer_.size() - hold), out);
        buffer_.erase(0, buffer_.size() - hold);
        if (state_ == before || hold == 0) break;
    }
}

ThinkingSplit ThinkingSplitter::push(std::string_view piece) {
    ThinkingSplit out;
    buffer_ += piece;
    scan(out, false);
    return out;
}

ThinkingSplit ThinkingSplitter::flush() {
    ThinkingSplit out;
    scan(out, true);
    if (state_ == State::start) out.answer += start_ws_;
    // A harmony reply without any message (a model that ignored the format): its text is
    // the answer rather than lost.
    if (state_ == State::header && !wrote_thinking_ && !wrote_answer_) out.answer += header_;
    *this = ThinkingSplitter(format_, starts_in_thinking_);
    return out;
}

ThinkingSplit split_thinking(ThinkingFormat format, std::string_view reply, bool in_thinking) {
    ThinkingSplitter splitter(format, in_thinking);
    ThinkingSplit out = splitter.push(reply);
    const ThinkingSplit rest = splitter.flush();
    out.thinking += rest.thinking;
    out.answer += rest.answer;
    return out;
}

}  // namespace lr::chat
