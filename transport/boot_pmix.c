/* Bootstrap over the PMIx client API (Init, Put, Commit, Fence, Get, Abort, Finalize),
 * or a world of one when the process was started without a PMIx launcher. */
#define _GNU_SOURCE
#include "hlx_boot.h"

#include "hlx_log.h"
#include "hlx_time.h"
#include "hlx_watchdog.h"

#include <pmix.h>

#include <dirent.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define HLX_BOOT_MAX_KEYS 256
/* Seconds a rank runs on after its launcher's PMIx server closed the connection. */
#define HLX_BOOT_ORPHAN_S 3.0

struct hlx_boot {
    hlx_boot_info_t info;
    int             pmix;          /* 1 when PMIx_Init succeeded */
    pmix_proc_t     myproc;
    double          timeout_s;
    size_t          evhdlr_ref;
    int             evhdlr_ok;
    size_t          evhdlr_lost_ref;
    int             evhdlr_lost_ok;
    atomic_int      lost_rank;     /* -1, or a rank PMIx reported as gone */
    atomic_int      lost_status;   /* the PMIx event status that reported it */
    /* Ends the process if PMIx_Init or the abort path hangs; armed only around them. */
    hlx_watchdog_t *wd;
    int             aborting;      /* the abort watchdog stays armed until exit */
    char            nspace[PMIX_MAX_NSLEN + 1];
    char            host[256];
    /* Keys used so far: PMIx keeps the last value per key, so a repeated key would let
     * a slow rank read the previous round's data. Refused instead. */
    char           *keys[HLX_BOOT_MAX_KEYS];
    int             nkeys;
};

static hlx_status_t hlx_boot_status(pmix_status_t rc)
{
    switch (rc) {
    case PMIX_SUCCESS:         return HLX_OK;
    case PMIX_ERR_TIMEOUT:     return HLX_ERR_TIMEOUT;
    case PMIX_ERR_NOMEM:       return HLX_ERR_NOMEM;
    case PMIX_ERR_UNREACH:
    case PMIX_ERR_LOST_CONNECTION:
    case PMIX_ERR_PROC_ABORTED:
    case PMIX_ERR_PROC_TERM_WO_SYNC: return HLX_ERR_PEER;
    default:                   return HLX_ERR_BOOTSTRAP;
    }
}

static const char *hlx_boot_detect_launcher(void)
{
    /* Most specific first: mpirun inside a Slurm allocation still sees SLURM_JOB_ID. */
    if (getenv("HELIXRUN"))
        return "helixrun";
    if (getenv("OMPI_COMM_WORLD_SIZE"))
        return "mpirun";
    if (getenv("SLURM_JOB_ID"))
        return "srun";
    return "pmix";
}

/* A launcher that promised several tasks but gave no PMIx server: running each task as
 * a world of one would silently compute N unrelated answers. */
static int hlx_boot_claimed_size(const char **var_p)
{
    /* Not SLURM_NTASKS: a batch script running one process sees the allocation's. */
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS",
                                        "PMI_SIZE" };
    size_t i;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1) {
            *var_p = vars[i];
            return atoi(v);
        }
    }
    return 1;
}

static int hlx_boot_have_pmix_env(void)
{
    extern char **environ;
    char **e;

    if (getenv("PMIX_NAMESPACE") == NULL || getenv("PMIX_RANK") == NULL)
        return 0;
    for (e = environ; e && *e; e++)
        if (!strncmp(*e, "PMIX_SERVER_URI", 15))
            return 1;
    return 0;
}

/* Runs on PMIx's progress thread: records the lost process for the communicators to
 * report, logs it once, and lets PMIx continue with the next handler (Slurm's default
 * handler may still kill the step). helixrun notifies the survivors before it kills them,
 * with the lost rank as PMIX_EVENT_AFFECTED_PROC and the cause as PMIX_EVENT_TEXT_MESSAGE
 * ("rank 1 (host h, pid p) lost: killed by signal 9 (SIGKILL)"). */
