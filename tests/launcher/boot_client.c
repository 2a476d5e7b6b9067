/* A rank that bootstraps through transport/boot_pmix.c (hlx_boot_*) and then aborts the
 * job with rank 0, for the abort watchdog test. Modes:
 *   abort:CODE     rank 0 calls hlx_boot_abort(CODE) and then exits with 0 (it must never
 *                  get there if the abort ends the process)
 *   stopabort:CODE rank 0 first SIGSTOPs its launcher (HELIXRUN=1 only), so PMIx_Abort
 *                  waits for an answer that does not come; the watchdog must end it */
#define _GNU_SOURCE
#include "hlx_boot.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    hlx_boot_t     *boot;
    hlx_boot_info_t info;
    int             code = 0, stop = 0;

    if (argc != 2 || (sscanf(argv[1], "abort:%d", &code) != 1 &&
                      !(stop = sscanf(argv[1], "stopabort:%d", &code) == 1))) {
        fprintf(stderr, "usage: boot_client abort:CODE|stopabort:CODE\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (hlx_boot_init(10, &boot) != HLX_OK)
        return 1;
    hlx_boot_get_info(boot, &info);
    printf("rank %d: pid %d\n", info.rank, (int)getpid());
    if (hlx_boot_barrier(boot) != HLX_OK)
        return 1;
    if (info.rank == 0) {
        if (stop && getenv("HELIXRUN") != NULL)
            kill(getppid(), SIGSTOP);
        hlx_boot_abort(boot, code, "boot_client abort");
        /* Teardown that hangs: only the abort watchdog ends the process. */
        pause();
        return 0;
    }
    pause(); /* the launcher ends the others */
    hlx_boot_fini(boot);
    return 0;
}
