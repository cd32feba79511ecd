// How long the GUI's event loop waits while the engine reads a document: the app with its
// real window, a model and a document; a 1 ms timer on the GUI thread records the gaps
// between its ticks from the moment the document is attached until it is in the context.
// A gap is a moment the window could not repaint or react (one frame is 16.7 ms at 60 Hz).
// The slowest event deliveries on the GUI thread are listed with their receivers, to show
// where a gap comes from (wall and CPU time: on a busy machine a delivery also waits for a
// core), with the busiest by CPU time and what all deliveries took together (but the
// bench's own timer).
//
//   gui_event_gap MODEL DOCUMENT [THREADS] [CONTEXT]
//
// Run it under a real display server (xvfb-run -a) to count painting; with
// QT_QPA_PLATFORM=offscreen the window is not drawn.
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QMetaEnum>
#include <QSettings>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>

#include "app/core/session_controller.h"
#include "ui/longread_app.h"
#include "ui/main_window.h"

using namespace lr;

namespace {

// This thread's CPU time: a delivery's wall time less it is time spent waiting for a core.
double thread_cpu_ms() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
#else
    return 0;
#endif
}

// Times every event the GUI thread delivers (outermost deliveries only).
class TimedApplication : public QApplication {
public:
    TimedApplication(int & argc, char ** argv) : QApplication(argc, argv) { clock.start(); }
    struct Slow {
        double ms;
        double cpu_ms;
        QString what;
        double at_s;  // when it began, on `clock`
    };
    QElapsedTimer clock;
    // The 5 slowest deliveries by wall time and by CPU time, slowest first.
    std::vector<Slow> slowest, busiest;
    double busy_ms = 0, busy_cpu_ms = 0;  // all deliveries together
    const QObject * ignored = nullptr;    // the bench's own timer: not counted

    bool notify(QObject * receiver, QEvent * event) override {
        if (depth_ > 0 || receiver == ignored || QThread::currentThread() != thread()) return QApplication::notify(receiver, event);
        // Named before the delivery, which may delete the receiver.
        const char * receiverClass = receiver->metaObject()->className();
        const QString receiverName = receiver->objectName();
        const QEvent::Type type = event->type();
        ++depth_;
        const double cpu0 = thread_cpu_ms();
        const qint64 began = clock.nsecsElapsed();
        const bool handled = QApplication::notify(receiver, event);
        const double ms = double(clock.nsecsElapsed() - began) / 1e6, cpu = thread_cpu_ms() - cpu0;
        --depth_;
        busy_ms += ms;
        busy_cpu_ms += cpu;
        const auto keep = [&](std::vector<Slow> & top, auto key) {
            if (top.size() == 5 && key(Slow{ms, cpu, {}, 0}) <= key(top.back())) return;
            const char * typeName = QMetaEnum::fromType<QEvent::Type>().valueToKey(type);
            top.push_back({ms, cpu, QStringLiteral("%1 (%2) %3").arg(QLatin1String(receiverClass), receiverName, QLatin1String(typeName)),
                           double(began) / 1e9});
            std::sort(top.begin(), top.end(), [&](const Slow & a, const Slow & b) { return key(a) > key(b); });
            if (top.size() > 5) top.pop_back();
        };
        keep(slowest, [](const Slow & e) { return e.ms; });
        keep(busiest, [](const Slow & e) { return e.cpu_ms; });
        return handled;
    }

private:
    int depth_ = 0;
};

// Runs the event loop until `done` or `timeout_ms`; false on timeout. It sleeps between
// events as the app's own loop does: a loop that polls without waiting holds a core, and on a
// machine whose cores the engine's threads fill it is preempted for whole time slices.
template <class Done>
bool spin_until(Done done, int timeout_ms) {
    QTimer wake;  // so that the timeout is seen when nothing else happens
    wake.start(50);
    QElapsedTimer t;
    t.start();
    while (!done()) {
        if (t.elapsed() > timeout_ms) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents);
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
    const QElapsedTimer & clock = qt.clock;
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
    // What the new conversation set off (saving the settings) settles before the clock starts.
    QEventLoop settle;
    QTimer::singleShot(500, &settle, &QEventLoop::quit);
    settle.exec();
    const QSize sizeBefore = app.window()->size();
    qt.slowest.clear();
    qt.busiest.clear();
    qt.busy_ms = qt.busy_cpu_ms = 0;
    qt.ignored = &tick;
    qt.clock.start();
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
    // A window that grows by itself (a label's text wider than its column) repaints whole.
    std::printf("window     %d x %d before, %d x %d after\n", sizeBefore.width(), sizeBefore.height(), app.window()->width(),
                app.window()->height());
    std::printf("ticks      %zu of the 1 ms timer\n", gaps.size());
    std::printf("gap        median %.2f ms, p99 %.2f ms, worst %.2f ms; %lld over one 60 Hz frame (16.7 ms)\n", gaps[gaps.size() / 2],
                gaps[gaps.size() * 99 / 100], gaps.back(), static_cast<long long>(over));
    std::printf("delivering %.0f ms of events, %.0f ms of CPU (%.2f %% of the reading)\n", qt.busy_ms, qt.busy_cpu_ms,
                qt.busy_cpu_ms / seconds / 10);
    const auto list = [](const char * title, const std::vector<TimedApplication::Slow> & top) {
        for (const TimedApplication::Slow & e : top)
            std::printf("%-10s %.1f ms (CPU %.1f ms) at %.1f s: %s\n", title, e.ms, e.cpu_ms, e.at_s, qPrintable(e.what));
    };
    list("slowest", qt.slowest);
    list("busiest", qt.busiest);
    return 0;
}
