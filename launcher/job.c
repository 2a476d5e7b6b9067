/* helixrun job: a PMIx server for one node (pmix_server.h), the ranks it forks, and the
 * loop that forwards their output, watches them and kills the job on the first failure. */
#define _GNU_SOURCE
#include "hlx_launch.h"
#include "hlx_log.h"
#include "hlx_time.h"

#include <hwloc.h>
#include <pmix.h> /* PMIx_Error_string */
#include <pmix_server.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* After the last rank exits, how long to keep reading pipes that a leftover grandchild may
 * still hold open. */
#define HLX_JOB_DRAIN_S        2.0
/* After SIGKILL, how long to wait for the kernel to hand back the ranks (a process stuck
 * in uninterruptible sleep) before giving up on them. */
#define HLX_JOB_REAP_S         5.0
/* Deadline for each registration call into the PMIx server library. */
#define HLX_JOB_PMIX_WAIT_S    30.0
/* PMIx_server_finalize has hung after clients died mid-collective; past this, a
 * watchdog kills what is left, removes the tmpdir and exits. */
#define HLX_JOB_FINALIZE_S     10.0
/* A PMIx_Abort that arrives while another rank is already exiting (a peer's death makes
 * the survivors abort) waits this long for that rank to be reaped, so the death is named
 * as the first failure. A dying process can take a while: its memory is torn down before
 * its parent hears of it, and its sockets close in between. */
#define HLX_JOB_ABORT_HOLD_S   2.0
/* How long the survivors get to receive the lost-rank event before the server closes. */
#define HLX_JOB_NOTIFY_S       0.5
/* Leftover processes of the job (a rank's background children) get SIGTERM when their
 * rank ends, and SIGKILL this long after the last rank ended. */
#define HLX_JOB_LEFTOVER_S     1.0
/* Name of the file in the private directory recording its owner: "<pid> <starttime>". */
#define HLX_JOB_OWNER_FILE     "owner"
/* Name of the file in the private directory holding this machine as hwloc XML, handed to
 * the ranks as HELIX_TOPO_LAUNCHER_XML. */
#define HLX_JOB_TOPO_FILE      "topology.xml"
/* How often the PMIx port is checked for connections from outside the job. */
#define HLX_JOB_GUARD_S        0.1

struct hlx_job;

typedef struct hlx_rank {
    struct hlx_job  *job;
    int              rank;
    pid_t            pid;       /* 0 until forked */
    int              running;   /* forked and not yet reaped */
    int              wstatus;   /* waitpid status once reaped */
    int              group_gone; /* its process group seen empty after it was reaped: the
                                  * number may be another group's since */
    double           started;   /* hlx_now_s() at fork */
    /* Written by the PMIx progress thread under job->lock. */
    int              connected;
    int              finalized;
    /* Failure observed while the job's first failure is being settled (main thread). */
    int              cand_seq;   /* 1-based order of observation, 0: not a candidate */
    int              cand_code;  /* helixrun's exit code if this rank is named */
    int              cand_tier;  /* lower is a likelier first cause */
    int              dying;      /* seen exiting when a PMIx_Abort arrived */
    int              aborted;    /* called PMIx_Abort: its own exit is not a new failure
                                  * (written under job->lock by the PMIx thread) */
    char             cand_desc[160];
    char             cand_cause[96]; /* "killed by signal 9 (SIGKILL)", "exited with status 3" */
    hlx_iof_stream_t out, err;
} hlx_rank_t;

typedef struct hlx_job {
    const hlx_launch_opts_t *opts;
    char             tmpdir[PATH_MAX];
    char             host[256];
    pmix_nspace_t    nspace;
    hlx_rank_t      *ranks;
    int              nrunning;
    int              sig_fd;
    int              wake_fd[2];  /* PMIx callbacks poke the main loop through this */
    int              spare_fd[4]; /* held from the start, closed before the PMIx server is
                                     finalized: descriptors for its last accepts and for
                                     removing the job directory when the job ran out */
    pthread_mutex_t  lock;        /* guards the fields the PMIx progress thread writes */
    /* Written by the PMIx progress thread under lock. */
    int              abort_rank;  /* -1: none */
    int              abort_status;
    char             abort_msg[1024];
    struct hlx_srv_done *done_head; /* completions owed to the library, run by main loop */
    struct hlx_srv_done *abort_held; /* PMIx_Abort completions, held until the job is
                                      * killed: an aborting rank stays in PMIx_Abort, so
                                      * its exit cannot fail its peers' collectives and
                                      * pass for the first failure */
    /* Main thread only. */
    int              failed;
    int              exit_code;
    int              killing;     /* kill_sig sent to every rank */
    int              kill_sig;
    int              escalated;   /* SIGKILL sent */
    int              abandoned;   /* ranks that outlived SIGKILL are left behind */
    double           deadline;    /* job timeout, 0: none */
    double           kill_at;     /* SIGKILL time once killing */
    double           kill_start;  /* when kill_sig was sent */
    int              cut_sig;     /* a second signal to helixrun that cut the grace short */
    double           settle_until; /* collecting failure candidates until then, 0: not */
    double           hold_until;   /* a held PMIx_Abort waits for exiting ranks until then */
    int              ncand;
    int              server_up;
    int              abort_cand;  /* a PMIx_Abort is held until the dying ranks are reaped */
    int              abort_code;
    char             abort_desc[1152];
    int              swept;       /* leftover processes sent SIGTERM */
    hlx_guard_t      guard;       /* the PMIx port, watched for foreign connections */
    hlx_iof_collapse_t dup;       /* stderr lines of several ranks printed once */
    double           guard_next;
    int              notify_rank; /* the rank named as the first failure, -1: none */
    char             notify_text[1152];
    pid_t            keeper_pid;  /* ends the ranks' groups if helixrun dies, 0: none */
    int              keeper_fd;   /* rank pids (and pidfds) to the keeper; closing it
                                   * unsaid = died */
    hwloc_topology_t topo;        /* the PMIx server's (the library keeps the pointer until
                                   * finalize), NULL: the library loads its own */
    char             topo_env[PATH_MAX + 32]; /* HELIX_TOPO_LAUNCHER_XML=<file> for the
                                   * ranks, "": none written */
} hlx_job_t;

/* ---- PMIx server module: runs on the library's progress thread ---- */

/* A completion owed to the library. Upcalls return at once and the main loop completes
 * them, as a resource manager does after its network round: the library asks hosts to
 * return quickly, and completing inside an upcall re-enters the library while it may
 * be walking its own lists (it calls fence_nb from its connection-loss handling too). */
typedef struct hlx_srv_done {
    struct hlx_srv_done *next;
    pmix_op_cbfunc_t     opcb;   /* either this ... */
    pmix_modex_cbfunc_t  modexcb; /* ... or this */
    void                *cbdata;
    pmix_status_t        status;
    char                *data;   /* fence result, freed through hlx_srv_release */
    size_t               ndata;
} hlx_srv_done_t;

/* fence_nb gets no server object, so the module reaches the job through this one
 * pointer; helixrun runs one job per process and sets it before PMIx_server_init. */
static hlx_job_t *hlx_srv_job;

static void hlx_job_wake(hlx_job_t *job)
{
    char c = 1;
    /* Non-blocking: a full pipe already means the main loop will look. */
    if (write(job->wake_fd[1], &c, 1) < 0) {
    }
}

static pmix_status_t hlx_srv_defer_to(hlx_job_t *job, int hold, pmix_op_cbfunc_t opcb,
                                      pmix_modex_cbfunc_t modexcb, void *cbdata, char *data,
                                      size_t ndata);

static pmix_status_t hlx_srv_defer(hlx_job_t *job, pmix_op_cbfunc_t opcb,
                                   pmix_modex_cbfunc_t modexcb, void *cbdata, char *data,
                                   size_t ndata)
{
    return hlx_srv_defer_to(job, 0, opcb, modexcb, cbdata, data, ndata);
}

static pmix_status_t hlx_srv_defer_to(hlx_job_t *job, int hold, pmix_op_cbfunc_t opcb,
                                      pmix_modex_cbfunc_t modexcb, void *cbdata, char *data,
                                      size_t ndata)
{
    hlx_srv_done_t *d = calloc(1, sizeof(*d));

    if (d == NULL)
        return PMIX_ERR_NOMEM;
    d->opcb    = opcb;
    d->modexcb = modexcb;
    d->cbdata  = cbdata;
    d->status  = PMIX_SUCCESS;
    d->data    = data;
    d->ndata   = ndata;
    pthread_mutex_lock(&job->lock);
    /* Order matters little, but keep it: push at the tail. */
    hlx_srv_done_t **tail = hold ? &job->abort_held : &job->done_head;
    while (*tail)
        tail = &(*tail)->next;
    *tail = d;
    pthread_mutex_unlock(&job->lock);
    hlx_job_wake(job);
    return PMIX_SUCCESS;
}

static void hlx_srv_release(void *cbdata)
{
    free(cbdata);
}

/* Main thread: hands every owed completion back to the library. */
static void hlx_srv_run_done(hlx_job_t *job)
{
    hlx_srv_done_t *d, *next;

    pthread_mutex_lock(&job->lock);
    d              = job->done_head;
    job->done_head = NULL;
    pthread_mutex_unlock(&job->lock);
    for (; d != NULL; d = next) {
        next = d->next;
        if (d->modexcb != NULL)
            d->modexcb(d->status, d->data, d->ndata, d->cbdata, hlx_srv_release, d->data);
        else if (d->opcb != NULL)
            d->opcb(d->status, d->cbdata);
        free(d);
    }
}

/* Main thread, once the job is being killed: the held PMIx_Abort completions join the
 * ordinary ones. */
static void hlx_srv_release_aborts(hlx_job_t *job)
{
    hlx_srv_done_t **tail;

    pthread_mutex_lock(&job->lock);
    tail = &job->done_head;
    while (*tail)
        tail = &(*tail)->next;
    *tail           = job->abort_held;
    job->abort_held = NULL;
    pthread_mutex_unlock(&job->lock);
}

/* After PMIx_server_finalize nothing may call into the library: just free. */
static void hlx_srv_drop_done(hlx_job_t *job)
{
    hlx_srv_done_t *d, *next;

    hlx_srv_release_aborts(job);
    pthread_mutex_lock(&job->lock);
    d              = job->done_head;
    job->done_head = NULL;
    pthread_mutex_unlock(&job->lock);
    for (; d != NULL; d = next) {
        next = d->next;
        free(d->data);
        free(d);
    }
}

static pmix_status_t hlx_srv_client_connected(const pmix_proc_t *proc, void *server_object,
                                              pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    hlx_rank_t *r = server_object;

    if (r == NULL)
        return PMIX_OPERATION_SUCCEEDED;
    pthread_mutex_lock(&r->job->lock);
    r->connected = 1;
    pthread_mutex_unlock(&r->job->lock);
    if (cbfunc == NULL) {
        hlx_job_wake(r->job);
        return PMIX_OPERATION_SUCCEEDED;
    }
    return hlx_srv_defer(r->job, cbfunc, NULL, cbdata, NULL, 0);
}

static pmix_status_t hlx_srv_client_finalized(const pmix_proc_t *proc, void *server_object,
                                              pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    hlx_rank_t *r = server_object;

    if (r == NULL)
        return PMIX_OPERATION_SUCCEEDED;
    /* Set before the client is released, so the flag is seen when its exit is reaped. */
    pthread_mutex_lock(&r->job->lock);
    r->finalized = 1;
    pthread_mutex_unlock(&r->job->lock);
    if (cbfunc == NULL)
        return PMIX_OPERATION_SUCCEEDED;
    return hlx_srv_defer(r->job, cbfunc, NULL, cbdata, NULL, 0);
}

static pmix_status_t hlx_srv_abort(const pmix_proc_t *proc, void *server_object, int status,
                                   const char msg[], pmix_proc_t procs[], size_t nprocs,
                                   pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    hlx_rank_t *r = server_object;

    if (r == NULL)
        return PMIX_ERR_NOT_FOUND;
    /* Recorded before the client is released, so the abort is the job's first failure
     * even if the rank exits right after PMIx_Abort returns. A subset of procs is not
     * honoured: on one node the whole job goes. */
    pthread_mutex_lock(&r->job->lock);
    r->aborted = 1;
    if (r->job->abort_rank < 0) {
        r->job->abort_rank   = r->rank;
        r->job->abort_status = status;
        snprintf(r->job->abort_msg, sizeof(r->job->abort_msg), "%s", msg ? msg : "");
    }
    pthread_mutex_unlock(&r->job->lock);
    if (cbfunc == NULL) {
        hlx_job_wake(r->job);
        return PMIX_OPERATION_SUCCEEDED;
    }
    return hlx_srv_defer_to(r->job, 1, cbfunc, NULL, cbdata, NULL, 0);
}

