// End to end with the bundled model: start the app, send a message from the composer,
// watch tokens appear, stop the reply, quit, start again: the conversation is there.
// With LONGREAD_SCREENSHOT=<file.png> set, also reads a document, asks about it and saves
// a screenshot of the window with the cache panel live (the README's picture).
#include <QDockWidget>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/core/message_list_model.h"
#include "support/eventually.h"
#include "support/launch_app.h"
#include "support/reference_data.h"
#include "ui/cache_panel.h"
#include "ui/chat_view.h"
#include "ui/composer.h"
#include "ui/document_panel.h"
#include "ui/longread_app.h"
#include "ui/main_window.h"
#include "ui/message_bubble.h"
#include "ui/tier_bar.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;
using namespace lr::test;

class TestAppE2e : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QTemporaryDir m_cacheDir;

    std::unique_ptr<LongreadApp> launch() { return test::launch_app(QDir(m_dir.path())); }

private slots:
    void initTestCase() {
        // The prefix cache writes under $XDG_CACHE_HOME: keep it in the test's folder.
        qputenv("XDG_CACHE_HOME", m_cacheDir.path().toUtf8());
        // Long replies, so that Stop lands mid-reply.
        QSettings ini(m_dir.filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
        ini.setValue("engine/defaults", R"({"maxReplyTokens": 1500, "contextTokens": 2048, "temperature": 0.8})");
    }

    void sendStopRestart() {
        qint64 conversation = 0;
        QString stoppedText;
        {
            std::unique_ptr<LongreadApp> app = launch();
            MainWindow * w = app->window();
            QVERIFY(QTest::qWaitForWindowExposed(w));
            QTRY_VERIFY_WITH_TIMEOUT(app->controller()->isModelReady(), kEventuallyMs);
            QVERIFY(w->chatView()->showsEmptyState());

            // Type and press Enter, as a person would.
            QTest::keyClicks(w->composer()->editor(), QStringLiteral("Tell me a story about a dog"));
            // Stop as soon as the first words arrive.
            bool stopClicked = false;
            QMetaObject::Connection c = connect(app->controller()->messages(), &QAbstractItemModel::dataChanged, this, [&] {
                const auto & rows = app->controller()->messages()->messages();
                if (!stopClicked && rows.size() == 2 && !rows[1].text.isEmpty()) {
                    stopClicked = true;
                    QVERIFY(w->composer()->sendButton()->text() == QStringLiteral("Stop"));
                    QTest::mouseClick(w->composer()->sendButton(), Qt::LeftButton);
                }
            });
            QTest::keyClick(w->composer()->editor(), Qt::Key_Return);
            QVERIFY(app->controller()->isReplying());
            QVERIFY(!w->chatView()->showsEmptyState());
            QTRY_VERIFY_WITH_TIMEOUT(stopClicked, kEventuallyMs);
            QTRY_VERIFY_WITH_TIMEOUT(!app->controller()->isReplying(), kEventuallyMs);
            disconnect(c);
            QCOMPARE(w->composer()->sendButton()->text(), QStringLiteral("Send"));
            QCOMPARE(w->chatView()->bubbleCount(), 2);
            const MessageRecord reply = app->controller()->messages()->messages().back();
            QCOMPARE(reply.state, MessageState::stopped);
            QVERIFY(!reply.text.isEmpty());
            QVERIFY(w->chatView()->bubble(1)->textLabel()->text().size() > 0);
            conversation = app->controller()->currentConversation();
            stoppedText = reply.text;
            // The cache panel shows the session: the device tier, and the others as absent.
            QTRY_VERIFY_WITH_TIMEOUT(w->cachePanel()->snapshot().has_value() && w->cachePanel()->snapshot()->hasSession, kEventuallyMs);
            QVERIFY(w->cachePanel()->tierBar(0)->isPresent());
            qInfo("stopped after %lld characters: %s", static_cast<long long>(reply.text.size()), qPrintable(reply.text.left(80)));
        }
        // Restart: the conversation, the question and the stopped reply are there.
        std::unique_ptr<LongreadApp> app = launch();
        QVERIFY(QTest::qWaitForWindowExposed(app->window()));
        QCOMPARE(app->controller()->currentConversation(), conversation);
        QCOMPARE(app->controller()->conversations()->rowCount(), 1);
        QCOMPARE(app->window()->chatView()->bubbleCount(), 2);
        const auto & rows = app->controller()->messages()->messages();
        QCOMPARE(rows[0].text, QStringLiteral("Tell me a story about a dog"));
        QCOMPARE(rows[1].text, stoppedText);
        QCOMPARE(rows[1].state, MessageState::stopped);
        QTRY_VERIFY_WITH_TIMEOUT(app->controller()->isModelReady(), kEventuallyMs);
    }

    void screenshot() {
        const QString target = qEnvironmentVariable("LONGREAD_SCREENSHOT");
        if (target.isEmpty()) QSKIP("set LONGREAD_SCREENSHOT=<file.png> to take the README's screenshot");
        std::unique_ptr<LongreadApp> app = launch();
        MainWindow * w = app->window();
        w->resize(1600, 1000);
        QVERIFY(QTest::qWaitForWindowExposed(w));
        QTRY_VERIFY_WITH_TIMEOUT(app->controller()->isModelReady(), kEventuallyMs);
        // The first stories of the evaluation text: a document that fits the 2048-token context.
        QFile source(lr::test::shared_path(QStringLiteral("data/text/tinystories_style_eval.txt")));
        QVERIFY(source.open(QIODevice::ReadOnly));
        const QByteArray text = source.readAll();
        QFile document(m_dir.filePath(QStringLiteral("tinystories.txt")));
        QVERIFY(document.open(QIODevice::WriteOnly));
        document.write(text.left(text.indexOf("\n\n", 2800)));
        document.close();
        app->controller()->newConversation();
        // A policy at work, so that the panel has evictions, retention and decisions to show.
        EngineSettings settings = app->controller()->settings();
        settings.kv.policy = KvPolicy::h2o;
        settings.kv.keep_ratio = 0.3;
        settings.kv.adapt = true;
        app->controller()->setSettings(settings);
        app->controller()->attachDocument(document.fileName());
        QTRY_VERIFY2_WITH_TIMEOUT(
            app->controller()->document().phase == DocumentPhase::inContext,
            qPrintable(
                QStringLiteral("phase %1: %2").arg(int(app->controller()->document().phase)).arg(app->controller()->document().message)),
            60000);
        app->controller()->sendMessage(QStringLiteral("What do Mia and Spot do in the garden?"));
        QTRY_VERIFY_WITH_TIMEOUT(!app->controller()->isReplying(), kEventuallyMs);
        app->controller()->summarizeDocument();
        QTRY_VERIFY_WITH_TIMEOUT(!app->controller()->isReplying(), kEventuallyMs);
        QTest::qWait(3000);  // a few seconds of live charts
        w->chatView()->scrollToBottom();
        QTest::qWait(200);
        QVERIFY(w->grab().save(target));
        qInfo("screenshot saved to %s", qPrintable(target));
        // The other views of the cache dock, next to it (for reviewing the UI, not the README).
        if (qEnvironmentVariableIsSet("LONGREAD_SCREENSHOT_ALL")) {
            const QString stem = target.left(target.lastIndexOf(QLatin1Char('.')));
            w->showCacheTab(MainWindow::RetentionTab);
            QTest::qWait(300);
            QVERIFY(w->grab().save(stem + QStringLiteral("-retention.png")));
            w->showCacheTab(MainWindow::AttentionTab);
            QTest::qWait(300);
            QVERIFY(w->grab().save(stem + QStringLiteral("-attention.png")));
            w->showCacheTab(MainWindow::SettingsTab);
            QTest::qWait(300);
            QVERIFY(w->grab().save(stem + QStringLiteral("-settings.png")));
            w->showCacheTab(MainWindow::LiveTab);
        }
    }
};

QTEST_MAIN(TestAppE2e)
#include "test_app_e2e.moc"
