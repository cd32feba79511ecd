// longread-cli: the engine from the command line.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "resources/notices.h"

namespace {

struct Command {
    const char * name;
    int (*run)(const lr::cli::Argv &);
    const char * help;
};

constexpr Command kCommands[] = {
    {"generate", lr::cli::run_generate, "continue a prompt, streaming the text"},
    {"chat", lr::cli::run_chat, "interactive chat using the model's chat template"},
    {"logits", lr::cli::run_logits, "print logits of prompts and greedy steps as JSON"},
    {"perplexity", lr::cli::run_perplexity, "perplexity of a text file (as llama-perplexity)"},
    {"tokenize", lr::cli::run_tokenize, "text to token ids"},
    {"info", lr::cli::run_info, "what a model file holds and the memory it needs"},
    {"make-model", lr::cli::run_make_model, "write a random-weight model of a preset shape"},
    {"eval-kv", lr::cli::run_eval_kv, "what a KV cache policy costs in quality, memory and speed"},
    {"summarize", lr::cli::run_summarize, "summarize a document of any length (one pass or map-reduce)"},
    {"bench", lr::cli::run_bench, "prefill/decode speed, memory bandwidth and peak RSS (as llama-bench)"},
    {"bench-parallel", lr::cli::run_bench_parallel, "decode throughput with several sequences at once (serve --parallel)"},
    {"bench-turns", lr::cli::run_bench_turns, "time to the second turn's first token, live, re-read and reopened"},
    {"serve", lr::cli::run_serve, "an OpenAI-compatible HTTP server on 127.0.0.1"},
    {"health", lr::cli::run_health, "check the KV cache's memory, disk, files and faults, and repair what is safe"},
};

void print_usage() {
    std::printf("usage: longread-cli <command> [options]   (longread-cli <command> --help for its options)\n\ncommands:\n");
    for (const Command & c : kCommands) std::printf("  %-12s %s\n", c.name, c.help);
    std::printf("\nWithout -m, commands use the bundled stories260K model.\n");
    std::printf("longread-cli --version: the version; longread-cli --licenses: what it contains and under which licence.\n");
}

void print_licences() {
    std::printf("Longread %s: %.*s licence.\n\nIt contains or links:\n", LONGREAD_VERSION, int(lr::kLongreadLicence.size()),
                lr::kLongreadLicence.data());
    for (const lr::Notice & n : lr::third_party_notices()) {
        std::printf("  %.*s: %.*s (%.*s)\n", int(n.component.size()), n.component.data(), int(n.licence.size()), n.licence.data(),
                    int(n.use.size()), n.use.data());
    }
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        print_usage();
        return argc < 2 ? 1 : 0;
    }
    if (std::strcmp(argv[1], "--version") == 0) {
        std::printf("longread-cli %s\n", LONGREAD_VERSION);
        return 0;
    }
    if (std::strcmp(argv[1], "--licenses") == 0 || std::strcmp(argv[1], "--licences") == 0) {
        print_licences();
        return 0;
    }
    const std::vector<std::string> rest(argv + 2, argv + argc);
    for (const Command & c : kCommands) {
        if (c.name == std::string(argv[1])) return c.run(rest);
    }
    return lr::cli::fail(std::string("unknown command '") + argv[1] + "' (try longread-cli --help)");
}
