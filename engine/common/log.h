#pragma once
// Logging goes through a callback the host installs (the CLI prints to stderr, the GUI
// forwards to its log view). There is no global logger: whoever needs to log holds a Logger.

#include <functional>
#include <string>
#include <string_view>

namespace lr {

enum class LogLevel { debug, info, warning, error };

using LogSink = std::function<void(LogLevel, std::string_view)>;

class Logger {
public:
    Logger() = default;
    explicit Logger(LogSink sink, LogLevel min_level = LogLevel::info) : sink_(std::move(sink)), min_level_(min_level) {}

    void log(LogLevel level, std::string_view message) const {
        if (sink_ && level >= min_level_) sink_(level, message);
    }
    void info(std::string_view m) const { log(LogLevel::info, m); }
    void warn(std::string_view m) const { log(LogLevel::warning, m); }
    void error(std::string_view m) const { log(LogLevel::error, m); }
    void debug(std::string_view m) const { log(LogLevel::debug, m); }

private:
    LogSink sink_;
    LogLevel min_level_ = LogLevel::info;
};

}  // namespace lr
