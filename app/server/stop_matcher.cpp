#include "stop_matcher.h"

#include <algorithm>

namespace lr::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
    std::erase_if(stops_, [](const std::string & s) { return s.empty(); });
}

std::string StopMatcher::feed(std::string_view text) {
    if (stopped_) return {};
    held_ += text;
    size_t first = std::string::npos;
    for (const std::string & stop : stops_) first = std::min(first, held_.find(stop));
    if (first != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, first);
        held_.clear();
        return out;
    }
    // Hold back the longest tail that begins some stop string.
    size_t keep = 0;
    for (const std::string & stop : stops_) {
        for (size_t n = std::min(stop.size() - 1, held_.size()); n > keep; --n) {
            if (std::string_view(held_).substr(held_.size() - n) == std::string_view(stop).substr(0, n)) {
                keep = n;
                break;
            }
        }
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string StopMatcher::flush() {
    std::string out;
    out.swap(held_);
    return stopped_ ? std::string() : out;
}

}  // namespace lr::server
