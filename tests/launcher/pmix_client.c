/* PMIx client used by the helixrun tests: joins the job with the PMIx client API only,
 * exchanges one value per rank through a collecting fence and checks every peer's value.
 * Fault modes (each applies to one rank, before the fence):
 *   exit:CODE:R     exit with CODE (without PMIx_Finalize)
 *   sleep:SEC:R     sleep SEC seconds first (others wait in the fence)
 *   sigkill:R       SIGKILL itself
 *   nofence:R       PMIx_Init, skip the fence and exchange, PMIx_Finalize, exit 0 after 0.3 s
 *   nopmix:R        never call PMIx at all; exit 0 after 0.3 s
 *   abort:CODE:R    PMIx_Abort(CODE)
 *   nofinalize:R    do everything but PMIx_Finalize, then exit 0
 *   lines:N         every rank also prints N numbered lines on stdout and on stderr
 * and behaviours of every rank:
 *   abortonfail     a failed fence makes the rank call PMIx_Abort(1, "peer lost"), as the
 *                   runtime does when a peer vanishes
 *   heavy:MB        touch MB MiB of memory first, so that the rank takes a while to die
 *                   (the kernel frees it before the parent hears of the death)
 *   events          print the launcher's lost-rank event ("rank R: event ...: TEXT"); wait
 *                   up to 3 s for one after the fence (failed or not)
 *   child           leave a background child (sleep 60) in the process group, and a
 *                   second one in a session of its own; print both pids */
#define _GNU_SOURCE
#include <pmix.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define TEST_KEY "hlx.test.value"

typedef struct {
    int exit_code, exit_rank;
    double sleep_s;
    int sleep_rank;
    int sigkill_rank;
    int nofence_rank;
    int nopmix_rank;
    int abort_code, abort_rank;
    int nofinalize_rank;
    int lines;
    int abortonfail, events, child;
    long heavy_mb;
} client_mode_t;

static volatile int event_seen;

/* An independent function of the rank, so a value delivered to the wrong peer shows. */
static uint64_t expected_value(uint32_t rank)
{
    return 0x9e3779b97f4a7c15ull * (rank + 1) ^ 0x5bd1e995ull;
}

static void nap(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int parse_modes(int argc, char **argv, client_mode_t *m)
{
    memset(m, 0, sizeof(*m));
    m->exit_rank = m->sleep_rank = m->sigkill_rank = m->nofence_rank = -1;
    m->nopmix_rank = m->abort_rank = m->nofinalize_rank = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int ok = 0;
        if (!strncmp(a, "exit:", 5))
            ok = sscanf(a, "exit:%d:%d", &m->exit_code, &m->exit_rank) == 2;
        else if (!strncmp(a, "sleep:", 6))
            ok = sscanf(a, "sleep:%lf:%d", &m->sleep_s, &m->sleep_rank) == 2;
        else if (!strncmp(a, "sigkill:", 8))
            ok = sscanf(a, "sigkill:%d", &m->sigkill_rank) == 1;
        else if (!strncmp(a, "nofence:", 8))
            ok = sscanf(a, "nofence:%d", &m->nofence_rank) == 1;
        else if (!strncmp(a, "nopmix:", 7))
            ok = sscanf(a, "nopmix:%d", &m->nopmix_rank) == 1;
        else if (!strncmp(a, "abort:", 6))
            ok = sscanf(a, "abort:%d:%d", &m->abort_code, &m->abort_rank) == 2;
        else if (!strncmp(a, "nofinalize:", 11))
            ok = sscanf(a, "nofinalize:%d", &m->nofinalize_rank) == 1;
        else if (!strncmp(a, "lines:", 6))
            ok = sscanf(a, "lines:%d", &m->lines) == 1;
        else if (!strcmp(a, "abortonfail"))
            ok = m->abortonfail = 1;
        else if (!strcmp(a, "events"))
            ok = m->events = 1;
        else if (!strcmp(a, "child"))
            ok = m->child = 1;
        else if (!strncmp(a, "heavy:", 6))
            ok = sscanf(a, "heavy:%ld", &m->heavy_mb) == 1 && m->heavy_mb > 0;
        if (!ok) {
            fprintf(stderr, "pmix_client: bad mode '%s'\n", a);
            return -1;
        }
    }
    return 0;
}

