/* helix plan: placeholder until its subsystem lands. */
#include "hlx_cmd.h"
#include <stdio.h>

int hlx_cmd_plan(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "helix plan: not built yet\n");
    return 1;
}

int hlx_cmd_sweep(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "helix sweep: not built yet\n");
    return 1;
}
