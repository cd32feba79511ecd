// libFuzzer entry point for the server's request parsing: any body sent to
// /v1/chat/completions or /v1/completions gives a request that the engine accepts, or a 400
// with a message (written as the server writes it), never a crash or an exception.
//
// Input: byte 0 picks the endpoint and the server's cache flags; the rest is the body.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "app/server/completion_request.h"
#include "app/server/openai_json.h"

namespace {

using namespace lr::server;

[[noreturn]] void fail(const char * what) {
    std::fprintf(stderr, "fuzz_server_request: %s\n", what);
    std::abort();
}

const KvFlags kServerFlags[] = {
    {},
    {{"--kv-policy", "h2o"}, {"--keep-ratio", "0.3"}},
    {{"--kv-k-bits", "8"}, {"--kv-v-bits", "4"}, {"--no-prefix-cache", ""}},
    {{"--kv-policy", "quest"}, {"--kv-budget", "256"}, {"--kv-dir", "/tmp/kv"}},
};

void check_request(const CompletionRequest & r, CompletionKind kind) {
    if (r.kind != kind) fail("the request has the wrong kind");
    for (const auto & turn : r.conversation.turns) {
        if (turn.role != "system" && turn.role != "user" && turn.role != "assistant") fail("a turn with an unknown role");
    }
    if (!lr::validate(r.generate).ok()) fail("generation parameters the engine refuses");
    if (r.generate.max_tokens < 0) fail("a negative max_tokens");
    if (!lr::validate(r.kv).ok()) fail("cache settings the engine refuses");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size == 0) return 0;
    const CompletionKind kind = (data[0] & 1) ? CompletionKind::text : CompletionKind::chat;
    const RequestDefaults defaults{.kv_flags = kServerFlags[(data[0] >> 1) % std::size(kServerFlags)]};
    const std::string_view body(reinterpret_cast<const char *>(data + 1), size - 1);
    const auto parsed = parse_completion_request(kind, body, defaults);
    if (const auto * e = std::get_if<ApiError>(&parsed)) {
        if (e->http_status != 400 || e->message.empty()) fail("an error that is not a 400 with a message");
        if (dump(to_json(*e)).empty()) fail("an error the server cannot write");
        return 0;
    }
    check_request(std::get<CompletionRequest>(parsed), kind);
    return 0;
}
