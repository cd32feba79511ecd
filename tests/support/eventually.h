#pragma once
// How long a test waits for another thread (the engine's, the server's) to reach a state,
// with QTRY_*_WITH_TIMEOUT. The wait ends as soon as the state is reached, so this only
// bounds a hang: generous, since a loaded machine stretches seconds into tens of seconds.

namespace lr::test {

inline constexpr int kEventuallyMs = 120'000;

}  // namespace lr::test
