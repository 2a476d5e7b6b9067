/* libFuzzer target: the hwloc XML checks must refuse or accept any input without crashing,
 * and what they accept must then load through hwloc and pass validation or be refused. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "topo_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024], path[] = "/tmp/hlx_fuzz_topo_XXXXXX";
    hlx_topo_t *t = NULL;
    int fd;

    if (hlx_topo_xml_check_text("fuzz.xml", (const char *)data, size, err, sizeof(err)) != HLX_OK)
        return 0;
    /* accepted text: the whole load path (hwloc, validation, discovery) must cope with it */
    fd = mkstemp(path);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size && hlx_topo_load(path, &t, err, sizeof(err)) == HLX_OK)
        hlx_topo_free(t);
    close(fd);
    unlink(path);
    return 0;
}
