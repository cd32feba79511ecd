// The attention view: on a made-up document of four words, the heat map paints the
// evicted word's columns with the red band and the kept ones without, and the text strikes
// the evicted word through; the layer choice shades by one layer; in a long document only
// the runs on screen are shaded, as it scrolls. With
// LONGREAD_ATTENTION_SCREENSHOT=<file.png>, the app itself (bundled model, H2O on) reads a
// document and the view is saved as a picture (the README's).
#include <QComboBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QLabel>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

#include "support/eventually.h"
#include "support/launch_app.h"
#include "support/reference_data.h"
#include "ui/attention_heat_map.h"
#include "ui/attention_view.h"
#include "ui/main_window.h"
#include "ui/shaded_text.h"
#include "ui/theme.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;
using namespace lr::test;

namespace {

// "aaaa bbbb cccc dddd": four tokens, two layers; layer 1 gives "bbbb" most attention;
// "cccc" is evicted from both layers.
RetentionSnapshot fourWords() {
    RetentionSnapshot r;
    r.conversationId = 1;
    r.inContext = true;
    r.perPosition = true;
    r.policy = QStringLiteral("h2o 75%");
    r.documentText = QStringLiteral("aaaa bbbb cccc dddd");
    r.tokenSpans = {{0, 4}, {4, 9}, {9, 14}, {14, 19}};
    r.kept = {1, 1, 0, 1};
    auto a = std::make_shared<AttentionMass>();
    a->n_positions = 4;
    a->n_query_heads = 1;
    a->n_queries = 4;
    a->layers = {0, 1};
    a->queries = {4, 3, 2, 1};
    a->mass = {2.0f, 0.3f, 0.2f, 0.1f, 0.4f, 2.4f, 0.2f, 0.1f};
    a->held = {1, 1, 0, 1, 1, 1, 0, 1};
    r.attention = a;
    return r;
}

// 16,384 tokens ("word " each, one paragraph), 22 layers, every other stretch of 64 tokens
// evicted.
RetentionSnapshot longDocument() {
    constexpr uint32_t kTokens = 16384, kLayers = 22;
    RetentionSnapshot r;
    r.inContext = r.perPosition = true;
    r.policy = QStringLiteral("h2o 50%");
    auto a = std::make_shared<AttentionMass>();
    a->n_positions = kTokens;
    a->n_query_heads = 32;
    a->n_queries = kTokens;
    for (uint32_t l = 0; l < kLayers; ++l) a->layers.push_back(l);
    for (uint32_t p = 0; p < kTokens; ++p) {
        r.documentText += QStringLiteral("word ");
        r.tokenSpans.emplace_back(int(p) * 5, int(p) * 5 + 5);
        r.kept.push_back((p / 64) % 2 ? 0.0f : 1.0f);
        a->queries.push_back(kTokens - p);
    }
    for (uint32_t l = 0; l < kLayers; ++l) {
        for (uint32_t p = 0; p < kTokens; ++p) {
            a->mass.push_back(float((p * 7919 + l * 104729) % 1000) / 100.0f);
            a->held.push_back(r.kept[p]);
        }
    }
    r.attention = a;
    return r;
}

// Shows `view` at `size` on the screen; false when it was not shown.
bool showAt(AttentionView & view, QSize size) {
    view.resize(size);
    view.show();
    return QTest::qWaitForWindowExposed(&view);
}

}  // namespace

