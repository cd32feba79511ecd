#include "completion_request.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace lr::server {
namespace {

using nlohmann::json;

// Either nothing (absent or null), or the member if it has the right JSON type.
struct FieldReader {
    const json & body;
    std::optional<ApiError> error;

    const json * find(const char * name) {
        const auto it = body.find(name);
        return it == body.end() || it->is_null() ? nullptr : &*it;
    }
    std::optional<double> number(const char * name, double min, double max) {
        const json * v = find(name);
        if (!v || error) return std::nullopt;
        if (!v->is_number() || !std::isfinite(v->get<double>())) {
            error = invalid_request(std::string(name) + " must be a number", name);
            return std::nullopt;
        }
        const double x = v->get<double>();
        if (x < min || x > max) {
            error = invalid_request(std::string(name) + " must be between " + json(min).dump() + " and " + json(max).dump() + ", got " +
                                        v->dump(),
                                    name);
            return std::nullopt;
        }
        return x;
    }
    std::optional<long long> integer(const char * name, long long min, long long max) {
        const json * v = find(name);
        if (!v || error) return std::nullopt;
        if (!v->is_number_integer()) {
            error = invalid_request(std::string(name) + " must be an integer", name);
            return std::nullopt;
        }
        const long long x = v->get<long long>();
        if (x < min || x > max) {
            error = invalid_request(std::string(name) + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
                                        ", got " + v->dump(),
                                    name);
            return std::nullopt;
        }
        return x;
    }
    std::optional<bool> boolean(const char * name) {
        const json * v = find(name);
        if (!v || error) return std::nullopt;
        if (!v->is_boolean()) {
            error = invalid_request(std::string(name) + " must be true or false", name);
            return std::nullopt;
        }
        return v->get<bool>();
    }
};

// A message's content: a string, or an array of parts of which only text is understood.
std::optional<std::string> message_text(const json & content, std::string & problem) {
    if (content.is_null()) return std::string();
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) {
        problem = "must be a string or an array of text parts";
        return std::nullopt;
    }
    std::string text;
    for (const json & part : content) {
        // NOTE: not part.value("type", ""), which throws when "type" is not a string.
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") || !part["text"].is_string()) {
            problem = "has a part that is not text (only text parts are supported)";
            return std::nullopt;
        }
        text += part["text"].get<std::string>();
    }
    return text;
}

// {"function": {"name": "...", ...}}: a tool's or a call's function, named.
bool has_named_function(const json & item) {
    return item.is_object() && item.contains("function") && item["function"].is_object() && item["function"].contains("name") &&
           item["function"]["name"].is_string();
}

// An assistant message's tool_calls as the template reads them: each call's arguments (JSON
// text in the API) as an object, which templates iterate.
std::variant<std::string, ApiError> assistant_tool_calls(const json & calls, const std::string & param) {
    if (!calls.is_array()) return invalid_request(param + " must be an array", param);
    json out = json::array();
    for (const json & call : calls) {
        if (!has_named_function(call)) {
            return invalid_request(param + " must hold {\"function\": {\"name\", \"arguments\"}} objects", param);
        }
        json c = call;
        json & f = c["function"];
        if (f.contains("arguments") && f["arguments"].is_string()) {
            const json parsed = json::parse(f["arguments"].get<std::string>(), nullptr, false);
            if (!parsed.is_discarded()) f["arguments"] = parsed;
        }
        if (!f.contains("arguments") || f["arguments"].is_null()) f["arguments"] = json::object();
        out.push_back(std::move(c));
    }
    return out.dump();
}

