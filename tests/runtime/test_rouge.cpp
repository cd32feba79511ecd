// ROUGE-1/2/L on examples computed by hand (Lin 2004's definitions: clipped n-gram counts,
// the longest common subsequence, F1), and the words they count, UTF-8 included.
#include <QtTest>

#include "engine/runtime/rouge.h"

using namespace lr;

namespace {

using Words = std::vector<std::string>;

void compare(const RougeScore & got, double precision, double recall, double f1) {
    QVERIFY2(std::abs(got.precision - precision) < 1e-12,
             qPrintable(QString("precision %1, expected %2").arg(got.precision).arg(precision)));
    QVERIFY2(std::abs(got.recall - recall) < 1e-12, qPrintable(QString("recall %1, expected %2").arg(got.recall).arg(recall)));
    QVERIFY2(std::abs(got.f1 - f1) < 1e-12, qPrintable(QString("F1 %1, expected %2").arg(got.f1).arg(f1)));
}

}  // namespace

class TestRouge : public QObject {
    Q_OBJECT
private slots:
    void wordsAreLowerCaseRunsOfLettersAndDigits_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QStringList>("words");
        QTest::newRow("ascii") << QByteArray("The cat's 2 hats, 3.14!") << QStringList{"the", "cat", "s", "2", "hats", "3", "14"};
        QTest::newRow("empty") << QByteArray("") << QStringList{};
        QTest::newRow("punctuation only") << QByteArray(" ... -- !? ") << QStringList{};
        QTest::newRow("latin accents") << QByteArray("Größe ÜBER Straße, café naïve")
                                       << QStringList{"größe", "über", "straße", "café", "naïve"};
        QTest::newRow("combining mark stays") << QByteArray("Cafe\xCC\x81 ok") << QStringList{QString::fromUtf8("cafe\xCC\x81"), "ok"};
        QTest::newRow("greek and cyrillic") << QByteArray("ΣΟΦΙΑ Москва") << QStringList{"σοφια", "москва"};
        QTest::newRow("em dash separates") << QByteArray("alpha—beta") << QStringList{"alpha", "beta"};
        QTest::newRow("han one word each") << QByteArray("我爱北京 ok") << QStringList{"我", "爱", "北", "京", "ok"};
        QTest::newRow("kana one word each") << QByteArray("カタ ひら") << QStringList{"カ", "タ", "ひ", "ら"};
        QTest::newRow("invalid bytes separate") << QByteArray(
                                                       "ab\xFF"
                                                       "cd\xC3")
                                                << QStringList{"ab", "cd"};
        QTest::newRow("overlong is not a slash") << QByteArray(
                                                        "a\xC0\xAF"
                                                        "b")
                                                 << QStringList{"a", "b"};
    }
    void wordsAreLowerCaseRunsOfLettersAndDigits() {
        QFETCH(QByteArray, text);
        QFETCH(QStringList, words);
        QStringList got;
        for (const std::string & w : rouge_words(text.toStdString())) got << QString::fromStdString(w);
        QCOMPARE(got, words);
    }

    void identicalTextsScoreOne() {
        const RougeScores s = rouge("The cat sat on the mat.", "the cat sat on the mat");
        compare(s.rouge1, 1, 1, 1);
        compare(s.rouge2, 1, 1, 1);
        compare(s.rouge_l, 1, 1, 1);
    }

    void disjointTextsScoreZero() {
        const RougeScores s = rouge("alpha beta gamma", "delta epsilon");
        compare(s.rouge1, 0, 0, 0);
        compare(s.rouge2, 0, 0, 0);
        compare(s.rouge_l, 0, 0, 0);
    }

    // "the cat was found under the bed" against "the cat was under the bed":
    // unigrams: 6 of the candidate's 7 match (the x2, cat, was, under, bed), all 6 of the reference's;
    // bigrams: the cat, cat was, under the, the bed: 4 of 6 and 4 of 5;
    // LCS: "the cat was under the bed", 6 words.
    void partialOverlapMatchesHandComputedFigures() {
        const RougeScores s = rouge("the cat was found under the bed", "the cat was under the bed");
        compare(s.rouge1, 6.0 / 7, 1, 12.0 / 13);
        compare(s.rouge2, 4.0 / 6, 4.0 / 5, 8.0 / 11);
        compare(s.rouge_l, 6.0 / 7, 1, 12.0 / 13);
    }

    // Lin's example: LCS counts in-sequence matches that n-grams miss.
    void lcsRewardsOrder() {
        const RougeScores ordered = rouge("police kill the gunman", "police killed the gunman");
        compare(ordered.rouge1, 0.75, 0.75, 0.75);
        compare(ordered.rouge2, 1.0 / 3, 1.0 / 3, 1.0 / 3);
        compare(ordered.rouge_l, 0.75, 0.75, 0.75);
        const RougeScores reversed = rouge("the gunman kill police", "police killed the gunman");
        compare(reversed.rouge1, 0.75, 0.75, 0.75);
        compare(reversed.rouge_l, 0.5, 0.5, 0.5);  // "the gunman"
    }

    // A reference word matches at most as often as it occurs there.
    void countsAreClipped() {
        const RougeScores s = rouge("the the the the", "the cat");
        compare(s.rouge1, 0.25, 0.5, 1.0 / 3);
        compare(s.rouge2, 0, 0, 0);
        compare(s.rouge_l, 0.25, 0.5, 1.0 / 3);
    }

    void emptySidesFollowTheDocumentedConvention() {
        const RougeScores both = rouge("", "  ...  ");
        compare(both.rouge1, 1, 1, 1);
        compare(both.rouge_l, 1, 1, 1);
        const RougeScores one = rouge("", "some words");
        compare(one.rouge1, 0, 0, 0);
        compare(one.rouge2, 0, 0, 0);
        compare(one.rouge_l, 0, 0, 0);
        compare(rouge("words", "").rouge1, 0, 0, 0);
        // One word each: no bigram on either side.
        compare(rouge("Hello!", "hello").rouge2, 1, 1, 1);
        compare(rouge("hello", "hello world").rouge2, 0, 0, 0);
    }

    void utf8TextsScoreByTheirWords() {
        const RougeScores same = rouge("Die GRÖSSE der Straße — 我爱北京", "die grösse der straße 我 爱 北 京");
        compare(same.rouge1, 1, 1, 1);
        compare(same.rouge2, 1, 1, 1);
        // Two of three characters, in order: "北京" against "北京市".
        const RougeScores part = rouge("北京", "北京市");
        compare(part.rouge1, 1, 2.0 / 3, 0.8);
        compare(part.rouge2, 1, 0.5, 2.0 / 3);
    }

    void rougeNOnWordLists() {
        const Words c = {"a", "b", "c", "d"}, r = {"a", "b", "c", "e"};
        compare(rouge_n(c, r, 3), 0.5, 0.5, 0.5);  // "a b c" of two trigrams each
        compare(rouge_n(c, r, 5), 1, 1, 1);        // none on either side
    }
};

QTEST_GUILESS_MAIN(TestRouge)
#include "test_rouge.moc"
