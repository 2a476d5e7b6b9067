/* Persistent thread pool for several cores per rank: threads created once and pinned, a
 * call hands every thread its share (attention as a KV split with the exact merge, GEMM
 * over output columns) and returns when all are done. Pure compute: no deadlines. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np, syscall */
#endif
#include "hlx_kernels_priv.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HLX_POOL_PAUSE() _mm_pause()
#else
#define HLX_POOL_PAUSE() ((void)0)
#endif

/* Spins before a worker sleeps on the futex (a decode step calls the pool many times in a
 * row; sleeping between calls would add a wake-up latency to each). */
#define HLX_POOL_SPIN 20000

/* Jobs: gen is bumped by 2 per job (the futex word); its low bit says the kind: 0 = every
 * thread runs fn once (hlx_pool_run), 1 = chunks claimed one at a time by whichever thread
 * comes first (attention and GEMM splits): a late or descheduled worker then costs nothing,
 * the caller takes its chunks, and the caller waits only for chunks a worker has started. */
struct hlx_pool {
    int              nthreads;
    pthread_t       *threads;
    _Atomic uint32_t gen;      /* the futex word: 2 x job number + kind */
    _Atomic int      pending;  /* run-on-every-thread jobs: workers still running */
    _Atomic int      sleepers; /* workers in (or entering) the futex wait */
    _Atomic int      stop;
    /* chunked jobs: claim = (gen << 32) | next chunk; a claim for an older gen fails */
    _Atomic uint64_t claim;
    _Atomic uint32_t done;     /* chunks finished in the current job */
    _Atomic uint32_t nchunks;
    void (*_Atomic   fn)(void *arg, int t, int nt);
    void *_Atomic    arg;
};

typedef struct hlx_pool_start {
    hlx_pool_t *pool;
    int         t;
} hlx_pool_start_t;

static void hlx_futex_wait(_Atomic uint32_t *w, uint32_t val)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void hlx_futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

/* Claims and runs chunks of job g until none is left (or a later job has started). */
static void hlx_pool_chunks(hlx_pool_t *pool, uint32_t g)
{
    for (;;) {
        uint64_t c = atomic_load_explicit(&pool->claim, memory_order_acquire);
        void (*fn)(void *, int, int);
        void *arg;
        uint32_t n;
        if ((uint32_t)(c >> 32) != g)
            return;
        /* read before the claim: if the job changed since, the claim below fails */
        fn = atomic_load_explicit(&pool->fn, memory_order_relaxed);
        arg = atomic_load_explicit(&pool->arg, memory_order_relaxed);
        n = atomic_load_explicit(&pool->nchunks, memory_order_relaxed);
        if ((uint32_t)c >= n)
            return;
        if (!atomic_compare_exchange_weak_explicit(&pool->claim, &c, c + 1,
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        fn(arg, (int)(uint32_t)c, (int)n);
        atomic_fetch_add_explicit(&pool->done, 1, memory_order_release);
    }
}

static void *hlx_pool_main(void *p)
{
    hlx_pool_start_t st = *(hlx_pool_start_t *)p;
    hlx_pool_t *pool = st.pool;
    uint32_t seen = 0;

    free(p);
    for (;;) {
        uint32_t g;
        int spins = 0;
        while ((g = atomic_load_explicit(&pool->gen, memory_order_acquire)) == seen) {
            if (++spins < HLX_POOL_SPIN) {
                HLX_POOL_PAUSE();
                continue;
            }
            atomic_fetch_add(&pool->sleepers, 1); /* seq_cst: pairs with the caller's check */
            hlx_futex_wait(&pool->gen, seen);
            atomic_fetch_sub(&pool->sleepers, 1);
        }
        seen = g;
        if (atomic_load_explicit(&pool->stop, memory_order_acquire))
            return NULL;
        if (g & 1u) {
            hlx_pool_chunks(pool, g);
            continue;
        }
        atomic_load_explicit(&pool->fn, memory_order_relaxed)(
            atomic_load_explicit(&pool->arg, memory_order_relaxed), st.t, pool->nthreads);
        atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel);
    }
}

/* Starts job kind (0 every thread, 1 chunks): the workers see the new gen; a futex wake only
 * when one of them sleeps. Returns the job's gen. */
static uint32_t hlx_pool_start(hlx_pool_t *pool, uint32_t kind)
{
    uint32_t g = (atomic_load_explicit(&pool->gen, memory_order_relaxed) + 2u) & ~1u;

    g |= kind;
    if (kind)
        atomic_store_explicit(&pool->claim, (uint64_t)g << 32, memory_order_release);
    atomic_store(&pool->gen, g); /* seq_cst: pairs with the workers' sleepers count */
    if (atomic_load(&pool->sleepers) > 0)
        hlx_futex_wake(&pool->gen);
    return g;
}

static int hlx_pool_pin(pthread_t th, int core)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    return pthread_setaffinity_np(th, sizeof(set), &set);
}

