#include "api_error.h"

namespace lr::server {

ApiError invalid_request(std::string message, std::string param) {
    return {.http_status = 400, .message = std::move(message), .param = std::move(param)};
}

ApiError server_error(std::string message) { return {.http_status = 500, .message = std::move(message), .type = "server_error"}; }

nlohmann::json to_json(const ApiError & error) {
    nlohmann::json body = error.extra;
    body["message"] = error.message;
    body["type"] = error.type;
    body["param"] = error.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param);
    body["code"] = error.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.code);
    return {{"error", body}};
}

}  // namespace lr::server
