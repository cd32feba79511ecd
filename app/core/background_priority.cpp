#include "background_priority.h"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace lr::app {

void lowerThisThreadPriority() {
#if defined(__linux__)
    // On Linux the nice value belongs to the thread (its id), not the process.
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    const int current = getpriority(PRIO_PROCESS, tid);
    if (current < 5) setpriority(PRIO_PROCESS, tid, 5);
#endif
}

}  // namespace lr::app