hlx_status_t hlx_pool_create(int nthreads, const int *cores, hlx_pool_t **pool_p)
{
    hlx_pool_t *pool;
    int t;

    *pool_p = NULL;
    if (nthreads < 1 || nthreads > HLX_POOL_MAX)
        return HLX_ERR_INVALID;
    if (cores != NULL)
        for (t = 0; t < nthreads; t++)
            if (cores[t] < 0 || cores[t] >= CPU_SETSIZE)
                return HLX_ERR_INVALID;
    pool = calloc(1, sizeof(*pool));
    if (pool == NULL)
        return HLX_ERR_NOMEM;
    pool->nthreads = nthreads;
    pool->threads = calloc((size_t)nthreads, sizeof(pthread_t));
    if (pool->threads == NULL) {
        free(pool);
        return HLX_ERR_NOMEM;
    }
    if (cores != NULL && hlx_pool_pin(pthread_self(), cores[0]) != 0) {
        free(pool->threads);
        free(pool);
        return HLX_ERR_INVALID;
    }
    for (t = 1; t < nthreads; t++) {
        hlx_pool_start_t *st = malloc(sizeof(*st));
        pthread_attr_t attr;
        int rc;
        if (st == NULL)
            break;
        st->pool = pool;
        st->t = t;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, (size_t)8 << 20); /* the kernels keep ~150 KB */
        rc = pthread_create(&pool->threads[t], &attr, hlx_pool_main, st);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            free(st);
            break;
        }
        if (cores != NULL && hlx_pool_pin(pool->threads[t], cores[t]) != 0) {
            pool->nthreads = t + 1;
            hlx_pool_destroy(pool);
            return HLX_ERR_INVALID;
        }
    }
    if (t < nthreads) {
        pool->nthreads = t;
        hlx_pool_destroy(pool);
        return HLX_ERR_NOMEM;
    }
    *pool_p = pool;
    return HLX_OK;
}

void hlx_pool_destroy(hlx_pool_t *pool)
{
    int t;

    if (pool == NULL)
        return;
    atomic_store_explicit(&pool->stop, 1, memory_order_release);
    atomic_fetch_add(&pool->gen, 2);
    hlx_futex_wake(&pool->gen);
    for (t = 1; t < pool->nthreads; t++)
        pthread_join(pool->threads[t], NULL);
    free(pool->threads);
    free(pool);
}

int hlx_pool_size(const hlx_pool_t *pool)
{
    return pool ? pool->nthreads : 1;
}

void hlx_pool_run(hlx_pool_t *pool, void (*fn)(void *arg, int t, int nt), void *arg)
{
    int spins = 0;

    if (pool == NULL || pool->nthreads == 1) {
        fn(arg, 0, 1);
        return;
    }
    atomic_store_explicit(&pool->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&pool->arg, arg, memory_order_relaxed);
    atomic_store_explicit(&pool->pending, pool->nthreads - 1, memory_order_relaxed);
    hlx_pool_start(pool, 0);
    fn(arg, 0, pool->nthreads);
    /* the others have equal shares and finish about now */
    while (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0)
        if (++spins % 1024 == 0)
            sched_yield();
        else
            HLX_POOL_PAUSE();
}

/* fn(arg, i, n) for every chunk i < n, each claimed by whichever thread comes first; returns
 * when all are done. */
