#pragma once
// Tool calls in a model's reply, in the formats chat templates teach: Hermes' (Qwen2.5,
// Qwen3, Hermes and their fine-tunes), <tool_call>{"name": ..., "arguments": {...}}</tool_call>;
// Qwen3-Coder's and Qwen3.5's XML, <tool_call><function=NAME><parameter=P>value
// </parameter>...</function></tool_call>; and Llama 3.1-3.3's, a reply that is one JSON
// object {"name": ..., "parameters": {...}} (after <|python_tag|> or not). Which one a model
// uses is read from the prompt its template renders for a tool, not from the template's name.

#include <string>
#include <string_view>
#include <vector>

namespace lr::chat {

enum class ToolCallFormat { none, hermes, qwen_xml, llama3_json };

// "hermes", "qwen-xml", "llama3-json", or "" for none.
std::string_view tool_call_format_name(ToolCallFormat format);

// The format that `rendered`, a prompt rendered with a tool, teaches its model.
ToolCallFormat tool_call_format_of(std::string_view rendered);

// Where a call starts: anywhere in Hermes' and Qwen3.5's replies; Llama 3's reply is a call
// when it starts with "{" or the python tag.
inline constexpr std::string_view kToolCallOpen = "<tool_call>";
inline constexpr std::string_view kPythonTag = "<|python_tag|>";

struct ToolCall {
    std::string name;
    std::string arguments;  // a JSON object, as text
};

struct ParsedToolCalls {
    std::string content;  // the text before the first call, without the whitespace that ends it
    std::vector<ToolCall> calls;
};

// A reply's text parsed: every call in order. A malformed call leaves the whole text as
// content and no calls, so nothing the model wrote is lost.
ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text);

}  // namespace lr::chat
