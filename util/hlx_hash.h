/* FNV-1a, the 64-bit hash the layers use to compare what ranks and processes hold (job
 * descriptions, cgroup ids, output streams): one definition for all of them. */
#ifndef HLX_HASH_H
#define HLX_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HLX_FNV1A_INIT 1469598103934665603ull /* the offset basis */

/* h folded with the len bytes at data (HLX_FNV1A_INIT to start). */
static inline uint64_t hlx_fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    size_t i;

    for (i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#endif
