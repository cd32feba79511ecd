#pragma once
// What the tokenizer tests share: the vocabularies with llama.cpp's test vectors in the
// shared data, and reading them.

#include <QFile>
#include <QList>
#include <QString>

#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace lr::test {

inline const QString kShared = QStringLiteral(LONGREAD_SHARED_DIR);

inline std::string shared_path(const QString & relative) { return (kShared + "/" + relative).toStdString(); }

inline QByteArray read_shared(const QString & relative) {
    QFile f(kShared + "/" + relative);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll();
}

inline Result<Tokenizer> load_tokenizer(const std::string & path) {
    LR_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
    LR_ASSIGN_OR_RETURN(Vocab vocab, load_vocab(file));
    return Tokenizer::create(std::move(vocab));
}

inline QString ids_to_string(const std::vector<int32_t> & ids) {
    QStringList parts;
    for (const int32_t id : ids) parts << QString::number(id);
    return parts.join(' ');
}

// test-tokenizer-0's reading of the vectors: inputs separated by "\n__ggml_vocab_test__\n"
// (nothing after the last separator), one line of ids per input.
struct VectorCase {
    QByteArray input;
    QString expected;
};
inline std::vector<VectorCase> read_vectors(const QString & vocab_file) {
    const QByteArray inp = read_shared("data/tokenizer/" + vocab_file + ".inp");
    const QByteArray out = read_shared("data/tokenizer/" + vocab_file + ".out");
    const QByteArray sep = "\n__ggml_vocab_test__\n";
    std::vector<QByteArray> inputs;
    qsizetype pos = 0;
    while (pos < inp.size()) {
        const qsizetype next = inp.indexOf(sep, pos);
        if (next < 0) {
            inputs.push_back(inp.mid(pos));
            break;
        }
        inputs.push_back(inp.mid(pos, next - pos));
        pos = next + sep.size();
    }
    QList<QByteArray> lines = out.split('\n');
    if (!lines.isEmpty() && lines.back().isEmpty()) lines.pop_back();
    std::vector<VectorCase> cases;
    if (static_cast<qsizetype>(inputs.size()) != lines.size()) return cases;
    for (size_t i = 0; i < inputs.size(); ++i) {
        cases.push_back({inputs[i], QString::fromUtf8(lines[static_cast<qsizetype>(i)]).trimmed()});
    }
    return cases;
}

inline QString printable(const QByteArray & s) {
    QString out = QString::fromUtf8(s.left(40));
    out.replace('\n', "\\n").replace('\t', "\\t").replace('\r', "\\r");
    return out;
}

inline std::string to_std(const QByteArray & b) { return std::string(b.constData(), static_cast<size_t>(b.size())); }

inline const char * const kVocabFiles[] = {
    "ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf",  "ggml-vocab-gpt-2.gguf",   "ggml-vocab-llama-bpe.gguf",
    "ggml-vocab-qwen2.gguf",     "ggml-vocab-gemma3.gguf", "ggml-vocab-gpt-oss.gguf",
};

}  // namespace lr::test
