/* helix bench a2a: all-to-all latency and bandwidth over the transport in the style of
 * nccl-tests (-b/-e/-f size sweep, -n/-w iterations, -c check of every received byte). Its
 * flags are one table (util/hlx_flags.h); the short ones are aliases of the long ones. */
#include "hlx_cmd.h"
#include "hlx_comm.h"
#include "hlx_log.h"
#include "hlx_time.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int hlx_cmd_bench_a2a(int argc, char **argv);

#define A2A_MAX_BYTES ((size_t)1 << 30) /* per peer */

typedef struct a2a_opts {
    size_t min_bytes, max_bytes;
    long   factor;
    long   iters, warmup;
    int    check, json;
    double timeout_s;
} a2a_opts_t;

/* The flags as parsed from the table, before a2a_opts_t. */
typedef struct a2a_args {
    int64_t min_bytes, max_bytes, factor, iters, warmup, check;
    int     json;
    double  timeout_s; /* 0 when not given: HELIX_COMM_TIMEOUT */
} a2a_args_t;

#define A2A_FLAG(_n, _def, _lo, _hi, _f, _meta, _help) \
    { _n, HLX_FT_INT, _def, _lo, _hi, 0, 0, NULL, offsetof(a2a_args_t, _f), _meta, _help }

static const hlx_flag_t a2a_flag_list[] = {
    A2A_FLAG("minbytes", "1K", 0, (int64_t)A2A_MAX_BYTES, min_bytes, "N",
             "smallest block per peer, K/M/G suffixes = 2^10.."),
    A2A_FLAG("maxbytes", "256K", 0, (int64_t)A2A_MAX_BYTES, max_bytes, "N",
             "largest block per peer, at most 1G"),
    A2A_FLAG("stepfactor", "2", 2, 1024, factor, "F",
             "multiply the size by F each step, integer >= 2; a sweep\n"
             "from 0 goes 0, 1, F, F^2, ..."),
    A2A_FLAG("iters", "200", 1, 1000000, iters, "N",
             "timed operations per size, at most 10^6"),
    A2A_FLAG("warmup", "20", 0, 100000000, warmup, "N", "untimed operations first"),
    A2A_FLAG("check", "1", 0, 1, check, "0|1",
             "after timing, one operation of fresh data whose every\n"
             "received byte is compared with a value computed from (source,\n"
             "destination, offset, size), plus one with uneven blocks (0,\n"
             "half and full size by pair); wrong bytes are counted, any\n"
             "makes the exit status 1"),
    { "timeout", HLX_FT_NUM, NULL, 0, 0, HLX_COMM_TIMEOUT_MIN, HLX_COMM_TIMEOUT_MAX, NULL,
      offsetof(a2a_args_t, timeout_s), "SEC",
      "deadline of each operation and of the bootstrap (default:\n"
      "HELIX_COMM_TIMEOUT)" },
    { "json", HLX_FT_BOOL, NULL, 0, 0, 0, 0, NULL, offsetof(a2a_args_t, json), NULL,
      "one JSON object per line and size (rank 0 only): ranks,\n"
      "bytes_per_peer, iters, time_us, mean_us, algbw_gbps,\n"
      "busbw_gbps, wrong (-1 without -c), backend" },
};

/* nccl-tests' short flags */
static const hlx_flag_alias_t a2a_aliases[] = {
    { 'b', "minbytes" }, { 'e', "maxbytes" }, { 'f', "stepfactor" },
    { 'n', "iters" },    { 'w', "warmup" },   { 'c', "check" },
};

const hlx_flag_table_t hlx_bench_a2a_flags = {
    "bench a2a", a2a_flag_list, sizeof(a2a_flag_list) / sizeof(a2a_flag_list[0]),
    a2a_aliases, sizeof(a2a_aliases) / sizeof(a2a_aliases[0]),
};

static const char a2a_usage_head[] =
    "usage: helix bench a2a [options]   (under helixrun, mpirun or srun --mpi=pmix)\n"
    "Times the transport's all-to-all (hlx_comm_alltoallv with equal blocks) over a size\n"
    "sweep, like nccl-tests' alltoall_perf. Each of -n back-to-back operations is timed;\n"
    "time_us is the slowest rank's median (robust on a shared machine), mean_us its\n"
    "mean; algbw = ranks * bytes_per_peer / time_us, busbw = algbw * (ranks - 1) /\n"
    "ranks (the bytes each rank moves over its links).\n"
    "The short flags are nccl-tests' own: -b 1K or -b1K.\n"
    "options:\n";

