/* Watchdog thread: ends the process with _exit() when an armed deadline passes, so that a
 * hung library call (PMIx, UCX teardown) can never keep a failed rank alive. */
#define _GNU_SOURCE
#include "hlx_watchdog.h"

#include "hlx_log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
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
      "seconds from an abort (PMIx_Abort, teardown) to a forced _exit of the rank", NULL },
};

const hlx_param_table_t hlx_watchdog_param_table = {
    "watchdog", hlx_watchdog_params,
    sizeof(hlx_watchdog_params) / sizeof(hlx_watchdog_params[0]),
    sizeof(hlx_watchdog_settings_t), NULL,
};

/* The thread sleeps until the latest deadline armed (or for ever once that passed
 * disarmed) and is woken only when an arm needs it sooner: a deadline re-armed every
 * decode step costs a mutex, never a wake-up of a thread that would take the rank's core
 * (two wake-ups a step cost each rank 5-30 us and the ranks their alignment). */
struct hlx_watchdog {
    pthread_t       thread;
    pthread_mutex_t m;
    pthread_cond_t  c;
    int             armed;
    int             stop;
    int             forever;    /* the thread waits without a deadline */
    struct timespec deadline;   /* CLOCK_MONOTONIC */
    struct timespec until;      /* what the thread sleeps until (forever == 0) */
    unsigned long   wakeups;
    double          seconds;
    int             exit_code;
    char            what[256];
    _Atomic(const char *) *where; /* a static string the owner updates, or NULL */
};

static int hlx_ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

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

    const char *where = wd->where ? atomic_load(wd->where) : NULL;

    gethostname(host, sizeof(host) - 1);
    n = snprintf(line, sizeof(line),
                 "helix %s:%d: watchdog: %s did not finish within %g s%s%s%s; exiting with "
                 "status %d\n", host, (int)getpid(), wd->what, wd->seconds,
                 where ? " (in " : "", where ? where : "", where ? ")" : "", wd->exit_code);
    if (n > 0 && write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
    }
    _exit(wd->exit_code);
}

static void *hlx_watchdog_main(void *arg)
{
    hlx_watchdog_t *wd = arg;
    struct timespec now;

    pthread_mutex_lock(&wd->m);
    while (!wd->stop) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (wd->armed && !hlx_ts_before(&now, &wd->deadline))
            hlx_watchdog_fire(wd);
        if (hlx_ts_before(&now, &wd->deadline)) {
            /* armed, or disarmed with its last deadline ahead: an arm before that needs no
             * wake-up, the next deadline being later */
            wd->until   = wd->deadline;
            wd->forever = 0;
            pthread_cond_timedwait(&wd->c, &wd->m, &wd->until);
        } else {
            wd->forever = 1;
            pthread_cond_wait(&wd->c, &wd->m);
        }
        wd->wakeups++;
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
    wd->forever = 1;
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
    if (wd->forever || hlx_ts_before(&ts, &wd->until))
        pthread_cond_signal(&wd->c);
    pthread_mutex_unlock(&wd->m);
}

/* No wake-up: the thread finds it disarmed when its sleep ends. */
void hlx_watchdog_disarm(hlx_watchdog_t *wd)
{
    pthread_mutex_lock(&wd->m);
    wd->armed = 0;
    pthread_mutex_unlock(&wd->m);
}

unsigned long hlx_watchdog_wakeups(hlx_watchdog_t *wd)
{
    unsigned long n;

    pthread_mutex_lock(&wd->m);
    n = wd->wakeups;
    pthread_mutex_unlock(&wd->m);
    return n;
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

void hlx_watchdog_set_where(hlx_watchdog_t *wd, _Atomic(const char *) *where)
{
    pthread_mutex_lock(&wd->m);
    wd->where = where;
    pthread_mutex_unlock(&wd->m);
}