static pmix_status_t hlx_srv_fence_nb(const pmix_proc_t procs[], size_t nprocs,
                                      const pmix_info_t info[], size_t ninfo, char *data,
                                      size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    char         *copy = NULL;
    pmix_status_t rc;

    /* One node, one server: the library hands us every local contribution already
     * concatenated, which is the whole job's data, and that is the collective result.
     * Copied because the library may free its buffer when this upcall returns. */
    if (ndata > 0) {
        copy = malloc(ndata);
        if (copy == NULL)
            return PMIX_ERR_NOMEM;
        memcpy(copy, data, ndata);
    }
    rc = hlx_srv_defer(hlx_srv_job, NULL, cbfunc, cbdata, copy, ndata);
    if (rc != PMIX_SUCCESS)
        free(copy);
    return rc;
}

static pmix_server_module_t hlx_srv_module_template = {
    .client_connected = hlx_srv_client_connected,
    .client_finalized = hlx_srv_client_finalized,
    .abort            = hlx_srv_abort,
    .fence_nb         = hlx_srv_fence_nb,
};

/* ---- Blocking wrappers with a deadline for the library's asynchronous calls ---- */

typedef struct hlx_pmix_wait {
    pthread_mutex_t m;
    pthread_cond_t  c;
    int             done;
    pmix_status_t   status;
} hlx_pmix_wait_t;

static void hlx_pmix_op_done(pmix_status_t status, void *cbdata)
{
    hlx_pmix_wait_t *w = cbdata;

    pthread_mutex_lock(&w->m);
    w->status = status;
    w->done   = 1;
    pthread_cond_signal(&w->c);
    pthread_mutex_unlock(&w->m);
}

static hlx_pmix_wait_t *hlx_pmix_wait_new(void)
{
    hlx_pmix_wait_t   *w = calloc(1, sizeof(*w));
    pthread_condattr_t ca;

    if (w == NULL)
        return NULL;
    pthread_mutex_init(&w->m, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->c, &ca);
    pthread_condattr_destroy(&ca);
    return w;
}

/* rc is what the asynchronous call returned. On timeout the wait object is leaked on
 * purpose: the library may still call back into it. */
static pmix_status_t hlx_pmix_wait_end(hlx_pmix_wait_t *w, pmix_status_t rc)
{
    struct timespec ts;
    int             done;

    if (rc == PMIX_OPERATION_SUCCEEDED)
        rc = PMIX_SUCCESS;
    else if (rc == PMIX_SUCCESS) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += (time_t)HLX_JOB_PMIX_WAIT_S;
        pthread_mutex_lock(&w->m);
        while (!w->done && pthread_cond_timedwait(&w->c, &w->m, &ts) != ETIMEDOUT) {
        }
        done = w->done;
        rc   = w->done ? w->status : PMIX_ERR_TIMEOUT;
        pthread_mutex_unlock(&w->m);
        if (!done)
            return rc;
    }
    pthread_mutex_destroy(&w->m);
    pthread_cond_destroy(&w->c);
    free(w);
    return rc;
}

/* ---- Small helpers ---- */

static void hlx_rmtree(const char *dir);

/* Forwards what the ranks have written so far (a rank that has exited wrote all of its
 * output before it did), without waiting for more. */
static void hlx_job_drain_output(hlx_job_t *job)
{
    for (int i = 0; job->ranks != NULL && i < job->opts->nprocs; i++) {
        hlx_iof_read(&job->ranks[i].out, stdout, job->opts->prefix);
        hlx_iof_read(&job->ranks[i].err, stderr, job->opts->prefix);
    }
}

/* One line of helixrun's own on stderr. What the ranks said before it comes first: their
 * output still in the pipes, and the summaries of the stderr copies held back (a rank's
 * last words before the line about its end). */
static void hlx_job_msg(hlx_job_t *job, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void hlx_job_msg(hlx_job_t *job, const char *fmt, ...)
{
    va_list ap;

    hlx_job_drain_output(job);
    hlx_iof_collapse_say(&job->dup);
    fflush(stdout);
    fputs("helixrun: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

static const char *hlx_signame(int sig)
{
    const char *s = sigabbrev_np(sig);
    return s ? s : "?";
}

/* PF_EXITING in the flags of /proc/PID/stat: the process has begun to exit. */
#define HLX_PF_EXITING 0x4u

/* Fields of /proc/PID/stat that supervision needs. Returns 0, or -1 if the process is
 * gone (or /proc unreadable). */
typedef struct hlx_pstat {
    char               state;
    int                ppid, pgrp;
    unsigned           flags;
    unsigned long long start;  /* clock ticks after boot: with the pid, a process identity */
    char               comm[32];
} hlx_pstat_t;

static int hlx_pstat_read(pid_t pid, hlx_pstat_t *ps)
{
    char  path[64], buf[1024], *rp;
    int   fd;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* comm may hold spaces and parentheses: it ends at the last ')'. */
    rp = strrchr(buf, ')');
    if (rp == NULL || strchr(buf, '(') == NULL)
        return -1;
    snprintf(ps->comm, sizeof(ps->comm), "%.*s", (int)(rp - strchr(buf, '(') - 1),
             strchr(buf, '(') + 1);
    if (sscanf(rp + 2, "%c %d %d %*d %*d %*d %u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                       "%*d %*d %llu", &ps->state, &ps->ppid, &ps->pgrp, &ps->flags,
               &ps->start) != 5)
        return -1;
    return 0;
}

/* True when the process has begun to exit (PF_EXITING, or already a zombie) but its
 * parent may not have heard of it yet: the kernel tears down its memory and closes its
 * sockets (which its peers notice at once) before it signals the parent. */
static int hlx_pid_exiting(pid_t pid)
{
    hlx_pstat_t ps;

    if (hlx_pstat_read(pid, &ps) != 0)
        return 1;
    return ps.state == 'Z' || ps.state == 'X' || (ps.flags & HLX_PF_EXITING) != 0;
}

/* Appends "R (pid P)" for each rank selected by want() to buf. Returns how many. */
static int hlx_job_list_ranks(hlx_job_t *job, char *buf, size_t size,
                              int (*want)(const hlx_rank_t *))
{
    size_t used = 0;
    int    n    = 0;

    buf[0] = '\0';
    for (int i = 0; i < job->opts->nprocs; i++) {
        if (!want(&job->ranks[i]))
            continue;
        if (used < size)
            used += (size_t)snprintf(buf + used, size - used, "%s%d (pid %d)", n ? ", " : "",
                                     i, (int)job->ranks[i].pid);
        n++;
    }
    if (used >= size && size > 4)
        strcpy(buf + size - 4, "...");
    return n;
}

static int hlx_rank_is_running(const hlx_rank_t *r)
{
    return r->running;
}

static int hlx_rank_is_unconnected_running(const hlx_rank_t *r)
{
    return r->running && !r->connected;
}

/* Closes the PMIx server before any rank is signalled. libpmix 4.2.2 crashes or
 * deadlocks (about one run in three) when several clients die while a fence they joined
 * is pending; with the server gone first, the library never sees those deaths and the
 * ranks' pending PMIx calls fail with a lost connection instead. */
typedef struct hlx_job_fin_watchdog {
    hlx_job_t      *job;
    pthread_mutex_t m;
    pthread_cond_t  c;
    int             done;
} hlx_job_fin_watchdog_t;

static void *hlx_job_fin_watchdog_main(void *arg)
{
    hlx_job_fin_watchdog_t *w = arg;
    hlx_job_t      *job = w->job;
    struct timespec ts;
    int             done;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)HLX_JOB_FINALIZE_S;
    pthread_mutex_lock(&w->m);
    while (!w->done && pthread_cond_timedwait(&w->c, &w->m, &ts) != ETIMEDOUT) {
    }
    done = w->done;
    pthread_mutex_unlock(&w->m);
    if (done)
        return NULL;
    /* The main thread is stuck inside the library, so its fields are stable to read. */
    hlx_job_msg(job, "PMIx_server_finalize did not return within %g s; giving up on it",
                HLX_JOB_FINALIZE_S);
    for (int i = 0; i < job->opts->nprocs; i++)
        if (job->ranks[i].running)
            kill(-job->ranks[i].pid, SIGKILL);
    hlx_rmtree(job->tmpdir);
    fflush(stdout);
    fflush(stderr);
    _exit(job->failed ? job->exit_code : HLX_LAUNCH_EXIT_FAIL);
}

/* Whether the user set VAR, in helixrun's environment or with -x: then it is theirs. */
static int hlx_job_user_set(const hlx_launch_opts_t *opts, const char *var)
{
    size_t len = strlen(var);

    if (getenv(var) != NULL)
        return 1;
    for (size_t i = 0; i < opts->nenvset; i++)
        if (!strncmp(opts->envset[i], var, len) && opts->envset[i][len] == '=')
            return 1;
    return 0;
}

/* Settings helixrun gives itself and, through its environment, its ranks, each unless the
 * user set the variable (environment or -x). Measured in docs/launcher.md ("Start-up
 * cost"); none is applied under mpirun or srun, which do not run this code. */
typedef struct hlx_job_envdef {
    const char *name;
    const char *value;
    const char *value_user_xml; /* where the user names an XML file of their own */
} hlx_job_envdef_t;

static const hlx_job_envdef_t hlx_job_envdefs[] = {
    /* libpmix's shared-memory stores (gds ds21, ds12): on the first client's request the
     * server makes and memsets two 4 MiB segments for the job, page by page, while every
     * rank waits in PMIx_Init; the hash store sends each rank its job's few keys over
     * its socket instead. The server's and the clients' choice alike. */
    { "PMIX_MCA_gds", "hash", "hash" },
    /* hwloc opens each plugin at its first topology init, whether used or not: the libxml2
     * reader (with ICU and libstdc++), gl (X11) and opencl, 30-50 ms of dynamic linking;
     * gl and opencl are left out as components anyway, and hwloc's own reader takes the
     * XML hwloc writes (the launcher's, the test fixtures). Not the user's own XML
     * (HELIX_TOPO_FILE, HWLOC_XMLFILE): hwloc's own reader refuses what libxml2 reads
     * (CRLF line ends, a byte-order mark, attributes over several lines), so libxml2
     * stays. */
    { "HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_xml_libxml",
      "hwloc_gl,hwloc_opencl" },
};

/* Before hwloc and the PMIx server start, while helixrun has one thread (setenv). */
static void hlx_job_envdefs_apply(const hlx_launch_opts_t *opts)
{
    int user_xml = hlx_job_user_set(opts, "HELIX_TOPO_FILE") ||
                   hlx_job_user_set(opts, "HWLOC_XMLFILE");

    for (size_t i = 0; i < sizeof(hlx_job_envdefs) / sizeof(hlx_job_envdefs[0]); i++) {
        const hlx_job_envdef_t *d = &hlx_job_envdefs[i];
        const char *value = user_xml ? d->value_user_xml : d->value;

        if (hlx_job_user_set(opts, d->name))
            continue;
        if (setenv(d->name, value, 1) == 0)
            hlx_debug(HLX_SUB_LAUNCH, "%s=%s (helixrun's default)", d->name, value);
    }
}

/* Whether the ranks get helixrun's topology as XML: not when the user chose a topology of
 * their own, for helix (HELIX_TOPO_FILE, HELIX_TOPO_LAUNCHER_XML) or for hwloc itself
 * (HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_FSROOT), nor with HELIX_RUN_TOPO_XML=0. */
static int hlx_job_topology_handed(const hlx_launch_opts_t *opts)
{
    static const char *const own[] = { "HELIX_TOPO_FILE", "HELIX_TOPO_LAUNCHER_XML",
                                       "HWLOC_XMLFILE", "HWLOC_SYNTHETIC", "HWLOC_FSROOT" };

    if (!opts->topo_xml)
        return 0;
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
        if (hlx_job_user_set(opts, own[i]))
            return 0;
    return 1;
}

/* Writes the machine as hwloc XML into the job's directory for the ranks: each rank
 * (helix) reads it in a few milliseconds instead of discovering the machine, PCI
 * devices included, itself. On failure the ranks discover it, as before. */
static void hlx_job_topology_write(hlx_job_t *job, hwloc_topology_t t)
{
    char path[PATH_MAX];

    if (snprintf(path, sizeof(path), "%s/" HLX_JOB_TOPO_FILE, job->tmpdir) >=
        (int)sizeof(path))
        return; /* no room for the name: the ranks discover the machine */
    if (hwloc_topology_export_xml(t, path, 0) != 0) {
        hlx_debug(HLX_SUB_LAUNCH, "hwloc_topology_export_xml %s: %s; the ranks discover "
                  "the machine themselves", path, strerror(errno));
        return;
    }
    snprintf(job->topo_env, sizeof(job->topo_env), "HELIX_TOPO_LAUNCHER_XML=%s", path);
}

/* The machine for the PMIx server, without hwloc's gl and opencl components (gl tries
 * ten X displays). Loading its own, libpmix takes every PCI device (in a VM each
 * config-space read traps to the hypervisor); the ranks ask the server only for the
 * cpusets' locality. When the ranks get it as XML (hlx_job_topology_handed) it is loaded
 * once here with the I/O devices helix needs (the filter of its live load), and the
 * server gets the same; else without I/O objects: hwloc_topology_init+load 45 -> 19 ms
 * (medians of 25). On failure the library loads its own, as before. */
static void hlx_job_topology_load(hlx_job_t *job)
{
    hwloc_topology_t t;
    int hand = hlx_job_topology_handed(job->opts);

    if (hwloc_topology_init(&t) != 0)
        return;
    hwloc_topology_set_io_types_filter(t, hand ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT
                                               : HWLOC_TYPE_FILTER_KEEP_NONE);
#if HWLOC_API_VERSION >= 0x00020100
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
#endif
    if (hwloc_topology_load(t) != 0) {
        hlx_debug(HLX_SUB_LAUNCH, "hwloc_topology_load: %s; the PMIx server loads its own",
                  strerror(errno));
        hwloc_topology_destroy(t);
        return;
    }
    if (hand)
        hlx_job_topology_write(job, t);
    job->topo = t;
}

/* After PMIx_server_finalize only: the library holds the pointer until then. */
static void hlx_job_topology_free(hlx_job_t *job)
{
    if (job->topo == NULL)
        return;
    hwloc_topology_destroy(job->topo);
    job->topo = NULL;
}

static void hlx_job_release_spares(hlx_job_t *job)
{
    for (int i = 0; i < 4; i++)
        if (job->spare_fd[i] >= 0) {
            close(job->spare_fd[i]);
            job->spare_fd[i] = -1;
        }
}

static void hlx_job_server_down(hlx_job_t *job)
{
    pmix_status_t      rc;
    hlx_job_fin_watchdog_t     w = { .job = job, .done = 0 };
    pthread_condattr_t ca;
    pthread_t          tid;
    int                have_wd;

    hlx_job_release_spares(job);
    if (!job->server_up)
        return;
    hlx_srv_release_aborts(job);
    hlx_srv_run_done(job);
    pthread_mutex_init(&w.m, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w.c, &ca);
    pthread_condattr_destroy(&ca);
    have_wd = pthread_create(&tid, NULL, hlx_job_fin_watchdog_main, &w) == 0;
    rc      = PMIx_server_finalize();
    if (have_wd) {
        pthread_mutex_lock(&w.m);
        w.done = 1;
        pthread_cond_signal(&w.c);
        pthread_mutex_unlock(&w.m);
        pthread_join(tid, NULL);
    }
    pthread_cond_destroy(&w.c);
    pthread_mutex_destroy(&w.m);
    if (rc != PMIX_SUCCESS)
        hlx_warn("PMIx_server_finalize: %s", PMIx_Error_string(rc));
    job->server_up = 0;
    hlx_srv_drop_done(job);
    hlx_job_topology_free(job);
}

static void hlx_job_signal_all(hlx_job_t *job, int sig)
{
    for (int i = 0; i < job->opts->nprocs; i++) {
        hlx_rank_t *r = &job->ranks[i];
        if (!r->running)
            continue;
        /* The whole process group, so a rank's own children (a shell wrapper) go too. */
        if (kill(-r->pid, sig) < 0)
            kill(r->pid, sig);
    }
}

static void hlx_job_kill(hlx_job_t *job);

/* Tells the survivors, through a PMIx event, which rank was lost and why, before the
 * server closes and they are signalled: a rank can then report the cause rather than
 * a lost connection. Bounded: the library's callback is waited for at most
 * HLX_JOB_NOTIFY_S. */
static void hlx_job_notify_lost(hlx_job_t *job)
{
    pmix_info_t     *info;
    pmix_proc_t      src;
    hlx_pmix_wait_t *w;
    pmix_status_t    rc;
    struct timespec  ts;

    if (!job->server_up || job->notify_rank < 0)
        return;
    w = hlx_pmix_wait_new();
    if (w == NULL)
        return;
    PMIX_LOAD_PROCID(&src, job->nspace, (pmix_rank_t)job->notify_rank);
    PMIX_INFO_CREATE(info, 2);
    PMIX_INFO_LOAD(&info[0], PMIX_EVENT_AFFECTED_PROC, &src, PMIX_PROC);
    PMIX_INFO_LOAD(&info[1], PMIX_EVENT_TEXT_MESSAGE, job->notify_text, PMIX_STRING);
    rc = PMIx_Notify_event(PMIX_ERR_PROC_ABORTED, &src, PMIX_RANGE_NAMESPACE, info, 2,
                           hlx_pmix_op_done, w);
    if (rc == PMIX_SUCCESS) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)(HLX_JOB_NOTIFY_S * 1e9);
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_mutex_lock(&w->m);
        while (!w->done && pthread_cond_timedwait(&w->c, &w->m, &ts) != ETIMEDOUT) {
        }
        rc = w->done ? w->status : PMIX_ERR_TIMEOUT;
        pthread_mutex_unlock(&w->m);
        /* On timeout the wait object is leaked: the library may still call back. */
        if (rc == PMIX_ERR_TIMEOUT)
            w = NULL;
    }
    if (w != NULL) {
        pthread_mutex_destroy(&w->m);
        pthread_cond_destroy(&w->c);
        free(w);
    }
    PMIX_INFO_FREE(info, 2);
    if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
        hlx_debug(HLX_SUB_LAUNCH, "PMIx_Notify_event: %s", PMIx_Error_string(rc));
    else
        /* The event is queued on the library's progress thread; let it go out before
         * the server closes the connections. */
        usleep(50000);
}