static const char a2a_usage_tail[] =
    "examples:\n"
    "  helixrun -n 2 helix bench a2a -b 1K -e 256K -f 2 -n 1000 -w 100 -c 1\n"
    "  mpirun -n 4 helix bench a2a --json\n";

/* Parses argv into o, the timeout defaulting to timeout_s. Returns -1 to go on, or the exit
 * code: 0 after --help, 2 after a message naming the flag. */
static int a2a_parse(int argc, char **argv, double timeout_s, a2a_opts_t *o)
{
    a2a_args_t a;
    int rc;

    memset(&a, 0, sizeof(a));
    rc = hlx_flags_parse(&hlx_bench_a2a_flags, argc, argv, &a, NULL, a2a_usage_head,
                         a2a_usage_tail);
    if (rc >= 0)
        return rc;
    if (a.min_bytes > a.max_bytes) {
        hlx_flags_usage_error(&hlx_bench_a2a_flags, "-b/--minbytes %" PRId64 " is larger than "
                              "-e/--maxbytes %" PRId64, a.min_bytes, a.max_bytes);
        return 2;
    }
    *o = (a2a_opts_t){ .min_bytes = (size_t)a.min_bytes, .max_bytes = (size_t)a.max_bytes,
                       .factor = (long)a.factor, .iters = (long)a.iters,
                       .warmup = (long)a.warmup, .check = (int)a.check, .json = a.json,
                       .timeout_s = a.timeout_s > 0 ? a.timeout_s : timeout_s };
    return -1;
}

/* The byte every (source, destination, offset, round) pair must carry: a hash computed
 * independently by sender and receiver, never read back from the transport. */
static uint8_t a2a_expect(int src, int dst, size_t off, uint64_t round)
{
    uint64_t x = ((uint64_t)(uint32_t)src << 40) ^ ((uint64_t)(uint32_t)dst << 20) ^
                 ((uint64_t)off * 0x9e3779b97f4a7c15ull) ^ (round * 0xbf58476d1ce4e5b9ull);

    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    return (uint8_t)x;
}

typedef struct a2a_bufs {
    uint8_t *sbuf, *rbuf;
    size_t  *sc, *sd, *rc, *rd;
} a2a_bufs_t;

/* Block sizes of one check round: equal, or uneven (0, half, full by pair). */
static size_t a2a_count(size_t bytes, int uneven, int src, int dst)
{
    return uneven ? bytes * (size_t)((src + 2 * dst) % 3) / 2 : bytes;
}

static void a2a_layout(a2a_bufs_t *b, int n, int me, size_t bytes, int uneven)
{
    size_t so = 0, ro = 0;
    int j;

    for (j = 0; j < n; j++) {
        b->sc[j] = a2a_count(bytes, uneven, me, j);
        b->sd[j] = so;
        so += b->sc[j];
        b->rc[j] = a2a_count(bytes, uneven, j, me);
        b->rd[j] = ro;
        ro += b->rc[j];
    }
}

/* One operation of fresh data; returns the number of wrong received bytes, or -1 when
 * the operation itself failed. */
static long long a2a_check_round(hlx_comm_t *comm, a2a_bufs_t *b, size_t bytes, int uneven,
                                 uint64_t round)
{
    int n = hlx_comm_size(comm), me = hlx_comm_rank(comm), j;
    long long wrong = 0;
    size_t k;

    a2a_layout(b, n, me, bytes, uneven);
    for (j = 0; j < n; j++)
        for (k = 0; k < b->sc[j]; k++)
            b->sbuf[b->sd[j] + k] = a2a_expect(me, j, k, round);
    memset(b->rbuf, 0xa5, b->rd[n - 1] + b->rc[n - 1]);
    if (hlx_comm_alltoallv(comm, b->sbuf, b->sc, b->sd, b->rbuf, b->rc, b->rd) != HLX_OK)
        return -1;
    for (j = 0; j < n; j++)
        for (k = 0; k < b->rc[j]; k++)
            wrong += b->rbuf[b->rd[j] + k] != a2a_expect(j, me, k, round);
    return wrong;
}

