#pragma once
// The filters, tests, global functions and str/dict methods templates may call. The sets
// cover what Hugging Face chat templates use; an unknown filter or test is a syntax error.

#include <ctime>
#include <string>
#include <string_view>

#include "engine/chat/jinja_value.h"

namespace lr::jinja {

using FilterFunction = Value (*)(Interpreter & interp, const Value & operand, CallArgs & args);
using TestFunction = bool (*)(Interpreter & interp, const Value & operand, CallArgs & args);

FilterFunction find_filter(std::string_view name);  // nullptr when unknown
TestFunction find_test(std::string_view name);      // nullptr when unknown
size_t test_arity(std::string_view name);           // arguments a test takes after its subject

// `name` of a str, dict or list bound to `object` (e.g. 'a,b'.split), or an undefined value
// when it has no such method.
Value bind_method(const Value & object, std::string_view name);

// range, namespace, dict, raise_exception(message), strftime_now(format).
void add_globals(Object & globals);

// strftime with English month and day names whatever the process locale (%a %A %b %B %d
// %e %H %I %j %m %M %p %S %y %Y %Z→'' %%).
std::string format_time(std::string_view format, const std::tm & t);

}  // namespace lr::jinja
