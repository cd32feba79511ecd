// generate: stream a continuation. logits: dump llama.cpp-comparable logits as JSON.
#include <chrono>
#include <cstdio>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/interrupt.h"
#include "engine/runtime/generator.h"

namespace lr::cli {
namespace {

std::string json_ints(const std::vector<int32_t> & v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(v[i]);
    }
    return out + "]";
}

std::string json_floats(std::span<const float> v) {
    std::string out = "[";
    char buf[32];
    for (size_t i = 0; i < v.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%.9g", i ? "," : "", double(v[i]));
        out += buf;
    }
    return out + "]";
}

}  // namespace

int run_generate(const Argv & argv) {
    const std::vector<FlagSpec> specs = join(
        {model_flags(),
         session_flags(),
         sampling_flags(),
         kv_flags(),
         {
             {"-p", "--prompt", true, false, "prompt text"},
             {"-f", "--file", true, false, "read the prompt from a file"},
             {"-n", "--n-predict", true, false, "tokens to generate (default 128; -1 = until the context is full)"},
             {"--json", "", false, false, "print {\"prompt_tokens\",\"generated_tokens\",\"text\"} instead of streaming"},
             {"--no-bos", "", false, false, "do not add the BOS token"},
             {"-h", "--help", false, false, "this help"},
         }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "generate [-m MODEL] -p PROMPT [options]", exit_code);
    if (!args) return exit_code;
    auto sampler = sampler_params(*args);
    if (!sampler.ok()) return fail(sampler.status().message());
    auto n_predict = args->get_int("-n", 128, -1, 1 << 24);
    if (!n_predict.ok()) return fail(n_predict.status().message());
    auto text = prompt_text(*args);
    if (!text.ok()) return fail(text.status().message());
    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    auto options = session_options(*args, *engine.model());
    if (!options.ok()) return fail(options.status().message());

    const Tokenizer & tok = engine.model()->tokenizer();
    const std::vector<int32_t> prompt = tok.encode(*text, !args->has("--no-bos"), false);
    if (prompt.empty()) return fail("the prompt is empty (give -p TEXT or -f FILE)");
    if (Status s = engine.use_session(*options); !s.ok()) return fail(s.message());
    Session & session = *engine.session();
    if (prompt.size() >= session.n_ctx()) {
        return fail("the prompt has " + std::to_string(prompt.size()) + " tokens but the context holds " + std::to_string(session.n_ctx()) +
                    ": shorten it or raise -c");
    }

    InterruptWatcher interrupt;
    const std::stop_token stop = interrupt.arm();
    const bool json = args->has("--json");
    const auto t0 = std::chrono::steady_clock::now();
    Status s = session.append(prompt, {}, stop);
    const double prefill_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (s.code() == StatusCode::cancelled) return fail("stopped");
    if (!s.ok()) return fail(s.message());
    if (!json) {
        std::fputs(tok.decode(prompt).c_str(), stdout);
        std::fflush(stdout);
    }
    GenerateParams params{.max_tokens = int32_t(*n_predict), .sampler = *sampler};
    auto result = generate(
        session, params,
        [&](int32_t, std::string_view piece) {
            if (!json) {
                std::fwrite(piece.data(), 1, piece.size(), stdout);
                std::fflush(stdout);
            }
            return true;
        },
        stop);
    interrupt.disarm();
    if (!result.ok()) return fail(result.status().message());
    if (json) {
        std::printf("{\"prompt_tokens\":%s,\"generated_tokens\":%s,\"text\":%s}\n", json_ints(prompt).c_str(),
                    json_ints(result->tokens).c_str(), json_string(result->text).c_str());
    } else {
        std::printf("\n");
    }
    if (Status st = report_kv_stats(*args, session.kv_stats()); !st.ok()) return fail(st.message());
    std::fprintf(stderr, "\n[%s] prompt %zu tokens in %.0f ms (%.1f tok/s), generated %zu tokens in %.0f ms (%.1f tok/s)\n",
                 stop_reason_name(result->reason), prompt.size(), prefill_ms, prompt.size() / (prefill_ms / 1000.0), result->tokens.size(),
                 result->decode_ms, result->decode_ms > 0 ? result->tokens.size() / (result->decode_ms / 1000.0) : 0.0);
    return 0;
}

int run_logits(const Argv & argv) {
    const std::vector<FlagSpec> specs = join({model_flags(),
                                              session_flags(),
                                              kv_flags(),
                                              {
                                                  {"-p", "--prompt", true, true, "a prompt (repeat -p for several)"},
                                                  {"-n", "--n-predict", true, false, "greedy steps after each prompt (default 8)"},
                                                  {"-h", "--help", false, false, "this help"},
                                              }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "logits [-m MODEL] -n N -p PROMPT [-p PROMPT2 ...]", exit_code);
    if (!args) return exit_code;
    const std::vector<std::string> prompts = args->get_all("-p");
    if (prompts.empty()) return fail("give at least one prompt with -p");
    auto n_gen = args->get_int("-n", 8, 0, 1 << 16);
    if (!n_gen.ok()) return fail(n_gen.status().message());
    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    auto options = session_options(*args, *engine.model());
    if (!options.ok()) return fail(options.status().message());
    const Model & model = *engine.model();
    const Tokenizer & tok = model.tokenizer();
    const uint32_t n_vocab = model.hparams().n_vocab;

    std::string out = "{\"model\":" + json_string(model.file().path()) + ",\"n_vocab\":" + std::to_string(n_vocab) +
                      ",\"n_gen\":" + std::to_string(*n_gen) + ",\"add_bos\":true,\"results\":[";
    for (size_t ip = 0; ip < prompts.size(); ++ip) {
        const std::vector<int32_t> tokens = tok.encode(prompts[ip], true, false);
        auto session = Session::create(engine.model(), session_config(*options));
        if (!session.ok()) return fail(session.status().message());
        std::vector<float> logits;
        Status s = (*session)->append_all_logits(tokens, logits);
        if (s.ok() && ip + 1 == prompts.size()) s = report_kv_stats(*args, (*session)->kv_stats());
        if (!s.ok()) return fail(s.message());
        std::string pieces = "[";
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (i) pieces += ',';
            pieces += json_string(tok.token_to_piece(tokens[i], true));
        }
        pieces += "]";
        std::string positions = "[";
        for (size_t p = 0; p < tokens.size(); ++p) {
            if (p) positions += ',';
            positions += json_floats(std::span(logits).subspan(p * n_vocab, n_vocab));
        }
        positions += "]";
        std::string steps = "[";
        std::vector<int32_t> generated;
        for (long long step = 0; step <= *n_gen; ++step) {
            const std::span<const float> last = (*session)->logits();
            int32_t best = 0;
            for (uint32_t i = 1; i < n_vocab; ++i) {
                if (last[i] > last[size_t(best)]) best = int32_t(i);
            }
            steps += std::string(step ? "," : "") + "{\"step\":" + std::to_string(step) +
                     ",\"after\":" + (step == 0 ? std::string("\"prefill\"") : std::to_string(generated.back())) +
                     ",\"n_past\":" + std::to_string((*session)->tokens().size()) + ",\"argmax\":" + std::to_string(best) +
                     ",\"argmax_piece\":" + json_string(tok.token_to_piece(best, true)) + ",\"logits\":" + json_floats(last) + "}";
            if (step == *n_gen) break;
            generated.push_back(best);
            s = (*session)->append(std::span(&best, 1));
            if (!s.ok()) return fail(s.message());
        }
        steps += "]";
        out += std::string(ip ? ",\n" : "\n") + "{\"prompt\":" + json_string(prompts[ip]) + ",\"prompt_tokens\":" + json_ints(tokens) +
               ",\"prompt_pieces\":" + pieces + ",\"prompt_position_logits\":" + positions + ",\"steps\":" + steps +
               ",\"generated_tokens\":" + json_ints(generated) +
               ",\"generated_text\":" + json_string(tok.decode(generated, DecodeOptions{.strip_space_prefix = false})) + "}";
    }
    out += "\n]}\n";
    std::fputs(out.c_str(), stdout);
    return 0;
}

}  // namespace lr::cli
