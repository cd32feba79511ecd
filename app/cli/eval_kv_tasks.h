#pragma once
// eval-kv's tasks beyond perplexity: --task summary (ROUGE of the policy's summary against
// the full cache's and a reference) and --task retrieval (facts planted in a long text,
// recalled by depth and length). engine/runtime/kv_task_evaluation.h does the work.

#include <optional>
#include <vector>

#include "app/cli/cli_args.h"
#include "engine/api/kv_settings.h"

namespace lr::cli {

// The flags of the tasks (--task, --reference, --summary-tokens, --lengths, --depths,
// --trials, --seed), for eval-kv's flag list.
std::vector<FlagSpec> eval_task_flags();

// Runs --task summary or retrieval and returns the exit code; nothing when the task is ppl
// (the default), which eval-kv runs itself. A task name it does not know, or a task's flag
// given to another task, is an error.
std::optional<int> run_eval_kv_task(const Args & args, const KvSettings & kv);

}  // namespace lr::cli