static void hlx_job_kill(hlx_job_t *job)
{
    if (job->killing)
        return;
    hlx_job_notify_lost(job);
    hlx_job_server_down(job);
    job->killing    = 1;
    job->kill_sig   = SIGTERM;
    job->kill_start = hlx_now_s();
    job->kill_at    = job->kill_start + job->opts->grace_s;
    hlx_job_signal_all(job, SIGTERM);
    /* A stopped rank (SIGSTOP, a debugger) would hold SIGTERM pending until SIGKILL. */
    hlx_job_signal_all(job, SIGCONT);
}

/* Ranks of a PMIx job still running that have not connected to the PMIx server for
 * HLX_JOB_UNCONNECTED_S since they started, as "; rank 1 (pid P) has not connected ...":
 * the likely reason the others failed (their bootstrap waits for it in vain). Nothing
 * when no rank ever connected (not a PMIx program) or they all did. */
#define HLX_JOB_UNCONNECTED_S 1.0
static void hlx_job_unconnected_note(hlx_job_t *job, char *buf, size_t size)
{
    const double now   = hlx_now_s();
    double       since = 0;
    size_t       used  = 0;
    int          n = 0, any = 0;
    char         list[512];

    buf[0]  = '\0';
    list[0] = '\0';
    pthread_mutex_lock(&job->lock);
    for (int i = 0; i < job->opts->nprocs; i++) {
        const hlx_rank_t *r = &job->ranks[i];
        any |= r->connected;
        if (!r->running || r->connected || now - r->started < HLX_JOB_UNCONNECTED_S)
            continue;
        if (used < sizeof(list))
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%d (pid %d)",
                                     n ? ", " : "", i, (int)r->pid);
        if (n++ == 0 || now - r->started < since)
            since = now - r->started;
    }
    pthread_mutex_unlock(&job->lock);
    if (!any || n == 0)
        return;
    snprintf(buf, size, "; rank%s %s %s not connected to the PMIx server in %.1f s (did the "
             "program call PMIx_Init?)", n > 1 ? "s" : "", list, n > 1 ? "have" : "has",
             since);
}

/* Records the job's first failure (later ones are consequences) and kills the job. */
static void hlx_job_fail(hlx_job_t *job, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void hlx_job_fail(hlx_job_t *job, int code, const char *fmt, ...)
{
    char    reason[2560], note[768];
    va_list ap;

    if (!job->failed) {
        job->failed    = 1;
        job->exit_code = code;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
        note[0] = '\0';
        /* the timeout message lists the unconnected ranks itself */
        if (code != HLX_LAUNCH_EXIT_TIMEOUT)
            hlx_job_unconnected_note(job, note, sizeof(note));
        if (job->nrunning > 0)
            hlx_job_msg(job, "%s%s; killing the job (SIGTERM, SIGKILL after %g s)", reason,
                        note, job->opts->grace_s);
        else
            hlx_job_msg(job, "%s", reason);
    }
    hlx_job_kill(job);
}

/* ---- Setup ---- */

static int hlx_rmtree_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    if (remove(path) < 0 && errno != ENOENT)
        hlx_warn("cannot remove %s: %s", path, strerror(errno));
    return 0;
}

/* Short of descriptors (the job ran into its open-file limit), nftw retries with one;
 * what still cannot go is said, and the next helixrun removes it as stale. */
static void hlx_rmtree(const char *dir)
{
    if (nftw(dir, hlx_rmtree_entry, 16, FTW_DEPTH | FTW_PHYS) == 0)
        return;
    if ((errno == EMFILE || errno == ENFILE) &&
        nftw(dir, hlx_rmtree_entry, 1, FTW_DEPTH | FTW_PHYS) == 0)
        return;
    if (errno != ENOENT)
        hlx_warn("cannot remove the job directory %s: %s (a later helixrun removes it once "
                 "this job is gone)", dir, strerror(errno));
}

static void hlx_job_info_add(pmix_info_t *info, size_t *n, const char *key,
                             const void *val, pmix_data_type_t type)
{
    PMIX_INFO_LOAD(&info[*n], key, val, type);
    (*n)++;
}

/* Registers the job with the PMIx server: the job-level keys a client reads at
 * PMIx_Init (without PMIX_NODE_MAP and PMIX_PROC_MAP it fails there) and one
 * PMIX_PROC_DATA array per rank. */
