#include "attention_map.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "engine/common/json_escape.h"
#include "engine/runtime/session.h"

namespace lr {
namespace {

// eval-kv's window: the first half as one prompt, then the rest one token at a time.
Result<AttentionMass> observe_window(std::shared_ptr<const Model> model, std::span<const int32_t> window, const KvSettings & kv,
                                     std::stop_token stop) {
    SessionConfig config{.n_ctx = uint32_t(window.size()), .chunk_tokens = 256, .kv = kv};
    config.kv.prefix_cache = false;
    LR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::create(model, config));
    session->kv_cache().observe_attention(true);
    const size_t half = window.size() / 2;
    LR_RETURN_IF_ERROR(session->append(window.first(half), {}, stop));
    for (size_t j = half; j + 1 < window.size(); ++j) LR_RETURN_IF_ERROR(session->append(window.subspan(j, 1), {}, stop));
    return session->attention();
}

std::string quoted(const std::string & s) {
    std::string out(1, '"');
    out += json_escape(s);
    out += '"';
    return out;
}

template <typename T, typename Put>
void append_array(std::string & out, const std::vector<T> & values, Put put) {
    out += '[';
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) out += ',';
        put(out, values[i]);
    }
    out += ']';
}

void put_float(std::string & out, float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", double(v));
    out += buf;
}

void put_uint(std::string & out, uint64_t v) { out += std::to_string(v); }

// [[row of layer 0], [row of layer 1], ...] of a [layer][position] table.
void append_rows(std::string & out, const std::vector<float> & table, size_t n_layers, uint32_t n_positions) {
    out += '[';
    for (size_t l = 0; l < n_layers; ++l) {
        if (l) out += ',';
        append_array(out,
                     std::vector<float>(table.begin() + std::ptrdiff_t(l * n_positions),
                                        table.begin() + std::ptrdiff_t((l + 1) * n_positions)),
                     put_float);
    }
    out += ']';
}

std::string run_json(const KvSettings & kv, const AttentionMass & a) {
    std::string out = "{\"policy\":" + quoted(describe(kv)) + ",\"n_queries\":" + std::to_string(a.n_queries) + ",\"mass\":";
    append_rows(out, a.mass, a.layers.size(), a.n_positions);
    out += ",\"held\":";
    append_rows(out, a.held, a.layers.size(), a.n_positions);
    out += ",\"evicted\":[";
    for (size_t l = 0; l < a.layers.size(); ++l) {
        std::vector<uint64_t> evicted;
        for (uint32_t p = 0; p < a.n_positions; ++p) {
            if (a.held_at(l, p) == 0.0f) evicted.push_back(p);
        }
        if (l) out += ',';
        append_array(out, evicted, put_uint);
    }
    return out + "]}";
}

// Dark blue, through teal, to yellow: t in [0, 1].
Rgb heat(float t) {
    struct Stop {
        float at;
        float r, g, b;
    };
    static constexpr Stop kStops[] = {{0.0f, 20, 24, 64}, {0.5f, 30, 150, 140}, {1.0f, 250, 230, 80}};
    t = std::clamp(t, 0.0f, 1.0f);
    const Stop & a = t < 0.5f ? kStops[0] : kStops[1];
    const Stop & b = t < 0.5f ? kStops[1] : kStops[2];
    const float u = (t - a.at) / (b.at - a.at);
    return {uint8_t(std::lround(a.r + (b.r - a.r) * u)), uint8_t(std::lround(a.g + (b.g - a.g) * u)),
            uint8_t(std::lround(a.b + (b.b - a.b) * u))};
}

}  // namespace

Result<AttentionComparison> compare_attention(std::shared_ptr<const Model> model, std::span<const int32_t> tokens, uint32_t n_ctx,
                                              const KvSettings & policy, std::stop_token stop) {
    LR_RETURN_IF_ERROR(validate(policy));
    if (n_ctx < 8) return error(StatusCode::invalid_argument, "--attention-out needs windows of at least 8 tokens");
    if (tokens.size() < n_ctx) {
        return error(StatusCode::invalid_argument,
                     "the text has " + std::to_string(tokens.size()) + " tokens; a window needs " + std::to_string(n_ctx));
    }
    std::vector<int32_t> window(tokens.begin(), tokens.begin() + n_ctx);
    if (const int32_t bos = model->tokenizer().bos(); bos >= 0) window[0] = bos;
    KvSettings full = policy;
    full.policy = KvPolicy::none;
    full.k_bits = full.v_bits = 16;
    full.host_bits = full.disk_bits = 0;
    AttentionComparison c{.window_tokens = n_ctx, .prompt_tokens = n_ctx / 2, .policy = policy};
    LR_ASSIGN_OR_RETURN(c.full, observe_window(model, window, full, stop));
    LR_ASSIGN_OR_RETURN(c.policy_run, observe_window(model, window, policy, stop));
    // Streaming past the context renumbers positions: they no longer name tokens.
    if (c.full.n_positions != n_ctx - 1 || c.policy_run.n_positions != n_ctx - 1) {
        return error(StatusCode::invalid_argument, "the policy renumbered positions: attention by position is not comparable");
    }
    return c;
}

