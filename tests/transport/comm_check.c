/* comm_check: runs every collective on the world and on sub-groups with varied sizes and
 * compares each result with what every peer must have sent (a seeded formula each rank
 * evaluates itself); also a latency benchmark and scripted faults. Ranks come from PMIx
 * only, so any PMIx launcher (or none: a world of one) runs it. */
#define _GNU_SOURCE
#include "hlx_boot.h"
#include "hlx_comm.h"
#include "hlx_time.h"

#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct check_ctx {
    hlx_boot_t *boot;
    int         wrank, wsize;
    long        nchecks, nfail;
} check_ctx_t;

#define CHECK(ctx, cond, ...)                                                       \
    do {                                                                           \
        (ctx)->nchecks++;                                                          \
        if (!(cond)) {                                                             \
            (ctx)->nfail++;                                                        \
            fprintf(stderr, "comm_check rank %d: FAIL %s:%d: ", (ctx)->wrank,        \
                    __FILE__, __LINE__);                                           \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
        }                                                                          \
    } while (0)

/* The seeded formulas: byte k of what world rank src sends to world rank dst in round t
 * of a communicator tagged cid, and how many bytes that is. */
static uint8_t pattern_byte(int cid, int t, int src, int dst, size_t k)
{
    uint64_t x = ((uint64_t)cid * 1000003u) ^ ((uint64_t)t << 40) ^ ((uint64_t)src << 20) ^
                 ((uint64_t)dst << 8) ^ (k * 0x9e3779b97f4a7c15ull);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    return (uint8_t)x;
}

static size_t pattern_count(int t, int src, int dst, size_t scale)
{
    size_t c = (size_t)((src * 131 + dst * 71 + t * 29) % 17);
    if ((src + 2 * dst + t) % 5 == 0)
        c = 0; /* some empty blocks in every round */
    return c * scale;
}

/* A contribution whose sum depends on the order of addition: large and small values. */
static float pattern_float(int t, int rank, size_t i)
{
    uint32_t h = (uint32_t)(rank * 2654435761u) ^ (uint32_t)(i * 40503u) ^ (uint32_t)t;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    float mag = (h & 1) ? 1.0e7f : 1.0e-3f;
    return mag * ((float)(h >> 8) / 16777216.0f - 0.5f);
}

static void fill_block(uint8_t *p, size_t n, int cid, int t, int src, int dst)
{
    size_t k;
    for (k = 0; k < n; k++)
        p[k] = pattern_byte(cid, t, src, dst, k);
}

static size_t first_bad(const uint8_t *p, size_t n, int cid, int t, int src, int dst)
{
    size_t k;
    for (k = 0; k < n; k++)
        if (p[k] != pattern_byte(cid, t, src, dst, k))
            return k;
    return n;
}

/* Prepared buffers of one alltoallv round, so that two rounds can be in flight. */
typedef struct a2a_round {
    hlx_comm_t *comm;
    int         cid, t, n, me;
    size_t     *sc, *sd, *rc, *rd;
    uint8_t    *sbuf, *rbuf;
} a2a_round_t;

static void a2a_prepare(a2a_round_t *a, hlx_comm_t *comm, int cid, int t, size_t scale)
{
    int j, n = hlx_comm_size(comm), me = hlx_comm_rank(comm);
    size_t stot = 0, rtot = 0;

    a->comm = comm;
    a->cid = cid;
    a->t = t;
    a->n = n;
    a->me = me;
    a->sc = calloc((size_t)n * 4, sizeof(size_t));
    a->sd = a->sc + n;
    a->rc = a->sc + 2 * n;
    a->rd = a->sc + 3 * n;
    /* Send blocks in reverse peer order with gaps: displacements are honoured. */
    for (j = n - 1; j >= 0; j--) {
        a->sc[j] = pattern_count(t, me, j, scale);
        a->sd[j] = stot;
        stot += a->sc[j] + 3;
    }
    for (j = 0; j < n; j++) {
        a->rc[j] = pattern_count(t, j, me, scale);
        a->rd[j] = rtot;
        rtot += a->rc[j] + 5;
    }
    a->sbuf = malloc(stot + 1);
    a->rbuf = malloc(rtot + 1);
    memset(a->rbuf, 0xee, rtot + 1);
    for (j = 0; j < n; j++)
        fill_block(a->sbuf + a->sd[j], a->sc[j], cid, t, hlx_comm_world_rank(comm, me),
                   hlx_comm_world_rank(comm, j));
}

