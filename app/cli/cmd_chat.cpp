// chat: an interactive conversation using the model's chat template. Ctrl-C stops the
// reply (not the program); /reset starts over; /exit or Ctrl-D quits.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/interrupt.h"

namespace lr::cli {

int run_chat(const Argv & argv) {
    const std::vector<FlagSpec> specs = join(
        {model_flags(),
         session_flags(),
         sampling_flags(),
         thinking_flags(),
         kv_flags(),
         {
             {"-s", "--system", true, false, "a system message"},
             {"-n", "--n-predict", true, false, "tokens per reply at most (default: until the model stops)"},
             {"--show-thinking", "", false, false, "print a thinking model's thinking before its answer"},
             {"-h", "--help", false, false, "this help"},
         }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "chat [-m MODEL] [options]", exit_code);
    if (!args) return exit_code;
    auto sampler = sampler_params(*args);
    if (!sampler.ok()) return fail(sampler.status().message());
    auto thinking = thinking_choice(*args);
    if (!thinking.ok()) return fail(thinking.status().message());
    auto n_predict = args->get_int("-n", -1, -1, 1 << 24);
    if (!n_predict.ok()) return fail(n_predict.status().message());
    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    auto options = session_options(*args, *engine.model());
    if (!options.ok()) return fail(options.status().message());
    if (Status s = engine.use_session(*options); !s.ok()) return fail(s.message());

    Conversation chat{.thinking = *thinking};
    if (args->has("-s")) chat.turns.push_back({"system", *args->get("-s")});
    const bool tty = isatty(STDIN_FILENO);
    std::fprintf(stderr, "Longread chat with %s (context %u tokens, template %s). Ctrl-C stops a reply; /reset starts over; /exit quits.\n",
                 engine.model_info().name.c_str(), engine.snapshot().context_limit, engine.model_info().chat_template.c_str());
    InterruptWatcher interrupt;
    ReplyParams params{.generate = {.max_tokens = int32_t(*n_predict), .sampler = *sampler}};
    // Thinking, when shown, comes first, dimmed on a terminal, and a blank line before the answer.
    const bool color = isatty(STDOUT_FILENO);
    bool thinking_open = false;
    if (args->has("--show-thinking")) {
        params.thinking_sink = [&](std::string_view piece) {
            if (!thinking_open) std::fputs(color ? "\x1b[2mThinking: " : "Thinking: ", stdout);
            thinking_open = true;
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
        };
    }
    auto close_thinking = [&] {
        if (thinking_open) std::fputs(color ? "\x1b[0m\n\n" : "\n\n", stdout);
        thinking_open = false;
    };
    std::string line;
    for (;;) {
        if (tty) std::fprintf(stderr, "\n> ");
        if (!std::getline(std::cin, line)) break;
        if (line == "/exit" || line == "/quit") break;
        if (line == "/reset") {
            std::erase_if(chat.turns, [](const ChatTurn & t) { return t.role != "system"; });
            std::fprintf(stderr, "(new conversation)\n");
            continue;
        }
        if (line.empty()) continue;
        const std::stop_token stop = interrupt.arm();
        auto result = engine.reply(
            chat, line, params, {},
            [&](int32_t, std::string_view piece) {
                if (piece.empty()) return true;
                close_thinking();
                std::fwrite(piece.data(), 1, piece.size(), stdout);
                std::fflush(stdout);
                return true;
            },
            stop);
        interrupt.disarm();
        close_thinking();
        std::printf("\n");
        std::fflush(stdout);
        if (!result.ok()) {
            std::fprintf(stderr, "error: %s\n", result.status().message().c_str());
            if (result.status().code() == StatusCode::context_full) continue;
            return 1;
        }
        // The reply stays in the conversation, also when stopped (partial, or empty).
        chat.turns.push_back({"user", line});
        chat.turns.push_back({"assistant", result->text, result->thinking});
        if (result->reason == StopReason::cancelled) std::fprintf(stderr, "(stopped)\n");
        if (result->reason == StopReason::context_full) {
            std::fprintf(stderr, "(the context is full: /reset to start over, or restart with a larger -c)\n");
        }
    }
    return 0;
}

}  // namespace lr::cli
