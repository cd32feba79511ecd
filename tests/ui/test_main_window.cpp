// The main window with a scripted engine: accessible names on every control, the empty
// state, the composer (Enter sends, Esc stops), edit and regenerate, a reply's thinking, a
// dropped document that does not fit and the options offered, a reading's progress that
// leaves the window's width alone, the live cache panel (absent tiers, charts), the
// settings and the planner's prediction, the retention view, the dark palette, shortcuts,
// and the model picker.
#include <QAbstractButton>
#include <QAbstractItemView>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QClipboard>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include "app/core/model_list_model.h"
#include "app/support/fake_engine.h"
#include "support/eventually.h"
#include "support/reference_data.h"
#include "ui/cache_panel.h"
#include "ui/cache_settings_panel.h"
#include "ui/chat_view.h"
#include "ui/composer.h"
#include "ui/conversation_list_view.h"
#include "ui/document_panel.h"
#include "ui/longread_app.h"
#include "ui/main_window.h"
#include "ui/message_bubble.h"
#include "ui/model_picker.h"
#include "ui/retention_view.h"
#include "ui/shaded_text.h"
#include "ui/theme.h"
#include "ui/thinking_section.h"
#include "ui/tier_bar.h"
#include "ui/time_chart.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;
using namespace lr::test;

class TestMainWindow : public QObject {
    Q_OBJECT

    std::unique_ptr<QTemporaryDir> m_dir;
    std::shared_ptr<FakeScript> m_script;
    std::unique_ptr<LongreadApp> m_app;
    MainWindow * w() const { return m_app->window(); }
    SessionController * c() const { return m_app->controller(); }

