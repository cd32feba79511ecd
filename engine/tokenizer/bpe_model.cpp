#include "bpe_model.h"

#include <queue>

#include "engine/tokenizer/unicode.h"

namespace lr {

BpeModel BpeModel::build(std::span<const std::string> merges, const TokenIndex & tokens, int32_t n_vocab, ByteFallback fallback) {
    BpeModel model;
    model.n_vocab_ = n_vocab;
    constexpr char hex[] = "0123456789ABCDEF";
    for (size_t b = 0; b < 256; ++b) {
        const std::string text = fallback == ByteFallback::raw ? std::string(1, static_cast<char>(b))
                                                               : std::string{'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        model.byte_tokens_[b] = find_token(tokens, text).value_or(-1);
    }
    model.merges_.reserve(merges.size());
    const auto id_or_add = [&](std::string_view piece) {
        if (const auto id = find_token(tokens, piece)) return *id;
        if (const auto id = find_token(model.extra_pieces_, piece)) return *id;
        const auto id = static_cast<int32_t>(n_vocab + static_cast<int32_t>(model.extra_pieces_.size()));
        model.extra_pieces_.emplace(std::string(piece), id);
        return id;
    };
    std::string joined;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string_view m = merges[rank];
        // NOTE: llama.cpp splits at the first space after the first byte, so a piece may
        // start with a space.
        const size_t sp = m.find(' ', 1);
        if (sp == std::string_view::npos) continue;
        const std::string_view left = m.substr(0, sp);
        const std::string_view right = m.substr(sp + 1);
        if (right.empty()) continue;
        joined.assign(left);
        joined.append(right);
        const int32_t left_id = id_or_add(left);
        const int32_t right_id = id_or_add(right);
        const int32_t result_id = id_or_add(joined);
        model.merges_.try_emplace(pair_key(left_id, right_id), Merge{static_cast<int32_t>(rank), result_id});
    }
    return model;
}

int32_t BpeModel::piece_id(std::string_view piece, const TokenIndex & tokens) const {
    if (const auto id = find_token(tokens, piece)) return *id;
    if (const auto id = find_token(extra_pieces_, piece)) return *id;
    return -1;
}

void BpeModel::encode_word(std::string_view word, const TokenIndex & tokens, std::vector<int32_t> & out,
                           std::vector<TextSpan> * spans) const {
    struct Symbol {
        int32_t id;        // token id, extra piece id, or -1 (can take part in no merge)
        uint32_t begin;    // byte offset in `word`
        uint32_t n_bytes;  // 0 once merged into its left neighbour
        int32_t prev;
        int32_t next;
    };
    struct Bigram {
        int32_t rank;
        int32_t left;
        int32_t right;
        uint32_t left_bytes;  // sizes when queued: a changed size means the pair is stale
        uint32_t right_bytes;
        int32_t result;
    };
    const auto later = [](const Bigram & a, const Bigram & b) { return a.rank > b.rank || (a.rank == b.rank && a.left > b.left); };

    std::vector<Symbol> symbols;
    symbols.reserve(word.size());
    for (size_t pos = 0; pos < word.size();) {
        const size_t len = std::min(unicode::lead_byte_len(static_cast<uint8_t>(word[pos])), word.size() - pos);
        const auto index = static_cast<int32_t>(symbols.size());
        symbols.push_back(
            {piece_id(word.substr(pos, len), tokens), static_cast<uint32_t>(pos), static_cast<uint32_t>(len), index - 1, index + 1});
        pos += len;
    }
    if (symbols.empty()) return;
    symbols.back().next = -1;

    std::priority_queue<Bigram, std::vector<Bigram>, decltype(later)> queue(later);
    const auto try_pair = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const Symbol & l = symbols[static_cast<size_t>(left)];
        const Symbol & r = symbols[static_cast<size_t>(right)];
        if (l.id < 0 || r.id < 0) return;
        const auto it = merges_.find(pair_key(l.id, r.id));
        if (it == merges_.end()) return;
        queue.push({it->second.rank, left, right, l.n_bytes, r.n_bytes, it->second.result});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_pair(i - 1, i);

    while (!queue.empty()) {
        const Bigram top = queue.top();
        queue.pop();
        Symbol & l = symbols[static_cast<size_t>(top.left)];
        Symbol & r = symbols[static_cast<size_t>(top.right)];
        if (l.n_bytes == 0 || r.n_bytes == 0 || l.n_bytes != top.left_bytes || r.n_bytes != top.right_bytes) {
            continue;
        }
        l.n_bytes += r.n_bytes;
        l.id = top.result;
        r.n_bytes = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = top.left;
        try_pair(l.prev, top.left);
        try_pair(top.left, l.next);
    }

    for (int32_t i = 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
        const Symbol & s = symbols[static_cast<size_t>(i)];
        if (s.id >= 0 && s.id < n_vocab_) {
            out.push_back(s.id);
            if (spans) spans->push_back({s.begin, s.begin + s.n_bytes});
            continue;
        }
        for (uint32_t b = 0; b < s.n_bytes; ++b) {
            const int32_t id = byte_tokens_[static_cast<uint8_t>(word[s.begin + b])];
            if (id < 0) continue;
            out.push_back(id);
            if (spans) spans->push_back({s.begin + b, s.begin + b + 1});
        }
    }
}

}  // namespace lr