static int hlx_job_register_nspace(hlx_job_t *job)
{
    int               n = job->opts->nprocs;
    char              ranks_str[8 * HLX_LAUNCH_MAX_NPROCS];
    char             *node_regex = NULL, *proc_regex = NULL;
    pmix_info_t      *info;
    size_t            ninfo = 0, cap = 16 + (size_t)n;
    uint32_t          u32;
    pmix_rank_t       lldr = 0;
    pmix_status_t     rc;
    hlx_pmix_wait_t  *w;
    size_t            used = 0;

    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(ranks_str + used, sizeof(ranks_str) - used, "%s%d",
                                 i ? "," : "", i);
    rc = PMIx_generate_regex(job->host, &node_regex);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_generate_ppn(ranks_str, &proc_regex);
    if (rc != PMIX_SUCCESS) {
        hlx_job_msg(job, "cannot build the PMIx node/proc maps: %s", PMIx_Error_string(rc));
        free(node_regex);
        return -1;
    }

    PMIX_INFO_CREATE(info, cap);
    u32 = (uint32_t)n;
    hlx_job_info_add(info, &ninfo, PMIX_UNIV_SIZE, &u32, PMIX_UINT32);
    hlx_job_info_add(info, &ninfo, PMIX_JOB_SIZE, &u32, PMIX_UINT32);
    hlx_job_info_add(info, &ninfo, PMIX_MAX_PROCS, &u32, PMIX_UINT32);
    hlx_job_info_add(info, &ninfo, PMIX_LOCAL_SIZE, &u32, PMIX_UINT32);
    hlx_job_info_add(info, &ninfo, PMIX_NODE_SIZE, &u32, PMIX_UINT32);
    hlx_job_info_add(info, &ninfo, PMIX_APP_SIZE, &u32, PMIX_UINT32);
    u32 = 1;
    hlx_job_info_add(info, &ninfo, PMIX_NUM_NODES, &u32, PMIX_UINT32);
    hlx_job_info_add(info, &ninfo, PMIX_LOCAL_PEERS, ranks_str, PMIX_STRING);
    hlx_job_info_add(info, &ninfo, PMIX_LOCALLDR, &lldr, PMIX_PROC_RANK);
    hlx_job_info_add(info, &ninfo, PMIX_JOBID, job->nspace, PMIX_STRING);
    hlx_job_info_add(info, &ninfo, PMIX_NODE_MAP, node_regex, PMIX_REGEX);
    hlx_job_info_add(info, &ninfo, PMIX_PROC_MAP, proc_regex, PMIX_REGEX);
    free(node_regex);
    free(proc_regex);

    for (int i = 0; i < n; i++) {
        pmix_data_array_t *darray;
        pmix_info_t       *pi;
        pmix_rank_t        rk  = (pmix_rank_t)i;
        uint16_t           u16 = (uint16_t)i;
        uint32_t           zero = 0;

        PMIX_DATA_ARRAY_CREATE(darray, 8, PMIX_INFO);
        pi = darray->array;
        /* PMIX_RANK must come first: the library keys the array on it. */
        PMIX_INFO_LOAD(&pi[0], PMIX_RANK, &rk, PMIX_PROC_RANK);
        PMIX_INFO_LOAD(&pi[1], PMIX_LOCAL_RANK, &u16, PMIX_UINT16);
        PMIX_INFO_LOAD(&pi[2], PMIX_NODE_RANK, &u16, PMIX_UINT16);
        PMIX_INFO_LOAD(&pi[3], PMIX_HOSTNAME, job->host, PMIX_STRING);
        PMIX_INFO_LOAD(&pi[4], PMIX_NODEID, &zero, PMIX_UINT32);
        PMIX_INFO_LOAD(&pi[5], PMIX_APPNUM, &zero, PMIX_UINT32);
        PMIX_INFO_LOAD(&pi[6], PMIX_APP_RANK, &rk, PMIX_PROC_RANK);
        PMIX_INFO_LOAD(&pi[7], PMIX_GLOBAL_RANK, &rk, PMIX_PROC_RANK);
        PMIX_LOAD_KEY(info[ninfo].key, PMIX_PROC_DATA);
        info[ninfo].value.type         = PMIX_DATA_ARRAY;
        info[ninfo].value.data.darray  = darray;
        ninfo++;
    }

    w = hlx_pmix_wait_new();
    if (w == NULL) {
        PMIX_INFO_FREE(info, cap);
        return -1;
    }
    rc = PMIx_server_register_nspace(job->nspace, n, info, ninfo, hlx_pmix_op_done, w);
    rc = hlx_pmix_wait_end(w, rc);
    PMIX_INFO_FREE(info, cap);
    if (rc != PMIX_SUCCESS) {
        hlx_job_msg(job, "PMIx_server_register_nspace failed: %s", PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

int hlx_launch_reserved(const char *name, size_t len)
{
    static const char *const own[] = { "HELIXRUN", "HELIX_RANK", "HELIX_SIZE" };

    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
        if (len == strlen(own[i]) && !strncmp(name, own[i], len))
            return 1;
    /* PMIx_server_setup_fork sets the client's identity (PMIX_RANK, PMIX_NAMESPACE, the
     * server URI, ...); PMIX_MCA_* is the user's tuning. */
    return len >= 5 && !strncmp(name, "PMIX_", 5) &&
           !(len >= 9 && !strncmp(name, "PMIX_MCA_", 9));
}

static int hlx_env_keep(const char *entry)
{
    /* Another launcher's PMIx identity (helixrun itself started by mpirun or srun) would
     * send the ranks to the wrong server, and the HELIX_* a launcher sets are ours to
     * set. */
    if (hlx_launch_reserved(entry, strcspn(entry, "=")))
        return 0;
    /* helixrun's own settings; the program would warn about them as unknown. */
    if (!strncmp(entry, "HELIX_RUN_", 10))
        return 0;
    return 1;
}

static void hlx_env_free(char **env)
{
    if (env == NULL)
        return;
    for (char **e = env; *e; e++)
        free(*e);
    free(env);
}

/* Sets name=value in a heap environment (each entry its own allocation, as
 * PMIx_server_setup_fork expects since it reallocates the array and its entries). */
static int hlx_env_set(char ***envp, size_t *np, const char *entry)
{
    size_t namelen = strcspn(entry, "=");
    char  *dup     = strdup(entry);
    char **grown;

    if (dup == NULL)
        return -1;
    for (size_t i = 0; i < *np; i++) {
        if (!strncmp((*envp)[i], entry, namelen) && (*envp)[i][namelen] == '=') {
            free((*envp)[i]);
            (*envp)[i] = dup;
            return 0;
        }
    }
    grown = realloc(*envp, (*np + 2) * sizeof(char *));
    if (grown == NULL) {
        free(dup);
        return -1;
    }
    grown[(*np)++] = dup;
    grown[*np]     = NULL;
    *envp          = grown;
    return 0;
}

static char **hlx_job_child_env(hlx_job_t *job, int rank)
{
    char   **env = calloc(1, sizeof(char *));
    size_t   n   = 0;
    char     buf[64];
    pmix_proc_t proc;
    pmix_status_t rc;
    int      ok = env != NULL;

    for (char **e = environ; ok && e && *e; e++)
        if (hlx_env_keep(*e))
            ok = hlx_env_set(&env, &n, *e) == 0;
    if (ok && job->topo_env[0] != '\0')
        ok = hlx_env_set(&env, &n, job->topo_env) == 0;
    for (size_t i = 0; ok && i < job->opts->nenvset; i++)
        ok = hlx_env_set(&env, &n, job->opts->envset[i]) == 0;
    ok = ok && hlx_env_set(&env, &n, "HELIXRUN=1") == 0;
    snprintf(buf, sizeof(buf), "HELIX_RANK=%d", rank);
    ok = ok && hlx_env_set(&env, &n, buf) == 0;
    snprintf(buf, sizeof(buf), "HELIX_SIZE=%d", job->opts->nprocs);
    ok = ok && hlx_env_set(&env, &n, buf) == 0;
    if (!ok) {
        hlx_env_free(env);
        return NULL;
    }
    PMIX_LOAD_PROCID(&proc, job->nspace, (pmix_rank_t)rank);
    rc = PMIx_server_setup_fork(&proc, &env);
    if (rc != PMIX_SUCCESS) {
        hlx_job_msg(job, "PMIx_server_setup_fork for rank %d failed: %s", rank,
                    PMIx_Error_string(rc));
        hlx_env_free(env);
        return NULL;
    }
    /* The server's port, from the URI it gives its clients ("...;tcp4://127.0.0.1:P"). */
    for (char **e = env; job->guard.port == 0 && *e; e++) {
        const char *t = strstr(*e, "://");
        if (strncmp(*e, "PMIX_SERVER_URI", 15) == 0 && t != NULL && strrchr(t, ':') != NULL)
            hlx_guard_init(&job->guard, atoi(strrchr(t, ':') + 1));
    }
    return env;
}

/* Child side of fork: only async-signal-safe calls until execve (the PMIx progress
 * thread may hold locks at fork time). */
static void hlx_child_exec(hlx_job_t *job, char **env, int devnull, int out_w, int err_w,
                           pid_t parent)
{
    static const char msg1[] = "helixrun: cannot execute ";
    sigset_t          none;
    int               e;

    setpgid(0, 0);
    /* Die with helixrun even if it is SIGKILLed and never gets to kill the job. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(HLX_LAUNCH_EXIT_FAIL);
    if (dup2(devnull, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
        _exit(HLX_LAUNCH_EXIT_FAIL);
    /* Leave no launcher descriptor (PMIx listener, other ranks' pipes) in the rank. */
    syscall(SYS_close_range, 3u, ~0u, 0u);
    /* Default dispositions for every signal that ends a job: an ignored SIGHUP or SIGINT
     * inherited from nohup or a shell's background job would otherwise be kept across
     * execve and the rank would outlive the signal meant to end it. */
    {
        static const int sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM,
                                    SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ };
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = SIG_DFL;
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
            sigaction(sigs[i], &sa, NULL);
    }
    /* An empty mask, whatever helixrun was started with: the signals it blocks for its
     * signalfd would otherwise stay blocked in the rank. */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(job->opts->path, job->opts->argv, env);
    e = errno;
    if (write(2, msg1, sizeof(msg1) - 1) < 0 ||
        write(2, job->opts->path, strlen(job->opts->path)) < 0 ||
        write(2, ": ", 2) < 0 || write(2, strerror(e), strlen(strerror(e))) < 0 ||
        write(2, "\n", 1) < 0) {
    }
    _exit(HLX_LAUNCH_EXIT_NOTFOUND);
}

/* The reason a launch step failed, from errno, with a hint for the usual limit. */
static void hlx_job_why_errno(char *why, size_t size, const char *what, int err)
{
    struct rlimit rl;

    if ((err == EMFILE || err == ENFILE) && getrlimit(RLIMIT_NOFILE, &rl) == 0)
        snprintf(why, size, "%s: %s (open-file limit %llu; each rank needs 3 descriptors: "
                 "raise it with ulimit -n)", what, strerror(err),
                 (unsigned long long)rl.rlim_cur);
    else if (err == EAGAIN && !strcmp(what, "fork"))
        snprintf(why, size, "%s: %s (process limit: ulimit -u)", what, strerror(err));
    else
        snprintf(why, size, "%s: %s", what, strerror(err));
}

/* Descriptors this process has open now (/proc/self/fd), -1 when unknown. */
static int hlx_job_open_fds(void)
{
    DIR           *d = opendir("/proc/self/fd");
    struct dirent *e;
    int            n = 0;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

/* Before any rank starts: room for 3 descriptors per rank (its two output pipes and its
 * PMIx connection) beyond those open now (the 4 spares included) and HLX_JOB_FD_SLACK
 * for the spawn's own pipes. A soft open-file limit below that is raised (up to the
 * hard one, with 64 to spare) when the hard one allows; otherwise the job must not start:
 * a PMIx server that runs out of descriptors while its clients connect can hang (with
 * ulimit -n 48, 11 ranks hung where 8 ran and 10 were refused at a spawn). Returns the
 * first rank that does not fit, or -1 when every rank fits or the count is unknown. */
#define HLX_JOB_FD_SLACK 2
static int hlx_job_fd_room(int nprocs)
{
    struct rlimit rl;
    const int     open_now = hlx_job_open_fds();
    rlim_t        need;

    if (open_now < 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return -1;
    need = (rlim_t)open_now + HLX_JOB_FD_SLACK + 3 * (rlim_t)nprocs;
    if (need <= rl.rlim_cur)
        return -1;
    if (rl.rlim_max == RLIM_INFINITY || need <= rl.rlim_max) {
        struct rlimit up = rl;
        up.rlim_cur = rl.rlim_max == RLIM_INFINITY || need + 64 <= rl.rlim_max ? need + 64
                                                                                : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            return -1;
    }
    return rl.rlim_cur > (rlim_t)open_now + HLX_JOB_FD_SLACK
               ? (int)((rl.rlim_cur - (rlim_t)open_now - HLX_JOB_FD_SLACK) / 3)
               : 0;
}

/* ---- The keeper: ends the ranks' process groups when helixrun dies unannounced ----
 *
 * PR_SET_PDEATHSIG reaches only a rank's own process: behind a wrapper (sh -c 'prog;
 * true') the wrapper dies with a SIGKILLed helixrun and prog runs on, reparented to init,
 * and nothing of helixrun runs to end it. So helixrun forks a small keeper first (before
 * the PMIx server starts threads), in a process group of its own so that signals to
 * helixrun's group (a terminal, timeout(1)) leave it alone. helixrun sends it each rank's
 * pid (= its process group) with a pidfd of the rank and, on every orderly exit, a 0. If
 * the socket ends without the 0, helixrun is gone: the keeper sends the groups SIGTERM,
 * SIGKILL after HLX_JOB_LEFTOVER_S, removes the job directory and exits.
 *
 * A group's number is free again once its last member is gone, and a new process group
 * may then carry it: signalled by number, that group would be ended in the job's place.
 * The pidfd, opened by helixrun before it reaps the rank, names the rank's own group
 * whatever becomes of the number (pidfd_send_signal with PIDFD_SIGNAL_PROCESS_GROUP,
 * Linux 6.9); it fails with ESRCH once that group is empty. Where the kernel lacks either,
 * the keeper signals by number and forgets emptied groups every HLX_KEEPER_PRUNE_MS. */

/* How often the keeper forgets groups that have emptied. */
#define HLX_KEEPER_PRUNE_MS 1000

#ifndef PIDFD_SIGNAL_PROCESS_GROUP
#define PIDFD_SIGNAL_PROCESS_GROUP (1u << 2)
#endif

/* A rank's process group as the keeper knows it. */
typedef struct hlx_keeper_group {
    pid_t pgid;
    int   pidfd; /* of the rank, -1: none (signalled by number) */
} hlx_keeper_group_t;

/* Sends sig (0: a probe) to the rank's own group. Returns 0 when the group has a member
 * (one that refuses the signal counts: it is there), -1 when the group is gone. */
static int hlx_keeper_signal(const hlx_keeper_group_t *g, int sig)
{
#ifdef SYS_pidfd_send_signal
    if (g->pidfd >= 0) {
        if (syscall(SYS_pidfd_send_signal, g->pidfd, sig, NULL,
                    PIDFD_SIGNAL_PROCESS_GROUP) == 0 || errno == EPERM)
            return 0;
        if (errno != EINVAL && errno != ENOSYS) /* EINVAL: a kernel without the flag */
            return -1;
    }
#endif
    /* A zombie member counts: the number stays taken while it waits. */
    return kill(-g->pgid, sig) == 0 || errno == EPERM ? 0 : -1;
}

/* Keeps the groups that still have a member; closes the pidfds of the others. */
static int hlx_keeper_prune(hlx_keeper_group_t *groups, int n)
{
    int k = 0;

    for (int i = 0; i < n; i++) {
        if (hlx_keeper_signal(&groups[i], 0) == 0)
            groups[k++] = groups[i];
        else if (groups[i].pidfd >= 0)
            close(groups[i].pidfd);
    }
    return k;
}

/* Whether a process of the groups still runs: zombies do not count (with helixrun gone
 * they wait for init, which may reap late or never in a container). Only a wait: the
 * groups were pruned just before, so a number here is still the job's group. */
static int hlx_keeper_running(const hlx_keeper_group_t *groups, int n)
{
    DIR           *d = opendir("/proc");
    struct dirent *de;
    int            found = 0;

    if (d == NULL)
        return 0;
    while (!found && (de = readdir(d)) != NULL) {
        char       *end;
        long        pid = strtol(de->d_name, &end, 10);
        hlx_pstat_t ps;

        if (*end || pid <= 0 || hlx_pstat_read((pid_t)pid, &ps) != 0 || ps.state == 'Z' ||
            ps.state == 'X')
            continue;
        for (int i = 0; i < n && !found; i++)
            found = ps.pgrp == groups[i].pgid;
    }
    closedir(d);
    return found;
}

/* One message from helixrun: a pid, with the rank's pidfd when helixrun could open one.
 * Returns 1 with *pid and *pidfd set, 0 at the end of the socket, -1 to try again. */
static int hlx_keeper_recv(int fd, pid_t *pid, int *pidfd)
{
    union {
        char           buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec    iov = { .iov_base = pid, .iov_len = sizeof(*pid) };
    struct msghdr   msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                            .msg_controllen = sizeof(ctl.buf) };
    struct cmsghdr *c;
    ssize_t         got = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);

    *pidfd = -1;
    if (got < 0)
        return errno == EINTR || errno == EAGAIN ? -1 : 0;
    for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(pidfd, CMSG_DATA(c), sizeof(int));
    if (got != (ssize_t)sizeof(*pid)) {
        if (*pidfd >= 0)
            close(*pidfd);
        return 0; /* the end of the socket (or garbage): helixrun is gone */
    }
    return 1;
}

static void hlx_keeper_main(int rfd, const char *tmpdir) __attribute__((noreturn));
static void hlx_keeper_main(int rfd, const char *tmpdir)
{
    static const int   quiet[] = { SIGINT, SIGQUIT, SIGHUP, SIGTSTP, SIGTTIN, SIGTTOU };
    hlx_keeper_group_t groups[HLX_LAUNCH_MAX_NPROCS];
    int                n = 0, devnull;
    struct sigaction   sa;
    sigset_t           none;
    double             until;

    setpgid(0, 0);
    prctl(PR_SET_NAME, "helixrun-keeper");
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
        sigaction(quiet[i], &sa, NULL);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGTERM, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Holds none of helixrun's descriptors: a reader of helixrun's output must see its end
     * when helixrun ends. */
    devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    if (dup2(rfd, 3) != 3)
        _exit(1);
    syscall(SYS_close_range, 4u, ~0u, 0u);
    rfd = 3;
    for (;;) {
        struct pollfd p = { .fd = rfd, .events = POLLIN };
        pid_t         pid;
        int           pidfd, got;
        int           rc = poll(&p, 1, HLX_KEEPER_PRUNE_MS);

        if (rc == 0) {
            n = hlx_keeper_prune(groups, n);
            continue;
        }
        if (rc < 0 && errno == EINTR)
            continue;
        got = hlx_keeper_recv(rfd, &pid, &pidfd);
        if (got < 0)
            continue;
        if (got == 0)
            break; /* the end of the socket without a 0: helixrun is gone */
        if (pid == 0)
            _exit(0);
        if (n < HLX_LAUNCH_MAX_NPROCS)
            groups[n++] = (hlx_keeper_group_t){ .pgid = pid, .pidfd = pidfd };
        else if (pidfd >= 0)
            close(pidfd);
    }
    n = hlx_keeper_prune(groups, n);
    for (int i = 0; i < n; i++) {
        hlx_keeper_signal(&groups[i], SIGTERM);
        hlx_keeper_signal(&groups[i], SIGCONT);
    }
    until = hlx_now_s() + HLX_JOB_LEFTOVER_S;
    while (hlx_keeper_running(groups, n) && hlx_now_s() < until)
        usleep(10000);
    for (int i = 0; i < n; i++)
        hlx_keeper_signal(&groups[i], SIGKILL);
    if (tmpdir[0])
        hlx_rmtree(tmpdir);
    _exit(0);
}

/* Starts the keeper; without one (fork failed) the job runs as before. A socket rather
 * than a pipe: it carries the ranks' pidfds. */
static void hlx_keeper_start(hlx_job_t *job)
{
    int   p[2];
    pid_t pid;

    job->keeper_fd = -1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0)
        return;
    pid = fork();
    if (pid == 0) {
        close(p[1]);
        hlx_keeper_main(p[0], job->tmpdir);
    }
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return;
    }
    job->keeper_pid = pid;
    job->keeper_fd  = p[1];
}

/* Tells the keeper of a rank just forked: its pid, and a pidfd of it opened now, while the
 * rank cannot have been reaped yet (so the pidfd is surely the rank's). */
static void hlx_keeper_add(hlx_job_t *job, pid_t pid)
{
    union {
        char           buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec  iov = { .iov_base = &pid, .iov_len = sizeof(pid) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    int           pidfd = -1;

    if (job->keeper_fd < 0)
        return;
#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    if (pidfd >= 0) {
        struct cmsghdr *c;
        memset(&ctl, 0, sizeof(ctl));
        msg.msg_control    = ctl.buf;
        msg.msg_controllen = sizeof(ctl.buf);
        c                  = CMSG_FIRSTHDR(&msg);
        c->cmsg_level      = SOL_SOCKET;
        c->cmsg_type       = SCM_RIGHTS;
        c->cmsg_len        = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
    }
    if (sendmsg(job->keeper_fd, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof(pid)) {
        /* the keeper is gone; the job runs on without it */
    }
    if (pidfd >= 0)
        close(pidfd);
}

/* The orderly end: the keeper is told (a 0) and waited for, at most 1 s. */
static void hlx_keeper_stop(hlx_job_t *job)
{
    const pid_t zero = 0;
    double      until;

    if (job->keeper_fd < 0)
        return;
    if (send(job->keeper_fd, &zero, sizeof(zero), MSG_NOSIGNAL) != sizeof(zero)) {
    }
    close(job->keeper_fd);
    job->keeper_fd = -1;
    until          = hlx_now_s() + 1.0;
    while (job->keeper_pid > 0) {
        pid_t got = waitpid(job->keeper_pid, NULL, WNOHANG);
        if (got != 0) /* reaped, or already reaped elsewhere */
            break;
        if (hlx_now_s() >= until) {
            kill(job->keeper_pid, SIGKILL);
            waitpid(job->keeper_pid, NULL, 0);
            break;
        }
        usleep(2000);
    }
    job->keeper_pid = 0;
}

/* Starts one rank. On failure returns -1 with the reason in why. */
static int hlx_job_spawn(hlx_job_t *job, int rank, int devnull, char *why, size_t whysize)
{
    hlx_rank_t      *r = &job->ranks[rank];
    pmix_proc_t      proc;
    pmix_status_t    rc;
    hlx_pmix_wait_t *w;
    char           **env;
    int              out[2], err[2], e;
    pid_t            pid, parent = getpid();

    PMIX_LOAD_PROCID(&proc, job->nspace, (pmix_rank_t)rank);
    w = hlx_pmix_wait_new();
    if (w == NULL) {
        snprintf(why, whysize, "out of memory");
        return -1;
    }
    rc = PMIx_server_register_client(&proc, getuid(), getgid(), r, hlx_pmix_op_done, w);
    rc = hlx_pmix_wait_end(w, rc);
    if (rc != PMIX_SUCCESS) {
        snprintf(why, whysize, "PMIx_server_register_client: %s", PMIx_Error_string(rc));
        return -1;
    }
    env = hlx_job_child_env(job, rank);
    if (env == NULL) {
        snprintf(why, whysize, "cannot build its environment (PMIx_server_setup_fork or "
                 "out of memory)");
        return -1;
    }
    if (pipe2(out, O_CLOEXEC) < 0) {
        hlx_job_why_errno(why, whysize, "pipe for its stdout", errno);
        hlx_env_free(env);
        return -1;
    }
    if (pipe2(err, O_CLOEXEC) < 0) {
        hlx_job_why_errno(why, whysize, "pipe for its stderr", errno);
        close(out[0]);
        close(out[1]);
        hlx_env_free(env);
        return -1;
    }
    pid = fork();
    e   = errno;
    if (pid == 0)
        hlx_child_exec(job, env, devnull, out[1], err[1], parent);
    hlx_env_free(env);
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        hlx_job_why_errno(why, whysize, "fork", e);
        close(out[0]);
        close(err[0]);
        return -1;
    }
    /* Also from the parent, so a kill(-pid) right after fork already finds the group. */
    setpgid(pid, pid);
    hlx_keeper_add(job, pid);
    r->pid     = pid;
    r->started = hlx_now_s();
    r->running = 1;
    job->nrunning++;
    hlx_iof_open(&r->out, out[0], rank, 0, NULL);
    hlx_iof_open(&r->err, err[0], rank, 1, job->dup.slot != NULL ? &job->dup : NULL);
    hlx_debug(HLX_SUB_LAUNCH, "rank %d started as pid %d", rank, (int)pid);
    return 0;
}

/* ---- Leftovers: processes of the job outliving their rank, stale directories ---- */

/* Marks the ended ranks whose process group has emptied: from then on its number may name
 * an unrelated group, which the sweep of leftovers must not take for the rank's. Called
 * after each reaping (helixrun, the subreaper, reaps the members orphaned in a group). */
static void hlx_job_probe_groups(hlx_job_t *job)
{
    for (int i = 0; i < job->opts->nprocs; i++) {
        hlx_rank_t *r = &job->ranks[i];
        if (r->pid > 0 && !r->running && !r->group_gone && kill(-r->pid, 0) < 0 &&
            errno == ESRCH)
            r->group_gone = 1;
    }
}

/* Signals every process left over from the job: in a rank's process group after the rank
 * ended (unless that group was seen empty since: its number may be another's), or
 * reparented to helixrun (it is the job's child subreaper, so a daemonized grandchild
 * lands here). Returns how many; lists "P (comm)" in buf. */
static int hlx_job_sweep(hlx_job_t *job, int sig, char *buf, size_t size)
{
    DIR           *d = opendir("/proc");
    struct dirent *de;
    pid_t          self = getpid();
    size_t         used = 0;
    int            n    = 0;

    if (buf && size)
        buf[0] = '\0';
    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        char       *end;
        long        pid = strtol(de->d_name, &end, 10);
        hlx_pstat_t ps;
        int         ours = 0;

        /* one already exiting (a SIGKILL of its group in flight) is not left running */
        if (*end || pid <= 0 || pid == self || hlx_pstat_read((pid_t)pid, &ps) != 0 ||
            ps.state == 'Z' || ps.state == 'X' || (ps.flags & HLX_PF_EXITING) != 0)
            continue;
        for (int i = 0; i < job->opts->nprocs && !ours; i++) {
            const hlx_rank_t *r = &job->ranks[i];
            if (r->pid <= 0 || r->running || r->group_gone)
                continue;
            ours = ps.pgrp == r->pid;
        }
        if (ps.ppid == self && (pid_t)pid != job->keeper_pid) {
            ours = 1;
            for (int i = 0; i < job->opts->nprocs; i++)
                if (job->ranks[i].running && job->ranks[i].pid == (pid_t)pid)
                    ours = 0;
        }
        if (!ours)
            continue;
        kill((pid_t)pid, sig);
        if (sig == SIGTERM)
            kill((pid_t)pid, SIGCONT);
        if (buf && used < size)
            used += (size_t)snprintf(buf + used, size - used, "%s%ld (%s)", n ? ", " : "",
                                     pid, ps.comm);
        n++;
    }
    closedir(d);
    if (buf && used >= size && size > 4)
        strcpy(buf + size - 4, "...");
    return n;
}

/* Reaps what helixrun adopted as the job's subreaper; the keeper too if it was killed. */
static void hlx_job_reap_others(hlx_job_t *job)
{
    pid_t pid;

    while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
        if (pid == job->keeper_pid)
            job->keeper_pid = 0;
    hlx_job_probe_groups(job);
}

/* After the last rank: SIGTERM what the ranks left running, reap it (helixrun is its
 * subreaper), and SIGKILL what is still there HLX_JOB_LEFTOVER_S later. */
static void hlx_job_end_leftovers(hlx_job_t *job)
{
    char   list[512];
    double until;
    int    n = hlx_job_sweep(job, SIGTERM, list, sizeof(list));

    if (n == 0)
        return;
    hlx_job_msg(job, "%d process(es) left running by the ranks after they ended: %s; sent "
                "SIGTERM", n, list);
    until = hlx_now_s() + HLX_JOB_LEFTOVER_S;
    while (hlx_now_s() < until) {
        hlx_job_reap_others(job);
        if (hlx_job_sweep(job, 0, NULL, 0) == 0)
            return;
        usleep(10000);
    }
    n = hlx_job_sweep(job, SIGKILL, list, sizeof(list));
    if (n > 0)
        hlx_job_msg(job, "still running %g s after SIGTERM, sent SIGKILL: %s",
                    HLX_JOB_LEFTOVER_S, list);
    until = hlx_now_s() + 1.0;
    while (hlx_now_s() < until && hlx_job_sweep(job, 0, NULL, 0) > 0) {
        hlx_job_reap_others(job);
        usleep(10000);
    }
}

/* The private directory records its owner, "<pid> <start time>", so a later helixrun can
 * tell a directory whose owner is gone (SIGKILLed: it never ran its cleanup). */
static void hlx_job_write_owner(const hlx_job_t *job)
{
    char        path[PATH_MAX + 16], line[64];
    hlx_pstat_t ps;
    int         fd, n;

    if (hlx_pstat_read(getpid(), &ps) != 0)
        return;
    snprintf(path, sizeof(path), "%s/" HLX_JOB_OWNER_FILE, job->tmpdir);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    n = snprintf(line, sizeof(line), "%d %llu\n", (int)getpid(), ps.start);
    if (write(fd, line, (size_t)n) != n)
        hlx_warn("cannot write %s", path);
    close(fd);
}

/* Removes helixrun.* directories of this user under root whose recorded owner is gone.
 * Directories without an owner file (an older helixrun, or one being made right now)
 * are left alone. */
static void hlx_job_clean_stale(const char *root)
{
    DIR           *d = opendir(root);
    struct dirent *de;

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        char               dir[PATH_MAX], path[PATH_MAX + 16], line[64];
        struct stat        st;
        int                fd, pid;
        ssize_t            n;
        unsigned long long start;
        hlx_pstat_t        ps;

        if (strncmp(de->d_name, "helixrun.", 9) != 0)
            continue;
        if (snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name) >= (int)sizeof(dir) ||
            lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
            continue;
        snprintf(path, sizeof(path), "%s/" HLX_JOB_OWNER_FILE, dir);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            continue;
        n = read(fd, line, sizeof(line) - 1);
        close(fd);
        if (n <= 0)
            continue;
        line[n] = '\0';
        if (sscanf(line, "%d %llu", &pid, &start) != 2 || pid <= 0)
            continue;
        if (hlx_pstat_read((pid_t)pid, &ps) == 0 && ps.start == start)
            continue; /* its owner still runs */
        hlx_info(HLX_SUB_LAUNCH, "removing %s: its helixrun (pid %d) is gone", dir, pid);
        hlx_rmtree(dir);
    }
    closedir(d);
}