static void hlx_pool_for(hlx_pool_t *pool, void (*fn)(void *arg, int i, int n), void *arg,
                         int n)
{
    int spins = 0, i;
    uint32_t g;

    if (pool == NULL || pool->nthreads == 1) {
        for (i = 0; i < n; i++)
            fn(arg, i, n);
        return;
    }
    atomic_store_explicit(&pool->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&pool->arg, arg, memory_order_relaxed);
    atomic_store_explicit(&pool->nchunks, (uint32_t)n, memory_order_relaxed);
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    g = hlx_pool_start(pool, 1);
    hlx_pool_chunks(pool, g);
    /* only chunks a worker claimed are left: wait for those */
    while (atomic_load_explicit(&pool->done, memory_order_acquire) < (uint32_t)n)
        if (++spins % 1024 == 0)
            sched_yield();
        else
            HLX_POOL_PAUSE();
}

/* ---- attention split over the KV sequence ---- */

/* Chunks per thread of a split: more chunks than threads, so a thread that starts late (a
 * sleeping worker's wake-up, a core shared with another process) leaves its share to the
 * others instead of holding up the call. The chunking depends only on the sizes and T,
 * never on timing, so results are the same from run to run. */
#define HLX_POOL_CHUNKS 4

/* Where the chunks' partials go in work: each chunk's o on pages of its own, a free page
 * after it. The kernels accumulate o in memory block by block, so every line of a partial
 * is written by its thread all through the chunk. Two partials back to back made the
 * thread of one pay for the other's lines: sharing a line (work not 64-byte aligned, as
 * malloc gives it) made a two-thread call at group 4, head 32 as slow as one thread (4.0
 * ms against 2.1 at 1M tokens, AMD EPYC Zen 5); on lines of their own but in one page, the
 * thread of every other chunk still ran 10-25% slower at group 8, head 128 (14-16 ms a
 * call against 12.2-12.8 with a page between them; the hardware prefetchers, which stay
 * within a 4 KiB page, reaching the next partial is the likely cause). o_i at base + i *
 * ostride, lse_i at base + n * ostride + i * group; compacted to the merge's layout
 * (o_parts[n][group][dv], lse_parts[n][group]) after the chunks. */
#define HLX_POOL_PAGE_FLOATS 1024
#define HLX_POOL_PAGE_BYTES  ((uintptr_t)HLX_POOL_PAGE_FLOATS * sizeof(float))

static size_t hlx_pool_attn_ostride(const hlx_attn_desc_t *d)
{
    const size_t gd = (size_t)d->group * (size_t)d->dv;
    return (gd + HLX_POOL_PAGE_FLOATS - 1) / HLX_POOL_PAGE_FLOATS * HLX_POOL_PAGE_FLOATS +
           HLX_POOL_PAGE_FLOATS;
}

typedef struct hlx_pool_attn_job {
    const hlx_kernels_t   *k;
    const hlx_attn_desc_t *d;
    float                 *base;    /* work, 4 KiB aligned */
    size_t                 ostride; /* floats between the chunks' o (whole pages) */
    size_t                 chunk;   /* tokens per chunk, a multiple of the layout's blocks */
} hlx_pool_attn_job_t;

static size_t hlx_pool_attn_align(const hlx_kernels_t *k)
{
    size_t a = 32; /* also the tile path's block */
    if ((size_t)k->kv_layout.k_block > a)
        a = (size_t)k->kv_layout.k_block;
    if ((size_t)k->kv_layout.v_block > a)
        a = (size_t)k->kv_layout.v_block;
    return a;
}

static void hlx_pool_attn_part(void *arg, int i, int n)
{
    const hlx_pool_attn_job_t *j = arg;
    const hlx_attn_desc_t *d = j->d;
    const size_t es = (size_t)hlx_dtype_bytes(d->kv_dtype);
    size_t j0 = (size_t)i * j->chunk, j1 = j0 + j->chunk;
    hlx_attn_desc_t p = *d;

    if (j0 > d->len)
        j0 = d->len;
    if (j1 > d->len)
        j1 = d->len;
    /* token j0 is a block start: in every layout its block begins j0 * stride elements in */
    p.len = j1 - j0;
    p.k = (const char *)d->k + j0 * d->k_stride * es;
    p.v = d->v == d->k ? p.k : (const void *)((const char *)d->v + j0 * d->v_stride * es);
    p.o = j->base + (size_t)i * j->ostride;
    p.lse = j->base + (size_t)n * j->ostride + (size_t)i * d->group;
    j->k->attn(&p);
}

