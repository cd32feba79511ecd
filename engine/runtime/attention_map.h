#pragma once
// Where the model looks, with the full cache and with a policy, on the same window
// (`longread-cli eval-kv --attention-out FILE`): the attention mass each position received
// per full-attention layer in both runs, the positions the policy evicted, as JSON, and a
// plot of both as heat maps side by side (PNG).
//
// The window is eval-kv's first: its first token replaced by BOS, its first half read as a
// prompt, the rest decoded one token at a time, so the policy evicts as it would in
// generation. Both runs record attention (KvCache::observe_attention).

#include <memory>
#include <span>
#include <stop_token>
#include <string>

#include "engine/api/attention_mass.h"
#include "engine/api/kv_settings.h"
#include "engine/model/model.h"
#include "engine/runtime/png_image.h"

namespace lr {

struct AttentionComparison {
    uint32_t window_tokens = 0;
    uint32_t prompt_tokens = 0;  // read as one prompt; the rest were decoded
    KvSettings policy;
    AttentionMass full;  // policy none, 16-bit codecs
    AttentionMass policy_run;
};

// invalid_argument when the text is shorter than a window (or the window under 8 tokens).
Result<AttentionComparison> compare_attention(std::shared_ptr<const Model> model, std::span<const int32_t> tokens, uint32_t n_ctx,
                                              const KvSettings & policy, std::stop_token stop = {});

// The JSON document (docs/BENCHMARKS.md and README.md describe its fields):
//   {"window_tokens", "prompt_tokens", "layers": [il...], "n_query_heads",
//    "queries": [per position: queries that came at or after it],
//    "full": RUN, "policy": RUN}
//   RUN = {"policy": "<describe()>", "n_queries", "mass": [[per position] per layer],
//          "held": [[share of the layer's KV heads holding it] per layer],
//          "evicted": [[positions no head of the layer holds] per layer]}
std::string attention_json(const AttentionComparison & c);

// Two heat maps side by side, full cache left, policy right: a row per layer (top: the
// first), a column per bin of positions (left: the first), colour by the mean attention
// one query head gave the bin (dark: little; bright yellow: the most; square root of its
// share of the full run's 99th percentile, the same scale in both maps). Bins whose
// positions the layer evicted (held by fewer than half its heads on average) carry a red
// band in the bottom quarter of their row.
RgbImage attention_plot(const AttentionComparison & c);
// The plot's colours, for readers of the image (tests).
inline constexpr Rgb kPlotBackground{255, 255, 255};
inline constexpr Rgb kPlotEvicted{230, 40, 40};

// Writes attention_json to `path` and attention_plot next to it (`path` with .png for its
// extension). invalid_argument when `path` is itself a .png; io_error naming the file.
Status write_attention_files(const std::string & path, const AttentionComparison & c);
std::string attention_plot_path(const std::string & json_path);

}  // namespace lr