std::optional<ApiError> read_messages(const json & body, CompletionRequest & out) {
    const auto it = body.find("messages");
    if (it == body.end() || !it->is_array() || it->empty()) return invalid_request("messages must be a non-empty array", "messages");
    const json & messages = *it;
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string param = "messages[" + std::to_string(i) + "]";
        const json & m = messages[i];
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
            return invalid_request(param + " must be an object with a role", param + ".role");
        }
        std::string role = m["role"].get<std::string>();
        if (role == "developer") role = "system";
        if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
            return invalid_request(param + ".role '" + role + "' is not supported (system, developer, user, assistant, tool)",
                                   param + ".role");
        }
        std::string problem;
        const std::optional<std::string> text = message_text(m.contains("content") ? m["content"] : json(), problem);
        if (!text) return invalid_request(param + ".content " + problem, param + ".content");
        ChatTurn turn{.role = role, .text = *text};
        if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
            turn.thinking = m["reasoning_content"].get<std::string>();
        if (role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null()) {
            auto calls = assistant_tool_calls(m["tool_calls"], param + ".tool_calls");
            if (auto * e = std::get_if<ApiError>(&calls)) return *e;
            turn.tool_calls = std::get<std::string>(calls);
        }
        if (role == "tool" && m.contains("tool_call_id") && m["tool_call_id"].is_string())
            turn.tool_call_id = m["tool_call_id"].get<std::string>();
        out.conversation.turns.push_back(std::move(turn));
    }
    const std::string & last = out.conversation.turns.back().role;
    if (last == "tool") return std::nullopt;  // the model goes on from the tools' results
    if (last != "user") return invalid_request("the last message must be the user's (or a tool's result)", "messages");
    out.user_text = std::move(out.conversation.turns.back().text);
    out.conversation.turns.pop_back();
    return std::nullopt;
}

std::optional<ApiError> read_prompt(const json & body, CompletionRequest & out) {
    const auto it = body.find("prompt");
    if (it != body.end() && it->is_string()) {
        out.prompt = it->get<std::string>();
        return std::nullopt;
    }
    if (it != body.end() && it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
        out.prompt = (*it)[0].get<std::string>();
        return std::nullopt;
    }
    return invalid_request("prompt must be a string (or an array of one string)", "prompt");
}

std::optional<ApiError> read_stop(const json & body, CompletionRequest & out) {
    const auto it = body.find("stop");
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (it->is_string()) {
        out.stop.push_back(it->get<std::string>());
        return std::nullopt;
    }
    if (it->is_array()) {
        for (const json & s : *it) {
            if (!s.is_string()) return invalid_request("stop must be a string or an array of strings", "stop");
            out.stop.push_back(s.get<std::string>());
        }
        return std::nullopt;
    }
    return invalid_request("stop must be a string or an array of strings", "stop");
}

// Fields that would change what a reply is, which Longread does not do: a 400 naming them
// rather than a reply that quietly ignores them (as OpenAI's own API refuses what a model
// cannot do).
std::optional<ApiError> refuse_unsupported(const json & body, CompletionKind kind) {
    auto present = [&](const char * name) {
        const auto it = body.find(name);
        return it != body.end() && !it->is_null() && !(it->is_array() && it->empty()) && !(it->is_object() && it->empty()) &&
               !(it->is_string() && it->get_ref<const std::string &>().empty());
    };
    if (present("response_format")) {
        const json & f = body["response_format"];
        if (!f.is_object() || !f.contains("type") || f["type"] != "text") {
            return invalid_request(
                "response_format other than {\"type\": \"text\"} is not supported: Longread does not constrain its "
                "output to JSON (ask for JSON in the messages instead)",
                "response_format");
        }
    }
    if (present("functions")) return invalid_request("functions (the old form of tools) are not supported: send tools", "functions");
    if (present("logit_bias")) return invalid_request("logit_bias is not supported by this server", "logit_bias");
    if (kind == CompletionKind::text) {
        if (present("suffix")) return invalid_request("suffix (insertion) is not supported by this server", "suffix");
        const auto echo = body.find("echo");
        if (echo != body.end() && echo->is_boolean() && echo->get<bool>()) {
            return invalid_request("echo is not supported by this server (the reply holds only the generated text)", "echo");
        }
        const auto best_of = body.find("best_of");
        if (best_of != body.end() && best_of->is_number_integer() && best_of->get<long long>() > 1) {
            return invalid_request("only best_of = 1 is supported", "best_of");
        }
    }
    return std::nullopt;
}

