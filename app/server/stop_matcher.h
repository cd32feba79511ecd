#pragma once
// The request's stop strings over streamed text: text that may be the start of a stop
// string is held back until it is known not to be, so a client never sees any part of one.

#include <string>
#include <string_view>
#include <vector>

namespace lr::server {

class StopMatcher {
public:
    explicit StopMatcher(std::vector<std::string> stops);  // empty strings are ignored

    // Takes the next piece of text; returns what may be sent now. After a stop string is
    // found, returns the text before it and stopped() is true.
    std::string feed(std::string_view text);
    // What is still held back, at the end of generation.
    std::string flush();
    bool stopped() const { return stopped_; }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

}  // namespace lr::server