/* ---- Supervision ---- */

/* A rank that exits 0 without joining PMIx while others have joined leaves them waiting
 * in their first collective forever; one that joined but exits without PMIx_Finalize
 * broke off mid-protocol. Both end the job, as mpirun does. */
static void hlx_job_check_contract(hlx_job_t *job)
{
    int  nconn = 0, lost = -1;
    char list[512];

    pthread_mutex_lock(&job->lock);
    for (int i = 0; i < job->opts->nprocs; i++) {
        hlx_rank_t *r = &job->ranks[i];
        if (r->running && r->connected && !r->finalized)
            nconn++;
        if (!r->running && r->pid > 0 && !r->connected && lost < 0 &&
            WIFEXITED(r->wstatus) && WEXITSTATUS(r->wstatus) == 0)
            lost = i;
    }
    pthread_mutex_unlock(&job->lock);
    if (lost >= 0 && nconn > 0) {
        size_t used = 0;
        int    k    = 0;
        list[0]     = '\0';
        pthread_mutex_lock(&job->lock);
        for (int i = 0; i < job->opts->nprocs && used < sizeof(list); i++) {
            hlx_rank_t *r = &job->ranks[i];
            if (r->running && r->connected && !r->finalized)
                used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%d",
                                         k++ ? "," : "", i);
        }
        pthread_mutex_unlock(&job->lock);
        hlx_job_fail(job, HLX_LAUNCH_EXIT_FAIL,
                     "rank %d (pid %d) exited with status 0 without ever connecting to PMIx, "
                     "while rank(s) %s are PMIx clients that would wait for it", lost,
                     (int)job->ranks[lost].pid, list);
    }
}

