/* One failure report for the plain-C tests that do not use cmocka: HLX_CHECK counts a
 * failed condition in a counter and goes on; HLX_CHECK_OR_RETURN returns 1 from main. */
#ifndef HLX_TEST_CHECK_H
#define HLX_TEST_CHECK_H

#include <stdio.h>

#define HLX_CHECK_REPORT(...) \
    do { \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__); \
        fputc('\n', stderr); \
    } while (0)

#define HLX_CHECK(_count, _c, ...) \
    do { \
        if (!(_c)) { \
            HLX_CHECK_REPORT(__VA_ARGS__); \
            (_count)++; \
        } \
    } while (0)

#define HLX_CHECK_OR_RETURN(_c, ...) \
    do { \
        if (!(_c)) { \
            HLX_CHECK_REPORT(__VA_ARGS__); \
            return 1; \
        } \
    } while (0)

#endif
