#pragma once
// The engine's threads yield to the GUI thread: on a machine with as many busy engine
// threads as cores, the window would otherwise wait its turn for a whole time slice now
// and then while it paints (measured with tests/bench/gui_event_gap).

namespace lr::app {

// Lowers the calling thread's scheduling priority (nice +5 on Linux: about a third of a
// normal thread's share when both want the CPU; they run at full speed otherwise).
// Threads it creates afterwards inherit it. Does nothing where the platform has no
// per-thread nice value.
void lowerThisThreadPriority();

}  // namespace lr::app
