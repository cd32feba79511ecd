#include "engine/chat/tool_calls.h"

#include <memory>
#include <optional>

#include "engine/chat/jinja_json.h"

namespace lr::chat {
namespace {

constexpr std::string_view kToolCallClose = "</tool_call>";

std::string_view trim(std::string_view s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// One value as a JSON object's text, or nothing when it is not an object.
std::optional<std::string> object_text(const jinja::Value & v) {
    if (!v.is_mapping()) return std::nullopt;
    return jinja::to_json(v);
}

// {"name": "...", "arguments" (or Llama's "parameters"): {...} or "{...}"}
std::optional<ToolCall> hermes_call(std::string_view body) {
    const Result<jinja::Value> parsed = jinja::parse_json(trim(body));
    if (!parsed.ok() || !parsed->is_mapping()) return std::nullopt;
    const jinja::Value * name = parsed->as_object().find("name");
    if (!name || !name->is_string() || name->as_string().empty()) return std::nullopt;
    const jinja::Value * args = parsed->as_object().find("arguments");
    if (!args) args = parsed->as_object().find("parameters");
    ToolCall call{.name = name->as_string(), .arguments = "{}"};
    if (!args) return call;
    Result<jinja::Value> inner = *args;
    if (args->is_string()) inner = jinja::parse_json(args->as_string());  // arguments already as JSON text
    if (!inner.ok()) return std::nullopt;
    const std::optional<std::string> text = object_text(*inner);
    if (!text) return std::nullopt;
    call.arguments = *text;
    return call;
}

// <function=NAME> (<parameter=P>\nvalue\n</parameter>)* </function>; a value that reads as
// JSON (a number, true, a list...) is that value, anything else a string.
std::optional<ToolCall> xml_call(std::string_view body) {
    body = trim(body);
    constexpr std::string_view kOpen = "<function=", kClose = "</function>", kParam = "<parameter=", kParamEnd = "</parameter>";
    if (!body.starts_with(kOpen)) return std::nullopt;
    const size_t name_end = body.find('>');
    const size_t end = body.rfind(kClose);
    if (name_end == std::string_view::npos || end == std::string_view::npos || end < name_end) return std::nullopt;
    ToolCall call{.name = std::string(trim(body.substr(kOpen.size(), name_end - kOpen.size())))};
    if (call.name.empty()) return std::nullopt;
    auto args = std::make_shared<jinja::Object>();
    std::string_view rest = body.substr(name_end + 1, end - name_end - 1);
    for (rest = trim(rest); !rest.empty(); rest = trim(rest)) {
        if (!rest.starts_with(kParam)) return std::nullopt;
        const size_t key_end = rest.find('>');
        const size_t value_end = rest.find(kParamEnd);
        if (key_end == std::string_view::npos || value_end == std::string_view::npos || value_end < key_end) return std::nullopt;
        std::string_view value = rest.substr(key_end + 1, value_end - key_end - 1);
        if (value.starts_with('\n')) value.remove_prefix(1);
        if (value.ends_with('\n')) value.remove_suffix(1);
        const Result<jinja::Value> json = jinja::parse_json(value);
        args->set(std::string(trim(rest.substr(kParam.size(), key_end - kParam.size()))), json.ok() ? *json : jinja::Value(value));
        rest.remove_prefix(value_end + kParamEnd.size());
    }
    call.arguments = jinja::to_json(jinja::Value(std::move(args)));
    return call;
}

}  // namespace

std::string_view tool_call_format_name(ToolCallFormat format) {
    switch (format) {
        case ToolCallFormat::hermes: return "hermes";
        case ToolCallFormat::qwen_xml: return "qwen-xml";
        case ToolCallFormat::llama3_json: return "llama3-json";
        case ToolCallFormat::none: break;
    }
    return "";
}

ToolCallFormat tool_call_format_of(std::string_view rendered) {
    if (rendered.find(R"("parameters": dictionary of argument name)") != std::string_view::npos) return ToolCallFormat::llama3_json;
    if (rendered.find(kToolCallOpen) == std::string_view::npos) return ToolCallFormat::none;
    return rendered.find("<function=") != std::string_view::npos ? ToolCallFormat::qwen_xml : ToolCallFormat::hermes;
}

ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text) {
    ParsedToolCalls out;
    if (format == ToolCallFormat::llama3_json) {  // the whole reply is the call, or it is text
        std::string_view body = trim(text);
        if (body.starts_with(kPythonTag)) body.remove_prefix(kPythonTag.size());
        if (std::optional<ToolCall> call = hermes_call(body)) out.calls.push_back(std::move(*call));
        else out.content = std::string(text);
        return out;
    }
    const size_t first = text.find(kToolCallOpen);
    if (format == ToolCallFormat::none || first == std::string_view::npos) {
        out.content = std::string(text);
        return out;
    }
    size_t at = first;
    while (at != std::string_view::npos) {
        const size_t body = at + kToolCallOpen.size();
        const size_t close = text.find(kToolCallClose, body);
        // The last call may lack its closing tag (the model stopped right after it).
        const std::string_view inside = text.substr(body, close == std::string_view::npos ? std::string_view::npos : close - body);
        std::optional<ToolCall> call = format == ToolCallFormat::hermes ? hermes_call(inside) : xml_call(inside);
        const size_t next = close == std::string_view::npos ? std::string_view::npos : close + kToolCallClose.size();
        const std::string_view between = next == std::string_view::npos ? std::string_view() : text.substr(next);
        const size_t following = between.find(kToolCallOpen);
        // Only whitespace may stand between and after the calls.
        const bool clean = following == std::string_view::npos ? trim(between).empty() : trim(between.substr(0, following)).empty();
        if (!call || !clean) return {.content = std::string(text), .calls = {}};
        out.calls.push_back(std::move(*call));
        at = following == std::string_view::npos ? std::string_view::npos : next + following;
    }
    const std::string_view before = text.substr(0, first);
    out.content = std::string(before.substr(0, before.find_last_not_of(" \t\r\n") + 1));  // npos + 1: all whitespace, none
    return out;
}

}  // namespace lr::chat
