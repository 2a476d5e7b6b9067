/* Helpers of the libFuzzer targets: an input handed to a path-taking loader through an
 * anonymous in-memory file (/proc/self/fd/N), so nothing touches the disk. */
#ifndef HLX_FUZZ_COMMON_H
#define HLX_FUZZ_COMMON_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes data to a fresh memfd and names it in path; returns the fd (close it) or -1. */
static inline int hlx_fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("hlx_fuzz", MFD_CLOEXEC);

    if (fd < 0)
        return -1;
    if (size > 0 && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return -1;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
