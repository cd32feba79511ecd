#pragma once
// Always-on invariant checks. A failed invariant is a bug in Longread, not bad input:
// it prints file:line and the condition, then aborts. Expected failures use Status.

#include <cstdio>
#include <cstdlib>

#define LR_ASSERT(cond)                                                                       \
    do {                                                                                      \
        if (!(cond)) [[unlikely]] {                                                           \
            std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            std::abort();                                                                     \
        }                                                                                     \
    } while (0)
