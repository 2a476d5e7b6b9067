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
#include <stdlib.h>
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

struct hlx_pool {
    int              nthreads;
    pthread_t       *threads;
    _Atomic uint32_t gen;     /* bumped per job (the futex word) */
    _Atomic int      pending; /* workers still running the current job */
    _Atomic int      stop;
    void           (*fn)(void *arg, int t, int nt);
    void            *arg;
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
            if (++spins < HLX_POOL_SPIN)
                HLX_POOL_PAUSE();
            else
                hlx_futex_wait(&pool->gen, seen);
        }
        seen = g;
        if (atomic_load_explicit(&pool->stop, memory_order_acquire))
            return NULL;
        pool->fn(pool->arg, st.t, pool->nthreads);
        atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel);
    }
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
    atomic_fetch_add_explicit(&pool->gen, 1, memory_order_acq_rel);
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
    pool->fn = fn;
    pool->arg = arg;
    atomic_store_explicit(&pool->pending, pool->nthreads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->gen, 1, memory_order_acq_rel);
    hlx_futex_wake(&pool->gen);
    fn(arg, 0, pool->nthreads);
    /* the others have equal shares and finish about now */
    while (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0)
        if (++spins % 1024 == 0)
            sched_yield();
        else
            HLX_POOL_PAUSE();
}

/* ---- attention split over the KV sequence ---- */

typedef struct hlx_pool_attn_job {
    const hlx_kernels_t   *k;
    const hlx_attn_desc_t *d;
    float                 *work;
    size_t                 chunk; /* tokens per thread, a multiple of the layout's blocks */
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

static void hlx_pool_attn_part(void *arg, int t, int nt)
{
    const hlx_pool_attn_job_t *j = arg;
    const hlx_attn_desc_t *d = j->d;
    const size_t es = (size_t)hlx_dtype_bytes(d->kv_dtype);
    size_t j0 = (size_t)t * j->chunk, j1 = j0 + j->chunk;
    hlx_attn_desc_t p = *d;

    (void)nt;
    if (j0 > d->len)
        j0 = d->len;
    if (j1 > d->len)
        j1 = d->len;
    /* token j0 is a block start: in every layout its block begins j0 * stride elements in */
    p.len = j1 - j0;
    p.k = (const char *)d->k + j0 * d->k_stride * es;
    p.v = d->v == d->k ? p.k : (const void *)((const char *)d->v + j0 * d->v_stride * es);
    p.o = j->work + (size_t)t * d->group * d->dv;
    p.lse = j->work + (size_t)nt * d->group * d->dv + (size_t)t * d->group;
    j->k->attn(&p);
}

size_t hlx_pool_attn_work_floats(const hlx_pool_t *pool, const hlx_attn_desc_t *d)
{
    return (size_t)hlx_pool_size(pool) * (size_t)d->group * ((size_t)d->dv + 1);
}

void hlx_pool_attn(hlx_pool_t *pool, const hlx_kernels_t *k, const hlx_attn_desc_t *d,
                   float *work)
{
    const int T = hlx_pool_size(pool);
    const size_t al = hlx_pool_attn_align(k);
    hlx_pool_attn_job_t job = { k, d, work, 0 };
    size_t blocks = (d->len + al - 1) / al;

    if (T == 1 || d->len <= al) {
        k->attn(d);
        return;
    }
    job.chunk = (blocks + (size_t)T - 1) / (size_t)T * al;
    hlx_pool_run(pool, hlx_pool_attn_part, &job);
    k->merge(T, d->group, d->dv, work, work + (size_t)T * d->group * d->dv, d->o, d->lse);
}

/* ---- GEMM split over output columns ---- */

typedef struct hlx_pool_gemm_job {
    const hlx_kernels_t *k;
    int                  M, N, K, accumulate;
    const float         *x;
    const void          *w;
    hlx_dtype_t          w_dtype;
    float               *y;
} hlx_pool_gemm_job_t;

static void hlx_pool_gemm_part(void *arg, int t, int nt)
{
    const hlx_pool_gemm_job_t *j = arg;
    /* ranges of whole 16-column groups (64 bytes of y), so no two threads share a line */
    const int groups = (j->N + 15) / 16, per = (groups + nt - 1) / nt;
    int n0 = t * per * 16, n1 = n0 + per * 16;

    if (n0 > j->N)
        n0 = j->N;
    if (n1 > j->N)
        n1 = j->N;
    j->k->gemm_cols(j->M, j->N, j->K, j->x, j->w, j->w_dtype, j->y, j->accumulate, n0, n1);
}

void hlx_pool_gemm(hlx_pool_t *pool, const hlx_kernels_t *k, int M, int N, int K,
                   const float *x, const void *w, hlx_dtype_t w_dtype, float *y, int accumulate)
{
    hlx_pool_gemm_job_t job = { k, M, N, K, accumulate, x, w, w_dtype, y };

    if (hlx_pool_size(pool) == 1 || N < 32) {
        k->gemm(M, N, K, x, w, w_dtype, y, accumulate);
        return;
    }
    hlx_pool_run(pool, hlx_pool_gemm_part, &job);
}