class TestAttentionView : public QObject {
    Q_OBJECT

private slots:
    void heatMapMarksTheEvictedColumns() {
        AttentionView view;
        view.setRetention(fourWords());
        QVERIFY(showAt(view, {400, 500}));
        AttentionHeatMap * map = view.heatMap();
        const QImage image = map->grab().toImage();
        QVERIFY(image.width() >= 100);
        const int row = map->rowHeight();
        QCOMPARE(image.height() >= 2 * row, true);
        const QColor mark = theme::bad(map->palette());
        // Columns are bins of the four tokens: quarter k of the width is token k.
        auto bandAt = [&](int token, int layer) {
            const int x = (2 * token + 1) * image.width() / 8;
            return QColor(image.pixel(x, layer * row + row - 1)) == mark;
        };
        auto topAt = [&](int token, int layer) { return QColor(image.pixel((2 * token + 1) * image.width() / 8, layer * row)); };
        for (int layer = 0; layer < 2; ++layer) {
            QVERIFY(!bandAt(0, layer));
            QVERIFY(!bandAt(1, layer));
            QVERIFY(bandAt(2, layer));  // evicted
            QVERIFY(!bandAt(3, layer));
            QVERIFY(topAt(2, layer) != mark);  // the heat above the band still shows
        }
        // The most attended token is the brightest cell of its layer (closer to the accent).
        const QColor accent = theme::accent(map->palette());
        auto distance = [&](QColor c) {
            return std::abs(c.red() - accent.red()) + std::abs(c.green() - accent.green()) + std::abs(c.blue() - accent.blue());
        };
        QVERIFY(distance(topAt(1, 1)) < distance(topAt(3, 1)));
        QVERIFY(distance(topAt(0, 0)) < distance(topAt(3, 0)));
    }

    void textStrikesTheEvictedWordThrough() {
        AttentionView view;
        QVERIFY(showAt(view, {400, 500}));
        view.setRetention(fourWords());
        const auto runs = view.shownRuns();
        QVERIFY(!runs.empty());
        for (const AttentionView::Run & run : runs) QCOMPARE(run.evicted, run.begin <= 9 && run.end > 9 && run.begin < 14);
        const QList<QTextEdit::ExtraSelection> sel = view.textView()->extraSelections();
        QCOMPARE(sel.size(), qsizetype(runs.size()));
        int struck = 0;
        for (const QTextEdit::ExtraSelection & s : sel) {
            if (!s.format.fontStrikeOut()) continue;
            ++struck;
            QCOMPARE(s.cursor.selectedText(), QStringLiteral(" cccc"));
            QCOMPARE(s.format.foreground().color(), theme::bad(view.palette()));
        }
        QCOMPARE(struck, 1);
        QVERIFY(view.summaryLabel()->text().contains(QStringLiteral("struck through")));
    }

    void layerChoiceShadesByOneLayer() {
        AttentionView view;
        view.setRetention(fourWords());
        QCOMPARE(view.layerChoice()->count(), 3);  // all, layer 0, layer 1
        auto levelOf = [&](int charAt) {
            for (const AttentionView::Run & r : view.shownRuns()) {
                if (r.begin <= charAt && charAt < r.end) return r.level;
            }
            return -1;
        };
        view.layerChoice()->setCurrentIndex(1);  // layer 0: "aaaa" most
        QVERIFY(levelOf(0) > levelOf(5));
        view.layerChoice()->setCurrentIndex(2);  // layer 1: "bbbb" most
        QVERIFY(levelOf(5) > levelOf(0));
    }

    void nothingRecordedSaysSo() {
        AttentionView view;
        RetentionSnapshot r = fourWords();
        r.attention.reset();
        view.setRetention(r);
        QVERIFY(view.summaryLabel()->text().contains(QStringLiteral("Nothing recorded")));
        QVERIFY(!view.layerChoice()->isEnabled());
        QVERIFY(view.shownRuns().empty());
        view.setRetention(std::nullopt);
        QVERIFY(view.summaryLabel()->text().contains(QStringLiteral("No document")));
    }

    // A long document (16,384 tokens, 22 layers, every other stretch of 64 evicted): what
    // showing it takes on the GUI thread, printed (docs/BENCHMARKS.md), and that it is shown.
    void longDocumentIsShown() {
        const RetentionSnapshot r = longDocument();
        AttentionView view;
        QVERIFY(showAt(view, {480, 800}));
        QElapsedTimer timer;
        timer.start();
        view.setRetention(r);
        const qint64 shown = timer.elapsed();
        timer.restart();
        view.layerChoice()->setCurrentIndex(5);
        const qint64 relayered = timer.elapsed();
        timer.restart();
        view.resize(600, 800);
        QCoreApplication::processEvents();
        const qint64 resized = timer.elapsed();
        qInfo("16,384 tokens x 22 layers: shown in %lld ms, another layer in %lld ms, resized in %lld ms, %zu runs", shown, relayered,
              resized, view.shownRuns().size());
        QCOMPARE(view.shownRuns().front().evicted, false);
        QVERIFY(std::any_of(view.shownRuns().begin(), view.shownRuns().end(), [](const auto & run) { return run.evicted; }));
    }

