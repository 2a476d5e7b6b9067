/* helix info: placeholder until its subsystem lands. */
#include "hlx_cmd.h"
#include <stdio.h>

int hlx_cmd_info(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "helix info: not built yet\n");
    return 1;
}
