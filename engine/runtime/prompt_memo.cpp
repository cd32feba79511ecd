#include "prompt_memo.h"

#include <algorithm>
#include <functional>

#include "engine/runtime/chat_prompt.h"

namespace lr {
namespace {

uint64_t content_hash(const Conversation & c) {
    const uint64_t title = std::hash<std::string_view>{}(c.document_title);
    return title * 0x9e3779b97f4a7c15ull ^ std::hash<std::string_view>{}(c.document_text);
}

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Where the document's text is in the rendered prompt: its first byte there and which byte
// of the document that is (templates may trim a message's surrounding whitespace).
struct Located {
    size_t begin = std::string::npos;
    size_t offset = 0;
    size_t size = 0;
};
Located locate(std::string_view rendered, const Conversation & c) {
    const std::string_view document = c.document_text;
    size_t lead = 0;
    while (lead < document.size() && is_space(document[lead])) ++lead;
    size_t end = document.size();
    while (end > lead && is_space(document[end - 1])) --end;
    const std::string_view core = document.substr(lead, end - lead);
    if (core.empty()) return {};
    // After the text that introduces it (so that a document that is a word of that text is
    // not found there).
    const size_t intro = rendered.find(document_context(c.document_title, ""));
    const size_t at = rendered.find(core, intro == std::string_view::npos ? 0 : intro);
    if (at == std::string_view::npos) return {};
    // The whitespace the template kept around the document belongs to it too.
    size_t before = 0;
    while (before < lead && at > before && rendered[at - before - 1] == document[lead - before - 1]) ++before;
    size_t after = 0;
    while (end + after < document.size() && at + core.size() + after < rendered.size() &&
           rendered[at + core.size() + after] == document[end + after]) {
        ++after;
    }
    return {.begin = at - before, .offset = lead - before, .size = core.size() + before + after};
}

void drop_double_bos(EncodedText & e, int32_t bos) {
    if (e.tokens.size() < 2 || e.tokens[0] != bos || e.tokens[1] != bos) return;
    e.tokens.erase(e.tokens.begin());
    e.spans.erase(e.spans.begin());
    e.resume_points.clear();  // their token counts no longer hold
}

}  // namespace

TextSpan PromptTokens::document_span(size_t i, size_t document_size) const {
    const TextSpan t = encoded.spans[i];
    const auto to_document = [&](size_t byte) {
        const int64_t at = int64_t(byte) - int64_t(document_begin) + int64_t(document_offset);
        return size_t(std::clamp<int64_t>(at, 0, int64_t(document_size)));
    };
    return {to_document(t.begin), to_document(t.end)};
}

const PromptMemo::Entry & PromptMemo::entry_for(const Model & model, const Conversation & conversation) {
    const uint64_t hash = content_hash(conversation);
    const chat::ChatTemplate & tmpl = model.chat_template();
    const auto same = [&](const Entry & e) {
        return e.content_hash == hash && e.model_identity == model.identity() && e.family == tmpl.family() &&
               e.builtin_template == tmpl.is_builtin() && e.thinking == conversation.thinking && e.tools == conversation.tools;
    };
    if (auto it = std::find_if(entries_.begin(), entries_.end(), same); it != entries_.end()) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front();
    }
    Entry e{.content_hash = hash,
            .model_identity = model.identity(),
            .family = tmpl.family(),
            .builtin_template = tmpl.is_builtin(),
            .thinking = conversation.thinking,
            .tools = conversation.tools};
    const std::vector<chat::ChatMessage> system = conversation_messages(
        {.document_title = conversation.document_title, .document_text = conversation.document_text});
    // gpt-oss says its effort, Qwen its tools, before the document.
    e.text = render_chat_text(model, system, false, conversation.thinking, conversation.tools);
    e.encoded = model.tokenizer().encode_with_offsets(e.text, true, true);
    ++n_tokenized_;
    n_bytes_tokenized_ += e.text.size();
    entries_.push_front(std::move(e));
    if (entries_.size() > capacity_) entries_.pop_back();
    return entries_.front();
}

PromptTokens PromptMemo::tokens(const Model & model, const Conversation & conversation, std::string_view user_text,
                                bool add_generation_prompt) {
    const Tokenizer & tok = model.tokenizer();
    const std::string text = render_chat_text(model, conversation_messages(conversation, user_text), add_generation_prompt,
                                              conversation.thinking);
    PromptTokens p;
    if (!conversation.has_document()) {
        n_bytes_tokenized_ += text.size();
        p.encoded = tok.encode_with_offsets(text, true, true);
        drop_double_bos(p.encoded, tok.bos());
        return p;
    }
    const Entry & e = entry_for(model, conversation);
    p.encoded = tok.encode_reusing(e.encoded, e.text, text, true, true);
    n_bytes_tokenized_ += text.size() - p.encoded.reused_bytes;
    drop_double_bos(p.encoded, tok.bos());
    const Located doc = locate(text, conversation);
    if (doc.begin == std::string::npos) return p;
    p.document_begin = doc.begin;
    p.document_offset = doc.offset;
    const std::vector<TextSpan> & spans = p.encoded.spans;
    const auto first = std::partition_point(spans.begin(), spans.end(), [&](const TextSpan & t) { return t.end <= doc.begin; });
    const auto end = std::partition_point(first, spans.end(), [&](const TextSpan & t) { return t.begin < doc.begin + doc.size; });
    p.first_document_token = size_t(first - spans.begin());
    p.end_document_token = size_t(end - spans.begin());
    return p;
}

}  // namespace lr