std::string attention_json(const AttentionComparison & c) {
    KvSettings full = c.policy;
    full.policy = KvPolicy::none;
    full.k_bits = full.v_bits = 16;
    full.host_bits = full.disk_bits = 0;
    std::string out = "{\"window_tokens\":" + std::to_string(c.window_tokens) + ",\"prompt_tokens\":" + std::to_string(c.prompt_tokens) +
                      ",\"layers\":";
    append_array(out, c.full.layers, [](std::string & o, uint32_t v) { put_uint(o, v); });
    out += ",\"n_query_heads\":" + std::to_string(c.full.n_query_heads) + ",\"queries\":";
    append_array(out, c.full.queries, [](std::string & o, uint32_t v) { put_uint(o, v); });
    out += ",\"full\":" + run_json(full, c.full) + ",\"policy\":" + run_json(c.policy, c.policy_run) + "}\n";
    return out;
}

RgbImage attention_plot(const AttentionComparison & c) {
    constexpr uint32_t kMargin = 8, kGap = 16, kMaxMapHeight = 512;
    const AttentionMass & f = c.full;
    const uint32_t n_layers = uint32_t(f.layers.size());
    if (n_layers == 0 || f.n_positions == 0) return {};
    const uint32_t bins = std::min<uint32_t>(f.n_positions, 512);
    const uint32_t row = std::clamp<uint32_t>(kMaxMapHeight / n_layers, 2, 16);
    // One scale for both maps: the full run's 99th percentile bin.
    std::vector<std::vector<AttentionBin>> full_bins, policy_bins;
    std::vector<float> values;
    for (uint32_t l = 0; l < n_layers; ++l) {
        full_bins.push_back(attention_bins(f, l, bins));
        policy_bins.push_back(attention_bins(c.policy_run, l, bins));
        for (const AttentionBin & b : full_bins.back()) values.push_back(b.mean);
    }
    std::sort(values.begin(), values.end());
    const float top = std::max(values[size_t(double(values.size() - 1) * 0.99)], 1e-12f);
    RgbImage image(2 * kMargin + 2 * bins + kGap, 2 * kMargin + n_layers * row, kPlotBackground);
    auto draw = [&](const std::vector<std::vector<AttentionBin>> & map, uint32_t x0) {
        for (uint32_t l = 0; l < n_layers; ++l) {
            const uint32_t y0 = kMargin + l * row;
            for (uint32_t x = 0; x < bins; ++x) {
                const AttentionBin & b = map[l][x];
                image.fill(x0 + x, y0, x0 + x + 1, y0 + row, heat(std::sqrt(std::min(1.0f, b.mean / top))));
                if (b.held < 0.5f) image.fill(x0 + x, y0 + row - std::max(1u, row / 4), x0 + x + 1, y0 + row, kPlotEvicted);
            }
        }
    };
    draw(full_bins, kMargin);
    draw(policy_bins, kMargin + bins + kGap);
    return image;
}

std::string attention_plot_path(const std::string & json_path) {
    const size_t slash = json_path.find_last_of('/');
    const size_t dot = json_path.find_last_of('.');
    const bool has_extension = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
    return (has_extension ? json_path.substr(0, dot) : json_path) + ".png";
}

Status write_attention_files(const std::string & path, const AttentionComparison & c) {
    const std::string png = attention_plot_path(path);
    if (png == path) return error(StatusCode::invalid_argument, path + ": --attention-out names the JSON file; the plot goes next to it");
    const std::string json = attention_json(c);
    std::unique_ptr<std::FILE, int (*)(std::FILE *)> f(std::fopen(path.c_str(), "wb"), std::fclose);
    if (!f) return error(StatusCode::io_error, path + ": cannot create the file");
    if (std::fwrite(json.data(), 1, json.size(), f.get()) != json.size() || std::fflush(f.get()) != 0) {
        return error(StatusCode::io_error, path + ": write failed");
    }
    return write_png(png, attention_plot(c));
}

}  // namespace lr
