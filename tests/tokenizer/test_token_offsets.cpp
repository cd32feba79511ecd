// Token offsets and reused encodings: each token's bytes in the text (SentencePiece and
// byte-level BPE, on llama.cpp's test vectors), and encode_reusing() giving exactly the
// tokens and offsets of encoding the whole text, at every kind of boundary.
#include <QtTest>

#include <algorithm>
#include <map>
#include <memory>

#include "engine/tokenizer/unicode.h"
#include "tokenizer/tokenizer_vectors.h"

using namespace lr;
using namespace lr::test;

namespace {

// Conversation-shaped texts: a prefix the way a chat template renders a document, and what
// a turn appends to it.
struct Boundary {
    const char * name;
    const char * prefix;
    const char * suffix;
};
const Boundary kBoundaries[] = {
    {"plain", "<s>System: Read the report below.\n\nSales grew 4% in May.\n", "User: What grew?\nAssistant:"},
    {"plain no newline", "System: the end", " of it.\nUser: hi"},
    {"chatml", "<|im_start|>system\nRead this.\n\nSales grew.<|im_end|>\n",
     "<|im_start|>user\nWhat grew?<|im_end|>\n<|im_start|>assistant\n"},
    {"llama3", "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nSales grew.<|eot_id|>",
     "<|start_header_id|>user<|end_header_id|>\n\nWhat grew?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"phi3", "<|system|>\nSales grew.<|end|>\n", "<|user|>\nWhat grew?<|end|>\n<|assistant|>\n"},
    {"spaces at the cut", "Sales grew.   \n  ", "   \n\n Next"},
    {"word across the cut", "Sales gr", "ew in May"},
    {"emoji across the cut", "Llama \xf0\x9f\xa6", "\x99 and more"},
    {"special text across the cut", "before <|im_", "end|> after"},
    {"invalid bytes", "ok \xe2\x28\xa1z \x80x\n", "\xc3 tail"},
};

const char * const kModelVocabs[] = {"models/stories260K.gguf"};

}  // namespace

class TestTokenOffsets : public QObject {
    Q_OBJECT

    std::map<QString, std::unique_ptr<Tokenizer>> m_cache;

    const Tokenizer * tok(const QString & relative) {
        std::unique_ptr<Tokenizer> & t = m_cache[relative];
        if (!t) {
            Result<Tokenizer> loaded = load_tokenizer(shared_path(relative));
            if (!loaded.ok()) return nullptr;
            t = std::make_unique<Tokenizer>(std::move(loaded).value());
        }
        return t.get();
    }

    static QStringList vocabularies() {
        QStringList out;
        for (const char * file : kVocabFiles) out << QStringLiteral("data/tokenizer/") + file;
        for (const char * file : kModelVocabs) out << QString::fromLatin1(file);
        return out;
    }

private slots:
    // Every token's span spells its piece (SentencePiece's space prefix aside), in order and
    // without overlap; the spans of a well-formed text cover all of it.
    void spansSpellEachToken_data() {
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<QByteArray>("input");
        for (const char * file : kVocabFiles) {
            const std::vector<VectorCase> cases = read_vectors(file);
            QVERIFY(!cases.empty());
            for (size_t i = 0; i < cases.size(); ++i) {
                QTest::newRow(qPrintable(QString("%1 #%2 '%3'").arg(file).arg(i).arg(printable(cases[i].input))))
                    << QStringLiteral("data/tokenizer/") + file << cases[i].input;
            }
        }
        QTest::newRow("stories260K eval text") << QStringLiteral("models/stories260K.gguf")
                                               << read_shared(QStringLiteral("data/text/tinystories_style_eval.txt")).left(3000);
    }
    void spansSpellEachToken() {
        QFETCH(QString, vocab);
        QFETCH(QByteArray, input);
        const Tokenizer * t = tok(vocab);
        QVERIFY(t);
        const std::string text = to_std(input);
        const EncodedText e = t->encode_with_offsets(text, true, false);
        QCOMPARE(e.tokens, t->encode(text, true, false));
        QCOMPARE(e.spans.size(), e.tokens.size());
        const bool well_formed = unicode::is_valid_utf8(text);
        size_t at = 0;
        std::string covered;
        for (size_t i = 0; i < e.tokens.size(); ++i) {
            const TextSpan s = e.spans[i];
            QVERIFY2(s.begin >= at && s.end >= s.begin && s.end <= text.size(), qPrintable(QString("token %1").arg(i)));
            at = s.end;
            const std::string spelled = text.substr(s.begin, s.size());
            covered += spelled;
            if (!well_formed) continue;
            const std::string piece = t->token_to_piece(e.tokens[i], false);
            const bool prefixed = t->adds_space_prefix() && piece == " " + spelled;
            QVERIFY2(piece == spelled || prefixed || (t->is_special(e.tokens[i]) && s.begin == s.end),
                     qPrintable(
                         QString("token %1 '%2' spans '%3'").arg(i).arg(QString::fromStdString(piece), QString::fromStdString(spelled))));
        }
        if (well_formed) QCOMPARE(covered, text);
    }

