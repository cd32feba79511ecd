#pragma once
// The subcommands of longread-cli. Each returns the process exit code and prints errors
// as one line on stderr.

#include <string>
#include <vector>

namespace lr::cli {

using Argv = std::vector<std::string>;

int run_generate(const Argv & argv);
int run_logits(const Argv & argv);
int run_perplexity(const Argv & argv);
int run_tokenize(const Argv & argv);
int run_info(const Argv & argv);
int run_chat(const Argv & argv);
int run_make_model(const Argv & argv);
int run_eval_kv(const Argv & argv);
int run_summarize(const Argv & argv);
int run_bench(const Argv & argv);
int run_bench_turns(const Argv & argv);
int run_bench_parallel(const Argv & argv);
int run_serve(const Argv & argv);
int run_health(const Argv & argv);

// Prints "error: <message>" and returns the exit code for it.
int fail(const std::string & message);

}  // namespace lr::cli
