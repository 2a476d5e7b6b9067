/* Monotonic clock helpers used for timings and deadlines. */
#ifndef HLX_TIME_H
#define HLX_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t hlx_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double hlx_now_s(void)
{
    return (double)hlx_now_ns() * 1e-9;
}

#endif
