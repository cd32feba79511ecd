// How long the GUI's event loop waits while the engine reads a document: the app with its
// real window, a model and a document; a 1 ms timer on the GUI thread records the gaps
// between its ticks from the moment the document is attached until it is in the context.
// A gap is a moment the window could not repaint or react (one frame is 16.7 ms at 60 Hz).
// The slowest event deliveries on the GUI thread are listed with their receivers, to show
// where a gap comes from.
//
//   gui_event_gap MODEL DOCUMENT [THREADS] [CONTEXT]
//
// Run it under a real display server (xvfb-run -a) to count painting; with
// QT_QPA_PLATFORM=offscreen the window is not drawn.
#include <QApplication>
#include <QElapsedTimer>
#include <QSettings>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "app/core/session_controller.h"
#include "ui/longread_app.h"
#include "ui/main_window.h"

using namespace lr;

namespace {

// Times every event the GUI thread delivers (outermost deliveries only).
class TimedApplication : public QApplication {
public:
    using QApplication::QApplication;
    struct Slow {
        double ms;
        QString what;
    };
    std::vector<Slow> slowest;  // the 5 slowest, slowest first

    bool notify(QObject * receiver, QEvent * event) override {
        if (depth_ > 0 || QThread::currentThread() != thread()) return QApplication::notify(receiver, event);
        ++depth_;
        QElapsedTimer t;
        t.start();
        const QString what = QStringLiteral("%1 (%2) event %3")
                                 .arg(QString::fromLatin1(receiver->metaObject()->className()), receiver->objectName())
                                 .arg(int(event->type()));
        const bool handled = QApplication::notify(receiver, event);
        --depth_;
        const double ms = double(t.nsecsElapsed()) / 1e6;
        if (slowest.size() < 5 || ms > slowest.back().ms) {
            slowest.push_back({ms, what});
            std::sort(slowest.begin(), slowest.end(), [](const Slow & a, const Slow & b) { return a.ms > b.ms; });
            if (slowest.size() > 5) slowest.pop_back();
        }
        return handled;
    }

private:
    int depth_ = 0;
};

// Runs the event loop until `done` or `timeout_ms`; false on timeout.
template <class Done>
bool spin_until(Done done, int timeout_ms) {
    QElapsedTimer t;
    t.start();
    while (!done()) {
        if (t.elapsed() > timeout_ms) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    }
    return true;
}

}  // namespace

int main(int argc, char ** argv) {
    TimedApplication qt(argc, argv);
    if (argc < 3) {
        std::fprintf(stderr, "usage: gui_event_gap MODEL DOCUMENT [THREADS] [CONTEXT]\n");
        return 2;
    }
    const QString model = QString::fromLocal8Bit(argv[1]), document = QString::fromLocal8Bit(argv[2]);
    const int threads = argc > 3 ? std::atoi(argv[3]) : 0;
    const int context = argc > 4 ? std::atoi(argv[4]) : 8192;
    QTemporaryDir dir;
    qputenv("XDG_CACHE_HOME", dir.filePath(QStringLiteral("cache")).toUtf8());  // no prefix cache hits from earlier runs
    auto settings = std::make_unique<QSettings>(dir.filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
    settings->setValue("storage/database", dir.filePath(QStringLiteral("conversations.sqlite")));
    settings->setValue("model/last", model);
    settings->setValue("engine/threads", threads);
    settings->setValue("engine/defaults", QStringLiteral(R"({"contextTokens": %1})").arg(context));
    ui::LongreadApp app(ui::LongreadAppOptions{.settings = std::move(settings), .interactive = false});
    if (!app.start()) {
        std::fprintf(stderr, "%s\n", qPrintable(app.databaseError()));
        return 1;
    }
    app.window()->resize(1400, 900);
    app::SessionController * controller = app.controller();
    if (!spin_until([&] { return controller->isModelReady(); }, 600000)) {
        std::fprintf(stderr, "the model did not load\n");
        return 1;
    }

    std::vector<double> gaps;
    QElapsedTimer clock;
    qint64 last = 0;
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    tick.setInterval(1);
    QObject::connect(&tick, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        gaps.push_back(double(now - last) / 1e6);
        last = now;
    });
    controller->newConversation();
    qt.slowest.clear();
    clock.start();
    tick.start();
    controller->attachDocument(document);
    auto settled = [&] {
        const app::DocumentPhase phase = controller->document().phase;
        return phase == app::DocumentPhase::inContext || phase == app::DocumentPhase::tooLong || phase == app::DocumentPhase::stopped ||
               phase == app::DocumentPhase::failed;
    };
    const bool read = spin_until(settled, 3600000) && controller->document().phase == app::DocumentPhase::inContext;
    const double seconds = double(clock.nsecsElapsed()) / 1e9;
    tick.stop();
    if (!read) {
        std::fprintf(stderr, "the document was not read: %s\n", qPrintable(controller->document().message));
        return 1;
    }
    std::sort(gaps.begin(), gaps.end());
    const auto over = std::count_if(gaps.begin(), gaps.end(), [](double g) { return g > 16.7; });
    std::printf("platform   %s\n", qPrintable(QGuiApplication::platformName()));
    std::printf("reading    %.1f s (%s)\n", seconds, qPrintable(controller->document().message));
    std::printf("ticks      %zu of the 1 ms timer\n", gaps.size());
    std::printf("gap        median %.2f ms, p99 %.2f ms, worst %.2f ms; %lld over one 60 Hz frame (16.7 ms)\n", gaps[gaps.size() / 2],
                gaps[gaps.size() * 99 / 100], gaps.back(), static_cast<long long>(over));
    for (const TimedApplication::Slow & e : qt.slowest) std::printf("slowest    %.1f ms: %s\n", e.ms, qPrintable(e.what));
    return 0;
}
