// "Serve on this computer" end to end with the bundled model: switch it on in the settings,
// read the address and the key the window shows, ask the server over HTTP (/v1/models and
// /v1/chat/completions, without and with the key), watch the cache panel's Server section
// count the completion and list a running sequence while the chat replies too, load the
// model again (the server restarts on it), switch it off (the port closes); a port another
// server holds is an error next to the switch, and another port then serves.
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "app/core/engine_requests.h"
#include "app/core/message_list_model.h"
#include "app/core/server_host.h"
#include "support/eventually.h"
#include "support/launch_app.h"
#include "ui/cache_panel.h"
#include "ui/longread_app.h"
#include "ui/main_window.h"
#include "ui/serve_panel.h"
#include "ui/server_section.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;
using namespace lr::test;
using nlohmann::json;

namespace {

// A socket listening on a loopback port the system chose; with SO_REUSEPORT, as httplib's
// servers set it, so that only a server that refuses to share the port sees it in use.
class Listener {
public:
    Listener() {
        m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
        int yes = 1;
        ::setsockopt(m_fd, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof yes);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(m_fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) != 0 || ::listen(m_fd, 4) != 0) qFatal("cannot listen");
        socklen_t len = sizeof addr;
        ::getsockname(m_fd, reinterpret_cast<sockaddr *>(&addr), &len);
        m_port = ntohs(addr.sin_port);
    }
    ~Listener() { ::close(m_fd); }
    int port() const { return m_port; }

private:
    int m_fd = -1;
    int m_port = 0;
};

// A port the system just handed out (and took back) is free.
int freePort() { return Listener().port(); }

httplib::Client clientFor(int port, const QString & key = {}) {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(std::chrono::minutes(10));  // waiting only: the replies are short
    if (!key.isEmpty()) client.set_bearer_token_auth(key.toStdString());
    return client;
}

bool portAnswers(int port) { return bool(clientFor(port).Get("/health")); }

}  // namespace

class TestAppServe : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QTemporaryDir m_cacheDir;

    std::unique_ptr<LongreadApp> launch() { return test::launch_app(QDir(m_dir.path())); }

    static ServerState::Kind stateOf(const LongreadApp & app) { return app.server()->state().kind; }

