/* LD_PRELOAD for helixrun tests: sends helixrun the signal HLX_TEST_SIGNAL_AT_PARSE (a
 * number) at its first getopt_long call, i.e. while it parses its flags, the moment an
 * early signal to a launcher that only blocked its signals later was lost. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

int getopt_long(int argc, char *const argv[], const char *optstring,
                const struct option *longopts, int *longindex)
{
    static int (*real)(int, char *const[], const char *, const struct option *, int *);
    const char *sig = getenv("HLX_TEST_SIGNAL_AT_PARSE");

    if (real == NULL)
        real = (int (*)(int, char *const[], const char *, const struct option *, int *))
            dlsym(RTLD_NEXT, "getopt_long");
    if (sig != NULL) {
        /* once, and not in the ranks (they inherit helixrun's environment) */
        const int s = atoi(sig);
        unsetenv("HLX_TEST_SIGNAL_AT_PARSE");
        unsetenv("LD_PRELOAD");
        kill(getpid(), s);
    }
    return real(argc, argv, optstring, longopts, longindex);
}
