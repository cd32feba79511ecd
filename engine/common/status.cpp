#include "status.h"

namespace lr {

const char * status_code_name(StatusCode code) {
    switch (code) {
        case StatusCode::ok: return "ok";
        case StatusCode::invalid_argument: return "invalid argument";
        case StatusCode::not_found: return "not found";
        case StatusCode::io_error: return "I/O error";
        case StatusCode::corrupt_data: return "corrupt data";
        case StatusCode::unsupported: return "unsupported";
        case StatusCode::out_of_memory: return "out of memory";
        case StatusCode::context_full: return "context full";
        case StatusCode::cancelled: return "cancelled";
        case StatusCode::internal: return "internal error";
    }
    return "unknown";
}

Status Status::with_context(const std::string & context) const {
    if (ok()) return *this;
    return {code_, context + ": " + message_};
}

}  // namespace lr