/* Max over ranks of v (the slowest rank's time), through the all-gather. */
static hlx_status_t a2a_max(hlx_comm_t *comm, double v, double *all, double *max_p)
{
    hlx_status_t st = hlx_comm_allgather(comm, &v, sizeof(v), all);
    int j;

    if (st != HLX_OK)
        return st;
    *max_p = all[0];
    for (j = 1; j < hlx_comm_size(comm); j++)
        if (all[j] > *max_p)
            *max_p = all[j];
    return HLX_OK;
}

static int a2a_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int a2a_run(const a2a_opts_t *o, hlx_comm_t *comm)
{
    double *samples = NULL;
    int n = hlx_comm_size(comm), me = hlx_comm_rank(comm), j;
    a2a_bufs_t b = { 0 };
    double *all = NULL;
    long long total_wrong = 0;
    size_t bytes, cap;
    hlx_status_t st = HLX_OK;
    uint64_t round = 1;
    int rc = 0;

    if (o->max_bytes > SIZE_MAX / (size_t)n) {
        fprintf(stderr, "helix bench a2a: -e %zu bytes x %d ranks overflows\n", o->max_bytes, n);
        return 2;
    }
    cap = o->max_bytes * (size_t)n;
    b.sbuf = malloc(cap + 1);
    b.rbuf = malloc(cap + 1);
    b.sc = calloc((size_t)n * 4, sizeof(size_t));
    all = calloc((size_t)n, sizeof(double));
    samples = calloc((size_t)o->iters, sizeof(double));
    if (b.sbuf == NULL || b.rbuf == NULL || b.sc == NULL || all == NULL || samples == NULL) {
        fprintf(stderr, "helix bench a2a: no memory for 2 x %zu bytes\n", cap);
        rc = 1;
        goto out;
    }
    b.sd = b.sc + n;
    b.rc = b.sc + 2 * n;
    b.rd = b.sc + 3 * n;
    memset(b.sbuf, 1, cap + 1);

    if (me == 0 && !o->json)
        printf("# helix bench a2a: %d ranks, backend %s, %ld iterations after %ld warm-up\n"
               "# %12s %12s %12s %12s %12s %8s\n", n, hlx_comm_backend(comm), o->iters,
               o->warmup, "bytes/peer", "time_us", "mean_us", "algbw_GB/s", "busbw_GB/s",
               "wrong");
    for (bytes = o->min_bytes; bytes <= o->max_bytes;) {
        double t0, t1, mean, tmed, tmax, mmax;
        long long wrong = 0, w;
        long i;

        a2a_layout(&b, n, me, bytes, 0);
        for (i = 0; i < o->warmup && st == HLX_OK; i++)
            st = hlx_comm_alltoallv(comm, b.sbuf, b.sc, b.sd, b.rbuf, b.rc, b.rd);
        if (st == HLX_OK)
            st = hlx_comm_barrier(comm);
        t0 = hlx_now_s();
        for (i = 0; i < o->iters && st == HLX_OK; i++) {
            t1 = hlx_now_s();
            st = hlx_comm_alltoallv(comm, b.sbuf, b.sc, b.sd, b.rbuf, b.rc, b.rd);
            samples[i] = hlx_now_s() - t1;
        }
        mean = (hlx_now_s() - t0) / (double)o->iters;
        qsort(samples, (size_t)o->iters, sizeof(double), a2a_cmp_double);
        tmed = samples[o->iters / 2];
        if (st == HLX_OK)
            st = a2a_max(comm, tmed, all, &tmax);
        if (st == HLX_OK)
            st = a2a_max(comm, mean, all, &mmax);
        if (st == HLX_OK && o->check) {
            for (j = 0; j < 2 && st == HLX_OK; j++) {
                w = a2a_check_round(comm, &b, bytes, j, round++);
                if (w < 0)
                    st = HLX_ERR_TRANSPORT;
                else
                    wrong += w;
            }
            if (st == HLX_OK) { /* every rank's count, summed */
                double mine = (double)wrong;
                st = hlx_comm_allgather(comm, &mine, sizeof(mine), all);
                for (wrong = 0, j = 0; st == HLX_OK && j < n; j++)
                    wrong += (long long)all[j];
            }
        }
        if (st != HLX_OK) {
            fprintf(stderr, "helix bench a2a: %zu bytes per peer: %s\n", bytes,
                    hlx_status_str(st));
            rc = hlx_status_run_exit_code(st);
            goto out;
        }
        total_wrong += wrong;
        if (me == 0) {
            double algbw = tmax > 0 ? (double)bytes * n / tmax * 1e-9 : 0;
            double busbw = algbw * (n - 1) / n;
            if (o->json)
                printf("{\"ranks\": %d, \"bytes_per_peer\": %zu, \"iters\": %ld, "
                       "\"time_us\": %.3f, \"mean_us\": %.3f, \"algbw_gbps\": %.4f, "
                       "\"busbw_gbps\": %.4f, \"wrong\": %lld, \"backend\": \"%s\"}\n", n,
                       bytes, o->iters, tmax * 1e6, mmax * 1e6, algbw, busbw, o->check ? wrong : -1,
                       hlx_comm_backend(comm));
            else
                printf("  %12zu %12.2f %12.2f %12.3f %12.3f %8lld\n", bytes, tmax * 1e6,
                       mmax * 1e6, algbw, busbw, o->check ? wrong : -1LL);
            if (wrong)
                fprintf(stderr, "helix bench a2a: %zu bytes per peer: %lld wrong bytes\n",
                        bytes, wrong);
            fflush(stdout);
        }
        if (bytes == o->max_bytes)
            break;
        if (bytes == 0)
            bytes = 1;
        else if (bytes > o->max_bytes / (size_t)o->factor)
            bytes = o->max_bytes;
        else
            bytes *= (size_t)o->factor;
    }
    if (total_wrong)
        rc = 1;
out:
    free(b.sbuf);
    free(b.rbuf);
    free(b.sc);
    free(all);
    free(samples);
    return rc;
}