static void hlx_boot_event(size_t id, pmix_status_t status, const pmix_proc_t *source,
                           pmix_info_t info[], size_t ninfo, pmix_info_t *results,
                           size_t nresults, pmix_event_notification_cbfunc_fn_t cbfunc,
                           void *cbdata)
{
    hlx_boot_t *boot = NULL;
    const pmix_proc_t *lost = source;
    const char *text = NULL;
    size_t i;

    for (i = 0; i < ninfo; i++) {
        if (!strcmp(info[i].key, PMIX_EVENT_RETURN_OBJECT) &&
            info[i].value.type == PMIX_POINTER)
            boot = info[i].value.data.ptr;
        else if (!strcmp(info[i].key, PMIX_EVENT_AFFECTED_PROC) &&
                 info[i].value.type == PMIX_PROC && info[i].value.data.proc != NULL)
            lost = info[i].value.data.proc;
        else if (!strcmp(info[i].key, PMIX_EVENT_TEXT_MESSAGE) &&
                 info[i].value.type == PMIX_STRING)
            text = info[i].value.data.string;
    }
    if (status == PMIX_ERR_LOST_CONNECTION && boot != NULL && !boot->aborting && source &&
        strncmp(source->nspace, boot->nspace, PMIX_MAX_NSLEN) != 0 && boot->wd != NULL) {
        /* The launcher's server closed: helixrun does so on a failure just before it
         * signals the ranks, and the connection also drops when the launcher itself was
         * killed (helixrun, slurmstepd, prted). Then nobody is left to end this rank, and
         * ranks behind a wrapper would run on as orphans: the watchdog ends the process if
         * no signal has within a few seconds. */
        hlx_watchdog_arm(boot->wd, HLX_BOOT_ORPHAN_S, 1,
                         "the wait for the launcher's signal after its PMIx server closed "
                         "the connection");
    }
    if (status < 0) {
        int rank = lost ? (int)lost->rank : -1;
        if (text != NULL)
            hlx_error("%s (PMIx event %s from the launcher)", text, PMIx_Error_string(status));
        else
            hlx_error("PMIx event %s (%d) from %s:%d", PMIx_Error_string(status), (int)status,
                      lost ? lost->nspace : "?", rank);
        if (boot && lost && lost->rank != boot->myproc.rank &&
            lost->rank < (pmix_rank_t)boot->info.size) {
            int expected = -1;
            if (atomic_compare_exchange_strong(&boot->lost_rank, &expected, rank))
                atomic_store(&boot->lost_status, (int)status);
        }
    } else {
        hlx_debug(HLX_SUB_BOOT, "PMIx event %s from %s:%d", PMIx_Error_string(status),
                  source ? source->nspace : "?", source ? (int)source->rank : -1);
    }
    (void)id;
    (void)results;
    (void)nresults;
    if (cbfunc)
        cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

static hlx_status_t hlx_boot_get_u32(hlx_boot_t *boot, pmix_rank_t rank, const char *key,
                                     uint32_t *out_p)
{
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    pmix_status_t rc;

    PMIX_PROC_LOAD(&proc, boot->nspace, rank);
    rc = PMIx_Get(&proc, key, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val == NULL)
        return hlx_boot_status(rc != PMIX_SUCCESS ? rc : PMIX_ERR_NOT_FOUND);
    switch (val->type) {
    case PMIX_UINT32: *out_p = val->data.uint32; break;
    case PMIX_UINT16: *out_p = val->data.uint16; break;
    case PMIX_PROC_RANK: *out_p = val->data.rank; break;
    case PMIX_INT: *out_p = (uint32_t)val->data.integer; break;
    default:
        PMIX_VALUE_RELEASE(val);
        return HLX_ERR_BOOTSTRAP;
    }
    PMIX_VALUE_RELEASE(val);
    return HLX_OK;
}

/* The port of the PMIx server this process was told to reach ("...;tcp4://127.0.0.1:P"),
 * 0 when the environment names none. */
static int hlx_boot_server_port(void)
{
    static const char *const var[] = { "PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
                                       "PMIX_SERVER_URI3", "PMIX_SERVER_URI21",
                                       "PMIX_SERVER_URI2" };
    for (size_t i = 0; i < sizeof(var) / sizeof(var[0]); i++) {
        const char *uri = getenv(var[i]), *t, *c;
        if (uri == NULL || (t = strstr(uri, "://")) == NULL || (c = strrchr(t, ':')) == NULL)
            continue;
        return atoi(c + 1);
    }
    return 0;
}

/* libpmix 4.2 leaves Nagle's algorithm on its TCP connection to the server: a message
 * sent while the previous one is unacknowledged waits for the server's delayed ACK, 40 ms
 * on Linux. PMIx_Finalize sends two in a row, and took 42-54 ms in every rank (perf
 * uprobes, 2-rank tiny decode under helixrun, 32 ranks; 1 ms with the option set). The
 * connection is found among this process's sockets by the server's port; nothing else is
 * touched, and without a match nothing changes. */
static void hlx_boot_nodelay(void)
{
    const int port = hlx_boot_server_port(), one = 1;
    DIR *d;
    struct dirent *de;

    if (port <= 0 || (d = opendir("/proc/self/fd")) == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        struct sockaddr_storage peer;
        socklen_t len = sizeof(peer);
        struct stat sb;
        char *end;
        long fd = strtol(de->d_name, &end, 10);
        int p = -1;

        if (*end != '\0' || fd < 0 || fd == dirfd(d) || fstat((int)fd, &sb) != 0 ||
            !S_ISSOCK(sb.st_mode) || getpeername((int)fd, (struct sockaddr *)&peer, &len) != 0)
            continue;
        if (peer.ss_family == AF_INET)
            p = ntohs(((struct sockaddr_in *)&peer)->sin_port);
        else if (peer.ss_family == AF_INET6)
            p = ntohs(((struct sockaddr_in6 *)&peer)->sin6_port);
        if (p == port &&
            setsockopt((int)fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0)
            hlx_debug(HLX_SUB_BOOT, "PMIx server connection (fd %ld, port %d): TCP_NODELAY",
                      fd, port);
    }
    closedir(d);
}

static void hlx_boot_single(hlx_boot_t *boot)
{
    boot->info.rank = 0;
    boot->info.size = 1;
    boot->info.local_rank = 0;
    boot->info.local_size = 1;
    boot->info.launcher = "none";
    snprintf(boot->nspace, sizeof(boot->nspace), "single.%d", (int)getpid());
}

hlx_status_t hlx_boot_init(double timeout_s, hlx_boot_t **boot_p)
{
    hlx_boot_t *boot;
    pmix_status_t rc;
    pmix_info_t evinfo;
    uint32_t v;
    const char *var = NULL;
    int claimed;
    hlx_status_t st;

    if (!(timeout_s > 0)) {
        hlx_error("bootstrap: timeout %g s must be positive", timeout_s);
        return HLX_ERR_INVALID;
    }
    boot = calloc(1, sizeof(*boot));
    if (boot == NULL)
        return HLX_ERR_NOMEM;
    boot->timeout_s = timeout_s;
    atomic_init(&boot->lost_rank, -1);
    atomic_init(&boot->lost_status, 0);
    if (gethostname(boot->host, sizeof(boot->host) - 1) != 0)
        strcpy(boot->host, "?");
    boot->info.host = boot->host;
    boot->info.nspace = boot->nspace;

    claimed = hlx_boot_claimed_size(&var);
    if (!hlx_boot_have_pmix_env()) {
        /* PMIx 4.2 has no singleton mode and PMIx_Init without a server fails only after
         * trying to connect: decide from the environment without calling it. */
        if (claimed > 1) {
            hlx_error("bootstrap: %s=%d says this is one of %d tasks, but no PMIx server "
                      "is reachable (no PMIX_NAMESPACE/PMIX_SERVER_URI*): launch with "
                      "PMIx (srun --mpi=pmix, mpirun, helixrun)", var, claimed, claimed);
            free(boot);
            return HLX_ERR_BOOTSTRAP;
        }
        hlx_boot_single(boot);
        hlx_debug(HLX_SUB_BOOT, "no PMIx launcher: world of one");
        *boot_p = boot;
        return HLX_OK;
    }

    /* PMIx_Init has no deadline of its own: a server that accepts the connection but
     * never answers the handshake keeps it waiting forever. */
    if (hlx_watchdog_create(&boot->wd) == HLX_OK) {
        char what[192];
        snprintf(what, sizeof(what), "PMIx_Init (connecting to the %s PMIx server of job %s)",
                 hlx_boot_detect_launcher(), getenv("PMIX_NAMESPACE"));
        hlx_watchdog_arm(boot->wd, timeout_s, 1, what);
    }
    rc = PMIx_Init(&boot->myproc, NULL, 0);
    if (boot->wd)
        hlx_watchdog_disarm(boot->wd);
    if (rc != PMIX_SUCCESS) {
        /* The environment names a server we cannot reach: a broken launch, not a
         * stand-alone start, so refusing is safer than a silent world of one. */
        hlx_error("bootstrap: PMIx_Init failed: %s (PMIX_NAMESPACE=%s, launcher %s)",
                  PMIx_Error_string(rc), getenv("PMIX_NAMESPACE"),
                  hlx_boot_detect_launcher());
        hlx_watchdog_destroy(boot->wd);
        free(boot);
        return HLX_ERR_BOOTSTRAP;
    }
    boot->pmix = 1;
    hlx_boot_nodelay();
    snprintf(boot->nspace, sizeof(boot->nspace), "%s", boot->myproc.nspace);
    boot->info.rank = (int)boot->myproc.rank;
    boot->info.launcher = hlx_boot_detect_launcher();

    st = hlx_boot_get_u32(boot, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &v);
    if (st != HLX_OK || v == 0) {
        hlx_error("bootstrap: PMIx gives no job size (%s)", PMIX_JOB_SIZE);
        st = HLX_ERR_BOOTSTRAP;
        goto err_finalize;
    }
    boot->info.size = (int)v;
    if (boot->info.rank < 0 || boot->info.rank >= boot->info.size) {
        hlx_error("bootstrap: PMIx rank %d outside job size %d", boot->info.rank,
                  boot->info.size);
        st = HLX_ERR_BOOTSTRAP;
        goto err_finalize;
    }
    if (hlx_boot_get_u32(boot, boot->myproc.rank, PMIX_LOCAL_RANK, &v) == HLX_OK)
        boot->info.local_rank = (int)v;
    else
        boot->info.local_rank = boot->info.rank;
    if (hlx_boot_get_u32(boot, PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, &v) == HLX_OK)
        boot->info.local_size = (int)v;
    else
        boot->info.local_size = boot->info.size;
    if (claimed > 1 && claimed != boot->info.size) {
        hlx_error("bootstrap: PMIx job size %d but %s=%d", boot->info.size, var, claimed);
        st = HLX_ERR_BOOTSTRAP;
        goto err_finalize;
    }

    /* Catch-all handler (no codes): PMIx never raises PROC_ABORTED by itself, so any
     * error event is treated as a possible lost peer. */
    PMIX_INFO_LOAD(&evinfo, PMIX_EVENT_RETURN_OBJECT, boot, PMIX_POINTER);
    rc = PMIx_Register_event_handler(NULL, 0, &evinfo, 1, hlx_boot_event, NULL, NULL);
    PMIX_INFO_DESTRUCT(&evinfo);
    if (rc < 0) {
        hlx_warn("bootstrap: PMIx event handler not registered: %s", PMIx_Error_string(rc));
    } else {
        boot->evhdlr_ref = (size_t)rc;
        boot->evhdlr_ok = 1;
    }
    /* A server sends an event only to the clients registered for its code (a catch-all
     * handler stays local), so the launcher's lost-rank event needs its own. */
    {
        pmix_status_t codes[] = { PMIX_ERR_PROC_ABORTED, PMIX_ERR_PROC_TERM_WO_SYNC };
        PMIX_INFO_LOAD(&evinfo, PMIX_EVENT_RETURN_OBJECT, boot, PMIX_POINTER);
        rc = PMIx_Register_event_handler(codes, 2, &evinfo, 1, hlx_boot_event, NULL, NULL);
        PMIX_INFO_DESTRUCT(&evinfo);
        if (rc >= 0) {
            boot->evhdlr_lost_ref = (size_t)rc;
            boot->evhdlr_lost_ok = 1;
        }
    }
    hlx_log_set_rank(boot->info.rank);
    hlx_debug(HLX_SUB_BOOT, "PMIx %s: rank %d of %d (local %d of %d), launcher %s",
              boot->nspace, boot->info.rank, boot->info.size, boot->info.local_rank,
              boot->info.local_size, boot->info.launcher);
    *boot_p = boot;
    return HLX_OK;

err_finalize:
    PMIx_Finalize(NULL, 0);
    hlx_watchdog_destroy(boot->wd);
    free(boot);
    return st;
}

void hlx_boot_get_info(const hlx_boot_t *boot, hlx_boot_info_t *info)
{
    *info = boot->info;
}

double hlx_boot_timeout(const hlx_boot_t *boot)
{
    return boot->timeout_s;
}

int hlx_boot_calls(const hlx_boot_t *boot)
{
    return boot->nkeys;
}

int hlx_boot_lost_rank(const hlx_boot_t *boot)
{
    return atomic_load(&((hlx_boot_t *)boot)->lost_rank);
}

static hlx_status_t hlx_boot_claim_key(hlx_boot_t *boot, const char *key)
{
    int i;

    if (key == NULL || key[0] == '\0' || strlen(key) >= PMIX_MAX_KEYLEN) {
        hlx_error("bootstrap: key \"%s\" empty or longer than %d characters",
                  key ? key : "(null)", PMIX_MAX_KEYLEN - 1);
        return HLX_ERR_INVALID;
    }
    for (i = 0; i < boot->nkeys; i++) {
        if (!strcmp(boot->keys[i], key)) {
            hlx_error("bootstrap: key \"%s\" already used in this job; keys must be new "
                      "per call", key);
            return HLX_ERR_INVALID;
        }
    }
    if (boot->nkeys == HLX_BOOT_MAX_KEYS) {
        hlx_error("bootstrap: more than %d all-gathers", HLX_BOOT_MAX_KEYS);
        return HLX_ERR_NOSPACE;
    }
    boot->keys[boot->nkeys] = strdup(key);
    if (boot->keys[boot->nkeys] == NULL)
        return HLX_ERR_NOMEM;
    boot->nkeys++;
    return HLX_OK;
}

/* After a timed-out fence: ask the local PMIx server, without going further, which
 * ranks committed key. Those that did not are named as missing. */
static void hlx_boot_report_missing(hlx_boot_t *boot, const char *key, const char *what)
{
    char list[512];
    size_t off = 0;
    int r, nmissing = 0;
    pmix_info_t info[2];
    bool yes = true;
    int one = 1;

    list[0] = '\0';
    PMIX_INFO_LOAD(&info[0], PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &one, PMIX_INT);
    for (r = 0; r < boot->info.size; r++) {
        pmix_proc_t proc;
        pmix_value_t *val = NULL;
        if (r == boot->info.rank || key == NULL)
            continue;
        PMIX_PROC_LOAD(&proc, boot->nspace, (pmix_rank_t)r);
        if (PMIx_Get(&proc, key, info, 2, &val) == PMIX_SUCCESS) {
            if (val)
                PMIX_VALUE_RELEASE(val);
            continue;
        }
        nmissing++;
        if (off < sizeof(list) - 16)
            off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d",
                                    nmissing > 1 ? "," : "", r);
    }
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (key != NULL && nmissing > 0)
        hlx_error("bootstrap: %s \"%s\" timed out after %g s: %s %s never put %s data "
                  "(not started, stopped, or not calling the same bootstrap)", what, key,
                  boot->timeout_s, nmissing > 1 ? "ranks" : "rank", list,
                  nmissing > 1 ? "their" : "its");
    else
        hlx_error("bootstrap: %s%s%s timed out after %g s (PMIx cannot tell which of the "
                  "%d ranks are missing)", what, key ? " " : "", key ? key : "",
                  boot->timeout_s, boot->info.size);
}

static hlx_status_t hlx_boot_fence(hlx_boot_t *boot, int collect, const char *key,
                                   const char *what)
{
    pmix_info_t info[2];
    pmix_proc_t all;
    pmix_status_t rc;
    bool yes = true;
    int tmo = (int)ceil(boot->timeout_s);
    double t0 = hlx_now_s();
    size_t i, ninfo = 0;

    if (tmo < 1)
        tmo = 1;
    PMIX_PROC_LOAD(&all, boot->nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_LOAD(&info[ninfo], PMIX_TIMEOUT, &tmo, PMIX_INT);
    ninfo++;
    if (collect) {
        PMIX_INFO_LOAD(&info[ninfo], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
        ninfo++;
    }
    rc = PMIx_Fence(&all, 1, info, ninfo);
    for (i = 0; i < ninfo; i++)
        PMIX_INFO_DESTRUCT(&info[i]); /* a macro: no side effects in its argument */
    if (rc == PMIX_ERR_TIMEOUT) {
        hlx_boot_report_missing(boot, key, what);
        return HLX_ERR_TIMEOUT;
    }
    if (rc != PMIX_SUCCESS) {
        hlx_error("bootstrap: %s fence failed after %.2f s: %s", what, hlx_now_s() - t0,
                  PMIx_Error_string(rc));
        return hlx_boot_status(rc);
    }
    return HLX_OK;
}

hlx_status_t hlx_boot_allgather(hlx_boot_t *boot, const char *key, const void *data,
                                size_t len, void *out)
{
    pmix_value_t value;
    pmix_status_t rc;
    hlx_status_t st;
    int r;

    st = hlx_boot_claim_key(boot, key);
    if (st != HLX_OK)
        return st;
    if (len > 0)
        memcpy((char *)out + (size_t)boot->info.rank * len, data, len);
    if (!boot->pmix)
        return HLX_OK;

    PMIX_VALUE_CONSTRUCT(&value);
    value.type = PMIX_BYTE_OBJECT;
    value.data.bo.bytes = (char *)data;
    value.data.bo.size = len;
    rc = PMIx_Put(PMIX_GLOBAL, key, &value);
    if (rc != PMIX_SUCCESS) {
        hlx_error("bootstrap: PMIx_Put(%s, %zu bytes): %s", key, len, PMIx_Error_string(rc));
        return HLX_ERR_BOOTSTRAP;
    }
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        hlx_error("bootstrap: PMIx_Commit(%s): %s", key, PMIx_Error_string(rc));
        return HLX_ERR_BOOTSTRAP;
    }
    st = hlx_boot_fence(boot, 1, key, "all-gather");
    if (st != HLX_OK)
        return st;

    for (r = 0; r < boot->info.size; r++) {
        pmix_proc_t proc;
        pmix_value_t *val = NULL;
        pmix_info_t info;
        int tmo = (int)ceil(boot->timeout_s);

        if (r == boot->info.rank)
            continue;
        PMIX_PROC_LOAD(&proc, boot->nspace, (pmix_rank_t)r);
        PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &tmo, PMIX_INT);
        rc = PMIx_Get(&proc, key, &info, 1, &val);
        PMIX_INFO_DESTRUCT(&info);
        if (rc != PMIX_SUCCESS || val == NULL) {
            hlx_error("bootstrap: PMIx_Get(%s) from rank %d: %s", key, r,
                      PMIx_Error_string(rc));
            return hlx_boot_status(rc != PMIX_SUCCESS ? rc : PMIX_ERR_NOT_FOUND);
        }
        if (val->type != PMIX_BYTE_OBJECT || val->data.bo.size != len) {
            hlx_error("bootstrap: \"%s\" from rank %d has %zu bytes, expected %zu", key, r,
                      val->type == PMIX_BYTE_OBJECT ? val->data.bo.size : (size_t)0, len);
            PMIX_VALUE_RELEASE(val);
            return HLX_ERR_MISMATCH;
        }
        if (len > 0)
            memcpy((char *)out + (size_t)r * len, val->data.bo.bytes, len);
        PMIX_VALUE_RELEASE(val);
    }
    return HLX_OK;
}

hlx_status_t hlx_boot_barrier(hlx_boot_t *boot)
{
    if (!boot->pmix)
        return HLX_OK;
    return hlx_boot_fence(boot, 0, NULL, "barrier");
}

void hlx_boot_abort(hlx_boot_t *boot, int exit_code, const char *msg)
{
    hlx_watchdog_settings_t ws;
    int code = exit_code > 0 && exit_code < 256 ? exit_code : 1;

    /* the reason was logged by the layer that found it: not a second time here */
    hlx_error("aborting the job (exit %d) so that its other ranks stop", exit_code);
    /* Second level: PMIx_Abort or the teardown after it (UCX) may hang on a dead peer;
     * the process ends within the grace whatever happens. Left armed until exit. */
    hlx_watchdog_settings(&ws);
    if (boot != NULL && (boot->wd != NULL || hlx_watchdog_create(&boot->wd) == HLX_OK)) {
        boot->aborting = 1;
        hlx_watchdog_arm(boot->wd, ws.abort_grace, code, "the abort (PMIx_Abort, teardown)");
    }
    if (boot == NULL || !boot->pmix)
        return;
    PMIx_Abort(exit_code, msg ? msg : "helix abort", NULL, 0);
}

void hlx_boot_fini(hlx_boot_t *boot)
{
    int i;

    if (boot == NULL)
        return;
    if (boot->pmix) {
        if (boot->evhdlr_ok)
            PMIx_Deregister_event_handler(boot->evhdlr_ref, NULL, NULL);
        if (boot->evhdlr_lost_ok)
            PMIx_Deregister_event_handler(boot->evhdlr_lost_ref, NULL, NULL);
        PMIx_Finalize(NULL, 0);
    }
    for (i = 0; i < boot->nkeys; i++)
        free(boot->keys[i]);
    /* After an abort the watchdog keeps guarding whatever teardown comes next. */
    if (!boot->aborting)
        hlx_watchdog_destroy(boot->wd);
    free(boot);
}

/* Node name and the sources of rank, size, local rank and node (see hlx_boot.h). */
hlx_status_t hlx_boot_node(hlx_boot_t *boot, hlx_boot_node_t *nd)
{
    pmix_value_t *val = NULL;
    uint32_t v;

    memset(nd, 0, sizeof(*nd));
    nd->nodeid = -1;
    if (!boot->pmix) {
        snprintf(nd->name, sizeof(nd->name), "%s", boot->host);
        nd->rank_src = nd->size_src = nd->local_src = "no launcher (a world of one)";
        nd->node_src = "gethostname (no launcher)";
        return HLX_OK;
    }
    nd->rank_src = "PMIx_Init (this process's PMIx rank)";
    nd->size_src = "PMIx " PMIX_JOB_SIZE;
    nd->local_src = hlx_boot_get_u32(boot, boot->myproc.rank, PMIX_LOCAL_RANK, &v) == HLX_OK
                        ? "PMIx " PMIX_LOCAL_RANK
                        : "PMIx gives no " PMIX_LOCAL_RANK ": the job rank";
    if (hlx_boot_get_u32(boot, boot->myproc.rank, PMIX_NODEID, &v) == HLX_OK)
        nd->nodeid = (int)v;
    if (PMIx_Get(&boot->myproc, PMIX_HOSTNAME, NULL, 0, &val) == PMIX_SUCCESS && val != NULL &&
        val->type == PMIX_STRING && val->data.string != NULL && val->data.string[0]) {
        snprintf(nd->name, sizeof(nd->name), "%s", val->data.string);
        nd->node_src = "PMIx " PMIX_HOSTNAME;
    } else if (nd->nodeid >= 0) {
        snprintf(nd->name, sizeof(nd->name), "node%d", nd->nodeid);
        nd->node_src = "PMIx " PMIX_NODEID;
    } else {
        snprintf(nd->name, sizeof(nd->name), "%s", boot->host);
        nd->node_src = "gethostname (PMIx gives neither " PMIX_HOSTNAME " nor " PMIX_NODEID ")";
    }
    if (val != NULL)
        PMIX_VALUE_RELEASE(val);
    return HLX_OK;
}
