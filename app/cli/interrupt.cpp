#include "interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace lr::cli {
namespace {

int g_signal_pipe = -1;  // written by the handler; the only state a signal handler may touch

void on_sigint(int) {
    const int saved = errno;
    const char byte = 1;
    if (g_signal_pipe >= 0) (void)!write(g_signal_pipe, &byte, 1);
    errno = saved;
}

}  // namespace

InterruptWatcher::InterruptWatcher() {
    if (pipe2(pipe_, O_CLOEXEC) != 0) return;
    g_signal_pipe = pipe_[1];
    // The watcher must not take the signal itself, so that a blocking read in the main
    // thread (the chat prompt) is interrupted too.
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    thread_ = std::thread([this] { watch(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: Ctrl-C at the prompt interrupts the read
    sigaction(SIGINT, &sa, nullptr);
}

InterruptWatcher::~InterruptWatcher() {
    signal(SIGINT, SIG_DFL);
    g_signal_pipe = -1;
    if (pipe_[1] >= 0) {
        const char quit = 0;
        (void)!write(pipe_[1], &quit, 1);
    }
    if (thread_.joinable()) thread_.join();
    if (pipe_[0] >= 0) close(pipe_[0]);
    if (pipe_[1] >= 0) close(pipe_[1]);
}

std::stop_token InterruptWatcher::arm() {
    std::lock_guard lock(mutex_);
    source_ = std::stop_source();
    armed_ = true;
    interrupted_ = false;
    return source_.get_token();
}

void InterruptWatcher::disarm() {
    std::lock_guard lock(mutex_);
    armed_ = false;
}

void InterruptWatcher::watch() {
    for (;;) {
        char byte = 0;
        const ssize_t n = read(pipe_[0], &byte, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || byte == 0) return;
        std::lock_guard lock(mutex_);
        interrupted_ = true;
        if (armed_) {
            source_.request_stop();
        } else {
            // Nothing to stop: behave like an ordinary Ctrl-C.
            signal(SIGINT, SIG_DFL);
            raise(SIGINT);
        }
    }
}

}  // namespace lr::cli