int hlx_cmd_bench_a2a(int argc, char **argv)
{
    a2a_opts_t o;
    hlx_comm_params_t cp;
    hlx_boot_info_t info;
    hlx_boot_t *boot = NULL;
    hlx_comm_t *world = NULL;
    hlx_status_t st;
    int rc;

    hlx_comm_params_default(&cp);
    rc = a2a_parse(argc, argv, cp.timeout_s, &o);
    if (rc >= 0)
        return rc;

    st = hlx_boot_init(o.timeout_s, &boot);
    if (st != HLX_OK)
        return hlx_status_exit_code(st);
    hlx_boot_get_info(boot, &info);
    hlx_log_set_rank(info.rank);
    /* every rank holds a send and a receive buffer of -e bytes per rank: the ranks of this
     * host together must fit in its memory (one message per host) */
    {
        double room = hlx_bench_mem_room(), mem = room / 0.8;
        double need = 2.0 * (double)o.max_bytes * info.size *
                      (info.local_size > 0 ? info.local_size : 1);
        if (room > 0.0 && need > room) {
            if (info.local_rank == 0)
                fprintf(stderr, "helix bench a2a: -e %zu: %d rank(s) on this host need 2 x %zu "
                        "bytes x %d peers each, %.1f GiB, more than this host's memory (%.1f "
                        "GiB); choose a smaller -e\n", o.max_bytes, info.local_size,
                        o.max_bytes, info.size, need / 1073741824.0, mem / 1073741824.0);
            hlx_boot_fini(boot);
            return 2;
        }
    }
    cp.timeout_s = o.timeout_s;
    st = hlx_comm_world(boot, &cp, &world);
    if (st != HLX_OK) {
        hlx_boot_fini(boot);
        return hlx_status_exit_code(st);
    }
    rc = a2a_run(&o, world);
    if (rc != 0 && rc != 1) {
        /* the communicator failed: no collective teardown */
        hlx_boot_abort(boot, rc, "helix bench a2a failed");
        return rc;
    }
    hlx_comm_destroy(world);
    hlx_boot_fini(boot);
    return rc;
}
