// KIVI's question for the KV codecs: quantize keys per token (groups along a head's channels,
// as the cache does) or per channel (groups of 32 tokens of one channel, as KIVI does, for
// keys' outlier channels)? Runs a model over windows of a text with an exact (f32) cache,
// reads back every layer's and KV head's keys and values, and quantizes them both ways with
// the cache's own q8 and q4 quantizers (the same code, only the grouping axis differs).
// Prints the relative RMS error of each grouping and how often per channel wins.
//
// usage: kv_key_grouping MODEL TEXT [N_CTX (default 512)] [WINDOWS (default 4)]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace {

using namespace lr;

constexpr uint32_t kGroupTokens = 32;  // KIVI's group, and one cache block

// Squared error of quantizing `values` as consecutive groups of `len` with `codec`.
double group_error(KvCodec codec, const std::vector<float> & values, uint32_t len) {
    std::vector<uint8_t> bytes(kv_codec_row_bytes(codec, len));
    std::vector<float> back(len);
    double err = 0;
    for (size_t at = 0; at + len <= values.size(); at += len) {
        kv_encode_row(codec, values.data() + at, bytes.data(), len);
        kv_decode_row(codec, bytes.data(), back.data(), len);
        for (uint32_t i = 0; i < len; ++i) err += std::pow(double(values[at + i]) - back[i], 2);
    }
    return err;
}

// Per token: a group is a row of `values` ([n][d]).
double error_per_token(KvCodec codec, const std::vector<float> & values, uint32_t d) { return group_error(codec, values, d); }

// Per channel: a group is kGroupTokens consecutive tokens of one channel (whole groups only).
double error_per_channel(KvCodec codec, const std::vector<float> & values, uint32_t n, uint32_t d) {
    const uint32_t whole = n / kGroupTokens * kGroupTokens;
    std::vector<float> columns(size_t(d) * whole);  // [d][whole]
    for (uint32_t c = 0; c < d; ++c) {
        for (uint32_t r = 0; r < whole; ++r) columns[size_t(c) * whole + r] = values[size_t(r) * d + c];
    }
    return group_error(codec, columns, kGroupTokens);
}

struct Tally {
    double token = 0, channel = 0;  // summed relative RMS errors
    int channel_wins = 0, n = 0;
};

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: kv_key_grouping MODEL TEXT [N_CTX] [WINDOWS]\n");
        return 2;
    }
    const uint32_t n_ctx = argc > 3 ? uint32_t(std::stoul(argv[3])) : 512;
    const int n_windows = argc > 4 ? std::stoi(argv[4]) : 4;
    CpuBackend backend({.n_threads = 2});
    auto model = Model::load(argv[1], backend);
    if (!model.ok()) {
        std::fprintf(stderr, "%s\n", model.status().message().c_str());
        return 1;
    }
    std::ifstream file(argv[2]);
    std::stringstream text;
    text << file.rdbuf();
    const std::vector<int32_t> tokens = (*model)->tokenizer().encode(text.str(), true, false);
    const uint32_t n = n_ctx / kGroupTokens * kGroupTokens;
    const ModelHParams & hp = (*model)->hparams();

    const KvCodec codecs[] = {KvCodec::q8, KvCodec::q4};
    Tally tally[2][2];  // [keys, values][q8, q4]
    double outlier_sum = 0;
    int windows = 0;
    for (size_t at = 0; windows < n_windows && at + n <= tokens.size(); at += n, ++windows) {
        SessionConfig config{.n_ctx = n};
        config.kv.prefix_cache = false;
        config.kv.k_bits = config.kv.v_bits = 32;
        auto session = Session::create(*model, config);
        if (!session.ok() || !(*session)->append(std::span(tokens).subspan(at, n)).ok()) {
            std::fprintf(stderr, "the model did not run\n");
            return 1;
        }
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            for (uint32_t g = 0; g < hp.n_head_kv; ++g) {
                for (int keys = 1; keys >= 0; --keys) {  // the session's sequence is 0
                    auto rows = (*session)->kv_cache().layer_rows(0, il, g, keys == 1);
                    if (!rows.ok() || rows->size() != size_t(n) * hp.head_dim) return 1;
                    double energy = 0;
                    std::vector<double> channel_rms(hp.head_dim, 0);
                    for (size_t i = 0; i < rows->size(); ++i) {
                        energy += double((*rows)[i]) * (*rows)[i];
                        channel_rms[i % hp.head_dim] += double((*rows)[i]) * (*rows)[i];
                    }
                    if (keys == 1) {
                        std::sort(channel_rms.begin(), channel_rms.end());
                        outlier_sum += std::sqrt(channel_rms.back() / std::max(1e-30, channel_rms[hp.head_dim / 2]));
                    }
                    for (int c = 0; c < 2; ++c) {
                        Tally & t = tally[1 - keys][c];
                        const double tok = std::sqrt(error_per_token(codecs[c], *rows, hp.head_dim) / energy);
                        const double chn = std::sqrt(error_per_channel(codecs[c], *rows, n, hp.head_dim) / energy);
                        t.token += tok;
                        t.channel += chn;
                        t.channel_wins += chn < tok;
                        ++t.n;
                    }
                }
            }
        }
    }
    if (windows == 0) {
        std::fprintf(stderr, "the text holds fewer than %u tokens\n", n);
        return 1;
    }
    std::printf("%d windows of %u tokens, %u layers x %u KV heads, head_dim %u; keys' largest channel RMS / median: %.2f\n\n", windows, n,
                hp.n_layer, hp.n_head_kv, hp.head_dim, outlier_sum / (windows * hp.n_layer * hp.n_head_kv));
    std::printf("| rows | codec | per token: rel. RMS error | per channel (32 tokens) | per channel better in |\n");
    std::printf("|---|---|---|---|---|\n");
    for (int kv = 0; kv < 2; ++kv) {
        for (int c = 0; c < 2; ++c) {
            const Tally & t = tally[kv][c];
            std::printf("| %s | %s | %.5f | %.5f | %d of %d heads |\n", kv == 0 ? "K" : "V", std::string(kv_codec_name(codecs[c])).c_str(),
                        t.token / t.n, t.channel / t.n, t.channel_wins, t.n);
        }
    }
    return 0;
}