/* Names the job's first failure among the candidates collected while settling.
 *
 * Why settle at all: when a rank dies, libpmix sees its connection close and at once
 * fails the fence its peers wait in (PMIX_ERR_PARTIAL_SUCCESS), and a runtime that sees a
 * peer vanish calls PMIx_Abort; on a loaded machine those peers can exit or abort before
 * the kernel has finished the first rank (its memory is torn down before its parent is
 * told), so "first reaped" is not "first failed". The rule: a rank seen exiting when a
 * PMIx_Abort arrived died before it; then a death by signal, then an exit status no other
 * candidate shares (peers failed by the same collective fail alike), then the order of
 * observation; a held PMIx_Abort only when no rank death is among the candidates. */
static int hlx_rank_aborted(hlx_job_t *job, const hlx_rank_t *r)
{
    int a;

    pthread_mutex_lock(&job->lock);
    a = r->aborted;
    pthread_mutex_unlock(&job->lock);
    return a;
}

/* Marks the running ranks (not those in PMIx_Abort) that have begun to exit. */
static int hlx_job_mark_dying(hlx_job_t *job)
{
    int n = 0;

    for (int i = 0; i < job->opts->nprocs; i++) {
        hlx_rank_t *r = &job->ranks[i];
        if (r->running && !hlx_rank_aborted(job, r) && hlx_pid_exiting(r->pid)) {
            r->dying = 1;
            n++;
        }
    }
    return n;
}

/* Whether rank i is a failure candidate listed beside best, with cause (NULL: any). */
static int hlx_job_other(const hlx_job_t *job, const hlx_rank_t *best, int i, const char *cause)
{
    const hlx_rank_t *r = &job->ranks[i];

    return r->cand_seq != 0 && r != best && (cause == NULL || !strcmp(r->cand_cause, cause));
}

/* Appends the failure candidates other than best to buf (holding used bytes), one entry
 * per cause in rank order: "rank 1 (pid 784) exited with status 2" alone, "ranks 1-3,5
 * exited with status 2" for several (a 256-rank job stays one readable line). */
static void hlx_job_others(const hlx_job_t *job, const hlx_rank_t *best, char *buf,
                           size_t size, size_t used)
{
    const int n = job->opts->nprocs;
    char      done[HLX_LAUNCH_MAX_NPROCS] = { 0 };

    for (int i = 0; i < n && used < size; i++) {
        const hlx_rank_t *r = &job->ranks[i];
        int               count = 0, listed = 0;
        if (done[i] || !hlx_job_other(job, best, i, NULL))
            continue;
        for (int k = i; k < n; k++)
            count += hlx_job_other(job, best, k, r->cand_cause);
        if (count == 1) {
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "; " : "",
                                     r->cand_desc);
            continue;
        }
        used += (size_t)snprintf(buf + used, size - used, "%sranks ", used ? "; " : "");
        for (int k = i; k < n && used < size; k++) {
            int e = k;
            if (!hlx_job_other(job, best, k, r->cand_cause))
                continue;
            while (e + 1 < n && hlx_job_other(job, best, e + 1, r->cand_cause))
                e++;
            for (int j = k; j <= e; j++)
                done[j] = 1;
            used += (size_t)(e == k ? snprintf(buf + used, size - used, "%s%d",
                                               listed++ ? "," : "", k)
                                    : snprintf(buf + used, size - used, "%s%d-%d",
                                               listed++ ? "," : "", k, e));
            k = e;
        }
        if (used < size) /* "was killed by ..." for one rank, "were killed" for several */
            used += (size_t)snprintf(buf + used, size - used, " %s%s",
                                     r->cand_tier == 0 ? "were " : "", r->cand_cause);
    }
}

static void hlx_job_settle(hlx_job_t *job)
{
    hlx_rank_t *best = NULL;
    int         best_tier = 0;
    char        others[1536];
    size_t      used = 0;

    job->settle_until = 0;
    for (int i = 0; i < job->opts->nprocs; i++) {
        hlx_rank_t *r    = &job->ranks[i];
        int         tier = r->cand_tier;
        if (r->cand_seq == 0)
            continue;
        if (tier == 1) { /* an exit status: shared with another candidate? */
            for (int k = 0; k < job->opts->nprocs; k++)
                if (k != i && job->ranks[k].cand_seq && job->ranks[k].cand_tier == 1 &&
                    job->ranks[k].cand_code == r->cand_code)
                    tier = 2;
        }
        if (r->dying)
            tier -= 10;
        if (best == NULL || tier < best_tier ||
            (tier == best_tier && r->cand_seq < best->cand_seq)) {
            best      = r;
            best_tier = tier;
        }
    }
    others[0] = '\0';
    /* The held abort, unless it came from the rank named (its exit and its abort are
     * one failure). */
    if (best != NULL && job->abort_cand && !hlx_rank_aborted(job, best))
        used += (size_t)snprintf(others, sizeof(others), "%s", job->abort_desc);
    hlx_job_others(job, best, others, sizeof(others), used);
    if (best == NULL && !job->abort_cand)
        return;
    if (best != NULL) {
        job->notify_rank = best->rank;
        snprintf(job->notify_text, sizeof(job->notify_text), "rank %d (host %s, pid %d) lost: %s",
                 best->rank, job->host, (int)best->pid, best->cand_cause);
    }
    if (best == NULL)
        hlx_job_fail(job, job->abort_code, "%s", job->abort_desc);
    else if (others[0])
        hlx_job_fail(job, best->cand_code, "%s (failed about the same time: %s)",
                     best->cand_desc, others);
    else
        hlx_job_fail(job, best->cand_code, "%s", best->cand_desc);
}

