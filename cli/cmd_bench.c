/* helix bench: placeholder until its subsystem lands. */
#include "hlx_cmd.h"
#include <stdio.h>

int hlx_cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "helix bench: not built yet\n");
    return 1;
}
