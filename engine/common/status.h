#pragma once
// Status and Result<T>: the engine's expected failures (bad file, full disk, out of
// memory, cancelled). Invariants use LR_ASSERT (assert.h) instead. Messages name the
// file, key or tensor and, where there is one, what the user can do about it.

#include <string>
#include <utility>
#include <variant>

namespace lr {

enum class StatusCode {
    ok,
    invalid_argument,  // bad flag, bad parameter value
    not_found,         // missing file, key or tensor
    io_error,          // read/write/mmap failed
    corrupt_data,      // malformed or truncated file, checksum mismatch
    unsupported,       // valid but not handled (unknown architecture, weight type)
    out_of_memory,     // a budget or an allocation would be exceeded
    context_full,      // the request does not fit the context window
    cancelled,         // a stop token was triggered
    internal,
};

const char * status_code_name(StatusCode code);

class [[nodiscard]] Status {
public:
    Status() = default;
    Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status ok_status() { return {}; }

    bool ok() const { return code_ == StatusCode::ok; }
    explicit operator bool() const { return ok(); }
    StatusCode code() const { return code_; }
    const std::string & message() const { return message_; }

    // "context: message", for adding the file or step that failed.
    Status with_context(const std::string & context) const;

private:
    StatusCode code_ = StatusCode::ok;
    std::string message_;
};

inline Status error(StatusCode code, std::string message) { return {code, std::move(message)}; }

// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
    Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
        if (std::get<Status>(v_).ok()) {
            v_ = Status(StatusCode::internal, "Result built from an ok Status");
        }
    }

    bool ok() const { return std::holds_alternative<T>(v_); }
    explicit operator bool() const { return ok(); }

    const Status & status() const {
        static const Status ok_status;
        return ok() ? ok_status : std::get<Status>(v_);
    }
    T & value() & { return std::get<T>(v_); }
    const T & value() const & { return std::get<T>(v_); }
    T && value() && { return std::get<T>(std::move(v_)); }
    T * operator->() { return &std::get<T>(v_); }
    const T * operator->() const { return &std::get<T>(v_); }
    T & operator*() & { return value(); }
    const T & operator*() const & { return value(); }

private:
    std::variant<T, Status> v_;
};

}  // namespace lr

// Propagate a failed Status from the current function.
#define LR_RETURN_IF_ERROR(expr)                 \
    do {                                         \
        ::lr::Status lr_status_ = (expr);        \
        if (!lr_status_.ok()) return lr_status_; \
    } while (0)

#define LR_CONCAT_INNER_(a, b) a##b
#define LR_CONCAT_(a, b) LR_CONCAT_INNER_(a, b)

// LR_ASSIGN_OR_RETURN(auto x, make_x()); — unwraps a Result or returns its Status.
#define LR_ASSIGN_OR_RETURN(lhs, expr) LR_ASSIGN_OR_RETURN_IMPL_(LR_CONCAT_(lr_result_, __LINE__), lhs, expr)
#define LR_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
    auto tmp = (expr);                            \
    if (!tmp.ok()) return tmp.status();           \
    lhs = std::move(tmp).value()
