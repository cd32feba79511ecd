#pragma once
// Command-line flags in llama.cpp's spirit (-m -p -f -n -c -t --temp --seed ...): a small
// parser that knows each command's flags and says exactly which one is wrong.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/status.h"

namespace lr::cli {

struct FlagSpec {
    std::string name;   // "-m" or "--temp"
    std::string alias;  // "--model", or ""
    bool takes_value = true;
    bool repeatable = false;  // e.g. -p for `logits`
    std::string help;
};

class Args {
public:
    // Parses argv[first..] against `specs`. Unknown flags, missing values and repeats of a
    // non-repeatable flag are errors naming the flag.
    static Result<Args> parse(const std::vector<std::string> & argv, const std::vector<FlagSpec> & specs);

    bool has(const std::string & name) const { return values_.count(name) != 0; }
    std::optional<std::string> get(const std::string & name) const;
    std::vector<std::string> get_all(const std::string & name) const;
    std::string get_or(const std::string & name, const std::string & fallback) const;

    // Typed values; an unparsable or out-of-range value is an error naming the flag.
    Result<long long> get_int(const std::string & name, long long fallback, long long min, long long max) const;
    Result<double> get_double(const std::string & name, double fallback, double min, double max) const;

private:
    std::map<std::string, std::vector<std::string>> values_;
};

std::string usage_of(const std::vector<FlagSpec> & specs);

}  // namespace lr::cli
