/* MPI_Alltoall with the method and output of `helix bench a2a` (same flags, same JSON
 * lines, same check of every received byte), so the two can be compared in one run. */
#include <mpi.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define A2A_MAX_BYTES ((size_t)1 << 30)

static uint8_t a2a_expect(int src, int dst, size_t off, uint64_t round)
{
    uint64_t x = ((uint64_t)(uint32_t)src << 40) ^ ((uint64_t)(uint32_t)dst << 20) ^
                 ((uint64_t)off * 0x9e3779b97f4a7c15ull) ^ (round * 0xbf58476d1ce4e5b9ull);

    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    return (uint8_t)x;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || errno)
        return -1;
    if (*end == 'K' || *end == 'k')
        v *= 1024.0, end++;
    else if (*end == 'M' || *end == 'm')
        v *= 1048576.0, end++;
    else if (*end == 'G' || *end == 'g')
        v *= 1073741824.0, end++;
    if (*end || !(v >= 0) || v > (double)A2A_MAX_BYTES || v != floor(v))
        return -1;
    *out = (size_t)v;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t minb = 1024, maxb = 256 * 1024, bytes, k;
    long factor = 2, iters = 200, warmup = 20, i;
    int check = 1, json = 0, c, n, me, j, rc = 0;
    uint8_t *sbuf, *rbuf;
    double *samples;
    uint64_t round = 1;
    long long total_wrong = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    while ((c = getopt(argc, argv, "b:e:f:n:w:c:j")) != -1) {
        switch (c) {
        case 'b': if (parse_size(optarg, &minb)) goto usage; break;
        case 'e': if (parse_size(optarg, &maxb)) goto usage; break;
        case 'f': factor = strtol(optarg, NULL, 10); if (factor < 2) goto usage; break;
        case 'n': iters = strtol(optarg, NULL, 10); if (iters < 1 || iters > 1000000) goto usage; break;
        case 'w': warmup = strtol(optarg, NULL, 10); if (warmup < 0) goto usage; break;
        case 'c': check = atoi(optarg) != 0; break;
        case 'j': json = 1; break;
        default: goto usage;
        }
    }
    if (minb > maxb || maxb > SIZE_MAX / (size_t)n / 2)
        goto usage;
    sbuf = malloc(maxb * (size_t)n + 1);
    rbuf = malloc(maxb * (size_t)n + 1);
    samples = calloc((size_t)iters, sizeof(double));
    if (!sbuf || !rbuf || !samples) {
        fprintf(stderr, "mpi_a2a: no memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 1, maxb * (size_t)n + 1);
    if (me == 0 && !json)
        printf("# mpi_a2a: %d ranks, MPI_Alltoall, %ld iterations after %ld warm-up\n", n,
               iters, warmup);
    for (bytes = minb; bytes <= maxb;) {
        double t0, t1, mean, med, tmax, mmax;
        long long wrong = 0, wsum = 0;
        int cnt = (int)bytes;

        for (i = 0; i < warmup; i++)
            MPI_Alltoall(sbuf, cnt, MPI_BYTE, rbuf, cnt, MPI_BYTE, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (i = 0; i < iters; i++) {
            t1 = MPI_Wtime();
            MPI_Alltoall(sbuf, cnt, MPI_BYTE, rbuf, cnt, MPI_BYTE, MPI_COMM_WORLD);
            samples[i] = MPI_Wtime() - t1;
        }
        mean = (MPI_Wtime() - t0) / (double)iters;
        qsort(samples, (size_t)iters, sizeof(double), cmp_double);
        med = samples[iters / 2];
        MPI_Allreduce(&med, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&mean, &mmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (check) {
            for (j = 0; j < n; j++)
                for (k = 0; k < bytes; k++)
                    sbuf[(size_t)j * bytes + k] = a2a_expect(me, j, k, round);
            memset(rbuf, 0xa5, bytes * (size_t)n);
            MPI_Alltoall(sbuf, cnt, MPI_BYTE, rbuf, cnt, MPI_BYTE, MPI_COMM_WORLD);
            for (j = 0; j < n; j++)
                for (k = 0; k < bytes; k++)
                    wrong += rbuf[(size_t)j * bytes + k] != a2a_expect(j, me, k, round);
            round++;
            MPI_Allreduce(&wrong, &wsum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            total_wrong += wsum;
        }
        if (me == 0) {
            double algbw = tmax > 0 ? (double)bytes * n / tmax * 1e-9 : 0;
            if (json)
                printf("{\"ranks\": %d, \"bytes_per_peer\": %zu, \"iters\": %ld, "
                       "\"time_us\": %.3f, \"mean_us\": %.3f, \"algbw_gbps\": %.4f, "
                       "\"busbw_gbps\": %.4f, \"wrong\": %lld, \"backend\": \"mpi\"}\n", n,
                       bytes, iters, tmax * 1e6, mmax * 1e6, algbw, algbw * (n - 1) / n,
                       check ? wsum : -1LL);
            else
                printf("  %12zu %12.2f %12.2f %12.3f %12.3f %8lld\n", bytes, tmax * 1e6,
                       mmax * 1e6, algbw, algbw * (n - 1) / n, check ? wsum : -1LL);
            fflush(stdout);
        }
        if (bytes == maxb)
            break;
        if (bytes == 0)
            bytes = 1;
        else if (bytes > maxb / (size_t)factor)
            bytes = maxb;
        else
            bytes *= (size_t)factor;
    }
    if (total_wrong)
        rc = 1;
    free(sbuf);
    free(rbuf);
    free(samples);
    MPI_Finalize();
    return rc;
usage:
    if (me == 0)
        fprintf(stderr, "usage: mpi_a2a [-b N] [-e N] [-f F>=2] [-n N] [-w N] [-c 0|1] [-j]\n");
    MPI_Finalize();
    return 2;
}