/* Prints the event's text (helixrun sends PMIX_EVENT_TEXT_MESSAGE with the lost rank). */
static void on_event(size_t id, pmix_status_t status, const pmix_proc_t *source,
                     pmix_info_t info[], size_t ninfo, pmix_info_t *results, size_t nresults,
                     pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    const char *text = NULL;
    int affected = -1;

    (void)id;
    (void)source;
    (void)results;
    (void)nresults;
    for (size_t i = 0; i < ninfo; i++) {
        if (!strcmp(info[i].key, PMIX_EVENT_TEXT_MESSAGE) && info[i].value.type == PMIX_STRING)
            text = info[i].value.data.string;
        if (!strcmp(info[i].key, PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC)
            affected = (int)info[i].value.data.proc->rank;
    }
    if (text != NULL) {
        printf("rank %s: event %d: affected %d: %s\n", getenv("PMIX_RANK"), (int)status,
               affected, text);
        event_seen = 1;
    }
    if (cbfunc)
        cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

/* A background child that outlives the rank unless the launcher ends it. */
static void leave_child(int own_session)
{
    pid_t pid = fork();

    if (pid == 0) {
        if (own_session)
            setsid();
        execlp("sleep", "sleep", "60", (char *)NULL);
        _exit(127);
    }
    printf("rank %s: child pid %d%s\n", getenv("PMIX_RANK"), (int)pid,
           own_session ? " (own session)" : "");
}

static int env_int(const char *name)
{
    const char *v = getenv(name);
    return v ? atoi(v) : -1;
}

int main(int argc, char **argv)
{
    client_mode_t mode;
    pmix_proc_t   me, job, peer;
    pmix_value_t  v, *val = NULL;
    pmix_info_t   info;
    pmix_status_t rc;
    uint32_t      size, lsize;
    uint16_t      lrank;
    int           rank_env = env_int("HELIX_RANK"), errors = 0;
    /* Before PMIx_Init only the environment knows the rank; every PMIx launcher sets
     * PMIX_RANK for its clients. */
    int           rank_pre = env_int("PMIX_RANK");
    bool          collect = true;
    char          host[256] = "", peers[4096];

    if (parse_modes(argc, argv, &mode) != 0)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* The tests check that helixrun leaves none of these pids behind. */
    printf("rank %d: pid %d\n", rank_pre, (int)getpid());
    if (rank_pre >= 0 && rank_pre == mode.nopmix_rank) {
        printf("rank %d: not joining PMIx\n", rank_pre);
        nap(0.3);
        return 0;
    }
    if (mode.heavy_mb > 0) {
        /* mapped, not allocated: held until exit without counting as a leak */
        size_t bytes = (size_t)mode.heavy_mb << 20;
        char *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
        if (mem == MAP_FAILED)
            return 1;
        for (size_t off = 0; off < bytes; off += 4096)
            mem[off] = (char)off;
    }
    if (mode.child) {
        leave_child(0);
        leave_child(1);
    }
    rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init failed: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    if (mode.events) {
        /* The server sends an event only to clients registered for its code: a
         * catch-all handler is never registered with the server. */
        pmix_status_t code = PMIX_ERR_PROC_ABORTED;
        PMIx_Register_event_handler(&code, 1, NULL, 0, on_event, NULL, NULL);
    }
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    if (PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &val) != PMIX_SUCCESS) {
        fprintf(stderr, "rank %u: no PMIX_JOB_SIZE\n", me.rank);
        return 1;
    }
    size = val->data.uint32;
    PMIX_VALUE_RELEASE(val);
    if (PMIx_Get(&job, PMIX_LOCAL_SIZE, NULL, 0, &val) != PMIX_SUCCESS) {
        fprintf(stderr, "rank %u: no PMIX_LOCAL_SIZE\n", me.rank);
        return 1;
    }
    lsize = val->data.uint32;
    PMIX_VALUE_RELEASE(val);
    if (PMIx_Get(&me, PMIX_LOCAL_RANK, NULL, 0, &val) != PMIX_SUCCESS) {
        fprintf(stderr, "rank %u: no PMIX_LOCAL_RANK\n", me.rank);
        return 1;
    }
    lrank = val->data.uint16;
    PMIX_VALUE_RELEASE(val);
    if (PMIx_Get(&me, PMIX_HOSTNAME, NULL, 0, &val) != PMIX_SUCCESS ||
        val->type != PMIX_STRING || gethostname(host, sizeof(host) - 1) != 0 ||
        strcmp(val->data.string, host)) {
        fprintf(stderr, "rank %u: PMIX_HOSTNAME missing or not this host (%s)\n", me.rank,
                host);
        errors++;
    }
    if (val != NULL)
        PMIX_VALUE_RELEASE(val);
    /* PMIX_LOCAL_PEERS must list every rank: all of them run on this node. */
    for (uint32_t p = 0, used = 0; p < size && used < sizeof(peers); p++)
        used += (uint32_t)snprintf(peers + used, sizeof(peers) - used, "%s%u", p ? "," : "", p);
    val = NULL;
    if (PMIx_Get(&job, PMIX_LOCAL_PEERS, NULL, 0, &val) != PMIX_SUCCESS ||
        val->type != PMIX_STRING || strcmp(val->data.string, peers)) {
        fprintf(stderr, "rank %u: PMIX_LOCAL_PEERS is not %s\n", me.rank, peers);
        errors++;
    }
    if (val != NULL)
        PMIX_VALUE_RELEASE(val);

    /* Under helixrun its environment and PMIx must tell the same story; under another
     * launcher (mpirun, srun) only the PMIx side is checked. */
    if ((getenv("HELIXRUN") != NULL &&
         (strcmp(getenv("HELIXRUN"), "1") || rank_env != (int)me.rank ||
          env_int("HELIX_SIZE") != (int)size)) ||
        lsize != size || lrank != me.rank) {
        fprintf(stderr, "rank %u: inconsistent: HELIX_RANK=%d HELIX_SIZE=%d size %u "
                        "local size %u local rank %u\n", me.rank, rank_env,
                env_int("HELIX_SIZE"), size, lsize, lrank);
        errors++;
    }

    for (int i = 0; i < mode.lines; i++) {
        printf("out line %d of rank %u\n", i, me.rank);
        fprintf(stderr, "err line %d of rank %u\n", i, me.rank);
    }

    PMIX_VALUE_CONSTRUCT(&v);
    v.type        = PMIX_UINT64;
    v.data.uint64 = expected_value(me.rank);
    if (PMIx_Put(PMIX_GLOBAL, TEST_KEY, &v) != PMIX_SUCCESS || PMIx_Commit() != PMIX_SUCCESS) {
        fprintf(stderr, "rank %u: Put/Commit failed\n", me.rank);
        return 1;
    }

    if ((int)me.rank == mode.exit_rank) {
        fprintf(stderr, "rank %u: exiting with %d\n", me.rank, mode.exit_code);
        exit(mode.exit_code);
    }
    if ((int)me.rank == mode.sigkill_rank)
        raise(SIGKILL);
    if ((int)me.rank == mode.abort_rank)
        PMIx_Abort(mode.abort_code, "test abort", NULL, 0);
    if ((int)me.rank == mode.sleep_rank)
        nap(mode.sleep_s);
    if ((int)me.rank == mode.nofence_rank) {
        printf("rank %u: skipping the fence\n", me.rank);
        nap(0.3);
        PMIx_Finalize(NULL, 0);
        return 0;
    }

    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    rc = PMIx_Fence(&job, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "rank %u: fence failed: %s\n", me.rank, PMIx_Error_string(rc));
        for (int i = 0; mode.events && !event_seen && i < 300; i++)
            nap(0.01);
        if (mode.abortonfail)
            PMIx_Abort(1, "peer lost", NULL, 0);
        return 1;
    }
    for (uint32_t p = 0; p < size; p++) {
        PMIX_LOAD_PROCID(&peer, me.nspace, p);
        if (PMIx_Get(&peer, TEST_KEY, NULL, 0, &val) != PMIX_SUCCESS) {
            fprintf(stderr, "rank %u: no value from rank %u\n", me.rank, p);
            errors++;
            continue;
        }
        if (val->type != PMIX_UINT64 || val->data.uint64 != expected_value(p)) {
            fprintf(stderr, "rank %u: wrong value from rank %u\n", me.rank, p);
            errors++;
        }
        PMIX_VALUE_RELEASE(val);
    }
    printf("rank %u of %u: exchange %s\n", me.rank, size, errors ? "FAILED" : "ok");
    for (int i = 0; mode.events && !event_seen && i < 300; i++)
        nap(0.01);
    if ((int)me.rank == mode.nofinalize_rank)
        return errors ? 1 : 0;
    PMIx_Finalize(NULL, 0);
    return errors ? 1 : 0;
}
