/* helix decode: placeholder until its subsystem lands. */
#include "hlx_cmd.h"
#include <stdio.h>

int hlx_cmd_decode(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "helix decode: not built yet\n");
    return 1;
}