size_t hlx_pool_attn_work_floats(const hlx_pool_t *pool, const hlx_attn_desc_t *d)
{
    return HLX_POOL_PAGE_FLOATS - 1 + (size_t)HLX_POOL_CHUNKS * (size_t)hlx_pool_size(pool) *
                                          (hlx_pool_attn_ostride(d) + (size_t)d->group);
}

void hlx_pool_attn(hlx_pool_t *pool, const hlx_kernels_t *k, const hlx_attn_desc_t *d,
                   float *work)
{
    const int T = hlx_pool_size(pool);
    const size_t al = hlx_pool_attn_align(k);
    const size_t gd = (size_t)d->group * (size_t)d->dv;
    hlx_pool_attn_job_t job;
    size_t blocks = (d->len + al - 1) / al, n = (size_t)HLX_POOL_CHUNKS * (size_t)T, per, i;
    float *base;

    if (T == 1 || d->len <= al) {
        k->attn(d);
        return;
    }
    base = (float *)(((uintptr_t)work + HLX_POOL_PAGE_BYTES - 1) & ~(HLX_POOL_PAGE_BYTES - 1));
    job = (hlx_pool_attn_job_t){ k, d, base, hlx_pool_attn_ostride(d), 0 };
    if (n > blocks)
        n = blocks;
    per = (blocks + n - 1) / n;
    n = (blocks + per - 1) / per; /* every chunk non-empty */
    job.chunk = per * al;
    hlx_pool_for(pool, hlx_pool_attn_part, &job, (int)n);
    /* to the merge's layout, in place, front to back */
    for (i = 1; i < n; i++)
        memmove(base + i * gd, base + i * job.ostride, gd * sizeof(float));
    memmove(base + n * gd, base + n * job.ostride, n * (size_t)d->group * sizeof(float));
    k->merge((int)n, d->group, d->dv, base, base + n * gd, d->o, d->lse);
}

/* ---- GEMM split over output columns ---- */

typedef struct hlx_pool_gemm_job {
    const hlx_kernels_t *k;
    int                  M, N, K, accumulate;
    const float         *x;
    const void          *w;
    hlx_dtype_t          w_dtype;
    float               *y;
    int                  per; /* 16-column groups per chunk */
} hlx_pool_gemm_job_t;

static void hlx_pool_gemm_part(void *arg, int i, int n)
{
    const hlx_pool_gemm_job_t *j = arg;
    /* ranges of whole 16-column groups (64 bytes of y), so no two threads share a line */
    int n0 = i * j->per * 16, n1 = n0 + j->per * 16;

    (void)n;
    if (n0 > j->N)
        n0 = j->N;
    if (n1 > j->N)
        n1 = j->N;
    hlx_kernels_gemm_cols(j->k, j->M, j->N, j->K, j->x, j->w, j->w_dtype, j->y, j->accumulate,
                          n0, n1);
}

void hlx_pool_gemm(hlx_pool_t *pool, const hlx_kernels_t *k, int M, int N, int K,
                   const float *x, const void *w, hlx_dtype_t w_dtype, float *y, int accumulate)
{
    hlx_pool_gemm_job_t job = { k, M, N, K, accumulate, x, w, w_dtype, y, 0 };
    const int groups = (N + 15) / 16;
    int n = HLX_POOL_CHUNKS * hlx_pool_size(pool);

    if (hlx_pool_size(pool) == 1 || N < 32) {
        hlx_kernels_gemm_cols(k, M, N, K, x, w, w_dtype, y, accumulate, 0, N);
        return;
    }
    if (n > groups)
        n = groups;
    job.per = (groups + n - 1) / n;
    n = (groups + job.per - 1) / job.per;
    hlx_pool_for(pool, hlx_pool_gemm_part, &job, n);
}
