#include "vocab.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

#include "engine/gguf/gguf_file.h"

namespace lr {

namespace {

constexpr std::string_view key_model = "tokenizer.ggml.model";
constexpr std::string_view key_pre = "tokenizer.ggml.pre";
constexpr std::string_view key_tokens = "tokenizer.ggml.tokens";
constexpr std::string_view key_scores = "tokenizer.ggml.scores";
constexpr std::string_view key_token_type = "tokenizer.ggml.token_type";
constexpr std::string_view key_merges = "tokenizer.ggml.merges";
constexpr std::string_view key_add_bos = "tokenizer.ggml.add_bos_token";
constexpr std::string_view key_add_eos = "tokenizer.ggml.add_eos_token";
constexpr std::string_view key_add_space_prefix = "tokenizer.ggml.add_space_prefix";

// How a tokenizer.ggml.pre name configures llama.cpp's BPE tokenizer.
struct PreConfig {
    PreTokenizer pre;
    bool ignore_merges = false;
    bool add_bos = false;
    bool clean_spaces = true;
};

std::optional<PreConfig> pre_config(std::string_view name) {
    constexpr std::array llama3_names{"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral"};
    constexpr std::array llama3_regex_names{"dbrx", "smaug-bpe"};
    constexpr std::array gpt2_names{"gpt-2", "phi-2", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de", "gigachat", "mpt", "olmo", "jais"};
    const auto in = [&](const auto & names) { return std::find(names.begin(), names.end(), name) != names.end(); };
    if (name.empty() || name == "default") return PreConfig{.pre = PreTokenizer::llama_default};
    if (in(llama3_names)) return PreConfig{.pre = PreTokenizer::llama3, .ignore_merges = true, .add_bos = true};
    if (in(llama3_regex_names)) return PreConfig{.pre = PreTokenizer::llama3};
    if (in(gpt2_names)) return PreConfig{.pre = PreTokenizer::gpt2};
    if (name == "qwen2" || name == "deepseek-r1-qwen") {
        return PreConfig{.pre = PreTokenizer::qwen2, .clean_spaces = false};
    }
    if (name == "qwen35") return PreConfig{.pre = PreTokenizer::qwen35, .clean_spaces = false};
    // llama.cpp forces BOS on for this pre-tokenizer (after the file's add_bos_token).
    if (name == "gemma4" || name == "granite-embed-multi-311m") return PreConfig{.pre = PreTokenizer::gemma4, .add_bos = true};
    if (name == "stablelm2" || name == "megrez") return PreConfig{.pre = PreTokenizer::qwen2};
    constexpr std::array gpt4o_names{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"};
    if (in(gpt4o_names)) return PreConfig{.pre = PreTokenizer::gpt4o, .clean_spaces = false};
    if (name == "tekken") return PreConfig{.pre = PreTokenizer::tekken, .ignore_merges = true, .add_bos = true, .clean_spaces = false};
    return std::nullopt;
}

Status key_error(const gguf::GgufFile & file, std::string_view key, const std::string & what) {
    return error(StatusCode::corrupt_data, file.path() + ": " + std::string(key) + ": " + what);
}

// Reads a special token id key. nullopt when absent or holding the "none" sentinel
// (-1, 0xFFFFFFFF), which llama.cpp also skips, keeping the default.
Result<std::optional<int64_t>> read_token_id(const gguf::GgufFile & file, std::string_view key) {
    LR_ASSIGN_OR_RETURN(const std::optional<int64_t> v, file.get_int(key));
    if (!v || *v < 0 || *v == 0xFFFFFFFFll) return std::optional<int64_t>{};
    return v;
}

bool contains(std::string_view haystack, std::string_view needle) { return haystack.find(needle) != std::string_view::npos; }

}  // namespace

uint32_t token_attr_from_type(TokenType type) {
    switch (type) {
        case TokenType::normal: return token_attr::normal;
        case TokenType::unknown: return token_attr::unknown;
        case TokenType::control: return token_attr::control;
        case TokenType::user_defined: return token_attr::user_defined;
        case TokenType::unused: return token_attr::unused;
        case TokenType::byte: return token_attr::byte;
        case TokenType::undefined: break;
    }
    return token_attr::undefined;
}

void finish_special_tokens(Vocab & vocab) {
    // The texts llama.cpp recognises (llama-vocab.cpp, August 2026).
    constexpr const char * deepseek_end =
        "<\xef\xbd\x9c"
        "end\xe2\x96\x81"
        "of\xe2\x96\x81"
        "sentence\xef\xbd\x9c>";
    constexpr std::array eot_texts{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",     "<|end_of_text|>",
                                   "<EOT>",      "_<EOT>",     "[EOT]",   deepseek_end,    "<end_of_utterance>"};
    constexpr std::array eog_texts{"<|eot_id|>",
                                   "<|im_end|>",
                                   "<|end|>",
                                   "<|return|>",
                                   "<|call|>",
                                   "<|flush|>",
                                   "<|calls|>",
                                   "<end_of_turn>",
                                   "<|endoftext|>",
                                   "</s>",
                                   "<|eom_id|>",
                                   "<EOT>",
                                   "_<EOT>",
                                   "[EOT]",
                                   "[EOS]",
                                   "<|end_of_text|>",
                                   "<end_of_utterance>",
                                   "<eos>",
                                   "<turn|>",
                                   "<|tool_response>",
                                   deepseek_end,
                                   "[e~["};
    // Fill-in-the-middle tokens llama.cpp recognises by text; pad/repo/file-sep also end
    // generation.
    constexpr std::array fim_pre_texts{"<|fim_prefix|>",
                                       "<fim-prefix>",
                                       "<fim_prefix>",
                                       "<\xef\xbd\x9c"
                                       "fim\xe2\x96\x81"
                                       "begin\xef\xbd\x9c>",
                                       "<PRE>",
                                       "\xe2\x96\x81<PRE>",
                                       "<|code_prefix|>",
                                       "<|prefix|>"};
    constexpr std::array fim_suf_texts{"<|fim_suffix|>",
                                       "<fim-suffix>",
                                       "<fim_suffix>",
                                       "<\xef\xbd\x9c"
                                       "fim\xe2\x96\x81"
                                       "hole\xef\xbd\x9c>",
                                       "<SUF>",
                                       "\xe2\x96\x81<SUF>",
                                       "<|code_suffix|>",
                                       "<|suffix|>"};
    constexpr std::array fim_mid_texts{"<|fim_middle|>",
                                       "<fim-middle>",
                                       "<fim_middle>",
                                       "<\xef\xbd\x9c"
                                       "fim\xe2\x96\x81"
                                       "end\xef\xbd\x9c>",
                                       "<MID>",
                                       "\xe2\x96\x81<MID>",
                                       "<|code_middle|>",
                                       "<|middle|>"};
    constexpr std::array fim_pad_texts{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
    constexpr std::array fim_rep_texts{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
    constexpr std::array fim_sep_texts{"<|file_sep|>"};
    // gpt-oss's harmony tokens: llama.cpp makes them user-defined, so they are always
    // parsed and always rendered.
    constexpr std::array harmony_texts{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

    const auto is_one_of = [](std::string_view text, const auto & list) { return std::find(list.begin(), list.end(), text) != list.end(); };
    // The token with the earliest text in `list`; it becomes a control token.
    // NOTE: llama.cpp takes whichever its hash map yields first; list order is stable.
    const auto detect = [&](const auto & list) {
        int32_t best = -1;
        size_t best_rank = list.size();
        for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
            const auto it = std::find(list.begin(), list.end(), vocab.tokens[static_cast<size_t>(id)].text);
            const auto rank = static_cast<size_t>(it - list.begin());
            if (rank < best_rank) {
                best_rank = rank;
                best = id;
            }
        }
        if (best >= 0) vocab.tokens[static_cast<size_t>(best)].attr |= token_attr::control;
        return best;
    };
    if (vocab.eot_id < 0) vocab.eot_id = detect(eot_texts);
    if (vocab.eom_id < 0) vocab.eom_id = detect(std::array{"<|eom_id|>"});
    detect(fim_pre_texts);
    detect(fim_suf_texts);
    detect(fim_mid_texts);
    std::vector<int32_t> eog;
    for (const int32_t id : {detect(fim_pad_texts), detect(fim_rep_texts), detect(fim_sep_texts)}) {
        if (id >= 0) eog.push_back(id);
    }
    for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
        TokenData & t = vocab.tokens[static_cast<size_t>(id)];
        // Control tokens named "unused" are unused (Gemma's <unused0>...).
        if ((t.attr & token_attr::control) && t.text.find("unused") != std::string::npos) t.attr |= token_attr::unused;
        if (is_one_of(t.text, eog_texts)) {
            eog.push_back(id);
            t.attr |= token_attr::control;
        }
        if (is_one_of(t.text, harmony_texts)) t.attr = token_attr::user_defined;
    }
    for (const int32_t id : {vocab.eos_id, vocab.eot_id, vocab.eom_id}) {
        if (vocab.in_range(id)) eog.push_back(id);
    }
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

    const auto eog_with_text = [&](std::string_view text) -> int32_t {
        for (const int32_t id : eog) {
            if (vocab.tokens[static_cast<size_t>(id)].text == text) return id;
        }
        return -1;
    };
    const auto drop_eog = [&](int32_t id, uint32_t attr) {
        eog.erase(std::find(eog.begin(), eog.end(), id));
        vocab.tokens[static_cast<size_t>(id)].attr = attr;
    };
    // Harmony (o200k_harmony) ends a turn with <|end|> but generation with <|return|> or
    // <|call|>: <|end|> is then an ordinary user-defined token (solar-open alike).
    const bool has_call = eog_with_text("<|call|>") >= 0 || eog_with_text("<|calls|>") >= 0;
    if (const int32_t end = eog_with_text("<|end|>");
        end >= 0 && has_call && (eog_with_text("<|return|>") >= 0 || eog_with_text("<|flush|>") >= 0)) {
        drop_eog(end, token_attr::user_defined);
    }
    // Gemma 4 (and PaddleOCR) use </s> as text when they have <|tool_response>.
    if (const int32_t s = eog_with_text("</s>"); s >= 0 && eog_with_text("<|tool_response>") >= 0) drop_eog(s, token_attr::normal);
    vocab.eog_ids = std::move(eog);
}

Result<Vocab> load_vocab(const gguf::GgufFile & file) {
    Vocab vocab;
    const std::string & path = file.path();

    // --- model and pre-tokenizer
    LR_ASSIGN_OR_RETURN(const std::optional<std::string_view> model, file.get_string(key_model));
    if (!model) {
        return error(StatusCode::not_found, path + ": " + std::string(key_model) + " is missing: the file has no tokenizer");
    }
    vocab.model_name = std::string(*model);
    // Gemma 4's "gemma4" model is BPE over U+2581-escaped UTF-8; llama.cpp ignores the file's
    // pre-tokenizer name for it and uses "gemma4".
    const bool gemma4 = *model == "gemma4";
    if (*model == "llama") {
        vocab.type = VocabType::spm;
    } else if (*model == "gpt2" || gemma4) {
        vocab.type = VocabType::bpe;
    } else {
        return error(StatusCode::unsupported, path + ": tokenizer model '" + vocab.model_name + "' (" + std::string(key_model) +
                                                  ") is not supported; Longread reads 'llama' (SentencePiece), "
                                                  "'gpt2' (byte-level BPE) and 'gemma4' vocabularies");
    }
    LR_ASSIGN_OR_RETURN(const std::optional<std::string_view> pre, file.get_string(key_pre));
    vocab.pre_name = gemma4 ? std::string("gemma4") : pre ? std::string(*pre) : std::string();

    // --- tokens, scores, types
    LR_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string_view>> texts, file.get_string_array(key_tokens));
    if (!texts) return error(StatusCode::not_found, path + ": " + std::string(key_tokens) + " is missing");
    if (texts->empty()) return key_error(file, key_tokens, "the vocabulary is empty");
    if (texts->size() >= static_cast<size_t>(INT32_MAX)) return key_error(file, key_tokens, "too many tokens");
    const size_t n_tokens = texts->size();

    LR_ASSIGN_OR_RETURN(const std::optional<std::vector<float>> scores, file.get_float_array(key_scores));
    if (scores && scores->size() != n_tokens) {
        return key_error(file, key_scores, std::to_string(scores->size()) + " scores for " + std::to_string(n_tokens) + " tokens");
    }
    LR_ASSIGN_OR_RETURN(const std::optional<std::vector<int64_t>> types, file.get_int_array(key_token_type));
    if (types && types->size() != n_tokens) {
        return key_error(file, key_token_type, std::to_string(types->size()) + " types for " + std::to_string(n_tokens) + " tokens");
    }

    vocab.tokens.resize(n_tokens);
    for (size_t i = 0; i < n_tokens; ++i) {
        TokenData & t = vocab.tokens[i];
        t.text = std::string((*texts)[i]);
        if (t.text.empty()) {
            // NOTE: llama.cpp renames empty tokens the same way, so no text can match them.
            t.text = "[EMPTY_" + std::to_string(i) + "]";
            vocab.notes.push_back(std::string(key_tokens) + ": token " + std::to_string(i) + " is empty");
        }
        t.score = scores ? (*scores)[i] : 0.0f;
        if (!types) {
            t.attr = token_attr::normal;
        } else {
            const int64_t type = (*types)[i];
            t.attr = type >= 0 && type <= 6 ? token_attr_from_type(static_cast<TokenType>(type)) : token_attr::undefined;
        }
    }

    // --- per-model defaults
    if (vocab.type == VocabType::spm) {
        vocab.bos_id = 1;
        vocab.eos_id = 2;
        vocab.unk_id = 0;
        vocab.add_bos = true;
        vocab.add_space_prefix = true;
    } else {
        LR_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string_view>> merges, file.get_string_array(key_merges));
        if (!merges) {
            return error(StatusCode::not_found,
                         path + ": " + std::string(key_merges) + " is missing (a 'gpt2' vocabulary needs its BPE merges)");
        }
        vocab.merges.assign(merges->begin(), merges->end());
        // NOTE: llama.cpp's defaults for "gpt2" vocabularies (GPT-NeoX era); files set them.
        // A "gemma4" vocabulary has none but its keys.
        vocab.bos_id = gemma4 ? -1 : 11;
        vocab.eos_id = gemma4 ? -1 : 11;
        std::optional<PreConfig> config = pre_config(vocab.pre_name);
        if (!config) {
            vocab.notes.push_back(std::string(key_pre) + ": unknown pre-tokenizer '" + vocab.pre_name +
                                  "', using llama.cpp's default splitting (tokens may differ from the model's "
                                  "training; llama.cpp refuses this file)");
            config = PreConfig{.pre = PreTokenizer::llama_default};
        } else if (vocab.pre_name.empty()) {
            vocab.notes.push_back(std::string(key_pre) + " is missing, using llama.cpp's default splitting");
        }
        vocab.pre = config->pre;
        vocab.ignore_merges = config->ignore_merges;
        vocab.add_bos = config->add_bos;
        vocab.clean_spaces = config->clean_spaces;
    }
    for (int32_t * id : {&vocab.bos_id, &vocab.eos_id, &vocab.unk_id}) {
        if (!vocab.in_range(*id)) *id = -1;
    }

    LR_ASSIGN_OR_RETURN(const std::optional<bool> add_space_prefix, file.get_bool(key_add_space_prefix));
    if (add_space_prefix) vocab.add_space_prefix = *add_space_prefix;

    // --- special ids
    struct SpecialKey {
        std::string_view key;
        int32_t * id;
        bool required_in_range;
    };
    const SpecialKey special_keys[] = {
        {"tokenizer.ggml.bos_token_id", &vocab.bos_id, true},     {"tokenizer.ggml.eos_token_id", &vocab.eos_id, true},
        {"tokenizer.ggml.unknown_token_id", &vocab.unk_id, true}, {"tokenizer.ggml.padding_token_id", &vocab.pad_id, false},
        {"tokenizer.ggml.eot_token_id", &vocab.eot_id, false},    {"tokenizer.ggml.eom_token_id", &vocab.eom_id, false},
    };
    for (const SpecialKey & k : special_keys) {
        LR_ASSIGN_OR_RETURN(const std::optional<int64_t> id, read_token_id(file, k.key));
        if (!id) continue;
        if (*id >= static_cast<int64_t>(n_tokens)) {
            const std::string what = "id " + std::to_string(*id) + " is outside the vocabulary of " + std::to_string(n_tokens) + " tokens";
            if (k.required_in_range) return key_error(file, k.key, what);
            vocab.notes.push_back(std::string(k.key) + ": " + what + ", ignored");
            continue;
        }
        *k.id = static_cast<int32_t>(*id);
    }

    LR_ASSIGN_OR_RETURN(const std::optional<bool> add_bos, file.get_bool(key_add_bos));
    // NOTE: llama.cpp adds BOS for Gemma 4 whatever the file says (its PR 21500).
    if (add_bos && !(vocab.type == VocabType::bpe && vocab.pre == PreTokenizer::gemma4)) vocab.add_bos = *add_bos;
    LR_ASSIGN_OR_RETURN(const std::optional<bool> add_eos, file.get_bool(key_add_eos));
    if (add_eos) vocab.add_eos = *add_eos;
    if (vocab.add_bos && vocab.bos_id < 0) {
        return key_error(file, key_add_bos, "is true, but tokenizer.ggml.bos_token_id is not set");
    }
    if (vocab.add_eos && vocab.eos_id < 0) {
        return key_error(file, key_add_eos, "is true, but tokenizer.ggml.eos_token_id is not set");
    }

    finish_special_tokens(vocab);

    // --- per-model token attributes (llama.cpp keys them on general.name)
    LR_ASSIGN_OR_RETURN(const std::optional<std::string_view> name_view, file.get_string("general.name"));
    std::string name = name_view ? std::string(*name_view) : std::string();
    std::transform(name.begin(), name.end(), name.begin(),
                   [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
    if (contains(name, "phi-3") || contains(name, "phi3")) {
        for (TokenData & t : vocab.tokens) {
            if (t.attr & (token_attr::control | token_attr::user_defined | token_attr::unknown)) {
                t.attr |= token_attr::rstrip;
            }
            if (t.text == "</s>") t.attr |= token_attr::rstrip;
            if (t.text == "<unk>" || t.text == "<s>" || t.text == "<|endoftext|>") t.attr &= ~token_attr::rstrip;
        }
    }
    return vocab;
}

}  // namespace lr
