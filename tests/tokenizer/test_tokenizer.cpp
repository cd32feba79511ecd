#include <QtTest>

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <map>
#include <memory>
#include <queue>
#include <random>
#include <regex>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/sentencepiece_proto.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode.h"
#include "engine/tokenizer/vocab.h"
#include "tokenizer/tokenizer_vectors.h"

using namespace lr;
using namespace lr::test;

namespace {

// A minimal in-memory GGUF vocabulary for the malformed-file cases.
gguf::GgufWriter small_spm_writer() {
    gguf::GgufWriter w;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>",
                                                 "\xe2\x96\x81"
                                                 "a",
                                                 "b"});
    w.set_float32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -2});
    w.set_int32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
    return w;
}

struct ParsedVocab {
    std::vector<uint8_t> bytes;  // the file's bytes, kept alive while parsed views exist
    Result<Vocab> vocab = Status(StatusCode::internal, "not loaded");
};

std::unique_ptr<ParsedVocab> parse_vocab(const gguf::GgufWriter & w) {
    auto out = std::make_unique<ParsedVocab>();
    auto bytes = w.write_bytes([](size_t, uint64_t, std::span<uint8_t>) { return Status{}; });
    if (!bytes.ok()) {
        out->vocab = bytes.status();
        return out;
    }
    out->bytes = std::move(bytes).value();
    auto file = gguf::GgufFile::parse(out->bytes, "test.gguf");
    if (!file.ok()) {
        out->vocab = file.status();
        return out;
    }
    out->vocab = load_vocab(*file);
    return out;
}

// Varied text that every vocabulary must give back unchanged.
const char * const kRoundTripTexts[] = {
    "Hello world",
    " leading space",
    "trailing space ",
    "  multiple   spaces  between  ",
    "\ttabs\tand\nnewlines\n\n\n",
    "\r\n windows\r\nline ends\r\n",
    "UTF-8: na\xc3\xafve caf\xc3\xa9, Stra\xc3\x9f"
    "e, \xce\x95\xce\xbb\xce\xbb\xce\xb7\xce\xbd\xce\xb9\xce\xba\xce\xac, "
    "\xd1\x80\xd1\x83\xd1\x81\xd1\x81\xd0\xba\xd0\xb8\xd0\xb9",
    "CJK: \xe6\x88\x91\xe6\x83\xb3\xe5\x9c\xa8"
    "apple\xe5\xb7\xa5\xe4\xbd\x9c \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e "
    "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4",
    "emoji: \xf0\x9f\xa6\x99\xf0\x9f\x9a\x80\xf0\x9f\x98\xb6\xe2\x80\x8d\xf0\x9f\x8c\xab\xef\xb8\x8f \xe2\x9c\x85 "
    "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
    "int main() {\n    if (x != y) {\n\treturn x->y[0] + 0x1F; // done\n    }\n}\n",
    "numbers 3.14159 1,000,000 0x1F 12345678901234567890",
    "contractions: I'm, you're, they've, we'll, it's, 'S 'T 'RE y'all",
    "control-looking text: <s> </s>, <|im_end|> <|eot_id|> [INST]",
    "          \n\n\n   \t\t   ",
    " ",
    "",
};

// llama.cpp's SentencePiece merge loop (llm_tokenizer_spm_session) written out directly:
// the oracle the library-backed tokenizer is checked against on random text.
std::vector<int32_t> reference_spm(const Tokenizer & t, std::string_view escaped) {
    struct Symbol {
        size_t begin, n;
        int prev, next;
    };
    struct Bigram {
        float score;
        int left, right;
        size_t size;
    };
    const auto cmp = [](const Bigram & l, const Bigram & r) { return l.score < r.score || (l.score == r.score && l.left > r.left); };
    std::vector<Symbol> symbols;
    for (size_t pos = 0; pos < escaped.size();) {
        const size_t n = std::min(unicode::lead_byte_len(uint8_t(escaped[pos])), escaped.size() - pos);
        const int i = int(symbols.size());
        symbols.push_back({pos, n, i - 1, pos + n == escaped.size() ? -1 : i + 1});
        pos += n;
    }
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(cmp)> queue(cmp);
    const auto try_add = [&](int l, int r) {
        if (l < 0 || r < 0) return;
        const std::string_view text = escaped.substr(symbols[size_t(l)].begin, symbols[size_t(l)].n + symbols[size_t(r)].n);
        const auto id = t.token_id(text);
        if (!id) return;
        queue.push({t.vocab().tokens[size_t(*id)].score, l, r, text.size()});
    };
    for (int i = 1; i < int(symbols.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol & l = symbols[size_t(b.left)];
        Symbol & r = symbols[size_t(b.right)];
        if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
        l.n += r.n;
        r.n = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[size_t(r.next)].prev = b.left;
        try_add(l.prev, b.left);
        try_add(b.left, l.next);
    }
    std::vector<int32_t> out;
    for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[size_t(i)].next) {
        const std::string_view text = escaped.substr(symbols[size_t(i)].begin, symbols[size_t(i)].n);
        if (const auto id = t.token_id(text)) {
            out.push_back(*id);
            continue;
        }
        for (const char c : text) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "<0x%02X>", uint8_t(c));
            auto id = t.token_id(buf);
            if (!id) id = t.token_id(std::string(1, c));
            if (id) out.push_back(*id);
        }
    }
    return out;
}

std::string escape_for_spm(std::string_view text) {
    std::string out = "\xe2\x96\x81";
    for (const char c : text) {
        if (c == ' ') {
            out += "\xe2\x96\x81";
        } else {
            out += c;
        }
    }
    return out;
}

// A regex with \p{L}, \p{N}, \p{P}, \p{M} rewritten for collapsed text as llama.cpp rewrites it:
// each class becomes its stand-in byte plus its ASCII members, in brackets of its own
// unless it already is inside brackets.
std::string collapse_pattern(const std::string & re) {
    const std::map<std::string, std::string> classes = {
        {"\\p{N}",
         "\xd1"
         "0-9"},
        {"\\p{L}",
         "\xd2"
         "A-Za-z"},
        {"\\p{P}",
         "\xd3"
         "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
        {"\\p{M}", "\xd4"},
    };
    std::string out;
    bool inside = false;
    for (size_t i = 0; i < re.size(); ++i) {
        if (re[i] == '[' && (i == 0 || re[i - 1] != '\\')) inside = true;
        if (re[i] == ']' && inside && re[i - 1] != '\\') inside = false;
        const auto it = re.compare(i, 3, "\\p{") == 0 ? classes.find(re.substr(i, 5)) : classes.end();
        if (it == classes.end()) {
            out += re[i];
            continue;
        }
        out += inside ? it->second : "[" + it->second + "]";
        i += 4;
    }
    return out;
}

// llama.cpp's general regex path (unicode_regex_split with std::regex on "collapsed"
// text: every non-ASCII code point replaced by one byte standing for its class), used as
// the oracle for the hand-written pre-tokenizers.
std::vector<size_t> regex_split_collapsed(const std::vector<uint32_t> & cpts, const QStringList & patterns) {
    std::string collapsed;
    for (const uint32_t c : cpts) {
        if (c < 128) {
            collapsed += char(c);
            continue;
        }
        const unicode::CodepointFlags f = unicode::codepoint_flags(c);
        collapsed += f.is_whitespace    ? '\x0b'
                     : f.is_letter      ? '\xd2'
                     : f.is_number      ? '\xd1'
                     : f.is_punctuation ? '\xd3'
                     : f.is_mark        ? '\xd4'
                                        : '\xd0';
    }
    std::vector<size_t> words{cpts.size()};
    for (const QString & pattern : patterns) {
        const std::string re = collapse_pattern(pattern.toStdString());
        const std::regex expr(re);
        // Each pass splits every word of the previous one (llama.cpp's offsets).
        std::vector<size_t> out;
        size_t begin = 0;
        for (const size_t len : words) {
            const auto first = collapsed.begin() + std::ptrdiff_t(begin);
            const auto last = first + std::ptrdiff_t(len);
            size_t start = 0;
            for (auto it = std::sregex_iterator(first, last, expr); it != std::sregex_iterator(); ++it) {
                const size_t pos = size_t(it->position());
                if (pos > start) out.push_back(pos - start);
                out.push_back(size_t(it->length()));
                start = pos + size_t(it->length());
            }
            if (start < len) out.push_back(len - start);
            begin += len;
        }
        words = std::move(out);
    }
    return words;
}

}  // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

    std::map<std::string, std::unique_ptr<Tokenizer>> cache_;
    std::map<std::string, QString> load_errors_;

    // The tokenizer of a shared file, loaded once; nullptr (and the reason) on failure.
    const Tokenizer * tok(const QString & relative) {
        const std::string path = shared_path(relative);
        auto it = cache_.find(path);
        if (it != cache_.end()) return it->second.get();
        Result<Tokenizer> t = load_tokenizer(path);
        if (!t.ok()) {
            load_errors_[path] = QString::fromStdString(t.status().message());
            cache_[path] = nullptr;
            return nullptr;
        }
        return (cache_[path] = std::make_unique<Tokenizer>(std::move(t).value())).get();
    }
    QString load_error(const QString & relative) { return load_errors_[shared_path(relative)]; }

