/* helix topo: placeholder until its subsystem lands. */
#include "hlx_cmd.h"
#include <stdio.h>

int hlx_cmd_topo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "helix topo: not built yet\n");
    return 1;
}