// Chat: logprobs (true or false) and top_logprobs; completions: logprobs, the alternatives'
// count. Either way GenerateParams::logprobs.
std::optional<ApiError> read_logprobs(FieldReader & r, CompletionKind kind, GenerateParams & out) {
    if (kind == CompletionKind::text) {
        if (auto v = r.integer("logprobs", 0, kMaxTopLogprobs)) out.logprobs = int32_t(*v);
        return r.error;
    }
    const std::optional<bool> wanted = r.boolean("logprobs");
    const std::optional<long long> top = r.integer("top_logprobs", 0, kMaxTopLogprobs);
    if (r.error) return r.error;
    if (top && !wanted.value_or(false)) return invalid_request("top_logprobs needs logprobs to be true", "top_logprobs");
    if (wanted.value_or(false)) out.logprobs = int32_t(top.value_or(0));
    return std::nullopt;
}

// Chat: the tools the model may call (each {"type": "function", "function": {"name", ...}}),
// unless tool_choice is "none"; "auto" is the only other choice (Longread cannot force a call).
std::optional<ApiError> read_tools(const json & body, std::string & out) {
    const auto tools = body.find("tools");
    if (tools == body.end() || tools->is_null() || (tools->is_array() && tools->empty())) return std::nullopt;
    if (!tools->is_array()) return invalid_request("tools must be an array", "tools");
    const auto choice = body.find("tool_choice");
    if (choice != body.end() && !choice->is_null()) {
        if (*choice == "none") return std::nullopt;
        if (*choice != "auto") {
            return invalid_request("tool_choice must be \"auto\" or \"none\": Longread lets the model decide whether to call a tool",
                                   "tool_choice");
        }
    }
    for (size_t i = 0; i < tools->size(); ++i) {
        const json & t = (*tools)[i];
        if (!has_named_function(t) || t.value("type", json()) != "function") {
            const std::string param = "tools[" + std::to_string(i) + "]";
            return invalid_request(param + " must be {\"type\": \"function\", \"function\": {\"name\": ...}}", param);
        }
    }
    out = tools->dump();
    return std::nullopt;
}

// Chat: OpenAI's reasoning_effort ("none" turns thinking off where the template can; gpt-oss
// cannot, and gets "low", as it does for "minimal") and llama.cpp's chat_template_kwargs
// (enable_thinking, reasoning_effort).
std::optional<ApiError> read_thinking(const json & body, ThinkingChoice & out) {
    const auto effort_of = [&](const json & v, const std::string & param) -> std::optional<ApiError> {
        static const char * const kEfforts[] = {"none", "minimal", "low", "medium", "high"};
        if (!v.is_string() || std::find(std::begin(kEfforts), std::end(kEfforts), v.get<std::string>()) == std::end(kEfforts)) {
            return invalid_request(param + " must be one of none, minimal, low, medium, high", param);
        }
        const std::string effort = v.get<std::string>();
        out.effort = effort == "none" || effort == "minimal" ? "low" : effort;
        if (effort == "none") out.enabled = false;
        return std::nullopt;
    };
    if (const auto it = body.find("reasoning_effort"); it != body.end() && !it->is_null()) {
        if (auto e = effort_of(*it, "reasoning_effort")) return e;
    }
    const auto kwargs = body.find("chat_template_kwargs");
    if (kwargs == body.end() || kwargs->is_null()) return std::nullopt;
    if (!kwargs->is_object()) return invalid_request("chat_template_kwargs must be an object", "chat_template_kwargs");
    for (const auto & [key, value] : kwargs->items()) {
        const std::string param = "chat_template_kwargs." + key;
        if (key == "enable_thinking") {
            if (!value.is_boolean()) return invalid_request(param + " must be true or false", param);
            out.enabled = value.get<bool>();
        } else if (key == "reasoning_effort") {
            if (auto e = effort_of(value, param)) return e;
        } else {
            return invalid_request(param + " is not supported (enable_thinking, reasoning_effort)", param);
        }
    }
    return std::nullopt;
}

}  // namespace