#define REQUIRE_TOKENIZER(var, relative)            \
    const Tokenizer * var = tok(QString(relative)); \
    QVERIFY2(var != nullptr, qPrintable(QString(relative) + ": " + load_error(QString(relative))))

private slots:
    // ---- llama.cpp's test-tokenizer-0 vectors: add_special = false, parse_special = false
    void llamaCppVectors_data() {
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<QString>("expected");
        for (const char * file : kVocabFiles) {
            const std::vector<VectorCase> cases = read_vectors(file);
            QVERIFY2(cases.size() >= 40, file);
            for (size_t i = 0; i < cases.size(); ++i) {
                const QString name = QString("%1 #%2 '%3'").arg(file).arg(i).arg(printable(cases[i].input));
                QTest::newRow(qPrintable(name)) << QString(file) << cases[i].input << cases[i].expected;
            }
        }
    }
    void llamaCppVectors() {
        QFETCH(QString, vocab);
        QFETCH(QByteArray, input);
        QFETCH(QString, expected);
        REQUIRE_TOKENIZER(t, "data/tokenizer/" + vocab);
        QCOMPARE(ids_to_string(t->encode(to_std(input), false, false)), expected);
    }

    // ---- stories260K: the reference token ids of the evaluation text
    void storiesEvalText() {
        REQUIRE_TOKENIZER(t, "models/stories260K.gguf");
        const QByteArray text = read_shared("data/text/tinystories_style_eval.txt");
        QVERIFY(!text.isEmpty());
        const QJsonArray ref = QJsonDocument::fromJson(read_shared("reference/stories260K/eval_text_token_ids.txt")).array();
        QCOMPARE(ref.size(), 4609);
        std::vector<int32_t> expected;
        for (const auto & v : ref) expected.push_back(v.toInt());
        const std::vector<int32_t> ids = t->encode(to_std(text), true, false);
        QCOMPARE(ids_to_string(ids), ids_to_string(expected));
        QCOMPARE(QByteArray::fromStdString(t->decode(ids)), text);
    }

    void storiesPrompts_data() {
        QTest::addColumn<QString>("prompt");
        QTest::addColumn<QString>("expected");
        QTest::newRow("once") << "Once upon a time"
                              << "1 403 407 261 378";
        QTest::newRow("dog") << "The little dog was sad because"
                             << "1 291 376 400 428 286 296 418 329 429 412 425 372";
    }
    void storiesPrompts() {
        QFETCH(QString, prompt);
        QFETCH(QString, expected);
        REQUIRE_TOKENIZER(t, "models/stories260K.gguf");
        QCOMPARE(ids_to_string(t->encode(prompt.toStdString(), true, false)), expected);
        QCOMPARE(QString::fromStdString(t->decode(t->encode(prompt.toStdString(), true, false))), prompt);
    }

    void storiesGreedyReferenceDecodes() {
        REQUIRE_TOKENIZER(t, "models/stories260K.gguf");
        const QJsonObject ref = QJsonDocument::fromJson(read_shared("reference/stories260K/stories260K_greedy200.json")).object();
        std::vector<int32_t> ids;
        for (const auto & v : ref["generated_tokens"].toArray()) ids.push_back(v.toInt());
        QCOMPARE(ids.size(), size_t(200));
        // The generated tokens continue the prompt: their leading space is real.
        const std::string text = t->decode(ids, DecodeOptions{.strip_space_prefix = false});
        const QByteArray greedy = read_shared("reference/stories260K/greedy200.txt");
        QVERIFY2(greedy.contains(QByteArray::fromStdString(text).trimmed().left(60)), text.c_str());
    }

    void storiesPiecesMatchVocabJson() {
        REQUIRE_TOKENIZER(t, "models/stories260K.gguf");
        const QJsonArray pieces = QJsonDocument::fromJson(read_shared("reference/stories260K/vocab.json")).array();
        QCOMPARE(pieces.size(), 512);
        QCOMPARE(t->n_vocab(), 512);
        for (const auto & v : pieces) {
            const QJsonObject o = v.toObject();
            const int id = o["id"].toInt();
            const QString piece = o["piece"].toString();
            const int type = o["type"].toInt();
            QCOMPARE(QString::fromStdString(t->vocab().tokens[size_t(id)].text), piece);
            std::string expected = piece.toStdString();
            if (type == 1) {
                expected = QString(piece).replace(QChar(0x2581), QChar(' ')).toStdString();
            } else if (type == 6) {
                expected = std::string(1, static_cast<char>(piece.mid(3, 2).toInt(nullptr, 16)));
            }
            QCOMPARE(QByteArray::fromStdString(t->token_to_piece(id, true)), QByteArray::fromStdString(expected));
            if (type == 2 || type == 3) QCOMPARE(t->token_to_piece(id, false), std::string());
        }
        QCOMPARE(t->bos(), 1);
        QCOMPARE(t->eos(), 2);
        QVERIFY(t->is_eog(2));
        QVERIFY(!t->is_eog(1));
        QVERIFY(!t->is_eog(403));
    }

    void llama2TinyRandomRoundTrips() {
        REQUIRE_TOKENIZER(t, "models/llama-2-tiny-random.gguf");
        QCOMPARE(t->n_vocab(), 32000);
        const std::string text = "The quick brown fox \xe2\x80\x94 jumps over 13 lazy dogs.\n\nAnd then: \xf0\x9f\xa6\x8a!";
        const std::vector<int32_t> ids = t->encode(text, true, false);
        QCOMPARE(ids.front(), 1);
        QCOMPARE(t->decode(ids), text);
        // The same vocabulary as the llama-spm vector file: the same ids.
        REQUIRE_TOKENIZER(ref, "data/tokenizer/ggml-vocab-llama-spm.gguf");
        QCOMPARE(ids_to_string(t->encode(text, true, false)), ids_to_string(ref->encode(text, true, false)));
    }

    // ---- SentencePiece through the library == llama.cpp's own merge loop
    void spmMatchesLlamaCppMerges_data() {
        QTest::addColumn<QString>("vocab");
        QTest::newRow("llama-spm") << "data/tokenizer/ggml-vocab-llama-spm.gguf";
        QTest::newRow("phi-3") << "data/tokenizer/ggml-vocab-phi-3.gguf";
        QTest::newRow("stories260K") << "models/stories260K.gguf";
    }
    void spmMatchesLlamaCppMerges() {
        QFETCH(QString, vocab);
        REQUIRE_TOKENIZER(t, vocab);
        const char * const pool[] = {"a",
                                     "b",
                                     "e",
                                     "th",
                                     "ing",
                                     " ",
                                     " ",
                                     "  ",
                                     "\n",
                                     "\t",
                                     ".",
                                     ",",
                                     "'",
                                     "<s>",
                                     "<unk>",
                                     "<0x41>",
                                     "\xc3\xa9",
                                     "\xe6\x88\x91",
                                     "\xf0\x9f\xa6\x99",
                                     "\xe2\x96\x81",
                                     "\xff",
                                     "\xe2\x82",
                                     "\x80",
                                     "0",
                                     "12",
                                     "The",
                                     " the",
                                     "Hello",
                                     "\r\n",
                                     "\xd0\xbd"};
        std::mt19937 rng(1234);
        for (int round = 0; round < 400; ++round) {
            std::string text;
            const int n = int(rng() % 40);
            for (int i = 0; i < n; ++i) text += pool[rng() % std::size(pool)];
            const auto got = t->encode(text, false, false);
            const auto want = text.empty() ? std::vector<int32_t>{} : reference_spm(*t, escape_for_spm(text));
            QVERIFY2(got == want, qPrintable(QString("text '%1': %2 vs %3")
                                                 .arg(printable(QByteArray::fromStdString(text)))
                                                 .arg(ids_to_string(got), ids_to_string(want))));
        }
        // A long text, on one line and on many: the library is fed it in pieces.
        QByteArray story = read_shared("data/text/tinystories_style_eval.txt");
        for (const QByteArray & text : {story, QByteArray(story).replace('\n', ' ')}) {
            QCOMPARE(ids_to_string(t->encode(to_std(text), false, false)), ids_to_string(reference_spm(*t, escape_for_spm(to_std(text)))));
        }
    }

    // ---- round trips
    void roundTrip_data() {
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<QByteArray>("text");
        for (const char * file : kVocabFiles) {
            for (size_t i = 0; i < std::size(kRoundTripTexts); ++i) {
                QTest::newRow(qPrintable(QString("%1 #%2 '%3'").arg(file).arg(i).arg(printable(kRoundTripTexts[i]))))
                    << QString(file) << QByteArray(kRoundTripTexts[i]);
            }
        }
    }
    void roundTrip() {
        QFETCH(QString, vocab);
        QFETCH(QByteArray, text);
        REQUIRE_TOKENIZER(t, "data/tokenizer/" + vocab);
        for (const bool add_special : {false, true}) {
            const std::vector<int32_t> ids = t->encode(to_std(text), add_special, false);
            QCOMPARE(QByteArray::fromStdString(t->decode(ids)), text);

            // Streaming gives the same text, a whole character at a time.
            StreamingDecoder stream(*t);
            std::string streamed;
            for (const int32_t id : ids) {
                const std::string part = stream.push(id);
                QVERIFY2(unicode::is_valid_utf8(part), part.c_str());
                streamed += part;
            }
            streamed += stream.flush();
            QCOMPARE(QByteArray::fromStdString(streamed), text);
        }
    }

    // ---- add_special / parse_special
    void addSpecial_data() {
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<int>("first");  // -1: nothing added
        QTest::newRow("llama-spm") << "ggml-vocab-llama-spm.gguf" << 1;
        QTest::newRow("phi-3") << "ggml-vocab-phi-3.gguf" << 1;
        QTest::newRow("gpt-2") << "ggml-vocab-gpt-2.gguf" << -1;
        QTest::newRow("llama-bpe") << "ggml-vocab-llama-bpe.gguf" << 128000;
        QTest::newRow("qwen2") << "ggml-vocab-qwen2.gguf" << -1;
        QTest::newRow("gemma3") << "ggml-vocab-gemma3.gguf" << 2;
        QTest::newRow("gpt-oss") << "ggml-vocab-gpt-oss.gguf" << -1;
    }
    void addSpecial() {
        QFETCH(QString, vocab);
        QFETCH(int, first);
        REQUIRE_TOKENIZER(t, "data/tokenizer/" + vocab);
        const std::vector<int32_t> plain = t->encode("Hello world", false, false);
        const std::vector<int32_t> with = t->encode("Hello world", true, false);
        if (first < 0) {
            QCOMPARE(ids_to_string(with), ids_to_string(plain));
        } else {
            QCOMPARE(with.size(), plain.size() + 1);
            QCOMPARE(with.front(), first);
            QCOMPARE(t->bos(), first);
            QCOMPARE(ids_to_string(t->encode("", true, false)), QString::number(first));
        }
        QVERIFY(t->encode("", false, false).empty());
    }

    void parseSpecial_data() {
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("special");
        QTest::newRow("llama-spm <s>") << "ggml-vocab-llama-spm.gguf"
                                       << "Hello<s>world"
                                       << "<s>";
        QTest::newRow("phi-3 <|user|>") << "ggml-vocab-phi-3.gguf"
                                        << "<|user|>\nHi<|end|>"
                                        << "<|user|>";
        QTest::newRow("gpt-2 <|endoftext|>") << "ggml-vocab-gpt-2.gguf"
                                             << "a<|endoftext|>b"
                                             << "<|endoftext|>";
        QTest::newRow("llama-bpe <|eot_id|>") << "ggml-vocab-llama-bpe.gguf"
                                              << "Hi<|eot_id|>"
                                              << "<|eot_id|>";
        QTest::newRow("qwen2 <|im_start|>") << "ggml-vocab-qwen2.gguf"
                                            << "<|im_start|>user\nHi<|im_end|>"
                                            << "<|im_start|>";
        QTest::newRow("gemma3 <start_of_turn>") << "ggml-vocab-gemma3.gguf"
                                                << "<start_of_turn>user\nHi<end_of_turn>"
                                                << "<start_of_turn>";
        QTest::newRow("gpt-oss <|return|>") << "ggml-vocab-gpt-oss.gguf"
                                            << "Done.<|return|>"
                                            << "<|return|>";
    }
    void parseSpecial() {
        QFETCH(QString, vocab);
        QFETCH(QString, text);
        QFETCH(QString, special);
        REQUIRE_TOKENIZER(t, "data/tokenizer/" + vocab);
        const std::optional<int32_t> id = t->token_id(special.toStdString());
        QVERIFY(id.has_value());
        QVERIFY(t->is_special(*id));
        const std::vector<int32_t> parsed = t->encode(text.toStdString(), false, true);
        const std::vector<int32_t> plain = t->encode(text.toStdString(), false, false);
        QVERIFY(std::count(parsed.begin(), parsed.end(), *id) == 1);
        QVERIFY(std::count(plain.begin(), plain.end(), *id) == 0);
        // Unparsed, the special text is ordinary text and comes back as such.
        QCOMPARE(QString::fromStdString(t->decode(plain)), text);
        // Parsed, it renders only on request.
        QVERIFY(!QString::fromStdString(t->decode(parsed)).contains(special));
        QVERIFY(QString::fromStdString(t->decode(parsed, DecodeOptions{.render_special = true})).contains(special));
    }

    void spmSpacePrefixAfterSpecial() {
        REQUIRE_TOKENIZER(t, "data/tokenizer/ggml-vocab-llama-spm.gguf");
        // llama.cpp adds " " to a fragment at the start and after a special token only.
        const std::vector<int32_t> ids = t->encode("Hello<s>world", false, true);
        const std::vector<int32_t> a = t->encode("Hello", false, false);
        const std::vector<int32_t> b = t->encode("world", false, false);
        std::vector<int32_t> expected = a;
        expected.push_back(1);
        expected.insert(expected.end(), b.begin(), b.end());
        QCOMPARE(ids_to_string(ids), ids_to_string(expected));
        QCOMPARE(t->decode(ids, DecodeOptions{.render_special = true}), std::string("Hello<s>world"));
    }

    void userDefinedTokensAlwaysMatch() {
        REQUIRE_TOKENIZER(t, "data/tokenizer/ggml-vocab-qwen2.gguf");
        const std::optional<int32_t> think = t->token_id("<think>");
        QVERIFY(think.has_value());
        QCOMPARE(*think, 151667);
        const std::vector<int32_t> ids = t->encode("<think>\nhmm</think>", false, false);
        QCOMPARE(ids.front(), 151667);
        QCOMPARE(ids.back(), 151668);
        QCOMPARE(t->decode(ids), std::string("<think>\nhmm</think>"));
    }

    void harmonyTokensAlwaysParsed() {
        REQUIRE_TOKENIZER(t, "data/tokenizer/ggml-vocab-gpt-oss.gguf");
        // llama.cpp makes the harmony structure tokens user-defined: matched in plain text,
        // rendered without render_special, so a reply's channels can be read from its text.
        const std::string text = "<|start|>assistant<|channel|>analysis<|message|>Hmm.<|end|>";
        const std::vector<int32_t> ids = t->encode(text, false, false);
        QCOMPARE(ids.front(), 200006);
        QCOMPARE(ids.back(), 200007);
        QVERIFY(std::count(ids.begin(), ids.end(), 200005) == 1);
        QVERIFY(std::count(ids.begin(), ids.end(), 200008) == 1);
        QCOMPARE(t->decode(ids), text);
        QCOMPARE(t->token_to_piece(200005, false), std::string("<|channel|>"));
        // <|return|> stays a control token: text unless parse_special, hidden unless asked.
        QCOMPARE(t->token_to_piece(200002, false), std::string());
        QCOMPARE(t->eos(), 200002);
    }

    void qwenThinkTokens() {
        REQUIRE_TOKENIZER(t, "data/tokenizer/ggml-vocab-qwen2.gguf");
        // Qwen3 ships the Qwen 2 vocabulary and pre-tokenizer; <think> and </think> are
        // user-defined, so a template's or a reply's text parses to them either way.
        for (const bool parse_special : {false, true}) {
            const std::vector<int32_t> ids = t->encode("<|im_start|>assistant\n<think>\n\n</think>\n\nHi", false, parse_special);
            QVERIFY(std::count(ids.begin(), ids.end(), 151667) == 1);
            QVERIFY(std::count(ids.begin(), ids.end(), 151668) == 1);
            QCOMPARE(std::count(ids.begin(), ids.end(), 151644), parse_special ? 1 : 0);
        }
        QCOMPARE(t->token_to_piece(151668, false), std::string("</think>"));
    }

    void phi3SpecialsEatFollowingSpace() {
        REQUIRE_TOKENIZER(t, "data/tokenizer/ggml-vocab-phi-3.gguf");
        // Phi-3's specials carry rstrip: "<|user|> Hi" tokenizes as "<|user|>Hi".
        QCOMPARE(ids_to_string(t->encode("<|user|>  Hi", false, true)), ids_to_string(t->encode("<|user|>Hi", false, true)));
        // ... but not <s>.
        QVERIFY(ids_to_string(t->encode("<s> Hi", false, true)) != ids_to_string(t->encode("<s>Hi", false, true)));
    }

    void endOfGeneration_data() {
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<QStringList>("eog");
        QTest::addColumn<QStringList>("not_eog");
        QTest::newRow("llama-spm") << "ggml-vocab-llama-spm.gguf" << QStringList{"</s>"} << QStringList{"<s>", "<unk>"};
        // </s> ends generation in llama.cpp whatever its type (a rule added for PaddleOCR).
        QTest::newRow("phi-3") << "ggml-vocab-phi-3.gguf" << QStringList{"<|endoftext|>", "<|end|>", "</s>"}
                               << QStringList{"<|user|>", "<s>"};
        QTest::newRow("gpt-2") << "ggml-vocab-gpt-2.gguf" << QStringList{"<|endoftext|>"} << QStringList{"Hello"};
        QTest::newRow("llama-bpe") << "ggml-vocab-llama-bpe.gguf" << QStringList{"<|end_of_text|>", "<|eot_id|>"}
                                   << QStringList{"<|begin_of_text|>", "<|start_header_id|>"};
        QTest::newRow("qwen2") << "ggml-vocab-qwen2.gguf"
                               << QStringList{"<|im_end|>", "<|endoftext|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"}
                               << QStringList{"<|im_start|>", "<think>", "<|fim_prefix|>"};
        QTest::newRow("gemma3") << "ggml-vocab-gemma3.gguf" << QStringList{"<end_of_turn>", "<eos>"}
                                << QStringList{"<start_of_turn>", "<bos>", "<pad>"};
        // Harmony: a message ends with <|end|>, generation with <|return|> or <|call|>.
        QTest::newRow("gpt-oss") << "ggml-vocab-gpt-oss.gguf" << QStringList{"<|return|>", "<|call|>", "<|endoftext|>"}
                                 << QStringList{"<|end|>", "<|start|>", "<|channel|>", "<|message|>", "<|startoftext|>"};
    }
    void endOfGeneration() {
        QFETCH(QString, vocab);
        QFETCH(QStringList, eog);
        QFETCH(QStringList, not_eog);
        REQUIRE_TOKENIZER(t, "data/tokenizer/" + vocab);
        for (const QString & s : eog) {
            const auto id = t->token_id(s.toStdString());
            QVERIFY2(id && t->is_eog(*id), qPrintable(s));
        }
        for (const QString & s : not_eog) {
            const auto id = t->token_id(s.toStdString());
            QVERIFY2(id && !t->is_eog(*id), qPrintable(s));
        }
        QVERIFY(!t->is_eog(-1));
        QVERIFY(!t->is_eog(t->n_vocab()));
    }

    // ---- streaming decoder
    void streamingHoldsSplitCharacters() {
        REQUIRE_TOKENIZER(t, "data/tokenizer/ggml-vocab-llama-spm.gguf");
        const auto byte_token = [&](int b) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "<0x%02X>", b);
            return t->token_id(buf).value_or(-1);
        };
        StreamingDecoder d(*t);
        // U+20AC EURO SIGN as three byte tokens.
        QCOMPARE(d.push(byte_token(0xE2)), std::string());
        QVERIFY(d.has_pending());
        QCOMPARE(d.push(byte_token(0x82)), std::string());
        QCOMPARE(d.push(byte_token(0xAC)), std::string("\xe2\x82\xac"));
        QVERIFY(!d.has_pending());
        // A lead byte followed by ASCII can never complete: U+FFFD, then the ASCII.
        QCOMPARE(d.push(byte_token(0xE2)), std::string());
        QCOMPARE(d.push(byte_token('A')), std::string("\xef\xbf\xbd"
                                                      "A"));
        // A stray continuation byte.
        QCOMPARE(d.push(byte_token(0x80)), std::string("\xef\xbf\xbd"));
        // An unfinished 4-byte character at the end.
        QCOMPARE(d.push(byte_token(0xF0)), std::string());
        QCOMPARE(d.push(byte_token(0x9F)), std::string());
        QCOMPARE(d.flush(), std::string("\xef\xbf\xbd"));
        QVERIFY(!d.has_pending());
        QCOMPARE(d.flush(), std::string());
    }

    void streamingEmojiAcrossTokens_data() {
        QTest::addColumn<QString>("vocab");
        for (const char * file : kVocabFiles) QTest::newRow(file) << QString(file);
    }
    void streamingEmojiAcrossTokens() {
        QFETCH(QString, vocab);
        REQUIRE_TOKENIZER(t, "data/tokenizer/" + vocab);
        const std::string text = "\xf0\x9f\xa6\x99 llama \xe1\x9e\x80\xe1\x9e\xb6 \xf0\x9f\x98\xb6\xe2\x80\x8d\xf0\x9f\x8c\xab";
        const std::vector<int32_t> ids = t->encode(text, false, false);
        StreamingDecoder d(*t);
        std::string out;
        int n_held = 0;
        for (const int32_t id : ids) {
            const std::string part = d.push(id);
            n_held += part.empty() ? 1 : 0;
            QVERIFY(unicode::is_valid_utf8(part));
            out += part;
        }
        QCOMPARE(d.flush(), std::string());
        QCOMPARE(out, text);
        QVERIFY(n_held > 0);  // some character did arrive in pieces
    }

    void streamingContinuationKeepsSpace() {
        REQUIRE_TOKENIZER(t, "models/stories260K.gguf");
        const std::vector<int32_t> ids = t->encode("Once upon a time", false, false);
        StreamingDecoder d(*t, DecodeOptions{.strip_space_prefix = false});
        std::string out;
        for (const int32_t id : ids) out += d.push(id);
        QCOMPARE(out, std::string(" Once upon a time"));
    }

    // ---- pre-tokenizers, one regex at a time
    void preTokenizer_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("words");
        const int gpt2 = int(PreTokenizer::gpt2), llama3 = int(PreTokenizer::llama3);
        const int qwen2 = int(PreTokenizer::qwen2), def = int(PreTokenizer::llama_default);
        QTest::newRow("gpt2 words") << gpt2 << "Hello world"
                                    << "Hello| world";
        QTest::newRow("gpt2 spaces") << gpt2 << "I'm  fine"
                                     << "I|'m| | fine";
        QTest::newRow("gpt2 trailing ws") << gpt2 << "a  \n"
                                          << "a|  \n";
        QTest::newRow("gpt2 case-sensitive") << gpt2 << "I'M"
                                             << "I|'|M";
        QTest::newRow("gpt2 numbers") << gpt2 << "x 12345"
                                      << "x| 12345";
        QTest::newRow("llama3 case-insensitive") << llama3 << "I'M"
                                                 << "I|'M";
        QTest::newRow("llama3 newlines") << llama3 << "Hello\n\n  world"
                                         << "Hello|\n\n| | world";
        QTest::newRow("llama3 digits") << llama3 << "12345"
                                       << "123|45";
        QTest::newRow("llama3 punct+newline") << llama3 << " ?!\n\nx"
                                              << " ?!\n\n|x";
        QTest::newRow("llama3 prefix char") << llama3 << "$var"
                                            << "$var";
        QTest::newRow("llama3 unicode letters") << llama3 << "caf\u00e9 \u043d\u0430"
                                                << "caf\u00e9| \u043d\u0430";
        QTest::newRow("llama3 nbsp is space") << llama3 << "a\u00a0\u00a0b"
                                              << "a|\u00a0|\u00a0b";
        QTest::newRow("qwen2 digits") << qwen2 << "12345"
                                      << "1|2|3|4|5";
        // qwen35: combining marks stay in their words (qwen2 cuts them off as punctuation).
        const int qwen35 = int(PreTokenizer::qwen35);
        QTest::newRow("qwen2 combining mark") << qwen2 << "ne\u0301e"
                                              << "ne|\u0301e";
        QTest::newRow("qwen35 combining mark") << qwen35 << "ne\u0301e"
                                               << "ne\u0301e";
        QTest::newRow("qwen2 devanagari") << qwen2 << "\u0915\u093f \u0915\u093f"
                                          << "\u0915|\u093f| \u0915|\u093f";
        QTest::newRow("qwen35 devanagari") << qwen35 << "\u0915\u093f \u0915\u093f"
                                           << "\u0915\u093f| \u0915\u093f";
        QTest::newRow("qwen35 mark after punctuation") << qwen35 << "a.\u0301b"
                                                       << "a|.\u0301b";
        QTest::newRow("qwen35 digits") << qwen35 << "x12345"
                                       << "x|1|2|3|4|5";
        QTest::newRow("qwen35 contractions") << qwen35 << "I'M don't"
                                             << "I|'M| don|'t";
        // gemma4: runs of newlines and runs of the rest, nothing else.
        const int gemma4 = int(PreTokenizer::gemma4);
        QTest::newRow("gemma4 lines") << gemma4 << "Hi there!\n\nx 1\n"
                                      << "Hi there!|\n\n|x 1|\n";
        QTest::newRow("gemma4 carriage return is text") << gemma4 << "a\r\nb"
                                                        << "a\r|\n|b";
        QTest::newRow("default") << def << "a+b=12345.6"
                                 << "a|+|b|=|123|45|.|6";
        QTest::newRow("default comma") << def << "Hello, world"
                                       << "Hello|,| world";
        // gpt-4o: a non-ASCII letter counts as upper and lower case, a combining mark as no
        // letter (llama.cpp's rewrite of the regex; Hugging Face's tokenizer differs there).
        const int o200k = int(PreTokenizer::gpt4o), tekken = int(PreTokenizer::tekken);
        QTest::newRow("gpt-4o words") << o200k << "Hello World"
                                      << "Hello| World";
        QTest::newRow("gpt-4o upper then lower") << o200k << "HELLOworld"
                                                 << "HELLOworld";
        QTest::newRow("gpt-4o lower then upper") << o200k << "helloWORLD CamelCase"
                                                 << "hello|WORLD| Camel|Case";
        QTest::newRow("gpt-4o contractions") << o200k << "I'M don't THEY'RE"
                                             << "I'M| don't| THEY'RE";
        QTest::newRow("gpt-4o digits") << o200k << "12345"
                                       << "123|45";
        QTest::newRow("gpt-4o punct") << o200k << " (x)"
                                      << " (|x|)";
        QTest::newRow("gpt-4o slashes") << o200k << "a/b//\nc"
                                        << "a|/b|//\n|c";
        QTest::newRow("gpt-4o newlines") << o200k << "\n\n  x  "
                                         << "\n\n| | x|  ";
        QTest::newRow("gpt-4o tab prefix") << o200k << "\tfoo"
                                           << "\tfoo";
        QTest::newRow("gpt-4o combining mark") << o200k << "ne\u0301e"
                                               << "ne|\u0301e";
        QTest::newRow("gpt-4o mark alone") << o200k << "e\u0301"
                                           << "e|\u0301";
        QTest::newRow("gpt-4o non-ascii upper") << o200k << "\u00c9COLE"
                                                << "\u00c9|COLE";
        QTest::newRow("gpt-4o non-ascii run") << o200k << "\u00e9AB"
                                              << "\u00e9|AB";
        QTest::newRow("tekken digits") << tekken << "x12345"
                                       << "x|1|2|3|4|5";
        QTest::newRow("tekken no contractions") << tekken << "I'm don't"
                                                << "I|'m| don|'t";
        QTest::newRow("tekken upper then lower") << tekken << "HELLOworld /path/x"
                                                 << "HELLOworld| /|path|/x";
    }
    void preTokenizer() {
        QFETCH(int, kind);
        QFETCH(QString, text);
        QFETCH(QString, words);
        const std::vector<uint32_t> cpts = unicode::codepoints_lenient(text.toStdString());
        const std::vector<size_t> lens = split_words(static_cast<PreTokenizer>(kind), cpts);
        QStringList got;
        size_t begin = 0;
        for (const size_t len : lens) {
            std::string w;
            for (size_t i = begin; i < begin + len; ++i) unicode::append_utf8(w, cpts[i]);
            got << QString::fromStdString(w);
            begin += len;
        }
        QCOMPARE(begin, cpts.size());
        QCOMPARE(got.join('|'), words);
    }

    // The scanners against the regexes themselves, run as llama.cpp runs them.
    void preTokenizerMatchesRegex_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QStringList>("patterns");
        const QString gpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
        QTest::newRow("gpt2") << int(PreTokenizer::gpt2) << QStringList{gpt2};
        QTest::newRow("llama3") << int(PreTokenizer::llama3)
                                << QStringList{R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|)"
                                               R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|)"
                                               R"(\s*[\r\n]+|\s+(?!\S)|\s+)"};
        QTest::newRow("qwen2") << int(PreTokenizer::qwen2)
                               << QStringList{R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|)"
                                              R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|)"
                                              R"(\s*[\r\n]+|\s+(?!\S)|\s+)"};
        QTest::newRow("qwen35") << int(PreTokenizer::qwen35)
                                << QStringList{R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|)"
                                               R"([^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|)"
                                               R"(\s*[\r\n]+|\s+(?!\S)|\s+)"};
        QTest::newRow("gemma4") << int(PreTokenizer::gemma4) << QStringList{R"([^\n]+|[\n]+)"};
        QTest::newRow("default") << int(PreTokenizer::llama_default)
                                 << QStringList{R"([\p{P}\$\+<=>\^~\|]+)", gpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"};
        // As llama.cpp runs them (llama-vocab.cpp), lookaheads standing in for \p{Lu}/\p{Ll}.
        const QString upper = R"(((?=[\p{L}])([^a-z])))", lower = R"(((?=[\p{L}])([^A-Z])))";
        const QString prefix = R"([^\r\n\p{L}\p{N}]?)";
        const QString contraction = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?)";
        const QString tail = R"( ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
        QTest::newRow("gpt-4o") << int(PreTokenizer::gpt4o)
                                << QStringList{prefix + upper + "*" + lower + "+" + contraction + "|" + prefix + upper + "+" + lower + "*" +
                                               contraction + R"(|\p{N}{1,3}|)" + tail};
        QTest::newRow("tekken") << int(PreTokenizer::tekken)
                                << QStringList{prefix + upper + "*" + lower + "+|" + prefix + upper + "+" + lower + R"(*|\p{N}|)" + tail};
    }
    void preTokenizerMatchesRegex() {
        QFETCH(int, kind);
        QFETCH(QStringList, patterns);
        const char * const pool[] = {"a",
                                     "Z",
                                     "\xc3\xa9",
                                     "\xe6\x88\x91",
                                     "1",
                                     "23",
                                     "\xd9\xa3",
                                     "\xe2\x85\xa7",
                                     " ",
                                     " ",
                                     "\t",
                                     "\n",
                                     "\r",
                                     "\xc2\xa0",
                                     "\xe3\x80\x80",
                                     "'",
                                     "'s",
                                     "'S",
                                     "'ll",
                                     "'Re",
                                     "!",
                                     "$",
                                     "_",
                                     "(",
                                     "+=",
                                     "<|",
                                     "1234",
                                     "\xf0\x9f\xa6\x99",
                                     "\xcc\x81",
                                     "\x01",
                                     "\xcd\xb8",
                                     "\xc2\x85",
                                     "-",
                                     "\xc3\x89",
                                     "/",
                                     "Ab",
                                     "aB",
                                     "'t",
                                     "\xe0\xa4\x95\xe0\xa4\xbf"};
        std::mt19937 rng(99);
        for (int round = 0; round < 1000; ++round) {
            std::string text;
            const int n = 1 + int(rng() % 24);
            for (int i = 0; i < n; ++i) text += pool[rng() % std::size(pool)];
            const std::vector<uint32_t> cpts = unicode::codepoints_lenient(text);
            const std::vector<size_t> got = split_words(static_cast<PreTokenizer>(kind), cpts);
            const std::vector<size_t> want = regex_split_collapsed(cpts, patterns);
            QVERIFY2(got == want, qPrintable(printable(QByteArray::fromStdString(text))));
        }
    }

    void gpt2ByteAlphabet() {
        int n_mapped = 0;
        for (int b = 0; b < 256; ++b) {
            const uint32_t c = unicode::byte_to_codepoint(static_cast<uint8_t>(b));
            QCOMPARE(unicode::codepoint_to_byte(c), b);
            n_mapped += c >= 256 ? 1 : 0;
        }
        QCOMPARE(n_mapped, 68);
        QCOMPARE(unicode::byte_to_codepoint(' '), uint32_t(0x120));   // 'Ġ'
        QCOMPARE(unicode::byte_to_codepoint('\n'), uint32_t(0x10A));  // 'Ċ'
        QCOMPARE(unicode::codepoint_to_byte(0x4E00), -1);
    }

    void protoWireFormat() {
        spm_proto::BpeModelSpec spec;
        spec.pieces.push_back({"a", 1.0f, spm_proto::PieceType::normal});
        spec.unk_id = -1;
        const std::string bytes = spm_proto::serialize(spec);
        // pieces { piece: "a" score: 1.0 type: NORMAL }
        const std::string piece(
            "\x0a\x0a\x0a\x01"
            "a\x15\x00\x00\x80\x3f\x18\x01",
            12);
        QCOMPARE(QByteArray::fromStdString(bytes.substr(0, piece.size())).toHex(), QByteArray::fromStdString(piece).toHex());
        // trainer_spec.unk_id = -1 is a ten-byte varint: tag (40 << 3) = 0xC0 0x02.
        QVERIFY(bytes.find(std::string("\xc0\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12)) != std::string::npos);
        QVERIFY(bytes.find("identity") != std::string::npos);
    }

    // ---- malformed vocabularies
    void malformedVocab_data() {
        QTest::addColumn<int>("case_id");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("key");
        QTest::newRow("missing model") << 0 << int(StatusCode::not_found) << "tokenizer.ggml.model";
        QTest::newRow("missing tokens") << 1 << int(StatusCode::not_found) << "tokenizer.ggml.tokens";
        QTest::newRow("empty tokens") << 2 << int(StatusCode::corrupt_data) << "tokenizer.ggml.tokens";
        QTest::newRow("scores length") << 3 << int(StatusCode::corrupt_data) << "tokenizer.ggml.scores";
        QTest::newRow("types length") << 4 << int(StatusCode::corrupt_data) << "tokenizer.ggml.token_type";
        QTest::newRow("bos out of range") << 5 << int(StatusCode::corrupt_data) << "tokenizer.ggml.bos_token_id";
        QTest::newRow("eos out of range") << 6 << int(StatusCode::corrupt_data) << "tokenizer.ggml.eos_token_id";
        QTest::newRow("unsupported bert") << 7 << int(StatusCode::unsupported) << "'bert'";
        QTest::newRow("unsupported t5") << 8 << int(StatusCode::unsupported) << "'t5'";
        QTest::newRow("bpe without merges") << 9 << int(StatusCode::not_found) << "tokenizer.ggml.merges";
        QTest::newRow("tokens not strings") << 10 << -1 << "tokenizer.ggml.tokens";
        QTest::newRow("add_bos without bos") << 11 << int(StatusCode::corrupt_data) << "tokenizer.ggml.add_bos_token";
    }
    void malformedVocab() {
        QFETCH(int, case_id);
        QFETCH(int, code);
        QFETCH(QString, key);
        gguf::GgufWriter w;
        switch (case_id) {
            case 0: w.set_string_array("tokenizer.ggml.tokens", {"a"}); break;
            case 1: w.set_string("tokenizer.ggml.model", "llama"); break;
            case 2:
                w.set_string("tokenizer.ggml.model", "llama");
                w.set_string_array("tokenizer.ggml.tokens", {});
                break;
            case 3:
                w = small_spm_writer();
                w.set_float32_array("tokenizer.ggml.scores", {0, 0, 0});
                break;
            case 4:
                w = small_spm_writer();
                w.set_int32_array("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 1, 1});
                break;
            case 5:
                w = small_spm_writer();
                w.set_uint32("tokenizer.ggml.bos_token_id", 5);
                break;
            case 6:
                w = small_spm_writer();
                w.set_uint32("tokenizer.ggml.eos_token_id", 1000);
                break;
            case 7:
                w = small_spm_writer();
                w.set_string("tokenizer.ggml.model", "bert");
                break;
            case 8:
                w = small_spm_writer();
                w.set_string("tokenizer.ggml.model", "t5");
                break;
            case 9:
                w.set_string("tokenizer.ggml.model", "gpt2");
                w.set_string("tokenizer.ggml.pre", "gpt-2");
                w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
                break;
            case 10:
                w.set_string("tokenizer.ggml.model", "llama");
                w.set_int32_array("tokenizer.ggml.tokens", {1, 2, 3});
                break;
            case 11:
                // SentencePiece adds BOS by default, but id 1 is outside this vocabulary.
                w.set_string("tokenizer.ggml.model", "llama");
                w.set_string_array("tokenizer.ggml.tokens", {"<unk>"});
                break;
        }
        const auto parsed = parse_vocab(w);
        QVERIFY(!parsed->vocab.ok());
        const QString message = QString::fromStdString(parsed->vocab.status().message());
        if (code >= 0) QCOMPARE(int(parsed->vocab.status().code()), code);
        QVERIFY2(message.contains(key), qPrintable(message));
        QVERIFY2(message.contains("test.gguf"), qPrintable(message));
    }

    void smallVocabLoadsAndDefaults() {
        const auto parsed = parse_vocab(small_spm_writer());
        QVERIFY2(parsed->vocab.ok(), parsed->vocab.status().message().c_str());
        const Vocab & v = *parsed->vocab;
        QCOMPARE(v.type, VocabType::spm);
        QCOMPARE(v.bos_id, 1);
        QCOMPARE(v.eos_id, 2);
        QCOMPARE(v.unk_id, 0);
        QVERIFY(v.add_bos);
        QVERIFY(!v.add_eos);
        QVERIFY(v.add_space_prefix);
        Result<Tokenizer> t = Tokenizer::create(*parsed->vocab);
        QVERIFY2(t.ok(), t.status().message().c_str());
        // No byte tokens in this vocabulary: unknown characters fall back to nothing.
        QCOMPARE(ids_to_string(t->encode("a b", true, false)), QString("1 3 4"));
    }

    void duplicateTokensRejected() {
        gguf::GgufWriter w = small_spm_writer();
        w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "b", "b"});
        const auto parsed = parse_vocab(w);
        QVERIFY(parsed->vocab.ok());
        Result<Tokenizer> t = Tokenizer::create(*parsed->vocab);
        QVERIFY(!t.ok());
        QVERIFY2(t.status().message().find("duplicate token 'b'") != std::string::npos, t.status().message().c_str());
    }

    void noneSentinelIdsAreAbsent() {
        gguf::GgufWriter w = small_spm_writer();
        w.set_uint32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
        w.set_uint32("tokenizer.ggml.eot_token_id", 77);  // out of range, not needed: a note
        const auto parsed = parse_vocab(w);
        QVERIFY2(parsed->vocab.ok(), parsed->vocab.status().message().c_str());
        QCOMPARE(parsed->vocab->pad_id, -1);
        QCOMPARE(parsed->vocab->eot_id, -1);
        QCOMPARE(parsed->vocab->notes.size(), size_t(1));
    }

    void unknownPreTokenizerFallsBack() {
        gguf::GgufWriter w;
        w.set_string("tokenizer.ggml.model", "gpt2");
        w.set_string("tokenizer.ggml.pre", "some-future-model");
        w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "\xc4\xa0"});
        w.set_string_array("tokenizer.ggml.merges", {"a b"});
        const auto parsed = parse_vocab(w);
        QVERIFY2(parsed->vocab.ok(), parsed->vocab.status().message().c_str());
        QCOMPARE(parsed->vocab->pre, PreTokenizer::llama_default);
        QCOMPARE(parsed->vocab->notes.size(), size_t(1));
        QVERIFY(parsed->vocab->notes[0].find("some-future-model") != std::string::npos);
        QCOMPARE(parsed->vocab->eos_id, -1);  // llama.cpp's BPE default (11) is out of range here
        Result<Tokenizer> t = Tokenizer::create(*parsed->vocab);
        QVERIFY(t.ok());
        QCOMPARE(ids_to_string(t->encode("ab ab", false, false)), QString("2 3 2"));
    }

    // The 2025-2026 pre-tokenizer names configure the tokenizer as llama.cpp does: tekken
    // (Mistral Nemo, Mistral 3) adds BOS and takes a word that is a token whole, gpt-4o
    // (gpt-oss, Llama 4) neither; both keep spaces in decoding.
    void newPreTokenizerNames_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("pre");
        QTest::addColumn<QString>("ids");  // of "abc 12" with add_special
        QTest::newRow("tekken") << "tekken" << int(PreTokenizer::tekken) << "0 5 6 7 8";
        QTest::newRow("gpt-4o") << "gpt-4o" << int(PreTokenizer::gpt4o) << "4 3 6 9";
        QTest::newRow("llama4") << "llama4" << int(PreTokenizer::gpt4o) << "4 3 6 9";
        QTest::newRow("qwen35") << "qwen35" << int(PreTokenizer::qwen35) << "4 3 6 7 8";
    }
    void newPreTokenizerNames() {
        QFETCH(QString, name);
        QFETCH(int, pre);
        QFETCH(QString, ids);
        gguf::GgufWriter w;
        w.set_string("tokenizer.ggml.model", "gpt2");
        w.set_string("tokenizer.ggml.pre", name.toStdString());
        w.set_string_array("tokenizer.ggml.tokens", {"<s>", "a", "b", "c", "ab", "abc", "\xc4\xa0", "1", "2", "12"});
        w.set_int32_array("tokenizer.ggml.token_type", {3, 1, 1, 1, 1, 1, 1, 1, 1, 1});
        w.set_string_array("tokenizer.ggml.merges", {"a b", "1 2"});
        w.set_uint32("tokenizer.ggml.bos_token_id", 0);
        const auto parsed = parse_vocab(w);
        QVERIFY2(parsed->vocab.ok(), parsed->vocab.status().message().c_str());
        QCOMPARE(int(parsed->vocab->pre), pre);
        QVERIFY(parsed->vocab->notes.empty());
        QVERIFY(!parsed->vocab->clean_spaces);
        Result<Tokenizer> t = Tokenizer::create(*parsed->vocab);
        QVERIFY(t.ok());
        QCOMPARE(ids_to_string(t->encode("abc 12", true, false)), ids);
        QCOMPARE(t->decode(t->encode("abc 12", true, false)), std::string("abc 12"));
    }

    // Gemma 4's "gemma4" tokenizer model as llama.cpp runs it (llama-vocab.cpp, August
    // 2026): BPE over the text with spaces as U+2581, merged as UTF-8 within runs of newlines
    // and runs of the rest; a newline run that is a token stays whole; a piece that is no
    // token falls back to <0xXX> tokens; BOS always added; no default special ids.
    void gemma4Vocabulary() {
        gguf::GgufWriter w;
        w.set_string("tokenizer.ggml.model", "gemma4");
        w.set_string("tokenizer.ggml.pre", "default");  // ignored: a gemma4 model is gemma4
        w.set_string_array("tokenizer.ggml.tokens", {"<pad>", "<eos>", "<bos>", "<unk>", "\n", "\n\n", "\xe2\x96\x81", "h", "i", "hi",
                                                     "\xe2\x96\x81hi", "<0xC3>", "<0xA9>", "<|turn>", "<turn|>"});
        w.set_int32_array("tokenizer.ggml.token_type", {3, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 6, 6, 3, 3});
        w.set_string_array("tokenizer.ggml.merges", {"h i", "\xe2\x96\x81 hi"});
        w.set_uint32("tokenizer.ggml.bos_token_id", 2);
        w.set_uint32("tokenizer.ggml.eos_token_id", 1);
        w.set_bool("tokenizer.ggml.add_bos_token", false);  // llama.cpp overrides it
        const auto parsed = parse_vocab(w);
        QVERIFY2(parsed->vocab.ok(), parsed->vocab.status().message().c_str());
        const Vocab & v = *parsed->vocab;
        QCOMPARE(v.type, VocabType::bpe);
        QCOMPARE(v.pre, PreTokenizer::gemma4);
        QCOMPARE(v.pre_name, std::string("gemma4"));
        QVERIFY(v.notes.empty());
        QVERIFY(v.add_bos);
        QCOMPARE(v.bos_id, 2);
        QCOMPARE(v.eos_id, 1);
        QCOMPARE(v.unk_id, -1);
        QVERIFY(std::find(v.eog_ids.begin(), v.eog_ids.end(), 14) != v.eog_ids.end());  // <turn|>
        Result<Tokenizer> t = Tokenizer::create(v);
        QVERIFY2(t.ok(), t.status().message().c_str());

        // "hi hi" -> hi + ▁hi; "\n\n" is a token; "é" is none: its bytes.
        const std::string text = "hi hi\n\n\xc3\xa9";
        const std::vector<int32_t> ids = t->encode(text, true, false);
        QCOMPARE(ids_to_string(ids), QString("2 9 10 5 11 12"));
        QCOMPARE(t->decode(std::span(ids).subspan(1)), text);
        QCOMPARE(t->token_to_piece(10, false), std::string(" hi"));
        // No merge makes "\n\n", yet a run of two is that token; a run of three is not one.
        QCOMPARE(ids_to_string(t->encode("\n\n\n", false, false)), QString("4 4 4"));
        // A byte without a <0xXX> token is dropped, as llama.cpp does.
        QCOMPARE(ids_to_string(t->encode("h\xe2\x82\xac", false, false)), QString("7"));
        // With parse_special, a special token's text is that token.
        QCOMPARE(ids_to_string(t->encode("<|turn>hi", false, true)), QString("13 9"));

        // Offsets are bytes of the original text: the U+2581 of " hi" is its space.
        const EncodedText e = t->encode_with_offsets("hi hi\n\n", false, false);
        QCOMPARE(ids_to_string(e.tokens), QString("9 10 5"));
        QCOMPARE(e.spans.size(), size_t(3));
        QCOMPARE(e.spans[1].begin, size_t(2));
        QCOMPARE(e.spans[1].end, size_t(5));
        QCOMPARE(e.spans[2].begin, size_t(5));
        QCOMPARE(e.spans[2].end, size_t(7));
    }

    void invalidUtf8Input() {
        // SentencePiece: raw bytes become byte tokens and come back unchanged.
        REQUIRE_TOKENIZER(spm, "data/tokenizer/ggml-vocab-llama-spm.gguf");
        const std::string bad = "ok \xe2\x28\xa1z \x80x \xc3";
        QCOMPARE(spm->decode(spm->encode(bad, false, false)), bad);
        // llama.cpp cuts characters by their lead byte after escaping spaces, so a bad lead
        // byte swallows the U+2581 that follows it: all of it becomes byte tokens.
        const auto byte = [&](int b) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "<0x%02X>", b);
            return QString::number(spm->token_id(buf).value_or(-1));
        };
        const QString ids = ids_to_string(spm->encode("\xff end", false, false));
        const QString space = QString::number(spm->token_id("\xe2\x96\x81").value_or(-1));
        const QString expected = QStringList{space, byte(0xFF), byte(0xE2), byte(0x96), byte(0x81)}.join(' ');
        QVERIFY2(ids.startsWith(expected), qPrintable(ids));
        // Byte-level BPE: llama.cpp reads each bad byte as U+FFFD.
        REQUIRE_TOKENIZER(bpe, "data/tokenizer/ggml-vocab-llama-bpe.gguf");
        QCOMPARE(bpe->decode(bpe->encode("a\xff"
                                         "b",
                                         false, false)),
                 std::string("a\xef\xbf\xbd"
                             "b"));
    }

    void cleanSpacesOption() {
        REQUIRE_TOKENIZER(t, "data/tokenizer/ggml-vocab-gpt-2.gguf");
        const std::vector<int32_t> ids = t->encode("Hello , world ! It 's", false, false);
        QCOMPARE(t->decode(ids), std::string("Hello , world ! It 's"));
        QCOMPARE(t->decode(ids, DecodeOptions{.clean_spaces = true}), std::string("Hello, world! It's"));
    }

    // ---- long documents: no quadratic behaviour
    void longInputs_data() {
        QTest::addColumn<QString>("vocab");
        for (const char * file : kVocabFiles) QTest::newRow(file) << QString(file);
    }
    void longInputs() {
        QFETCH(QString, vocab);
        REQUIRE_TOKENIZER(t, "data/tokenizer/" + vocab);
        const QByteArray story = read_shared("data/text/tinystories_style_eval.txt");
        std::string doc;
        doc.reserve(1'100'000);
        while (doc.size() < 1'000'000) {
            doc += to_std(story);
            doc += "\n\xe6\x88\x91\xe6\x83\xb3 \xf0\x9f\xa6\x99 int f(x) { return x*x; }\n";
        }
        const std::string spaces(300'000, ' ');
        const std::string newlines_and_tabs = std::string(100'000, '\n') + std::string(100'000, '\t');
        const std::string one_word(300'000, 'a');
        std::string digits;
        for (int i = 0; i < 100'000; ++i) digits += char('0' + i % 10);
        const std::string * texts[] = {&doc, &spaces, &newlines_and_tabs, &one_word, &digits};
        for (const std::string * text : texts) {
            QElapsedTimer timer;
            timer.start();
            const std::vector<int32_t> ids = t->encode(*text, true, true);
            const qint64 ms = timer.elapsed();
            QVERIFY(!ids.empty());
            // Reported, not asserted (speed belongs in benchmarks); quadratic behaviour would
            // show here as minutes.
            qInfo("%zu bytes in %lld ms", text->size(), static_cast<long long>(ms));
            QCOMPARE(t->decode(ids).size(), text->size());
        }
    }
};

QTEST_GUILESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
