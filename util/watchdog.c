/* Watchdog thread: ends the process with _exit() when an armed deadline passes, so that a
 * hung library call (PMIx, UCX teardown) can never keep a failed rank alive. */
#define _GNU_SOURCE
#include "hlx_watchdog.h"

#include "hlx_log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const hlx_param_t hlx_watchdog_params[] = {
    { "ABORT_GRACE", HLX_PT_DOUBLE, "10", 0.01, 3600,
      offsetof(hlx_watchdog_settings_t, abort_grace),
      "seconds from an abort (PMIx_Abort, teardown) to a forced _exit of the rank" },
};

const hlx_param_table_t hlx_watchdog_param_table = {
    "watchdog", hlx_watchdog_params,
    sizeof(hlx_watchdog_params) / sizeof(hlx_watchdog_params[0]),
    sizeof(hlx_watchdog_settings_t),
};

struct hlx_watchdog {
    pthread_t       thread;
    pthread_mutex_t m;
    pthread_cond_t  c;
    int             armed;
    int             stop;
    struct timespec deadline;   /* CLOCK_MONOTONIC */
    double          seconds;
    int             exit_code;
    char            what[256];
};

void hlx_watchdog_settings(hlx_watchdog_settings_t *s)
{
    if (hlx_param_load(&hlx_watchdog_param_table, s, NULL) != HLX_OK)
        s->abort_grace = 10;
}

/* Only write(2) and _exit(2) once fired: the process may be stuck with any lock held,
 * stdio's included. */
static void hlx_watchdog_fire(const hlx_watchdog_t *wd)
{
    char host[64] = "?", line[512];
    int  n;

    gethostname(host, sizeof(host) - 1);
    n = snprintf(line, sizeof(line),
                 "helix %s:%d: watchdog: %s did not finish within %g s; exiting with "
                 "status %d\n", host, (int)getpid(), wd->what, wd->seconds, wd->exit_code);
    if (n > 0 && write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
    }
    _exit(wd->exit_code);
}

static void *hlx_watchdog_main(void *arg)
{
    hlx_watchdog_t *wd = arg;

    pthread_mutex_lock(&wd->m);
    while (!wd->stop) {
        if (!wd->armed) {
            pthread_cond_wait(&wd->c, &wd->m);
            continue;
        }
        if (pthread_cond_timedwait(&wd->c, &wd->m, &wd->deadline) == ETIMEDOUT &&
            wd->armed && !wd->stop) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec > wd->deadline.tv_sec ||
                (now.tv_sec == wd->deadline.tv_sec && now.tv_nsec >= wd->deadline.tv_nsec))
                hlx_watchdog_fire(wd);
        }
    }
    pthread_mutex_unlock(&wd->m);
    return NULL;
}

hlx_status_t hlx_watchdog_create(hlx_watchdog_t **wd_p)
{
    hlx_watchdog_t    *wd = calloc(1, sizeof(*wd));
    pthread_condattr_t ca;
    sigset_t           all, old;
    int                rc;

    if (wd == NULL)
        return HLX_ERR_NOMEM;
    pthread_mutex_init(&wd->m, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd->c, &ca);
    pthread_condattr_destroy(&ca);
    /* The thread takes no signal: they stay with the threads that handle them. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&wd->thread, NULL, hlx_watchdog_main, wd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        hlx_error("watchdog: cannot start its thread: %s", strerror(rc));
        pthread_cond_destroy(&wd->c);
        pthread_mutex_destroy(&wd->m);
        free(wd);
        return HLX_ERR_INTERNAL;
    }
    *wd_p = wd;
    return HLX_OK;
}

void hlx_watchdog_arm(hlx_watchdog_t *wd, double seconds, int exit_code, const char *what)
{
    struct timespec ts;

    if (!(seconds > 0))
        seconds = 0.001;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)seconds;
    ts.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&wd->m);
    wd->deadline  = ts;
    wd->seconds   = seconds;
    wd->exit_code = exit_code;
    snprintf(wd->what, sizeof(wd->what), "%s", what ? what : "an operation");
    wd->armed = 1;
    pthread_cond_signal(&wd->c);
    pthread_mutex_unlock(&wd->m);
}

void hlx_watchdog_disarm(hlx_watchdog_t *wd)
{
    pthread_mutex_lock(&wd->m);
    wd->armed = 0;
    pthread_cond_signal(&wd->c);
    pthread_mutex_unlock(&wd->m);
}

void hlx_watchdog_destroy(hlx_watchdog_t *wd)
{
    if (wd == NULL)
        return;
    pthread_mutex_lock(&wd->m);
    wd->armed = 0;
    wd->stop  = 1;
    pthread_cond_signal(&wd->c);
    pthread_mutex_unlock(&wd->m);
    pthread_join(wd->thread, NULL);
    pthread_cond_destroy(&wd->c);
    pthread_mutex_destroy(&wd->m);
    free(wd);
}