static void a2a_verify(check_ctx_t *ctx, const a2a_round_t *a, const char *what)
{
    int j;
    for (j = 0; j < a->n; j++) {
        int ws = hlx_comm_world_rank(a->comm, j), wd = hlx_comm_world_rank(a->comm, a->me);
        size_t bad = first_bad(a->rbuf + a->rd[j], a->rc[j], a->cid, a->t, ws, wd);
        CHECK(ctx, bad == a->rc[j],
              "%s comm %d round %d: block from rank %d (%zu bytes) wrong at byte %zu", what,
              a->cid, a->t, j, a->rc[j], bad);
        /* the gap after the block stays untouched */
        CHECK(ctx, a->rbuf[a->rd[j] + a->rc[j]] == 0xee,
              "%s comm %d round %d: wrote past the block from rank %d", what, a->cid, a->t,
              j);
    }
}

static void a2a_free(a2a_round_t *a)
{
    free(a->sc);
    free(a->sbuf);
    free(a->rbuf);
}

static hlx_status_t run_alltoallv(check_ctx_t *ctx, hlx_comm_t *comm, int cid, int t,
                                  size_t scale)
{
    a2a_round_t a;
    hlx_status_t st;

    a2a_prepare(&a, comm, cid, t, scale);
    st = hlx_comm_alltoallv(comm, a.sbuf, a.sc, a.sd, a.rbuf, a.rc, a.rd);
    CHECK(ctx, st == HLX_OK, "alltoallv comm %d round %d: %s", cid, t, hlx_status_str(st));
    if (st == HLX_OK)
        a2a_verify(ctx, &a, "alltoallv");
    a2a_free(&a);
    return st;
}

/* Two non-blocking rounds on two communicators in flight at once, completed in the
 * opposite order, one by test() polling: tags must keep them apart. */
static hlx_status_t run_ialltoallv_pair(check_ctx_t *ctx, hlx_comm_t *c1, int cid1,
                                        hlx_comm_t *c2, int cid2, int t, size_t scale)
{
    a2a_round_t a, b, a2;
    hlx_comm_req_t *ra, *rb, *ra2;
    hlx_status_t st;
    double t0;

    a2a_prepare(&a, c1, cid1, t, scale);
    a2a_prepare(&a2, c1, cid1, t + 1, scale);
    a2a_prepare(&b, c2, cid2, t, scale);
    st = hlx_comm_ialltoallv(c1, a.sbuf, a.sc, a.sd, a.rbuf, a.rc, a.rd, &ra);
    if (st == HLX_OK)
        st = hlx_comm_ialltoallv(c2, b.sbuf, b.sc, b.sd, b.rbuf, b.rc, b.rd, &rb);
    if (st == HLX_OK)
        st = hlx_comm_ialltoallv(c1, a2.sbuf, a2.sc, a2.sd, a2.rbuf, a2.rc, a2.rd, &ra2);
    CHECK(ctx, st == HLX_OK, "ialltoallv post: %s", hlx_status_str(st));
    if (st == HLX_OK) {
        t0 = hlx_now_s();
        while ((st = hlx_comm_test(ra2)) == HLX_INPROGRESS && hlx_now_s() - t0 < 60)
            ;
        CHECK(ctx, st == HLX_OK, "ialltoallv test(): %s", hlx_status_str(st));
        if (st == HLX_OK)
            st = hlx_comm_wait(rb);
        CHECK(ctx, st == HLX_OK, "ialltoallv wait (second comm): %s", hlx_status_str(st));
        if (st == HLX_OK)
            st = hlx_comm_wait(ra);
        CHECK(ctx, st == HLX_OK, "ialltoallv wait (first comm): %s", hlx_status_str(st));
    }
    if (st == HLX_OK) {
        a2a_verify(ctx, &a, "ialltoallv");
        a2a_verify(ctx, &a2, "ialltoallv");
        a2a_verify(ctx, &b, "ialltoallv");
    }
    a2a_free(&a);
    a2a_free(&a2);
    a2a_free(&b);
    return st;
}

static hlx_status_t run_allgather(check_ctx_t *ctx, hlx_comm_t *comm, int cid, int t,
                                  size_t bytes)
{
    int j, n = hlx_comm_size(comm), me = hlx_comm_rank(comm);
    uint8_t *in = malloc(bytes + 1), *out = malloc((size_t)n * bytes + 1);
    hlx_status_t st;

    /* dst = -1: the same block goes to everyone */
    fill_block(in, bytes, cid, t, hlx_comm_world_rank(comm, me), -1);
    out[(size_t)n * bytes] = 0xee;
    st = hlx_comm_allgather(comm, in, bytes, out);
    CHECK(ctx, st == HLX_OK, "allgather comm %d %zu bytes: %s", cid, bytes,
          hlx_status_str(st));
    for (j = 0; st == HLX_OK && j < n; j++) {
        size_t bad = first_bad(out + (size_t)j * bytes, bytes, cid, t,
                               hlx_comm_world_rank(comm, j), -1);
        CHECK(ctx, bad == bytes, "allgather comm %d %zu bytes: block of rank %d wrong at %zu",
              cid, bytes, j, bad);
    }
    CHECK(ctx, out[(size_t)n * bytes] == 0xee, "allgather wrote past the output");
    free(in);
    free(out);
    return st;
}

