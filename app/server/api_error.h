#pragma once
// An error as the OpenAI API answers it: an HTTP status and
// {"error": {"message", "type", "param", "code", ...}}.

#include <string>

#include <nlohmann/json.hpp>

namespace lr::server {

struct ApiError {
    int http_status = 400;
    std::string message;
    std::string type = "invalid_request_error";       // or "authentication_error", "server_error"
    std::string param;                                // the field at fault; empty: null
    std::string code;                                 // e.g. "context_length_exceeded"; empty: null
    nlohmann::json extra = nlohmann::json::object();  // more members of "error" (n_prompt_tokens, n_ctx)
};

ApiError invalid_request(std::string message, std::string param = {});
ApiError server_error(std::string message);

// {"error": {...}}
nlohmann::json to_json(const ApiError & error);

}  // namespace lr::server