/* A rank ended badly. Before the job's first failure is named, collect it as a candidate
 * for settle_s; after, it is a consequence and only the first failure counts. */
static void hlx_job_candidate(hlx_job_t *job, hlx_rank_t *r, int code, int tier)
{
    if (job->failed || job->killing)
        return;
    r->cand_seq  = ++job->ncand;
    r->cand_code = code;
    r->cand_tier = tier;
    if (job->settle_until == 0)
        job->settle_until = hlx_now_s() + job->opts->settle_s;
    if ((job->opts->settle_s <= 0 && !job->abort_cand) || job->nrunning == 0)
        hlx_job_settle(job);
}

static void hlx_job_reaped(hlx_job_t *job, hlx_rank_t *r, int wstatus)
{
    int connected, finalized;

    r->running = 0;
    r->wstatus = wstatus;
    job->nrunning--;
    pthread_mutex_lock(&job->lock);
    connected = r->connected;
    finalized = r->finalized;
    pthread_mutex_unlock(&job->lock);

    if (hlx_rank_aborted(job, r) && !WIFSIGNALED(wstatus)) {
        /* Its PMIx_Abort is the failure; the exit that follows it is not another. */
        hlx_debug(HLX_SUB_LAUNCH, "rank %d (pid %d) exited after its PMIx_Abort", r->rank,
                  (int)r->pid);
        if (job->nrunning == 0 && job->settle_until > 0)
            hlx_job_settle(job);
    } else if (WIFSIGNALED(wstatus)) {
        int sig = WTERMSIG(wstatus);
        snprintf(r->cand_cause, sizeof(r->cand_cause), "killed by signal %d (SIG%s)", sig,
                 hlx_signame(sig));
        snprintf(r->cand_desc, sizeof(r->cand_desc), "rank %d (pid %d) was %s", r->rank,
                 (int)r->pid, r->cand_cause);
        hlx_job_candidate(job, r, HLX_LAUNCH_EXIT_SIGBASE + sig, 0);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0) {
        snprintf(r->cand_cause, sizeof(r->cand_cause), "exited with status %d",
                 WEXITSTATUS(wstatus));
        snprintf(r->cand_desc, sizeof(r->cand_desc), "rank %d (pid %d) %s", r->rank,
                 (int)r->pid, r->cand_cause);
        hlx_job_candidate(job, r, WEXITSTATUS(wstatus), 1);
    } else if (connected && !finalized) {
        hlx_job_fail(job, HLX_LAUNCH_EXIT_FAIL,
                     "rank %d (pid %d) exited with status 0 without calling PMIx_Finalize",
                     r->rank, (int)r->pid);
    } else {
        hlx_debug(HLX_SUB_LAUNCH, "rank %d (pid %d) exited with status 0", r->rank,
                  (int)r->pid);
        hlx_job_check_contract(job);
    }
}

static void hlx_job_reap(hlx_job_t *job)
{
    for (;;) {
        siginfo_t   si;
        hlx_rank_t *r = NULL;
        int         wstatus;
        pid_t       pid;

        /* Looked at before it is reaped: a rank that is still a zombie keeps its pid, and
         * with it the number of its process group, from being reused. */
        memset(&si, 0, sizeof(si));
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid <= 0)
            break;
        for (int i = 0; i < job->opts->nprocs && r == NULL; i++)
            if (job->ranks[i].running && job->ranks[i].pid == si.si_pid)
                r = &job->ranks[i];
        if (r != NULL) {
            /* Whatever the rank left running in its process group (background children)
             * goes with it. */
            kill(-r->pid, SIGTERM);
            kill(-r->pid, SIGCONT);
        }
        pid = waitpid(si.si_pid, &wstatus, WNOHANG);
        if (pid <= 0)
            break;
        if (pid == job->keeper_pid) { /* killed by someone: the job runs on without it */
            job->keeper_pid = 0;
            continue;
        }
        if (r != NULL) {
            hlx_job_probe_groups(job);
            hlx_debug(HLX_SUB_LAUNCH, "reaped rank %d (pid %d) at %.6f", r->rank, (int)pid,
                      hlx_now_s());
            hlx_job_reaped(job, r, wstatus);
        }
    }
    hlx_job_probe_groups(job);
}

static void hlx_job_on_signal(hlx_job_t *job)
{
    struct signalfd_siginfo si;

    while (read(job->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            hlx_job_reap(job);
            continue;
        }
        if (job->killing) {
            /* Asked again while the job is already going down: do not wait the grace
             * (after SIGKILL there is none left, and the give-up time stays). */
            if (!job->escalated && !job->cut_sig) {
                job->kill_at = hlx_now_s();
                job->cut_sig = sig;
            }
            continue;
        }
        /* SIGINT and SIGTERM are passed on as the ranks would have got them from a
         * terminal or a scheduler. SIGHUP and SIGQUIT become SIGTERM: libraries in the
         * ranks catch SIGHUP (UCX) and SIGQUIT dumps core, and either way the job must
         * end. The kill deadline still applies so a rank that ignores it cannot keep the
         * job alive. */
        int fwd = (sig == SIGHUP || sig == SIGQUIT) ? SIGTERM : sig;
        int started = 0;
        for (int i = 0; i < job->opts->nprocs; i++)
            started |= job->ranks[i].pid > 0;
        if (!job->failed) {
            job->failed    = 1;
            job->exit_code = HLX_LAUNCH_EXIT_SIGBASE + sig;
            if (!started)
                hlx_job_msg(job, "received SIG%s before any rank started; not starting the job",
                            hlx_signame(sig));
            else if (fwd == sig)
                hlx_job_msg(job, "received SIG%s; forwarding it to the job (SIGKILL after "
                            "%g s)", hlx_signame(sig), job->opts->grace_s);
            else
                hlx_job_msg(job, "received SIG%s; ending the job with SIG%s (SIGKILL after "
                            "%g s)", hlx_signame(sig), hlx_signame(fwd), job->opts->grace_s);
        }
        hlx_job_server_down(job);
        job->killing    = 1;
        job->kill_sig   = fwd;
        job->kill_start = hlx_now_s();
        job->kill_at    = job->kill_start + job->opts->grace_s;
        hlx_job_signal_all(job, fwd);
        hlx_job_signal_all(job, SIGCONT);
    }
}

static void hlx_job_on_wake(hlx_job_t *job)
{
    char buf[64];
    int  arank, astatus;
    char amsg[1024];

    while (read(job->wake_fd[0], buf, sizeof(buf)) > 0) {
    }
    pthread_mutex_lock(&job->lock);
    arank   = job->abort_rank;
    astatus = job->abort_status;
    snprintf(amsg, sizeof(amsg), "%s", job->abort_msg);
    pthread_mutex_unlock(&job->lock);
    if (arank >= 0 && !job->failed && !job->killing && !job->abort_cand) {
        /* An exit status must be 1..255 to read as failure. */
        int    code = (astatus > 0 && astatus < 256) ? astatus : HLX_LAUNCH_EXIT_FAIL;
        int    ndying;
        double now = hlx_now_s();
        job->abort_code = code;
        snprintf(job->abort_desc, sizeof(job->abort_desc),
                 "rank %d (pid %d) called PMIx_Abort with status %d: %s", arank,
                 (int)job->ranks[arank].pid, astatus, amsg);
        job->notify_rank = arank;
        snprintf(job->notify_text, sizeof(job->notify_text),
                 "rank %d (host %s, pid %d) called PMIx_Abort with status %d: %s", arank,
                 job->host, (int)job->ranks[arank].pid, astatus, amsg);
        /* The abort is held (the aborting ranks stay in PMIx_Abort) while the other
         * failures of the moment are collected: a runtime aborts when it sees a peer
         * vanish, and a rank already exiting died before the abort was made (its
         * sockets closed first, which is how the aborting rank learnt of it). Such
         * ranks are waited for up to HLX_JOB_ABORT_HOLD_S. */
        job->abort_cand = 1;
        ndying          = hlx_job_mark_dying(job);
        job->hold_until = now + HLX_JOB_ABORT_HOLD_S;
        if (job->settle_until == 0 || ndying > 0)
            job->settle_until = ndying > 0 ? job->hold_until : now + job->opts->settle_s;
        hlx_debug(HLX_SUB_LAUNCH, "PMIx_Abort of rank %d held: %d rank(s) exiting", arank,
                  ndying);
    }
    hlx_job_check_contract(job);
}

static void hlx_job_on_deadlines(hlx_job_t *job, double now)
{
    char running[1024], unconnected[1024];

    if (job->settle_until > 0 && job->abort_cand) {
        int waiting = 0;
        /* A rank that began to exit while the abort was held also came first. */
        if (now >= job->settle_until && now < job->hold_until && hlx_job_mark_dying(job))
            job->settle_until = job->hold_until;
        for (int i = 0; i < job->opts->nprocs; i++)
            waiting += job->ranks[i].dying && job->ranks[i].running;
        if (waiting == 0 && job->ncand > 0)
            hlx_job_settle(job);
    }
    if (job->settle_until > 0 && (now >= job->settle_until || job->nrunning == 0))
        hlx_job_settle(job);
    if (job->deadline > 0 && now >= job->deadline && !job->killing) {
        int nrun = hlx_job_list_ranks(job, running, sizeof(running), hlx_rank_is_running);
        int nunc;
        pthread_mutex_lock(&job->lock);
        nunc = hlx_job_list_ranks(job, unconnected, sizeof(unconnected),
                                  hlx_rank_is_unconnected_running);
        pthread_mutex_unlock(&job->lock);
        hlx_job_fail(job, HLX_LAUNCH_EXIT_TIMEOUT,
                     "timeout after %g s; %d rank(s) still running: %s%s%s",
                     job->opts->timeout_s, nrun, running,
                     nunc ? "; never connected to PMIx: " : "", nunc ? unconnected : "");
    }
    if (job->killing && !job->escalated && now >= job->kill_at && job->nrunning > 0) {
        hlx_job_list_ranks(job, running, sizeof(running), hlx_rank_is_running);
        if (job->cut_sig)
            /* The grace was cut short: say how long the ranks really had. */
            hlx_job_msg(job, "rank(s) %s still running %.*f s after SIG%s; helixrun got a "
                        "second signal (SIG%s): sending SIGKILL", running,
                        now - job->kill_start < 1 ? 2 : 1, now - job->kill_start,
                        hlx_signame(job->kill_sig), hlx_signame(job->cut_sig));
        else
            hlx_job_msg(job, "rank(s) %s still running %g s after SIG%s; sending SIGKILL",
                        running, job->opts->grace_s, hlx_signame(job->kill_sig));
        job->escalated = 1;
        hlx_job_signal_all(job, SIGKILL);
    }
    if (job->escalated && job->nrunning > 0 && now >= job->kill_at + HLX_JOB_REAP_S &&
        !job->abandoned) {
        hlx_job_list_ranks(job, running, sizeof(running), hlx_rank_is_running);
        hlx_job_msg(job, "rank(s) %s still not gone %g s after SIGKILL; giving up on them",
                    running, HLX_JOB_REAP_S);
        job->abandoned = 1;
    }
}

static void hlx_job_guard_report(void *arg, const char *msg)
{
    hlx_job_t *job = arg;

    hlx_job_msg(job, "%s", msg);
}

static void hlx_job_guard(hlx_job_t *job, double now)
{
    int pids[HLX_LAUNCH_MAX_NPROCS];

    if (!job->server_up || job->guard.port <= 0 || now < job->guard_next)
        return;
    for (int i = 0; i < job->opts->nprocs; i++)
        pids[i] = (int)job->ranks[i].pid;
    hlx_guard_check(&job->guard, pids, job->opts->nprocs, hlx_job_guard_report, job);
    job->guard_next = hlx_now_s() + HLX_JOB_GUARD_S;
}

static double hlx_min_deadline(double a, double b)
{
    if (a <= 0)
        return b;
    if (b <= 0)
        return a;
    return a < b ? a : b;
}