    // encode_reusing gives what encoding the whole text gives, tokens and spans, at every
    // kind of boundary and in every vocabulary; reusing a text that departs from the new one
    // before its end too.
    void reusedEqualsWhole_data() {
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<QByteArray>("prefix");
        QTest::addColumn<QByteArray>("suffix");
        for (const QString & vocab : vocabularies()) {
            for (const Boundary & b : kBoundaries) {
                QTest::newRow(qPrintable(vocab + " " + b.name)) << vocab << QByteArray(b.prefix) << QByteArray(b.suffix);
            }
        }
        // Every test vector followed by the next one.
        for (const char * file : kVocabFiles) {
            const std::vector<VectorCase> cases = read_vectors(file);
            for (size_t i = 0; i + 1 < cases.size(); ++i) {
                QTest::newRow(qPrintable(QString("%1 #%2+#%3").arg(file).arg(i).arg(i + 1)))
                    << QStringLiteral("data/tokenizer/") + file << cases[i].input << cases[i + 1].input;
            }
        }
    }
    void reusedEqualsWhole() {
        QFETCH(QString, vocab);
        QFETCH(QByteArray, prefix);
        QFETCH(QByteArray, suffix);
        const Tokenizer * t = tok(vocab);
        QVERIFY(t);
        const std::string whole = to_std(prefix + suffix);
        // The earlier text: the prefix alone, and the prefix followed by something else.
        for (const std::string & earlier : {to_std(prefix), to_std(prefix) + "<|im_start|>assistant\n\nOther text."}) {
            for (const bool parse_special : {true, false}) {
                const EncodedText expected = t->encode_with_offsets(whole, true, parse_special);
                const EncodedText head = t->encode_with_offsets(earlier, true, parse_special);
                const EncodedText got = t->encode_reusing(head, earlier, whole, true, parse_special);
                QCOMPARE(ids_to_string(got.tokens), ids_to_string(expected.tokens));
                QVERIFY(got.spans == expected.spans);
                QCOMPARE(got.tokens, t->encode(whole, true, parse_special));
                const size_t common = size_t(std::mismatch(earlier.begin(), earlier.end(), whole.begin(), whole.end()).first -
                                             earlier.begin());
                QVERIFY(got.reused_bytes <= common);
            }
        }
    }

    // Where encoding resumes when the text goes on: just after SentencePiece's isolated
    // newline, at the last special token of a chat prefix, at the special token where two
    // chat turns part, from the start when nothing is safe.
    void resumePoints_data() {
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<QByteArray>("earlier");
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<int>("reused");
        const QByteArray spm = "data/tokenizer/ggml-vocab-llama-spm.gguf";
        const QByteArray im = "<|im_start|>system\nDoc<|im_end|>\n";
        const QByteArray eot = "<|start_header_id|>system<|end_header_id|>\n\nDoc<|eot_id|>";
        QTest::newRow("spm newline") << QString(spm) << QByteArray("Hello\nworld") << QByteArray("Hello\nworld, again") << 6;
        QTest::newRow("stories newline") << "models/stories260K.gguf" << QByteArray("System: a story.\n")
                                         << QByteArray("System: a story.\nUser: hi") << 17;
        QTest::newRow("spm no cut") << QString(spm) << QByteArray("Hello world") << QByteArray("Hello world again") << 0;
        QTest::newRow("qwen2 im_end") << "data/tokenizer/ggml-vocab-qwen2.gguf" << im << im + "<|im_start|>user\nQ" << 22;
        QTest::newRow("llama3 eot") << "data/tokenizer/ggml-vocab-llama-bpe.gguf" << eot << eot + "<|start_header_id|>user" << 47;
        // Llama 3's older template ends every prompt with the assistant's header: the turns
        // part after <|start_header_id|>, where encoding resumes.
        QTest::newRow("llama3 turns part") << "data/tokenizer/ggml-vocab-llama-bpe.gguf"
                                           << eot + "<|start_header_id|>assistant<|end_header_id|>\n\n"
                                           << eot + "<|start_header_id|>user<|end_header_id|>\n\nQ" << 57;
        QTest::newRow("bpe no special") << "data/tokenizer/ggml-vocab-gpt-2.gguf" << QByteArray("Hello\nworld\n")
                                        << QByteArray("Hello\nworld\nmore") << 0;
        // A bad lead byte takes the bytes after it into its character, an isolated one too:
        // no cut there (found by fuzz_tokenizer).
        QTest::newRow("spm bad lead byte") << QString(spm) << QByteArray("\xff\x01") << QByteArray("\xff\x01e") << 0;
        QTest::newRow("spm bad lead byte before a newline") << QString(spm) << QByteArray("ab\xf0\n") << QByteArray("ab\xf0\ncd") << 0;
        QTest::newRow("spm newline after a bad lead byte's reach")
            << QString(spm) << QByteArray("\xe2 x\n") << QByteArray("\xe2 x\ny") << 4;
        QTest::newRow("qwen2 special cut at the end")
            << "data/tokenizer/ggml-vocab-qwen2.gguf" << QByteArray("a<|im_end|>b<|im_") << QByteArray("a<|im_end|>b<|im_start|>") << 1;
    }
    void resumePoints() {
        QFETCH(QString, vocab);
        QFETCH(QByteArray, earlier);
        QFETCH(QByteArray, text);
        QFETCH(int, reused);
        const Tokenizer * t = tok(vocab);
        QVERIFY(t);
        const EncodedText e = t->encode_reusing(t->encode_with_offsets(to_std(earlier), true, true), to_std(earlier), to_std(text), true,
                                                true);
        QCOMPARE(int(e.reused_bytes), reused);
        QCOMPARE(e.tokens, t->encode(to_std(text), true, true));
    }
};

QTEST_GUILESS_MAIN(TestTokenOffsets)
#include "test_token_offsets.moc"
