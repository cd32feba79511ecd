// longread-cli health: the KV cache's health checks and their repairs (kvcache/kv_health.h),
// as the engine runs them. Without -m, what needs no model: the disk under the cache
// directory and the prefix cache kept there; with -m, a session's cache too (memory against
// its tier budgets, the tiers, faults).
//
// Exit code: 0 healthy (nothing but info), 2 a warning, 3 something critical (whether or not
// a repair ran: the finding stands for the check), 1 the checks could not run.
#include <cstdio>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/api/memory_plan.h"
#include "kvcache/kv_health.h"

namespace lr::cli {
namespace {

int exit_code_of(const std::vector<KvHealthFinding> & findings) {
    switch (worst_severity(findings)) {
        case KvHealthSeverity::info: return 0;
        case KvHealthSeverity::warning: return 2;
        case KvHealthSeverity::critical: return 3;
    }
    return 1;
}

const char * status_word(const std::vector<KvHealthFinding> & findings) {
    switch (worst_severity(findings)) {
        case KvHealthSeverity::info: return "healthy";
        case KvHealthSeverity::warning: return "warning";
        case KvHealthSeverity::critical: return "critical";
    }
    return "?";
}

}  // namespace

int run_health(const Argv & argv) {
    const std::vector<FlagSpec> specs = join({model_flags(),
                                              session_flags(),
                                              kv_flags(),
                                              {
                                                  {"--json", "", false, false, "print the findings as JSON"},
                                                  {"-h", "--help", false, false, "this help"},
                                              }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "health [-m MODEL] [--kv-dir D] [--json]", exit_code);
    if (!args) return exit_code;
    Result<KvSettings> kv = kv_settings(*args);
    if (!kv.ok()) return fail(kv.status().message());
    const std::string dir = resolve_kv_dir(*kv);

    std::vector<KvHealthFinding> findings;
    uint64_t repairs = 0;
    std::string model;
    if (args->has("-m")) {
        Engine engine;
        if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
        Result<SessionOptions> options = session_options(*args, *engine.model());
        if (!options.ok()) return fail(options.status().message());
        // Making the session runs the checks (and their repairs) once.
        if (Status s = engine.use_session(*options); !s.ok()) return fail(s.message());
        const KvStats stats = engine.snapshot().kv;
        findings = stats.health;
        repairs = stats.health_repairs;
        model = engine.model_info().path;
    } else {
        const MachineMemory machine = probe_machine_memory(dir);
        const uint64_t disk_budget = resolve_capacities(*kv, machine, 0, false).disk_bytes;
        KvHealthMonitor monitor(system_health_probe(nullptr));
        findings = monitor.check_dir(dir, disk_budget);
        repairs = monitor.repairs();
    }

    if (args->has("--json")) {
        std::printf("{\"dir\":%s,\"model\":%s,\"status\":\"%s\",\"repairs\":%llu,\"findings\":%s}\n", json_string(dir).c_str(),
                    model.empty() ? "null" : json_string(model).c_str(), status_word(findings), (unsigned long long)repairs,
                    to_json(findings).c_str());
    } else {
        std::printf("KV cache health in %s%s\n", dir.c_str(), model.empty() ? " (no model: disk and prefix cache only)" : "");
        std::printf("%s", to_text(findings).c_str());
        std::printf("%s: %zu findings, %llu repairs\n", status_word(findings), findings.size(), (unsigned long long)repairs);
    }
    return exit_code_of(findings);
}

}  // namespace lr::cli
