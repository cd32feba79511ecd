// libFuzzer entry point for reading tool calls out of a reply (chat/tool_calls.h), in each
// format: never a crash; either the calls, each with a name and arguments that are a JSON
// object, or no calls and the whole text as content.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/chat/jinja_json.h"
#include "engine/chat/tool_calls.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    using lr::chat::ToolCallFormat;
    for (const ToolCallFormat format : {ToolCallFormat::hermes, ToolCallFormat::qwen_xml, ToolCallFormat::llama3_json}) {
        const lr::chat::ParsedToolCalls p = lr::chat::parse_tool_calls(format, text);
        if (p.calls.empty()) {
            if (p.content != text) std::abort();  // nothing the model wrote is lost
            continue;
        }
        if (p.content.size() > text.size()) std::abort();
        for (const lr::chat::ToolCall & call : p.calls) {
            if (call.name.empty()) std::abort();
            const lr::Result<lr::jinja::Value> args = lr::jinja::parse_json(call.arguments);
            if (!args.ok() || !args->is_mapping()) std::abort();
        }
    }
    return 0;
}
