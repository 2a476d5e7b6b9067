/* Stand-alone experiment (not built by meson): how fast one core reads 512 MiB the ways the
 * attention kernels could walk their KV, 64-byte loads summed into four independent
 * accumulators (no other work):
 *   one          one sequential stream (what the read probe of helix bench measures, less
 *                its best-of-several-loops pass)
 *   two          K and V as two arrays, a PIECE of each in turn (the blocked kernels' walk:
 *                avx512 8 KiB of bf16 keys of a 32-token block, then its values); a
 *                second argument PF > 0 adds prefetcht1 of both streams PF bytes ahead
 *   interleaved  the same pieces laid out K, V, K, V in one array (one stream)
 * Build and run pinned: gcc -O2 -mavx512f -o /tmp/kv_streams kv_streams.c
 *                       taskset -c 1 /tmp/kv_streams 8192 [PF]
 * Intel Emerald Rapids VM (docs/kernels.md "Every variant, Intel Xeon Emerald Rapids"),
 * 2026-12-05, three runs of three passes minutes apart: one stream 14.3-16.5 GB/s, two
 * 13.9-16.2, interleaved 13.7-15.9; with PF 128 KiB two read 12.3-13.7 (the fetches into L2
 * cost more than they bring to a loop that only reads). helix bench attention --variant
 * avx512 --kv-dtype bf16 --context 1M in the same minutes: 512 MiB in 40-50 ms, 10.7-13.4
 * GB/s, where the read probe (the best of several loops) said 15.8-18.4: so the layouts
 * read alike, and what is left to the kernel is what its arithmetic costs the stream. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *huge(size_t n)
{
    void *p;
    if (posix_memalign(&p, 2 << 20, n) != 0)
        exit(1);
    madvise(p, n, MADV_HUGEPAGE);
    memset(p, 1, n);
    return p;
}

typedef struct { __m512 a, b, c, d; } acc_t;

static inline void rd(const char *p, size_t n, acc_t *s)
{
    size_t i;
    for (i = 0; i < n; i += 256) {
        s->a = _mm512_add_ps(s->a, _mm512_load_ps((const float *)(p + i)));
        s->b = _mm512_add_ps(s->b, _mm512_load_ps((const float *)(p + i + 64)));
        s->c = _mm512_add_ps(s->c, _mm512_load_ps((const float *)(p + i + 128)));
        s->d = _mm512_add_ps(s->d, _mm512_load_ps((const float *)(p + i + 192)));
    }
}

int main(int argc, char **argv)
{
    const size_t N = (size_t)512 << 20;
    const size_t piece = argc > 1 ? (size_t)atol(argv[1]) : 8192;
    const size_t pf = argc > 2 ? (size_t)atol(argv[2]) : 0;
    char *a = huge(N), *k = huge(N / 2), *v = huge(N / 2);
    int r;

    if (piece < 256 || piece % 256) {
        fprintf(stderr, "kv_streams: PIECE must be a multiple of 256 bytes\n");
        return 2;
    }
    for (r = 0; r < 3; r++) {
        acc_t s = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                    _mm512_setzero_ps() };
        float f[16];
        double t = now(), t1, t2, t3;
        size_t o, q;

        rd(a, N, &s);
        t1 = now() - t;
        t = now();
        for (o = 0; o < N / 2; o += piece) {
            if (pf > 0 && o + pf + piece <= N / 2)
                for (q = 0; q < piece; q += 64) {
                    _mm_prefetch(k + o + pf + q, _MM_HINT_T1);
                    _mm_prefetch(v + o + pf + q, _MM_HINT_T1);
                }
            rd(k + o, piece, &s);
            rd(v + o, piece, &s);
        }
        t2 = now() - t;
        t = now();
        for (o = 0; o < N; o += 2 * piece) {
            rd(a + o, piece, &s);
            rd(a + o + piece, piece, &s);
        }
        t3 = now() - t;
        _mm512_storeu_ps(f, _mm512_add_ps(_mm512_add_ps(s.a, s.b), _mm512_add_ps(s.c, s.d)));
        printf("piece %zu, prefetch %zu: one stream %.1f GB/s, two %.1f, interleaved %.1f "
               "(%g)\n", piece, pf, N / t1 / 1e9, N / t2 / 1e9, N / t3 / 1e9, f[0]);
    }
    free(a); free(k); free(v);
    return 0;
}