std::variant<CompletionRequest, ApiError> parse_completion_request(CompletionKind kind, std::string_view body_text,
                                                                   const RequestDefaults & defaults) {
    const json body = json::parse(body_text, nullptr, false);
    if (body.is_discarded()) return invalid_request("the request body is not valid JSON");
    if (!body.is_object()) return invalid_request("the request body must be a JSON object");

    CompletionRequest out;
    out.kind = kind;
    if (auto e = kind == CompletionKind::chat ? read_messages(body, out) : read_prompt(body, out)) return *e;
    if (kind == CompletionKind::chat) {
        out.conversation.thinking = defaults.thinking;
        if (auto e = read_thinking(body, out.conversation.thinking)) return *e;
        if (auto e = read_tools(body, out.conversation.tools)) return *e;
    }
    if (auto e = read_stop(body, out)) return *e;

    FieldReader r{body, std::nullopt};
    SamplerParams & s = out.generate.sampler;
    s = defaults.sampler;
    if (auto v = r.number("temperature", 0, 2)) s.temperature = float(*v);
    if (auto v = r.number("top_p", 0, 1)) s.top_p = float(*v);
    if (auto v = r.number("presence_penalty", -2, 2)) s.presence_penalty = float(*v);
    if (auto v = r.number("frequency_penalty", -2, 2)) s.frequency_penalty = float(*v);
    if (auto v = r.integer("seed", INT64_MIN, INT64_MAX)) s.seed = uint64_t(*v);
    // llama.cpp's server's sampling fields beside OpenAI's; their ranges are the sampler's.
    if (auto v = r.integer("top_k", INT32_MIN, INT32_MAX)) s.top_k = int32_t(*v);
    if (auto v = r.number("min_p", -1e9, 1e9)) s.min_p = float(*v);
    if (auto v = r.number("repeat_penalty", -1e9, 1e9)) s.repeat_penalty = float(*v);
    if (auto v = r.integer("repeat_last_n", INT32_MIN, INT32_MAX)) s.repeat_last_n = int32_t(*v);
    // OpenAI's defaults: a chat reply runs to its end, a text completion takes 16 tokens.
    out.generate.max_tokens = kind == CompletionKind::chat ? 0 : 16;
    const char * const length_field = r.find("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (auto v = r.integer(length_field, 1, 1 << 24)) out.generate.max_tokens = int32_t(*v);
    if (auto v = r.integer("n", 1, 1 << 20); v && *v != 1) return invalid_request("only n = 1 is supported", "n");
    if (auto v = r.boolean("stream")) out.stream = *v;
    if (r.error) return *r.error;
    if (auto e = read_logprobs(r, kind, out.generate)) return *e;
    if (auto e = refuse_unsupported(body, kind)) return *e;
    if (const json * options = r.find("stream_options")) {
        if (!options->is_object()) return invalid_request("stream_options must be an object", "stream_options");
        FieldReader o{*options, std::nullopt};
        if (auto v = o.boolean("include_usage")) out.include_usage = *v;
        if (o.error) return invalid_request(o.error->message, "stream_options." + o.error->param);
    }
    if (Status st = validate(out.generate); !st.ok()) return invalid_request(st.message());

    auto kv = kv_settings_for_request(defaults.kv_flags, body.contains("longread") ? body["longread"] : json());
    if (auto * e = std::get_if<ApiError>(&kv)) return *e;
    out.kv = std::get<KvSettings>(kv);
    return out;
}

}  // namespace lr::server