static uint64_t fnv(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603ull;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static hlx_status_t run_allreduce(check_ctx_t *ctx, hlx_comm_t *comm, hlx_comm_t *world,
                                  int cid, int t, size_t count)
{
    int j, n = hlx_comm_size(comm), me = hlx_comm_rank(comm);
    float *buf = malloc((count + 1) * sizeof(float)), *ref = malloc((count + 1) * sizeof(float));
    uint64_t h, *hs = malloc((size_t)hlx_comm_size(world) * sizeof(uint64_t));
    size_t i, nbad = 0, firstbad = 0;
    hlx_status_t st;

    for (i = 0; i < count; i++)
        buf[i] = pattern_float(t, hlx_comm_world_rank(comm, me), i);
    /* Reference: the contributions added in communicator rank order, in float. */
    for (i = 0; i < count; i++) {
        float acc = pattern_float(t, hlx_comm_world_rank(comm, 0), i);
        for (j = 1; j < n; j++)
            acc += pattern_float(t, hlx_comm_world_rank(comm, j), i);
        ref[i] = acc;
    }
    st = hlx_comm_allreduce_sum_f32(comm, buf, count);
    CHECK(ctx, st == HLX_OK, "allreduce comm %d count %zu: %s", cid, count,
          hlx_status_str(st));
    if (st == HLX_OK) {
        for (i = 0; i < count; i++)
            if (memcmp(&buf[i], &ref[i], sizeof(float)) && nbad++ == 0)
                firstbad = i;
        CHECK(ctx, nbad == 0,
              "allreduce comm %d count %zu: %zu elements differ from the rank-order sum, "
              "first [%zu] %.9g vs %.9g", cid, count, nbad, firstbad,
              nbad ? buf[firstbad] : 0.0, nbad ? ref[firstbad] : 0.0);
        /* bitwise equal across every rank of the world (not only of comm) */
        h = fnv(buf, count * sizeof(float));
        st = hlx_comm_allgather(comm, &h, sizeof(h), hs);
        CHECK(ctx, st == HLX_OK, "allreduce hash exchange: %s", hlx_status_str(st));
        for (j = 0; st == HLX_OK && j < n; j++)
            CHECK(ctx, hs[j] == h, "allreduce comm %d count %zu: rank %d has a different "
                  "result", cid, count, j);
    }
    free(buf);
    free(ref);
    free(hs);
    return st;
}

/* The runtime's embedding rows (docs/architecture.md, "The embedding"): element i has one
 * owner (rank i mod n of comm), whose value it is, and every other rank contributes -0.0;
 * the sum must be the owner's value bit for bit on every rank, in whatever order the
 * algorithm adds: signed zeros, infinities, a quiet NaN's payload, subnormals, the largest
 * float. */
static hlx_status_t run_allreduce_owned(check_ctx_t *ctx, hlx_comm_t *comm, int cid,
                                        size_t count)
{
    static const uint32_t vals[] = { 0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
                                     0x7fc01234u, 0x00000001u, 0x80000001u, 0x3f800000u,
                                     0xc0600000u, 0x7f7fffffu, 0x007fffffu };
    const size_t nv = sizeof(vals) / sizeof(vals[0]);
    int n = hlx_comm_size(comm), me = hlx_comm_rank(comm);
    uint32_t *buf = malloc((count + 1) * sizeof(uint32_t));
    size_t i, nbad = 0, firstbad = 0;
    hlx_status_t st;

    for (i = 0; i < count; i++)
        buf[i] = (int)(i % (size_t)n) == me ? vals[(i / (size_t)n) % nv] : 0x80000000u;
    st = hlx_comm_allreduce_sum_f32(comm, (float *)buf, count);
    CHECK(ctx, st == HLX_OK, "owned allreduce comm %d count %zu: %s", cid, count,
          hlx_status_str(st));
    for (i = 0; st == HLX_OK && i < count; i++)
        if (buf[i] != vals[(i / (size_t)n) % nv] && nbad++ == 0)
            firstbad = i;
    CHECK(ctx, nbad == 0, "owned allreduce comm %d count %zu: %zu elements are not their "
          "owner's bits, first [%zu] 0x%08x vs 0x%08x", cid, count, nbad, firstbad,
          nbad ? buf[firstbad] : 0u, nbad ? vals[(firstbad / (size_t)n) % nv] : 0u);
    free(buf);
    return st;
}

/* The bootstrap all-gather returns every rank's record in rank order, and refuses a key
 * used before. */
static void run_boot_checks(check_ctx_t *ctx)
{
    int n = ctx->wsize, j;
    uint64_t mine[3], *all = calloc((size_t)n * 3, sizeof(uint64_t));
    hlx_status_t st;

    for (j = 0; j < 3; j++)
        mine[j] = (uint64_t)ctx->wrank * 1000 + (uint64_t)j;
    st = hlx_boot_allgather(ctx->boot, "check.record", mine, sizeof(mine), all);
    CHECK(ctx, st == HLX_OK, "boot allgather: %s", hlx_status_str(st));
    for (j = 0; st == HLX_OK && j < n * 3; j++)
        CHECK(ctx, all[j] == (uint64_t)(j / 3) * 1000 + (uint64_t)(j % 3),
              "boot allgather: word %d is %llu", j, (unsigned long long)all[j]);
    st = hlx_boot_allgather(ctx->boot, "check.record", mine, sizeof(mine), all);
    CHECK(ctx, st == HLX_ERR_INVALID, "boot allgather with a used key: %s",
          hlx_status_str(st));
    st = hlx_boot_barrier(ctx->boot);
    CHECK(ctx, st == HLX_OK, "boot barrier: %s", hlx_status_str(st));
    free(all);
}

static int run_checks(check_ctx_t *ctx, hlx_comm_t *world)
{
    static const size_t a2a_scales[] = { 1, 8, 200, 4096, 65536 };
    static const size_t ag_sizes[] = { 0, 1, 13, 4096, 300000 };
    static const size_t ar_counts[] = { 0, 1, 3, 1000, 8192, 8193, 65537, 262144 };
    hlx_comm_t *subs[3] = { NULL, NULL, NULL };
    int cids[3] = { 10, 11, 12 };
    int n = ctx->wsize, me = ctx->wrank, i, c, t = 0;
    int *ranks = malloc((size_t)n * sizeof(int)), nr = 0;
    hlx_status_t st;
    size_t k;

    /* sub 0: ranks of my parity; sub 1: the world reversed; sub 2: just me */
    for (i = me % 2; i < n; i += 2)
        ranks[nr++] = i;
    st = hlx_comm_sub(world, ranks, nr, &subs[0]);
    CHECK(ctx, st == HLX_OK, "sub parity: %s", hlx_status_str(st));
    for (i = 0; i < n; i++)
        ranks[i] = n - 1 - i;
    st = hlx_comm_sub(world, ranks, n, &subs[1]);
    CHECK(ctx, st == HLX_OK, "sub reversed: %s", hlx_status_str(st));
    if (st == HLX_OK)
        CHECK(ctx, hlx_comm_rank(subs[1]) == n - 1 - me, "reversed sub: rank %d, expected %d",
              hlx_comm_rank(subs[1]), n - 1 - me);
    st = hlx_comm_sub(world, &me, 1, &subs[2]);
    CHECK(ctx, st == HLX_OK, "sub self: %s", hlx_status_str(st));
    /* a rank not in the list is refused */
    if (n > 1) {
        int other = (me + 1) % n;
        hlx_comm_t *bad = NULL;
        CHECK(ctx, hlx_comm_sub(world, &other, 1, &bad) == HLX_ERR_INVALID,
              "sub without the caller accepted");
    }
    free(ranks);
    if (ctx->nfail)
        goto out;

    for (k = 0; k < sizeof(a2a_scales) / sizeof(a2a_scales[0]); k++, t++) {
        if (run_alltoallv(ctx, world, 1, t, a2a_scales[k]) != HLX_OK)
            goto out;
        for (c = 0; c < 3; c++)
            if (run_alltoallv(ctx, subs[c], cids[c], t, a2a_scales[k]) != HLX_OK)
                goto out;
    }
    for (k = 0; k < 3; k++, t += 2)
        if (run_ialltoallv_pair(ctx, world, 1, subs[1], cids[1], t, a2a_scales[k + 1]) !=
            HLX_OK)
            goto out;
    for (k = 0; k < sizeof(ag_sizes) / sizeof(ag_sizes[0]); k++, t++) {
        if (run_allgather(ctx, world, 1, t, ag_sizes[k]) != HLX_OK)
            goto out;
        for (c = 0; c < 3; c++)
            if (run_allgather(ctx, subs[c], cids[c], t, ag_sizes[k]) != HLX_OK)
                goto out;
    }
    for (k = 0; k < sizeof(ar_counts) / sizeof(ar_counts[0]); k++, t++) {
        if (run_allreduce(ctx, world, world, 1, t, ar_counts[k]) != HLX_OK)
            goto out;
        for (c = 0; c < 3; c++)
            if (run_allreduce(ctx, subs[c], world, cids[c], t, ar_counts[k]) != HLX_OK)
                goto out;
    }
    for (k = 0; k < sizeof(ar_counts) / sizeof(ar_counts[0]); k++) {
        if (run_allreduce_owned(ctx, world, 1, ar_counts[k]) != HLX_OK)
            goto out;
        for (c = 0; c < 3; c++)
            if (run_allreduce_owned(ctx, subs[c], cids[c], ar_counts[k]) != HLX_OK)
                goto out;
    }
    for (c = 0; c < 3; c++) {
        st = hlx_comm_barrier(subs[c]);
        CHECK(ctx, st == HLX_OK, "barrier sub %d: %s", c, hlx_status_str(st));
    }
    st = hlx_comm_barrier(world);
    CHECK(ctx, st == HLX_OK, "barrier world: %s", hlx_status_str(st));
out:
    for (c = 2; c >= 0; c--)
        hlx_comm_destroy(subs[c]);
    return ctx->nfail ? 1 : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median and best latency in microseconds of iters back-to-back operations. */
static void bench_report(hlx_comm_t *world, const char *op, size_t bytes, double *times,
                         int iters)
{
    qsort(times, (size_t)iters, sizeof(double), cmp_double);
    if (hlx_comm_rank(world) == 0)
        printf("%-10s ranks %d  %8zu B  median %8.1f us  best %8.1f us\n", op,
               hlx_comm_size(world), bytes, times[iters / 2] * 1e6, times[0] * 1e6);
}

static int run_bench(hlx_comm_t *world, int iters)
{
    static const size_t a2a_bytes[] = { 256, 4096, 65536 };
    static const size_t ar_bytes[] = { 4096, 65536, 1048576 };
    int n = hlx_comm_size(world), i, j, warm = iters / 10 + 2;
    double *times = malloc((size_t)(iters + warm) * sizeof(double));
    size_t k, *cnt = calloc((size_t)n * 2, sizeof(size_t));
    hlx_status_t st = HLX_OK;

    if (hlx_comm_rank(world) == 0)
        printf("# %d ranks, backend %s, %d iterations after %d warm-up\n", n,
               hlx_comm_backend(world), iters, warm);
    for (k = 0; k < sizeof(a2a_bytes) / sizeof(a2a_bytes[0]) && st == HLX_OK; k++) {
        uint8_t *s = calloc((size_t)n, a2a_bytes[k]), *r = calloc((size_t)n, a2a_bytes[k]);
        for (j = 0; j < n; j++) {
            cnt[j] = a2a_bytes[k];
            cnt[n + j] = (size_t)j * a2a_bytes[k];
        }
        hlx_comm_barrier(world);
        for (i = 0; i < iters + warm && st == HLX_OK; i++) {
            double t0 = hlx_now_s();
            st = hlx_comm_alltoallv(world, s, cnt, cnt + n, r, cnt, cnt + n);
            if (i >= warm)
                times[i - warm] = hlx_now_s() - t0;
        }
        if (st == HLX_OK)
            bench_report(world, "alltoallv", a2a_bytes[k], times, iters);
        free(s);
        free(r);
    }
    for (k = 0; k < sizeof(ar_bytes) / sizeof(ar_bytes[0]) && st == HLX_OK; k++) {
        float *b = calloc(ar_bytes[k] / sizeof(float), sizeof(float));
        hlx_comm_barrier(world);
        for (i = 0; i < iters + warm && st == HLX_OK; i++) {
            double t0 = hlx_now_s();
            st = hlx_comm_allreduce_sum_f32(world, b, ar_bytes[k] / sizeof(float));
            if (i >= warm)
                times[i - warm] = hlx_now_s() - t0;
        }
        if (st == HLX_OK)
            bench_report(world, "allreduce", ar_bytes[k], times, iters);
        free(b);
    }
    free(times);
    free(cnt);
    return st == HLX_OK ? 0 : 1;
}

/* Scripted faults. The victim rank skips one operation; every other rank must get the
 * expected error within the deadline and exits 3 with a line the driver checks. */
static double busy_s = 3;

/* Non-zero when inode is one of this process's sockets. */
static int own_socket(unsigned long inode)
{
    char path[64], target[64], want[48];
    ssize_t n;
    int fd;

    snprintf(want, sizeof(want), "socket:[%lu]", inode);
    for (fd = 0; fd < 4096; fd++) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        n = readlink(path, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (!strcmp(target, want))
            return 1;
    }
    return 0;
}

/* Every TCP socket this process listens on (/proc/net/tcp, tcp6: state 0A) must be bound
 * to loopback (127.0.0.0/8, ::1): a one-host job opens no network interface. */
static void check_listeners(check_ctx_t *ctx)
{
    static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
    char line[512], local[64];
    unsigned long inode;
    unsigned st;
    int f, found = 0;

    for (f = 0; f < 2; f++) {
        FILE *fp = fopen(files[f], "r");
        if (fp == NULL)
            continue;
        if (fgets(line, sizeof(line), fp) == NULL) { /* header */
            fclose(fp);
            continue;
        }
        while (fgets(line, sizeof(line), fp)) {
            int loop;
            if (sscanf(line, " %*d: %63[0-9A-Fa-f:] %*s %x %*s %*s %*s %*s %*s %lu", local, &st,
                       &inode) != 3 || st != 0x0A || !own_socket(inode))
                continue;
            found++;
            /* IPv4 is little-endian hex: 127.x.x.x ends in "7F:port"; ::1 is 0..01000000 */
            loop = f == 0 ? !strncmp(local + 6, "7F", 2)
                          : !strncmp(local, "0000000000000000FFFF0000", 24)
                                ? !strncmp(local + 30, "7F", 2)
                                : !strncmp(local, "00000000000000000000000001000000", 32);
            CHECK(ctx, loop, "listening on a non-loopback address: %s (%s)", local, files[f]);
        }
        fclose(fp);
    }
    if (ctx->wrank == 0)
        printf("comm_check: rank 0 listens on %d TCP socket(s)\n", found);
}

/* --links MODE: the link class this rank gives to world rank r (NULL mode: none given,
 * the transport derives it from the host names). The modes that must be refused: asym
 * (rank 0 sees rank 1 as nvlink, rank 1 sees rank 0 as tcp, every other pair nvlink),
 * derived (rank 1 gives no links, so derives shm on this host; the others give tcp) and bad
 * (rank 2 gives class 42 for rank 0). */
static hlx_link_t links_for(const char *mode, int me, int r)
{
    if (r == me)
        return HLX_LINK_SELF;
    if (!strcmp(mode, "tcp") || !strcmp(mode, "derived"))
        return HLX_LINK_TCP;
    if (!strcmp(mode, "asym"))
        return me == 1 && r == 0 ? HLX_LINK_TCP : HLX_LINK_NVLINK;
    if (!strcmp(mode, "bad"))
        return me == 2 && r == 0 ? (hlx_link_t)42 : HLX_LINK_NVLINK;
    if (!strcmp(mode, "nvlink"))
        return HLX_LINK_NVLINK;
    /* mixed: same parity shares memory, different parity goes over the network */
    return (r - me) % 2 ? HLX_LINK_TCP : HLX_LINK_SHM;
}

/* Every peer got the link class asked for (or, from host names, shm: one host here) and
 * the backend of that class, fixed at creation. */
static void check_links(check_ctx_t *ctx, hlx_comm_t *world, const char *mode)
{
    int r;

    for (r = 0; r < ctx->wsize; r++) {
        hlx_link_t want = mode ? links_for(mode, ctx->wrank, r)
                               : r == ctx->wrank ? HLX_LINK_SELF : HLX_LINK_SHM;
        const char *be = want == HLX_LINK_SELF ? "self"
                         : (want == HLX_LINK_TCP || want == HLX_LINK_RDMA) ? "ucx-net"
                                                                           : "ucx-shm";
        const char *got = hlx_comm_peer_backend(world, r);
        CHECK(ctx, hlx_comm_peer_link(world, r) == want, "rank %d: link class %d, expected %d",
              r, (int)hlx_comm_peer_link(world, r), (int)want);
        CHECK(ctx, got && !strcmp(got, be), "rank %d: backend %s, expected %s", r,
              got ? got : "(none)", be);
    }
}

static int run_fault(check_ctx_t *ctx, hlx_comm_t *world, const char *fault, int victim,
                     double timeout)
{
    size_t n = (size_t)ctx->wsize, j, *cnt = calloc(n * 2, sizeof(size_t));
    uint8_t s[64 * 16] = { 0 }, r[64 * 16];
    hlx_status_t st;
    double t0, el;

    for (j = 0; j < n && j < 16; j++) {
        cnt[j] = 64;
        cnt[n + j] = j * 64;
    }
    /* one good round first: the fault hits a communicator that works */
    st = hlx_comm_alltoallv(world, s, cnt, cnt + n, r, cnt, cnt + n);
    if (st != HLX_OK) {
        fprintf(stderr, "comm_check rank %d: warm-up alltoallv failed: %s\n", ctx->wrank,
                hlx_status_str(st));
        return 1;
    }
    if (!strcmp(fault, "busy")) {
        /* The victim computes (sleeps) outside the transport for longer than the
         * heartbeat timeout: its heartbeat thread must keep it alive for the others. */
        if (ctx->wrank == victim)
            usleep((useconds_t)(busy_s * 1e6));
        t0 = hlx_now_s();
        st = hlx_comm_alltoallv(world, s, cnt, cnt + n, r, cnt, cnt + n);
        if (st == HLX_OK)
            st = hlx_comm_barrier(world);
        free(cnt);
        if (st != HLX_OK) {
            fprintf(stderr, "comm_check rank %d: a rank busy for %.1f s outside the "
                    "transport was declared lost: %s\n", ctx->wrank, busy_s,
                    hlx_status_str(st));
            return 1;
        }
        if (ctx->wrank == 0)
            printf("comm_check: busy rank %d (%.1f s) kept alive by its heartbeats\n",
                   victim, busy_s);
        return 0;
    }
    if (ctx->wrank == victim) {
        if (!strcmp(fault, "kill"))
            raise(SIGKILL); /* dies without closing anything */
        if (!strcmp(fault, "stop"))
            raise(SIGSTOP); /* alive but silent: only the heartbeats can tell */
        /* skip: stay alive and silent past the others' deadline */
        usleep((useconds_t)((timeout * 3 + 1) * 1e6));
        return 0;
    }
    t0 = hlx_now_s();
    st = hlx_comm_alltoallv(world, s, cnt, cnt + n, r, cnt, cnt + n);
    el = hlx_now_s() - t0;
    if (st == HLX_OK) {
        fprintf(stderr, "comm_check rank %d: alltoallv succeeded without rank %d\n",
                ctx->wrank, victim);
        return 1;
    }
    /* a later operation must refuse at once instead of hanging */
    t0 = hlx_now_s();
    if (hlx_comm_barrier(world) == HLX_OK || hlx_now_s() - t0 > 0.5) {
        fprintf(stderr, "comm_check rank %d: communicator still usable after failure\n",
                ctx->wrank);
        return 1;
    }
    fprintf(stderr, "comm_check rank %d: expected failure: alltoallv returned \"%s\" after "
            "%.2f s (deadline %.2f s)\n", ctx->wrank, hlx_status_str(st), el, timeout);
    free(cnt);
    return 3;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: comm_check [--bench] [--iters N] [--timeout S] [--fault skip|kill|boot]\n"
            "                  [--victim R]\n"
            "Checks every collective of the transport against a seeded reference on the\n"
            "world and on sub-groups; ranks come from PMIx (no launcher: a world of one).\n"
            "  --bench        latency of alltoallv and allreduce instead of checks\n"
            "  --iters N      benchmark iterations (default 200)\n"
            "  --timeout S    communicator and bootstrap deadline in s (default: the\n"
            "                 HELIX_COMM_TIMEOUT setting)\n"
            "  --fault F      skip: rank R skips an alltoallv; kill: rank R dies before it;\n"
            "                 boot: rank R never joins the bootstrap all-gather;\n"
            "                 stop: rank R stops itself (SIGSTOP) before it;\n"
            "                 busy: rank R sleeps --busy S outside the transport, then all\n"
            "                 must succeed (exit 0).\n"
            "  --busy S       sleep of --fault busy (default 3)\n"
            "  --links MODE   give the communicator link classes: tcp (every peer), nvlink,\n"
            "                 mixed (same parity shm, else tcp); default: from host names.\n"
            "                 The backend of every peer is checked against its class.\n"
            "                 asym, derived, bad (3 ranks or more): classes the ranks\n"
            "                 disagree on, which world creation must refuse everywhere\n"
            "  --check-listen also check that every TCP listener of this process is bound\n"
            "                 to loopback (a one-host job)\n"
            "                 The other ranks exit 3 after the expected error.\n"
            "  --victim R     rank for --fault (default: the last rank)\n"
            "Example: mpirun --oversubscribe -n 4 comm_check --bench\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "bench", no_argument, NULL, 'b' },   { "iters", required_argument, NULL, 'i' },
        { "timeout", required_argument, NULL, 't' },
        { "fault", required_argument, NULL, 'f' },
        { "victim", required_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
        { "busy", required_argument, NULL, 'B' },
        { "links", required_argument, NULL, 'L' },
        { "check-listen", no_argument, NULL, 'l' },
        { NULL, 0, NULL, 0 },
    };
    hlx_comm_params_t params;
    hlx_boot_info_t info;
    check_ctx_t ctx = { 0 };
    hlx_comm_t *world = NULL;
    const char *fault = NULL, *links_mode = NULL;
    hlx_link_t *links = NULL;
    int bench = 0, iters = 200, victim = -1, c, rc, listen_check = 0, refused = 0;
    char *end;
    hlx_status_t st;

    hlx_comm_params_default(&params);
    while ((c = getopt_long(argc, argv, "bi:t:f:v:hB:L:l", opts, NULL)) != -1) {
        switch (c) {
        case 'b': bench = 1; break;
        case 'i':
            iters = (int)strtol(optarg, &end, 10);
            if (*end || iters < 1) {
                fprintf(stderr, "comm_check: --iters: \"%s\" is not a positive integer\n",
                        optarg);
                return 2;
            }
            break;
        case 't':
            params.timeout_s = strtod(optarg, &end);
            if (*end || !(params.timeout_s > 0)) {
                fprintf(stderr, "comm_check: --timeout: \"%s\" is not a positive number\n",
                        optarg);
                return 2;
            }
            break;
        case 'f':
            fault = optarg;
            if (strcmp(fault, "skip") && strcmp(fault, "kill") && strcmp(fault, "boot") &&
                strcmp(fault, "stop") && strcmp(fault, "busy")) {
                fprintf(stderr, "comm_check: --fault: \"%s\" is not skip, kill, stop, busy "
                        "or boot\n", optarg);
                return 2;
            }
            break;
        case 'v': victim = atoi(optarg); break;
        case 'l': listen_check = 1; break;
        case 'L':
            links_mode = optarg;
            if (strcmp(optarg, "tcp") && strcmp(optarg, "nvlink") && strcmp(optarg, "mixed") &&
                strcmp(optarg, "asym") && strcmp(optarg, "derived") && strcmp(optarg, "bad")) {
                fprintf(stderr, "comm_check: --links: \"%s\" is not tcp, nvlink, mixed, asym, "
                        "derived or bad\n", optarg);
                return 2;
            }
            refused = !strcmp(optarg, "asym") || !strcmp(optarg, "derived") ||
                      !strcmp(optarg, "bad");
            break;
        case 'B':
            busy_s = strtod(optarg, &end);
            if (*end || !(busy_s >= 0 && busy_s <= 3600)) {
                fprintf(stderr, "comm_check: --busy: \"%s\" is not 0..3600 s\n", optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }

    st = hlx_boot_init(params.timeout_s, &ctx.boot);
    if (st != HLX_OK) {
        fprintf(stderr, "comm_check: bootstrap failed: %s\n", hlx_status_str(st));
        return hlx_status_exit_code(st);
    }
    hlx_boot_get_info(ctx.boot, &info);
    ctx.wrank = info.rank;
    ctx.wsize = info.size;
    if (victim < 0)
        victim = info.size - 1;

    if (fault && !strcmp(fault, "boot")) {
        double t0 = hlx_now_s();
        int x = info.rank, *all = calloc((size_t)info.size, sizeof(int));
        if (info.rank == victim) {
            usleep((useconds_t)((params.timeout_s * 3 + 1) * 1e6));
            hlx_boot_fini(ctx.boot);
            return 0;
        }
        st = hlx_boot_allgather(ctx.boot, "check.boot", &x, sizeof(x), all);
        free(all);
        if (st == HLX_OK) {
            fprintf(stderr, "comm_check rank %d: bootstrap all-gather succeeded without "
                    "rank %d\n", info.rank, victim);
            return 1;
        }
        fprintf(stderr, "comm_check rank %d: expected failure: bootstrap all-gather returned "
                "\"%s\" after %.2f s\n", info.rank, hlx_status_str(st), hlx_now_s() - t0);
        return 3;
    }

    if (links_mode != NULL && !(!strcmp(links_mode, "derived") && info.rank == 1)) {
        links = calloc((size_t)info.size, sizeof(*links));
        for (c = 0; links && c < info.size; c++)
            links[c] = links_for(links_mode, info.rank, c);
        params.links = links;
    }
    st = hlx_comm_world(ctx.boot, &params, &world);
    free(links);
    params.links = NULL;
    if (st != HLX_OK) {
        fprintf(stderr, "comm_check rank %d: world communicator failed: %s\n", info.rank,
                hlx_status_str(st));
        hlx_boot_fini(ctx.boot);
        return hlx_status_exit_code(st);
    }
    if (refused) {
        fprintf(stderr, "comm_check rank %d: world created although --links %s gives "
                "disagreeing link classes\n", info.rank, links_mode);
        fflush(stderr);
        _exit(1); /* the others may be failing: no collective teardown */
    }
    if (fault) {
        rc = run_fault(&ctx, world, fault, victim, params.timeout_s);
        if (rc == 3) {
            /* The job is broken on purpose: leave without the collective teardown. */
            fflush(stderr);
            _exit(3);
        }
    } else if (bench) {
        rc = run_bench(world, iters);
    } else {
        run_boot_checks(&ctx);
        check_links(&ctx, world, links_mode);
        if (listen_check)
            check_listeners(&ctx);
        rc = run_checks(&ctx, world);
        if (info.rank == 0 || rc != 0)
            printf("comm_check rank %d of %d (launcher %s, backend %s): %ld checks, %ld "
                   "failed\n", info.rank, info.size, info.launcher, hlx_comm_backend(world),
                   ctx.nchecks, ctx.nfail);
    }
    hlx_comm_destroy(world);
    hlx_boot_fini(ctx.boot);
    return rc;
}