static void hlx_job_loop(hlx_job_t *job)
{
    int            n      = job->opts->nprocs;
    struct pollfd *pfd    = calloc((size_t)(2 * n + 2), sizeof(*pfd));
    hlx_iof_stream_t **who = calloc((size_t)(2 * n + 2), sizeof(*who));
    double         drain_until = 0;

    if (pfd == NULL || who == NULL) {
        hlx_job_msg(job, "out of memory");
        job->failed    = 1;
        job->exit_code = HLX_LAUNCH_EXIT_FAIL;
        hlx_job_signal_all(job, SIGKILL);
        free(pfd);
        free(who);
        return;
    }
    for (;;) {
        double now = hlx_now_s(), next = 0;
        int    nfd = 0, nstream = 0, timeout_ms, rc;

        hlx_iof_collapse_flush(&job->dup, now);
        hlx_job_on_deadlines(job, now);
        hlx_job_guard(job, now);
        if (job->nrunning == 0 && drain_until == 0) {
            /* A rank's leftover children may hold its pipes open: end them first. */
            hlx_job_end_leftovers(job);
            drain_until = hlx_now_s() + HLX_JOB_DRAIN_S;
        }
        pfd[nfd++] = (struct pollfd){ .fd = job->sig_fd, .events = POLLIN };
        pfd[nfd++] = (struct pollfd){ .fd = job->wake_fd[0], .events = POLLIN };
        for (int i = 0; i < n; i++) {
            hlx_iof_stream_t *s[2] = { &job->ranks[i].out, &job->ranks[i].err };
            for (int k = 0; k < 2; k++) {
                if (s[k]->fd < 0)
                    continue;
                who[nfd]   = s[k];
                pfd[nfd++] = (struct pollfd){ .fd = s[k]->fd, .events = POLLIN };
                nstream++;
            }
        }
        if (job->nrunning == 0 && (nstream == 0 || now >= drain_until))
            break;
        if (job->abandoned)
            break;
        if (!job->killing)
            next = hlx_min_deadline(next, job->deadline);
        if (job->settle_until > 0)
            next = hlx_min_deadline(next, job->settle_until);
        if (job->killing && !job->escalated)
            next = hlx_min_deadline(next, job->kill_at);
        if (job->escalated)
            next = hlx_min_deadline(next, job->kill_at + HLX_JOB_REAP_S);
        if (job->nrunning == 0)
            next = hlx_min_deadline(next, drain_until);
        if (job->server_up && job->guard.port > 0)
            next = hlx_min_deadline(next, job->guard_next);
        next = hlx_min_deadline(next, hlx_iof_collapse_next(&job->dup));
        timeout_ms = next > 0 ? (int)((next - now) * 1000.0) + 1 : -1;
        if (next > 0 && timeout_ms < 0)
            timeout_ms = 0;
        rc = poll(pfd, (nfds_t)nfd, timeout_ms);
        if (rc < 0 && errno != EINTR) {
            hlx_job_msg(job, "poll failed: %s", strerror(errno));
            break;
        }
        if (rc <= 0)
            continue;
        /* Output first, so a rank's last words appear before the message about its end. */
        for (int i = 2; i < nfd; i++)
            if (pfd[i].revents)
                hlx_iof_read(who[i], who[i]->is_err ? stderr : stdout, job->opts->prefix);
        fflush(stdout);
        fflush(stderr);
        if (pfd[0].revents)
            hlx_job_on_signal(job);
        if (pfd[1].revents) {
            if (job->server_up)
                hlx_srv_run_done(job);
            hlx_job_on_wake(job);
        }
    }
    free(pfd);
    free(who);
}

/* ---- Entry ---- */

void hlx_launch_signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGCHLD);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
}

void hlx_launch_block_signals(void)
{
    static const int ends[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
    struct sigaction sa;
    sigset_t         set;

    /* Blocked first: a blocked signal is kept pending even while its action is still
     * SIG_IGN, so none is lost in between. */
    hlx_launch_signal_set(&set);
    sigprocmask(SIG_BLOCK, &set, NULL);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
        sigaction(ends[i], &sa, NULL);
}

/* The job directory could not be made: a --tmpdir (or HELIX_RUN_TMPDIR, TMPDIR) that is
 * missing, not a directory or not writable is bad input, exit 2. */
static void hlx_job_tmpdir_failed(hlx_job_t *job, int err)
{
    const hlx_launch_opts_t *o = job->opts;
    const int bad = o->tmproot_given && (err == ENOENT || err == ENOTDIR || err == EACCES ||
                                         err == EPERM || err == EROFS || err == ELOOP ||
                                         err == ENAMETOOLONG);

    hlx_job_msg(job, "%s '%s': cannot make the job's directory there: %s",
                o->tmproot_from ? o->tmproot_from : "tmpdir", o->tmproot, strerror(err));
    job->exit_code = bad ? HLX_LAUNCH_EXIT_USAGE : HLX_LAUNCH_EXIT_FAIL;
}

int hlx_launch_run(const hlx_launch_opts_t *opts)
{
    hlx_job_t       job;
    pmix_server_module_t module = hlx_srv_module_template;
    pmix_info_t    *sinfo;
    size_t          nsinfo;
    pmix_status_t   rc;
    sigset_t        mask;
    int             devnull = -1;

    memset(&job, 0, sizeof(job));
    job.opts       = opts;
    job.sig_fd     = -1;
    job.keeper_fd  = -1;
    job.wake_fd[0] = job.wake_fd[1] = -1;
    for (int i = 0; i < 4; i++)
        job.spare_fd[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    job.abort_rank = -1;
    job.notify_rank = -1;
    job.exit_code  = HLX_LAUNCH_EXIT_FAIL;
    pthread_mutex_init(&job.lock, NULL);
    if (gethostname(job.host, sizeof(job.host) - 1) != 0)
        strcpy(job.host, "localhost");
    snprintf(job.nspace, sizeof(job.nspace), "helixrun.%d", (int)getpid());

    /* Without the table (out of memory) every line is printed, as with --no-collapse. */
    if (opts->collapse && hlx_iof_collapse_init(&job.dup, stderr, opts->prefix) != 0)
        hlx_iof_collapse_fini(&job.dup);
    job.ranks = calloc((size_t)opts->nprocs, sizeof(*job.ranks));
    if (job.ranks == NULL)
        goto out;
    for (int i = 0; i < opts->nprocs; i++) {
        job.ranks[i].job  = &job;
        job.ranks[i].rank = i;
        job.ranks[i].out.fd = job.ranks[i].err.fd = -1;
    }

    /* main blocked them as its first action; blocked before PMIx starts its progress
     * thread, which inherits the mask, every such signal reaches the signalfd. They stay
     * blocked until helixrun exits: a second signal pending at the end must not kill it
     * before it has removed its directory. */
    hlx_launch_signal_set(&mask);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Orphans of the ranks (a daemonized background child) are reparented here rather
     * than to init, so helixrun can find and end them with the job. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    job.sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (job.sig_fd < 0 || pipe2(job.wake_fd, O_NONBLOCK | O_CLOEXEC) < 0) {
        hlx_job_msg(&job, "cannot set up signal handling: %s", strerror(errno));
        goto out_sig;
    }
    devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) {
        hlx_job_msg(&job, "cannot open /dev/null: %s", strerror(errno));
        goto out_sig;
    }
    /* A signal that came while helixrun started (pending since main blocked it): nothing
     * is started, not even the PMIx server. */
    hlx_job_on_signal(&job);
    if (job.failed)
        goto out_sig;

    /* A private directory per run: a killed server leaves pmix_dstor_* files behind, and
     * runs must not see each other's rendezvous files. */
    hlx_job_clean_stale(opts->tmproot);
    snprintf(job.tmpdir, sizeof(job.tmpdir), "%s/helixrun.XXXXXX", opts->tmproot);
    if (mkdtemp(job.tmpdir) == NULL) {
        hlx_job_tmpdir_failed(&job, errno);
        job.tmpdir[0] = '\0';
        goto out_sig;
    }
    hlx_job_write_owner(&job);
    /* Before PMIx_server_init: the keeper is forked while helixrun has one thread. */
    hlx_keeper_start(&job);
    hlx_srv_job = &job;
    hlx_job_envdefs_apply(opts);
    hlx_job_topology_load(&job);
    nsinfo = job.topo != NULL ? 3 : 2;
    PMIX_INFO_CREATE(sinfo, nsinfo);
    PMIX_INFO_LOAD(&sinfo[0], PMIX_SERVER_TMPDIR, job.tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&sinfo[1], PMIX_SYSTEM_TMPDIR, job.tmpdir, PMIX_STRING);
    /* PMIX_TOPOLOGY, a bare pointer: a PMIX_TOPOLOGY2 value may be copied into the info
     * and freed with it, while the server keeps the pointer it was given */
    if (job.topo != NULL)
        PMIX_INFO_LOAD(&sinfo[2], PMIX_TOPOLOGY, job.topo, PMIX_POINTER);
    rc = PMIx_server_init(&module, sinfo, nsinfo);
    PMIX_INFO_FREE(sinfo, nsinfo);
    if (rc != PMIX_SUCCESS) {
        hlx_job_msg(&job, "PMIx_server_init failed: %s", PMIx_Error_string(rc));
        goto out_tmp;
    }
    job.server_up = 1;
    if (hlx_job_register_nspace(&job) != 0)
        goto out_server;

    {
        const int room = hlx_job_fd_room(opts->nprocs);
        if (room >= 0) {
            char why[384];
            hlx_job_why_errno(why, sizeof(why), "open files", EMFILE);
            hlx_job_fail(&job, HLX_LAUNCH_EXIT_FAIL, "cannot start %d ranks (room for %d): %s",
                         opts->nprocs, room, why);
        }
    }
    for (int i = 0; i < opts->nprocs && !job.failed; i++) {
        char why[384];
        /* A signal that came while helixrun started (pending since main blocked it) ends
         * the job here: the ranks started so far get it, no further rank starts. */
        hlx_job_on_signal(&job);
        if (job.failed)
            break;
        if (hlx_job_spawn(&job, i, devnull, why, sizeof(why)) != 0) {
            hlx_job_fail(&job, HLX_LAUNCH_EXIT_FAIL, "cannot start rank %d: %s", i, why);
            /* short of descriptors: let the PMIx server accept and close what the started
             * ranks still send while they are ended */
            hlx_job_release_spares(&job);
            break;
        }
    }
    if (opts->timeout_s > 0)
        job.deadline = hlx_now_s() + opts->timeout_s;
    hlx_job_loop(&job);
    if (!job.failed)
        job.exit_code = 0;

out_server:
    if (job.nrunning > 0) {
        /* An internal error or ranks abandoned after SIGKILL: one more SIGKILL and a
         * bounded wait, never a blocking one. */
        double until = hlx_now_s() + (job.abandoned ? 0.1 : HLX_JOB_REAP_S);
        hlx_job_server_down(&job);
        hlx_job_signal_all(&job, SIGKILL);
        while (job.nrunning > 0 && hlx_now_s() < until) {
            pid_t pid = waitpid(-1, NULL, WNOHANG);
            if (pid > 0 && pid == job.keeper_pid)
                job.keeper_pid = 0;
            for (int i = 0; pid > 0 && i < opts->nprocs; i++)
                if (job.ranks[i].running && job.ranks[i].pid == pid) {
                    job.ranks[i].running = 0;
                    job.nrunning--;
                }
            if (pid <= 0)
                usleep(10000);
        }
    }
    hlx_job_end_leftovers(&job);
    for (int i = 0; i < opts->nprocs; i++) {
        hlx_iof_close(&job.ranks[i].out, stdout, opts->prefix);
        hlx_iof_close(&job.ranks[i].err, stderr, opts->prefix);
    }
    hlx_iof_collapse_flush(&job.dup, HUGE_VAL);
    fflush(stdout);
    fflush(stderr);
    hlx_job_server_down(&job);
out_tmp:
    hlx_job_release_spares(&job);
    hlx_rmtree(job.tmpdir);
    hlx_keeper_stop(&job);
out_sig:
    if (devnull >= 0)
        close(devnull);
    if (job.sig_fd >= 0)
        close(job.sig_fd);
    if (job.wake_fd[0] >= 0) {
        close(job.wake_fd[0]);
        close(job.wake_fd[1]);
    }
out:
    hlx_srv_drop_done(&job);
    hlx_job_topology_free(&job);
    hlx_guard_fini(&job.guard);
    hlx_iof_collapse_fini(&job.dup);
    hlx_srv_job = NULL;
    free(job.ranks);
    pthread_mutex_destroy(&job.lock);
    return job.exit_code;
}