    QString writeFile(const QString & name, const QByteArray & bytes) {
        QFile f(m_dir->filePath(name));
        f.open(QIODevice::WriteOnly);
        f.write(bytes);
        return f.fileName();
    }
    void send(const QString & text) {
        w()->composer()->editor()->setFocus();
        QTest::keyClicks(w()->composer()->editor(), text);
        QTest::keyClick(w()->composer()->editor(), Qt::Key_Return);
    }
    void waitIdle() { QTRY_VERIFY_WITH_TIMEOUT(!c()->isReplying(), kEventuallyMs); }

private slots:
    void init() {
        m_dir = std::make_unique<QTemporaryDir>();
        m_script = std::make_shared<FakeScript>();
        auto settings = std::make_unique<QSettings>(m_dir->filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
        settings->setValue("storage/database", m_dir->filePath(QStringLiteral("conversations.sqlite")));
        m_app = std::make_unique<LongreadApp>(
            LongreadAppOptions{.settings = std::move(settings), .interactive = false, .engineFactory = fakeFactory(m_script)});
        QVERIFY(m_app->start());
        QVERIFY(QTest::qWaitForWindowExposed(w()));
        QTRY_VERIFY_WITH_TIMEOUT(c()->isModelReady(), kEventuallyMs);
    }
    void cleanup() {
        m_app.reset();
        m_dir.reset();
    }

    void everyControlHasAnAccessibleName() {
        send(QStringLiteral("hello"));  // so that message bubbles and their buttons exist
        waitIdle();
        QStringList missing;
        for (QWidget * widget : w()->findChildren<QWidget *>()) {
            // Qt's own parts (dock buttons, line edit icons, tab scrollers, combo popups).
            bool internal = false;
            for (QWidget * p = widget; p && p != w(); p = p->parentWidget()) {
                if (p->objectName().startsWith(QLatin1String("qt_")) || qobject_cast<QScrollBar *>(p) ||
                    (p != widget && qobject_cast<QComboBox *>(p)) || (p != widget && qobject_cast<QAbstractSpinBox *>(p)) ||
                    QByteArray(p->metaObject()->className()).startsWith("QTabBar") ||
                    QByteArray(p->metaObject()->className()) == "QLineEditIconButton") {
                    internal = true;
                }
            }
            if (internal) continue;
            const bool control = qobject_cast<QAbstractButton *>(widget) || qobject_cast<QLineEdit *>(widget) ||
                                 qobject_cast<QPlainTextEdit *>(widget) || qobject_cast<QComboBox *>(widget) ||
                                 qobject_cast<QAbstractSpinBox *>(widget) || qobject_cast<QAbstractSlider *>(widget) ||
                                 qobject_cast<QAbstractItemView *>(widget) || qobject_cast<QTabWidget *>(widget) ||
                                 qobject_cast<QProgressBar *>(widget);
            if (!control) continue;
            const auto * button = qobject_cast<QAbstractButton *>(widget);
            if (widget->accessibleName().isEmpty() && !(button && !button->text().isEmpty())) {
                missing << QStringLiteral("%1 (%2)").arg(QString::fromLatin1(widget->metaObject()->className()), widget->toolTip());
            }
        }
        QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QStringLiteral(", "))));
    }

    void aNewUserSeesWhatToDo() {
        QVERIFY(w()->chatView()->showsEmptyState());
        QVERIFY(!w()->documentPanel()->isVisible());
        QCOMPARE(c()->conversations()->rowCount(), 0);
        QVERIFY2(w()->modelStatus()->text().startsWith(QStringLiteral("stories260K (bundled demo)")),
                 qPrintable(w()->modelStatus()->text()));
        send(QStringLiteral("hi"));
        QVERIFY(!w()->chatView()->showsEmptyState());
        waitIdle();
        QCOMPARE(w()->chatView()->bubbleCount(), 2);
        QTRY_COMPARE_WITH_TIMEOUT(w()->chatView()->bubble(1)->textLabel()->text(), QStringLiteral("Hello, world."), kEventuallyMs);
        QCOMPARE(c()->conversations()->rowCount(), 1);
        QCOMPARE(w()->windowTitle(), QStringLiteral("hi \u2014 Longread"));
    }

    void enterSendsAndEscStops() {
        m_script->tokens.clear();
        for (int i = 0; i < 400; ++i) m_script->tokens << QStringLiteral("word ");
        m_script->tokenDelayMs = 5;
        QSignalSpy sent(w()->composer(), &Composer::sendRequested);
        send(QStringLiteral("a long one"));
        QCOMPARE(sent.count(), 1);
        QVERIFY(w()->composer()->editor()->toPlainText().isEmpty());
        QCOMPARE(w()->composer()->sendButton()->text(), QStringLiteral("Stop"));
        QTRY_VERIFY_WITH_TIMEOUT(w()->chatView()->bubbleCount() == 2 &&
                                     w()->chatView()->bubble(1)->textLabel()->text().startsWith(QStringLiteral("word")),
                                 kEventuallyMs);
        QTest::keyClick(w()->composer()->editor(), Qt::Key_Escape);
        waitIdle();
        QCOMPARE(w()->composer()->sendButton()->text(), QStringLiteral("Send"));
        QCOMPARE(c()->messages()->messages().back().state, MessageState::stopped);
        // Shift+Enter is a new line, not a send.
        QTest::keyClicks(w()->composer()->editor(), QStringLiteral("line one"));
        QTest::keyClick(w()->composer()->editor(), Qt::Key_Return, Qt::ShiftModifier);
        QCOMPARE(sent.count(), 1);
        QVERIFY(w()->composer()->editor()->toPlainText().contains(QLatin1Char('\n')));
    }

    void editAndRegenerate() {
        send(QStringLiteral("frist question"));
        waitIdle();
        QTest::keyClick(w(), Qt::Key_E, Qt::ControlModifier);
        QVERIFY(w()->composer()->isEditing());
        QCOMPARE(w()->composer()->editor()->toPlainText(), QStringLiteral("frist question"));
        w()->composer()->editor()->selectAll();
        QTest::keyClicks(w()->composer()->editor(), QStringLiteral("first question"));
        QTest::keyClick(w()->composer()->editor(), Qt::Key_Return);
        waitIdle();
        QCOMPARE(c()->messages()->rowCount(), 2);
        QCOMPARE(c()->messages()->messages()[0].text, QStringLiteral("first question"));
        // Regenerate from the reply's own button.
        m_script->tokens = {QStringLiteral("Second"), QStringLiteral(" try")};
        auto * regenerate = w()->chatView()->bubble(1)->findChild<QAbstractButton *>();
        QList<QAbstractButton *> buttons = w()->chatView()->bubble(1)->findChildren<QAbstractButton *>();
        for (QAbstractButton * b : buttons) {
            if (b->accessibleName() == QStringLiteral("Regenerate reply")) regenerate = b;
        }
        QVERIFY(regenerate && regenerate->isVisible());
        QTest::mouseClick(regenerate, Qt::LeftButton);
        waitIdle();
        QTRY_COMPARE_WITH_TIMEOUT(w()->chatView()->bubble(1)->textLabel()->text(), QStringLiteral("Second try"), kEventuallyMs);
        QCOMPARE(m_script->replies.load(), 3);
    }

    void aDroppedDocumentThatDoesNotFitOffersTheOptions() {
        m_script->contextLimit = 256;
        const QString path = writeFile(QStringLiteral("report.md"),
                                       QByteArray("# Report\n\n") + QByteArray("Sales grew in every region. ").repeated(80));
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(path)});
        QDragEnterEvent enter(QPoint(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(w(), &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(w(), &drop);
        QTRY_COMPARE_WITH_TIMEOUT(c()->document().phase, DocumentPhase::tooLong, kEventuallyMs);
        DocumentPanel * panel = w()->documentPanel();
        QVERIFY(panel->isVisible());
        QVERIFY(panel->statusLabel()->text().contains(QStringLiteral("tokens of a 256-token context")));
        QVERIFY(panel->messageLabel()->isVisible());
        QVERIFY(panel->messageLabel()->text().contains(QStringLiteral("not in the chat's context")));
        QVERIFY(panel->raiseContextButton()->isVisible());
        QVERIFY(w()->composer()->summarizeButton()->isEnabled());
        const QString cautionStyle = panel->styleSheet();
        // Raising the context reads it again, and this time it fits.
        m_script->contextLimit = 1024;
        QTest::mouseClick(panel->raiseContextButton(), Qt::LeftButton);
        QVERIFY(c()->settings().contextTokens >= 512);
        QTRY_COMPARE_WITH_TIMEOUT(c()->document().phase, DocumentPhase::inContext, kEventuallyMs);
        QVERIFY(!panel->messageLabel()->isVisible());
        QVERIFY(panel->styleSheet() != cautionStyle);  // the caution tone went with the problem
        // The retention view shows the document, all of it kept.
        w()->showCacheTab(MainWindow::RetentionTab);
        QTRY_VERIFY_WITH_TIMEOUT(w()->retentionView()->textView()->toPlainText().contains(QStringLiteral("Sales grew")), kEventuallyMs);
        QVERIFY(w()->retentionView()->summaryLabel()->text().contains(QStringLiteral("kept")));
    }

    // The reading's status grows with its numbers; the window keeps its width (a window that
    // grows repaints whole, a long stall while the engine reads).
    void readingProgressKeepsTheWindowsWidth() {
        w()->resize(1000, 700);
        QCoreApplication::processEvents();
        const int width = w()->width();
        DocumentState s{.phase = DocumentPhase::reading,
                        .conversationId = 1,
                        .title = QStringLiteral("report.md"),
                        .format = QStringLiteral("md"),
                        .fileBytes = 123456789,
                        .tokens = 1234567};
        s.measure.contextLimit = 2000000;
        s.progress = {.done = 1000000, .total = 1234567, .restored = 123456, .etaMs = 3599000};
        w()->documentPanel()->setState(s);
        QCoreApplication::processEvents();
        QVERIFY(w()->documentPanel()->statusLabel()->text().contains(QStringLiteral("123,456 restored")));
        QCOMPARE(w()->width(), width);
    }

    void cachePanelIsLiveAndHonest() {
        send(QStringLiteral("hi"));
        waitIdle();
        CachePanel * panel = w()->cachePanel();
        QTRY_VERIFY_WITH_TIMEOUT(panel->snapshot().has_value(), kEventuallyMs);
        QVERIFY(panel->tierBar(0)->isPresent());
        QVERIFY(!panel->tierBar(1)->isPresent());
        QCOMPARE(panel->tierBar(1)->valueText(), QStringLiteral("absent"));
        QVERIFY(!panel->tierBar(2)->isPresent());
        QCOMPARE(panel->tierBar(0)->valueText(), QStringLiteral("4.0 KiB / 1.0 MiB \u00b7 2 blocks"));
        QVERIFY(panel->valueLabel(QStringLiteral("hitRate"))->text().contains(QStringLiteral("no block reads")));
        QVERIFY(panel->valueLabel(QStringLiteral("decode"))->text().contains(QStringLiteral("tok/s")));
        QCOMPARE(panel->valueLabel(QStringLiteral("metadata"))->text(), QStringLiteral("3.0 KiB"));
        QCOMPARE(panel->layerKindRows(), QStringList{QStringLiteral("Full attention: 2 layers, 4.0 KiB")});
        QTRY_VERIFY_WITH_TIMEOUT(panel->chartPoints() >= 3, kEventuallyMs);  // sampled four times a second
    }

    // A row per kind of layer memory the model has, as the stats give them.
    void cachePanelRowPerLayerKind_data() {
        QTest::addColumn<int>("kinds");
        QTest::addColumn<QStringList>("rows");
        QTest::newRow("full attention only") << 1 << QStringList{QStringLiteral("Full attention: 22 layers, 12.3 MiB")};
        QTest::newRow("full and sliding window")
            << 2
            << QStringList{QStringLiteral("Full attention: 22 layers, 12.3 MiB"), QStringLiteral("Sliding window: 1 layer, 512.0 KiB")};
        QTest::newRow("none") << 0 << QStringList{};
    }
    void cachePanelRowPerLayerKind() {
        QFETCH(int, kinds);
        QFETCH(QStringList, rows);
        CachePanel panel;
        CacheSnapshot s{.hasSession = true};
        const std::vector<KvLayerKindStats> all = {
            {.kind = KvLayerKind::full, .n_layers = 22, .bytes = uint64_t(12.3 * (1 << 20)), .tokens_kept = 1024},
            {.kind = KvLayerKind::sliding_window, .n_layers = 1, .bytes = 512 << 10, .tokens_kept = 256}};
        s.kv.layer_kinds.assign(all.begin(), all.begin() + kinds);
        panel.setSnapshot(s);
        QCOMPARE(panel.layerKindRows(), rows);
        panel.setSnapshot({});  // no session: no rows
        QVERIFY(panel.layerKindRows().isEmpty());
    }

    void chartAxesEndAtRoundNumbers() {
        QCOMPARE(CachePanel::axisTop(1), 2.0);
        QCOMPARE(CachePanel::axisTop(0.5), 1.0);
        QCOMPARE(CachePanel::axisTop(4), 5.0);
        QCOMPARE(CachePanel::axisTop(4.2), 10.0);
        QCOMPARE(CachePanel::axisTop(150), 200.0);
        QCOMPARE(CachePanel::axisTop(1000), 2000.0);
    }

    // A chart's line runs from its oldest point (left) to its latest (right), by value.
    void chartDrawsItsPoints() {
        TimeChart chart(QStringLiteral("Hit rate (%)"), 60);
        chart.resize(300, 130);
        chart.setTop(100);
        chart.setPoints({{-60, 0}, {-30, 50}, {0, 100}});
        QCOMPARE(chart.pointCount(), 3);
        const QImage image = chart.grab().toImage();
        const QColor accent = theme::accent(chart.palette());
        QPoint first(image.width(), 0), last(-1, 0);  // the line's leftmost and rightmost pixels
        for (int y = 0; y < image.height(); ++y) {
            for (int x = 0; x < image.width(); ++x) {
                const QColor c(image.pixel(x, y));
                if (std::abs(c.red() - accent.red()) + std::abs(c.green() - accent.green()) + std::abs(c.blue() - accent.blue()) > 30)
                    continue;
                if (x < first.x()) first = {x, y};
                if (x > last.x()) last = {x, y};
            }
        }
        QVERIFY2(last.x() - first.x() > 200, qPrintable(QStringLiteral("%1 to %2").arg(first.x()).arg(last.x())));
        QVERIFY2(first.y() - last.y() > 50, qPrintable(QStringLiteral("%1 to %2").arg(first.y()).arg(last.y())));
    }

    // The retention view names the layers whose cache it shades.
    void retentionNamesTheLayerKind() {
        RetentionView view;
        RetentionSnapshot r{.inContext = true,
                            .perPosition = true,
                            .policy = QStringLiteral("h2o 20%"),
                            .documentText = QStringLiteral("abc def")};
        r.tokenSpans = {{0, 3}, {4, 7}};
        r.kept = {1.0f, 0.0f};
        view.setRetention(r);
        QCOMPARE(view.layersLabel()->text(), QStringLiteral("Shaded by what the cache of the model's full-attention layers keeps."));
        view.setRetention(std::nullopt);
        QVERIFY(view.layersLabel()->text().isEmpty());
    }

    void settingsShowThePredictionAndApplyNextTurn() {
        w()->showCacheTab(MainWindow::SettingsTab);
        CacheSettingsPanel * panel = w()->settingsPanel();
        QVERIFY(panel->predictionLabel()->text().startsWith(QStringLiteral("fits")));
        QVERIFY(panel->policyBox()->isEnabled());
        QVERIFY(!panel->policyBox()->toolTip().isEmpty());
        QSignalSpy edited(panel, &CacheSettingsPanel::settingsEdited);
        panel->contextBox()->setValue(100000);  // beyond the trained 4096
        QVERIFY(panel->predictionLabel()->text().startsWith(QStringLiteral("won't fit")));
        QTRY_COMPARE_WITH_TIMEOUT(edited.count(), 1, kEventuallyMs);
        QCOMPARE(c()->settings().contextTokens, 100000u);
        panel->contextBox()->setValue(2048);
        panel->chunkBox()->setValue(64);
        QTRY_COMPARE_WITH_TIMEOUT(edited.count(), 2, kEventuallyMs);  // debounced into one
        QCOMPARE(c()->settings().chunkTokens, 64u);
        QVERIFY(panel->predictionLabel()->text().startsWith(QStringLiteral("fits")));
        // The RAM tier's codec reaches the session settings.
        QVERIFY(!panel->hostBitsBox()->toolTip().isEmpty());
        panel->hostBitsBox()->setCurrentIndex(panel->hostBitsBox()->findData(8));
        QTRY_COMPARE_WITH_TIMEOUT(edited.count(), 3, kEventuallyMs);
        QCOMPARE(c()->settings().kv.host_bits, 8u);
        // Quest evicts nothing but reads a share of the sequence: the keep slider sets it;
        // it reserves no recent window.
        panel->policyBox()->setCurrentIndex(panel->policyBox()->findData(int(KvPolicy::quest)));
        QVERIFY(panel->keepSlider()->isEnabled());
        QVERIFY(!panel->recentSlider()->isEnabled());
        panel->keepSlider()->setValue(30);
        QTRY_COMPARE_WITH_TIMEOUT(edited.count(), 4, kEventuallyMs);
        QCOMPARE(c()->settings().kv.policy, KvPolicy::quest);
        QCOMPARE(c()->settings().kv.keep_ratio, 0.3);
        panel->policyBox()->setCurrentIndex(panel->policyBox()->findData(int(KvPolicy::none)));
        QVERIFY(!panel->keepSlider()->isEnabled());
        QTRY_COMPARE_WITH_TIMEOUT(edited.count(), 5, kEventuallyMs);
    }

    void retentionRuns_data() {
        QTest::addColumn<bool>("inContext");
        QTest::addColumn<QList<float>>("kept");
        QTest::addColumn<QList<int>>("expected");  // begin, end, level per run
        QTest::newRow("all kept") << true << QList<float>{1, 1, 1} << QList<int>{0, 12, 4};
        QTest::newRow("not in the context") << false << QList<float>{0, 0, 0} << QList<int>{0, 12, 0};
        QTest::newRow("evicted middle") << true << QList<float>{1, 0, 1} << QList<int>{0, 4, 4, 4, 8, 0, 8, 12, 4};
        QTest::newRow("partly kept") << true << QList<float>{0.5f, 0.5f, 1} << QList<int>{0, 8, 2, 8, 12, 4};
    }
    void retentionRuns() {
        QFETCH(bool, inContext);
        QFETCH(QList<float>, kept);
        QFETCH(QList<int>, expected);
        RetentionSnapshot r;
        r.inContext = inContext;
        r.documentText = QStringLiteral("abc def ghij");
        r.tokenSpans = {{0, 3}, {4, 7}, {8, 12}};
        r.kept.assign(kept.begin(), kept.end());
        QList<int> actual;
        for (const RetentionView::Run & run : RetentionView::runs(r)) actual << run.begin << run.end << run.level;
        QCOMPARE(actual, expected);
    }

    void followsADarkPalette() {
        send(QStringLiteral("hi"));
        waitIdle();
        auto * bubble = w()->chatView()->bubble(0)->findChild<QFrame *>(QStringLiteral("bubble"));
        const QString before = bubble->styleSheet();
        const QPalette light = QApplication::palette();
        QPalette dark = light;
        dark.setColor(QPalette::Window, QColor(0x20, 0x22, 0x25));
        dark.setColor(QPalette::WindowText, QColor(0xe8, 0xe8, 0xe8));
        dark.setColor(QPalette::Base, QColor(0x18, 0x1a, 0x1c));
        dark.setColor(QPalette::Text, QColor(0xe8, 0xe8, 0xe8));
        QApplication::setPalette(dark);
        QTRY_VERIFY_WITH_TIMEOUT(bubble->styleSheet() != before, kEventuallyMs);
        QApplication::setPalette(light);
        QTRY_COMPARE_WITH_TIMEOUT(bubble->styleSheet(), before, kEventuallyMs);
    }

    // A thinking model's reply: the thinking streams into the bubble, collapsed above the
    // answer; Ctrl+Shift+C copies the answer only.
    void aRepliesThinkingIsCollapsedAboveTheAnswer() {
        m_script->thinking = {QStringLiteral("They greet me."), QStringLiteral(" Greet back.")};
        send(QStringLiteral("hi"));
        waitIdle();
        MessageBubble * bubble = w()->chatView()->bubble(1);
        QTRY_COMPARE_WITH_TIMEOUT(bubble->textLabel()->text(), QStringLiteral("Hello, world."), kEventuallyMs);
        QVERIFY(bubble->thinking()->isVisible());
        QVERIFY(!bubble->thinking()->isExpanded());
        QCOMPARE(bubble->thinking()->toggle()->text(), QStringLiteral("Thought for 5 words"));
        QVERIFY(!w()->chatView()->bubble(0)->thinking()->isVisible());
        QTest::keyClick(w(), Qt::Key_C, Qt::ControlModifier | Qt::ShiftModifier);
        QCOMPARE(QGuiApplication::clipboard()->text(), QStringLiteral("Hello, world."));
    }

    void keyboardShortcuts() {
        QTest::keyClick(w(), Qt::Key_N, Qt::ControlModifier);
        QCOMPARE(c()->conversations()->rowCount(), 1);
        QTest::keyClick(w(), Qt::Key_F, Qt::ControlModifier);
        QVERIFY(w()->conversationList()->searchField()->hasFocus());
        QTest::keyClick(w(), Qt::Key_L, Qt::ControlModifier);
        QVERIFY(w()->composer()->editor()->hasFocus());
        QVERIFY(w()->cacheDock()->isVisible());
        QTest::keyClick(w(), Qt::Key_K, Qt::ControlModifier | Qt::ShiftModifier);
        QVERIFY(!w()->cacheDock()->isVisible());
        QTest::keyClick(w(), Qt::Key_3, Qt::AltModifier);
        QVERIFY(w()->cacheDock()->isVisible());
        QCOMPARE(w()->cacheTabs()->currentIndex(), int(MainWindow::SettingsTab));
    }

    void aDamagedDatabaseIsReportedAndKept() {
        const QString path = m_dir->filePath(QStringLiteral("damaged.sqlite"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray("not a database at all\n").repeated(100));
        f.close();
        auto settings = std::make_unique<QSettings>(m_dir->filePath(QStringLiteral("other.ini")), QSettings::IniFormat);
        settings->setValue("storage/database", path);
        LongreadApp app({.settings = std::move(settings), .interactive = false, .engineFactory = fakeFactory(m_script)});
        QVERIFY(!app.start());
        QVERIFY2(app.databaseError().contains(path), qPrintable(app.databaseError()));
        QVERIFY(app.window() == nullptr);
        QCOMPARE(QFileInfo(path).size(), qint64(22 * 100));  // untouched
    }

    void modelPickerListsModelsWithEstimatesAndReasons() {
        QTemporaryDir home;
        QDir().mkpath(home.filePath(QStringLiteral("models")));
        QVERIFY(QFile::copy(shared_path(QStringLiteral("models/tiny/tiny-llama-Q8_0.gguf")),
                            home.filePath(QStringLiteral("models/tiny.gguf"))));
        QFile broken(home.filePath(QStringLiteral("models/broken.gguf")));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write("GGUF but nothing else");
        broken.close();
        const QByteArray oldHome = qgetenv("HOME");
        qputenv("HOME", home.path().toUtf8());
        {
            ModelPicker picker(m_app->settings(), c()->settings(), QString::fromLatin1(kBundledModelPath), IconProvider(Qt::black), w());
            QTRY_VERIFY_WITH_TIMEOUT(!picker.isScanning(), kEventuallyMs);
            QTRY_COMPARE_WITH_TIMEOUT(picker.model()->rowCount(), 3, kEventuallyMs);
            QStringList names;
            for (int r = 0; r < 3; ++r) names << picker.model()->index(r, ModelListModel::SourceColumn).data().toString();
            QVERIFY(names.contains(QStringLiteral("Bundled")));
            QVERIFY(names.contains(QStringLiteral("~/models")));
            int brokenRow = -1, tinyRow = -1;
            for (int r = 0; r < 3; ++r) {
                const QString path = picker.model()->index(r, 0).data(ModelListModel::PathRole).toString();
                if (path.endsWith(QStringLiteral("broken.gguf"))) brokenRow = r;
                if (path.endsWith(QStringLiteral("tiny.gguf"))) tinyRow = r;
            }
            QVERIFY(brokenRow >= 0 && tinyRow >= 0);
            QVERIFY(picker.model()->index(tinyRow, ModelListModel::MemoryColumn).data().toString().startsWith(QStringLiteral("fits")));
            QVERIFY(
                picker.model()->index(brokenRow, ModelListModel::MemoryColumn).data().toString().startsWith(QStringLiteral("unsupported")));
            auto * use = picker.findChild<QPushButton *>(QString(), Qt::FindChildrenRecursively);
            for (QPushButton * b : picker.findChildren<QPushButton *>()) {
                if (b->accessibleName() == QStringLiteral("Use this model")) use = b;
            }
            picker.table()->selectRow(brokenRow);
            QVERIFY(!use->isEnabled());
            picker.table()->selectRow(tinyRow);
            QVERIFY(use->isEnabled());
        }
        qputenv("HOME", oldHome);
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
