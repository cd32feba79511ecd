// What recording where the model looks costs (KvCache::observe_attention): the same prompt
// read and the same tokens decoded with the recording off and on, alternating, each
// repeated; prints the median times, their ratio and the record's size. With policy none
// the recording is the only reason the views gather mass; with h2o they gather it anyway
// and the recording adds the pass by position. Wall time and the process's CPU time (all
// threads; steadier when other processes share the cores).
//
// usage: attention_observe_cost MODEL TEXT [PROMPT_TOKENS (1024)] [DECODE (64)] [THREADS (2)] [REPEATS (3)] [POLICY (none)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace {

using namespace lr;
using Clock = std::chrono::steady_clock;

struct Times {
    double prefill_ms = 0;
    double decode_ms = 0;
    double prefill_cpu_ms = 0;
    double decode_cpu_ms = 0;
    size_t record_bytes = 0;
};

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
double cpu_ms() { return 1000.0 * double(std::clock()) / CLOCKS_PER_SEC; }

Result<Times> run(const std::shared_ptr<const Model> & model, const std::vector<int32_t> & prompt, int decode, const KvSettings & kv,
                  bool observe) {
    SessionConfig c{.n_ctx = uint32_t(prompt.size()) + uint32_t(decode) + 1, .chunk_tokens = 256, .kv = kv};
    c.kv.prefix_cache = false;
    LR_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, Session::create(model, c));
    s->kv_cache().observe_attention(observe);
    Times t;
    auto t0 = Clock::now();
    double c0 = cpu_ms();
    LR_RETURN_IF_ERROR(s->append(prompt));
    t.prefill_ms = ms_since(t0);
    t.prefill_cpu_ms = cpu_ms() - c0;
    t0 = Clock::now();
    c0 = cpu_ms();
    for (int i = 0; i < decode; ++i) {
        const int32_t next = int32_t(std::max_element(s->logits().begin(), s->logits().end()) - s->logits().begin());
        LR_RETURN_IF_ERROR(s->append(std::span(&next, 1)));
    }
    t.decode_ms = ms_since(t0);
    t.decode_cpu_ms = cpu_ms() - c0;
    const AttentionMass a = s->attention();
    t.record_bytes = (a.mass.size()) * sizeof(float) + a.queries.size() * sizeof(uint32_t);
    return t;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s MODEL TEXT [PROMPT_TOKENS] [DECODE] [THREADS] [REPEATS] [POLICY]\n", argv[0]);
        return 2;
    }
    const int n_prompt = argc > 3 ? std::atoi(argv[3]) : 1024;
    const int decode = argc > 4 ? std::atoi(argv[4]) : 64;
    const int threads = argc > 5 ? std::atoi(argv[5]) : 2;
    const int repeats = argc > 6 ? std::atoi(argv[6]) : 3;
    KvSettings kv;
    if (argc > 7) {
        const std::optional<KvPolicy> p = kv_policy_from_name(argv[7]);
        if (!p) {
            std::fprintf(stderr, "unknown policy %s\n", argv[7]);
            return 2;
        }
        kv.policy = *p;
        kv.keep_ratio = 0.2;
    }
    CpuBackend backend({.n_threads = threads});
    auto model = Model::load(argv[1], backend);
    if (!model.ok()) {
        std::fprintf(stderr, "%s\n", model.status().message().c_str());
        return 1;
    }
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::vector<int32_t> tokens = (*model)->tokenizer().encode(text.str(), true, false);
    while (tokens.size() < size_t(n_prompt)) tokens.insert(tokens.end(), tokens.begin() + 1, tokens.end());
    tokens.resize(size_t(n_prompt));
    std::vector<double> prefill[2], dec[2], prefill_cpu[2], dec_cpu[2];
    size_t bytes = 0;
    for (int r = 0; r < repeats; ++r) {
        for (int observe : {0, 1}) {
            auto t = run(*model, tokens, decode, kv, observe == 1);
            if (!t.ok()) {
                std::fprintf(stderr, "%s\n", t.status().message().c_str());
                return 1;
            }
            prefill[observe].push_back(t->prefill_ms);
            dec[observe].push_back(t->decode_ms);
            prefill_cpu[observe].push_back(t->prefill_cpu_ms);
            dec_cpu[observe].push_back(t->decode_cpu_ms);
            if (observe) bytes = t->record_bytes;
        }
    }
    std::printf("%s, %s, %d prompt tokens, %d decoded, %d threads, median of %d\n", (*model)->hparams().name.c_str(), describe(kv).c_str(),
                n_prompt, decode, threads, repeats);
    std::printf("| | off | on | on / off |\n|---|---|---|---|\n");
    std::printf("| prefill | %.1f ms | %.1f ms | %.3f |\n", median(prefill[0]), median(prefill[1]),
                median(prefill[1]) / median(prefill[0]));
    std::printf("| decode, per token | %.2f ms | %.2f ms | %.3f |\n", median(dec[0]) / decode, median(dec[1]) / decode,
                median(dec[1]) / median(dec[0]));
    std::printf("| prefill, CPU time | %.1f ms | %.1f ms | %.3f |\n", median(prefill_cpu[0]), median(prefill_cpu[1]),
                median(prefill_cpu[1]) / median(prefill_cpu[0]));
    std::printf("| decode, CPU time per token | %.2f ms | %.2f ms | %.3f |\n", median(dec_cpu[0]) / decode, median(dec_cpu[1]) / decode,
                median(dec_cpu[1]) / median(dec_cpu[0]));
    std::printf("record: %.1f KiB (%zu bytes)\n", double(bytes) / 1024.0, bytes);
    return 0;
}