private slots:
    void initTestCase() {
        // The prefix cache writes under $XDG_CACHE_HOME: keep it in the test's folder.
        qputenv("XDG_CACHE_HOME", m_cacheDir.path().toUtf8());
        QSettings ini(m_dir.filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
        ini.setValue("engine/defaults", R"({"contextTokens": 256})");
    }

    void servesTheLoadedModelUntilSwitchedOff() {
        std::unique_ptr<LongreadApp> app = launch();
        MainWindow * w = app->window();
        QVERIFY(QTest::qWaitForWindowExposed(w));
        QTRY_VERIFY_WITH_TIMEOUT(app->controller()->isModelReady(), kEventuallyMs);
        ServePanel * panel = w->servePanel();
        ServerSection * section = w->cachePanel()->serverSection();
        QVERIFY(!panel->serveSwitch()->isChecked());
        QCOMPARE(panel->portBox()->value(), 8080);
        QVERIFY(section->isHidden());

        const int port = freePort();
        panel->portBox()->setValue(port);
        panel->serveSwitch()->click();
        QTRY_COMPARE_WITH_TIMEOUT(stateOf(*app), ServerState::Kind::serving, kEventuallyMs);
        const QString address = QStringLiteral("http://127.0.0.1:%1/v1").arg(port);
        QCOMPARE(panel->addressLabel()->text(), address);
        QVERIFY2(panel->statusLabel()->text().contains(address), qPrintable(panel->statusLabel()->text()));
        const QString key = panel->keyEdit()->text();
        QVERIFY2(key.startsWith(QStringLiteral("lr-")) && key.size() == 35, qPrintable(key));
        QCOMPARE(app->settings().serve(), (ServeSettings{.enabled = true, .port = port, .apiKey = key}));
        QVERIFY(!section->isHidden());

        // The key shown is the one asked for.
        auto refused = clientFor(port).Get("/v1/models");
        QVERIFY(refused);
        QCOMPARE(refused->status, 401);
        httplib::Client client = clientFor(port, key);
        auto models = client.Get("/v1/models");
        QVERIFY(models);
        QCOMPARE(models->status, 200);
        QCOMPARE(json::parse(models->body)["data"][0]["id"].get<std::string>(), std::string(kBundledModelPath));
        const json request = {{"messages", {{{"role", "user"}, {"content", "Tell me a story about a dog"}}}}, {"max_tokens", 12}};
        auto chat = client.Post("/v1/chat/completions", request.dump(), "application/json");
        QVERIFY(chat);
        QCOMPARE(chat->status, 200);
        const json reply = json::parse(chat->body);
        QCOMPARE(reply["usage"]["completion_tokens"].get<int>(), 12);
        QVERIFY(!reply["choices"][0]["message"]["content"].get<std::string>().empty());
        QTRY_COMPARE_WITH_TIMEOUT(section->servedLabel()->text(), QStringLiteral("1 completion"), kEventuallyMs);

        // A reply that runs until its client hangs up (a policy that never fills, no token
        // limit to speak of): the section lists its sequence while it runs.
        std::atomic<bool> hangUp{false};
        std::thread streamer([&] {
            json body = request;
            body["max_tokens"] = 1 << 24;
            body["stream"] = true;
            body["longread"] = {{"kv_policy", "streaming"}};
            httplib::Request req;
            req.method = "POST";
            req.path = "/v1/chat/completions";
            req.headers = {{"Authorization", "Bearer " + key.toStdString()}, {"Content-Type", "application/json"}};
            req.body = body.dump();
            req.content_receiver = [&](const char *, size_t, uint64_t, uint64_t) { return !hangUp; };
            (void)clientFor(port).send(req);
        });
        QTRY_COMPARE_WITH_TIMEOUT(section->sequenceRows().size(), qsizetype(1), kEventuallyMs);
        const QString row = section->sequenceRows().constFirst();
        QVERIFY2(row.contains(QStringLiteral("tokens held")) && row.contains(QStringLiteral("streaming")), qPrintable(row));
        QVERIFY2(section->summaryLabel()->text().startsWith(QStringLiteral("1 running")), qPrintable(section->summaryLabel()->text()));
        // The chat replies meanwhile: its engine thread and the server's take turns on the model.
        app->controller()->sendMessage(QStringLiteral("Tell me a story about a cat"));
        QTRY_VERIFY_WITH_TIMEOUT(!app->controller()->isReplying(), kEventuallyMs);
        QCOMPARE(app->controller()->messages()->messages().back().state, MessageState::finished);
        QVERIFY(!app->controller()->messages()->messages().back().text.isEmpty());
        QCOMPARE(section->sequenceRows().size(), qsizetype(1));
        hangUp = true;
        streamer.join();
        QTRY_COMPARE_WITH_TIMEOUT(section->sequenceRows().size(), qsizetype(0), kEventuallyMs);

        // Loading a model stops the server and starts it again on the new one.
        QSignalSpy states(app->server(), &ServerHost::stateChanged);
        app->controller()->loadModel(QString::fromLatin1(kBundledModelPath));
        QTRY_VERIFY_WITH_TIMEOUT(app->controller()->isModelReady() && stateOf(*app) == ServerState::Kind::serving, kEventuallyMs);
        QVERIFY(states.size() >= 3);
        QCOMPARE(states.first().first().value<ServerState>().kind, ServerState::Kind::waitingForModel);
        auto again = clientFor(port, key).Get("/v1/models");
        QVERIFY(again);
        QCOMPARE(again->status, 200);

        // Off: the port closes, the section goes, the setting is kept.
        panel->serveSwitch()->click();
        QCOMPARE(stateOf(*app), ServerState::Kind::off);
        QTRY_VERIFY_WITH_TIMEOUT(!portAnswers(port), kEventuallyMs);
        QVERIFY(section->isHidden());
        QVERIFY(!app->settings().serve().enabled);
        QCOMPARE(app->settings().serve().apiKey, key);
    }

    void aPortInUseIsAnErrorNextToTheSwitch() {
        const Listener other;
        std::unique_ptr<LongreadApp> app = launch();
        MainWindow * w = app->window();
        QVERIFY(QTest::qWaitForWindowExposed(w));
        QTRY_VERIFY_WITH_TIMEOUT(app->controller()->isModelReady(), kEventuallyMs);
        ServePanel * panel = w->servePanel();
        panel->portBox()->setValue(other.port());
        panel->serveSwitch()->click();
        QTRY_COMPARE_WITH_TIMEOUT(stateOf(*app), ServerState::Kind::failed, kEventuallyMs);
        const QString status = panel->statusLabel()->text();
        QVERIFY2(status.contains(QStringLiteral("127.0.0.1:%1").arg(other.port())) &&
                     status.contains(QStringLiteral("choose another port")),
                 qPrintable(status));
        QVERIFY(w->cachePanel()->serverSection()->isHidden());

        // Another port serves.
        const int port = freePort();
        panel->portBox()->setValue(port);
        emit panel->portBox()->editingFinished();
        QTRY_COMPARE_WITH_TIMEOUT(stateOf(*app), ServerState::Kind::serving, kEventuallyMs);
        QVERIFY(portAnswers(port));
    }
};

QTEST_MAIN(TestAppServe)
#include "test_app_serve.moc"
