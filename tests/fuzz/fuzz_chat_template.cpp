// libFuzzer entry point for the chat templates: any Jinja source, rendered over any
// conversation, gives text or an error; never a crash, a hang or unbounded memory. The
// render budgets are those of RenderLimits scaled down, so that each input takes
// milliseconds: the code paths are the same, and a budget that failed to hold would show
// as a timeout or as libFuzzer's memory limit. The model's template is also chosen as the
// engine does (ChatTemplate::for_model), and the conversation rendered by that template's
// builtin family, which never fails.
//
// Input: the template source, then optionally a NUL byte and the messages, separated by
// \x01: each message's first byte picks its role, the rest is its content, and a \x02 in
// it starts its thinking. Without a NUL a fixed conversation is rendered.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/chat/jinja_template.h"

namespace {

using lr::chat::ChatMessage;

constexpr lr::jinja::RenderLimits kLimits{.max_string_bytes = size_t{1} << 20,
                                          .max_steps = 100'000,
                                          .max_depth = 500,
                                          .max_list_items = 65536};

std::vector<ChatMessage> messages_of(std::string_view spec) {
    static const char * const roles[] = {"system", "user", "assistant", "tool", "developer", ""};
    std::vector<ChatMessage> out;
    while (!spec.empty()) {
        const size_t end = spec.find('\x01');
        std::string_view m = spec.substr(0, end);
        spec = end == std::string_view::npos ? std::string_view() : spec.substr(end + 1);
        if (m.empty()) continue;
        const char * role = roles[static_cast<unsigned char>(m[0]) % std::size(roles)];
        m.remove_prefix(1);
        const size_t thinking = m.find('\x02');
        out.push_back({role, std::string(m.substr(0, thinking)),
                       thinking == std::string_view::npos ? std::string() : std::string(m.substr(thinking + 1))});
    }
    return out;
}

const std::vector<ChatMessage> kConversation = {
    {"system", "You are terse.", ""},
    {"user", "What is 2 + 2?", ""},
    {"assistant", "4", "Easy: two and two."},
    {"user", "And 3 + 3?", ""},
};

// ChatTemplate::render's context (chat_template.h), for renders with kLimits.
lr::jinja::Value context_of(const std::vector<ChatMessage> & messages, const lr::chat::ChatRenderOptions & options) {
    lr::jinja::Array list;
    for (const ChatMessage & m : messages) {
        auto message = std::make_shared<lr::jinja::Object>();
        message->set("role", lr::jinja::Value(m.role));
        message->set("content", lr::jinja::Value(m.content));
        if (!m.thinking.empty()) message->set("reasoning_content", lr::jinja::Value(m.thinking));
        list.emplace_back(message);
    }
    lr::jinja::Value context = lr::jinja::Value::object();
    lr::jinja::Object & vars = context.as_mutable_object();
    vars.set("messages", lr::jinja::Value(std::move(list)));
    vars.set("add_generation_prompt", lr::jinja::Value(options.add_generation_prompt));
    vars.set("bos_token", lr::jinja::Value(options.bos_token));
    vars.set("eos_token", lr::jinja::Value(options.eos_token));
    if (options.enable_thinking) vars.set("enable_thinking", lr::jinja::Value(*options.enable_thinking));
    return context;
}

[[noreturn]] void fail(const char * what) {
    std::fprintf(stderr, "fuzz_chat_template: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string_view input(reinterpret_cast<const char *>(data), size);
    const size_t nul = input.find('\0');
    const std::string_view source = input.substr(0, nul);
    const std::vector<ChatMessage> messages = nul == std::string_view::npos ? kConversation : messages_of(input.substr(nul + 1));
    const lr::chat::ChatRenderOptions options{
        .add_generation_prompt = (size & 1) != 0,
        .bos_token = "<s>",
        .eos_token = "</s>",
        .enable_thinking = (size & 2) != 0 ? std::optional<bool>((size & 4) != 0) : std::nullopt,
        .local_time = [] { return std::tm{.tm_mday = 2, .tm_mon = 11, .tm_year = 126}; },
    };

    const auto program = lr::jinja::Template::parse(source);
    if (program.ok()) {
        const auto rendered = program->render(context_of(messages, options),
                                              lr::jinja::RenderOptions{.limits = kLimits, .local_time = options.local_time});
        if (rendered.ok() && rendered->size() > kLimits.max_string_bytes) fail("the output is over max_string_bytes");
        if (!rendered.ok() && rendered.status().message().empty()) fail("a render error without a message");
    } else if (program.status().message().empty()) {
        fail("a parse error without a message");
    }

    // The engine's choice of template only parses: rendering it here would use the full
    // budgets. Its builtin family renders any conversation.
    const lr::chat::ChatTemplate chosen = lr::chat::ChatTemplate::for_model(source, "llama");
    const auto builtin = lr::chat::ChatTemplate::builtin(chosen.family()).render(messages, options);
    if (!builtin.ok()) fail("a builtin renderer failed");
    return 0;
}