    // In a long document only the runs on screen are extra selections; scrolled to the
    // end, the last run is shaded.
    void theRunsOnScreenAreShaded() {
        AttentionView view;
        QVERIFY(showAt(view, {480, 800}));
        view.setRetention(longDocument());
        ShadedText * text = view.textView();
        auto shades = [&](const AttentionView::Run & run) {
            const QList<QTextEdit::ExtraSelection> sel = text->extraSelections();
            return std::any_of(sel.begin(), sel.end(), [&](const QTextEdit::ExtraSelection & s) {
                return s.cursor.selectionStart() == run.begin && s.cursor.selectionEnd() == run.end;
            });
        };
        QVERIFY(!text->extraSelections().isEmpty());
        QVERIFY(text->extraSelections().size() < qsizetype(view.shownRuns().size()) / 10);
        QVERIFY(shades(view.shownRuns().front()));
        QVERIFY(!shades(view.shownRuns().back()));
        text->verticalScrollBar()->setValue(text->verticalScrollBar()->maximum());
        QVERIFY(shades(view.shownRuns().back()));
        QVERIFY(!shades(view.shownRuns().front()));
    }

    // The README's picture: the app with the bundled model and H2O reads a document.
    void screenshot() {
        const QString target = qEnvironmentVariable("LONGREAD_ATTENTION_SCREENSHOT");
        if (target.isEmpty()) QSKIP("set LONGREAD_ATTENTION_SCREENSHOT=<file.png> to take the attention view's picture");
        QTemporaryDir dir, cache;
        qputenv("XDG_CACHE_HOME", cache.path().toUtf8());
        {
            QSettings ini(dir.filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
            ini.setValue("engine/defaults", R"({"contextTokens": 2048, "policy": "h2o", "keepRatio": 0.3})");
        }
        std::unique_ptr<LongreadApp> app = test::launch_app(QDir(dir.path()));
        MainWindow * w = app->window();
        w->resize(1400, 900);
        QVERIFY(QTest::qWaitForWindowExposed(w));
        QTRY_VERIFY_WITH_TIMEOUT(app->controller()->isModelReady(), kEventuallyMs);
        QFile source(test::shared_path(QStringLiteral("data/text/tinystories_style_eval.txt")));
        QVERIFY(source.open(QIODevice::ReadOnly));
        const QByteArray text = source.readAll();
        QFile document(dir.filePath(QStringLiteral("tinystories.txt")));
        QVERIFY(document.open(QIODevice::WriteOnly));
        document.write(text.left(text.indexOf("\n\n", 2800)));
        document.close();
        app->controller()->newConversation();
        app->controller()->attachDocument(document.fileName());
        QTRY_VERIFY_WITH_TIMEOUT(app->controller()->document().phase == DocumentPhase::inContext, kEventuallyMs);
        QTRY_VERIFY_WITH_TIMEOUT(app->controller()->retention() && app->controller()->retention()->attention, kEventuallyMs);
        w->showCacheTab(MainWindow::AttentionTab);
        w->cacheDock()->setMinimumWidth(560);
        QTest::qWait(500);
        AttentionView * view = w->attentionView();
        QVERIFY(!view->shownRuns().empty());
        QVERIFY(std::any_of(view->shownRuns().begin(), view->shownRuns().end(), [](const auto & r) { return r.evicted; }));
        QVERIFY(view->grab().save(target));
        qInfo("attention view saved to %s", qPrintable(target));
    }
};

QTEST_MAIN(TestAttentionView)
#include "test_attention_view.moc"
