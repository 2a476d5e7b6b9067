/* Test helpers shared by several suites: a whole file read into memory, a shell command
 * and a helix command run with their output captured, a safetensors file written, and topology or cluster files loaded
 * or the test failed with the loader's message. Include after <cmocka.h>; the loaders need
 * <helix/topology.h> (define HLX_TEST_TOPO first). */
#ifndef HLX_TEST_FILES_H
#define HLX_TEST_FILES_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* The file's bytes plus a terminating NUL; *len_p (may be NULL) gets the size. */
static inline char *hlx_test_slurp(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *buf;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len_p)
        *len_p = (size_t)n;
    return buf;
}

/* Runs a shell command; returns its exit code (128 + n when the shell saw signal n). */
static inline int hlx_test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int hlx_test_sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    st = system(cmd);
    assert_true(st != -1 && WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* One tensor of a safetensors file the tests write (hlx_test_write_st). */
typedef struct hlx_test_st {
    const char *name, *dtype;
    int         ndim;
    int64_t     shape[4];
    const void *data;
    size_t      bytes;
} hlx_test_st_t;

/* dir/model.safetensors (dir made as needed) holding ts[0, n), back to back. */
static inline void hlx_test_write_st(const char *dir, const hlx_test_st_t *ts, int n)
{
    char hdr[4096], path[600];
    size_t used = 0, off = 0, len;
    FILE *f;
    int i, k;

    used += (size_t)snprintf(hdr + used, sizeof(hdr) - used, "{");
    for (i = 0; i < n; i++) {
        used += (size_t)snprintf(hdr + used, sizeof(hdr) - used, "%s\"%s\":{\"dtype\":\"%s\","
                                 "\"shape\":[", i ? "," : "", ts[i].name, ts[i].dtype);
        for (k = 0; k < ts[i].ndim; k++)
            used += (size_t)snprintf(hdr + used, sizeof(hdr) - used, "%s%lld", k ? "," : "",
                                     (long long)ts[i].shape[k]);
        used += (size_t)snprintf(hdr + used, sizeof(hdr) - used, "],\"data_offsets\":[%zu,%zu]}",
                                 off, off + ts[i].bytes);
        off += ts[i].bytes;
    }
    used += (size_t)snprintf(hdr + used, sizeof(hdr) - used, "}");
    assert_true(used < sizeof(hdr));
    assert_int_equal(hlx_test_sh("mkdir -p %s", dir), 0);
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    f = fopen(path, "wb");
    assert_non_null(f);
    len = used;
    for (i = 0; i < 8; i++)
        fputc((int)(len >> (8 * i)) & 0xff, f);
    fwrite(hdr, 1, len, f);
    for (i = 0; i < n; i++)
        fwrite(ts[i].data, 1, ts[i].bytes, f);
    fclose(f);
}

/* `helix ARGS` under timeout(1) (timeout_s, then SIGKILL 5 s later): its exit code, its
 * stdout in *out and stderr in *err (free them; NULL: that stream is dropped), captured
 * through files in dir. */
static inline int hlx_test_helix(const char *helix, const char *dir, int timeout_s, char **out,
                                 char **err, const char *args)
{
    char po[512], pe[512];
    int rc;

    snprintf(po, sizeof(po), "%s/run.out", dir);
    snprintf(pe, sizeof(pe), "%s/run.err", dir);
    rc = hlx_test_sh("timeout -k 5 %d %s %s >%s 2>%s", timeout_s, helix, args,
                     out != NULL ? po : "/dev/null", err != NULL ? pe : "/dev/null");
    if (out != NULL)
        *out = hlx_test_slurp(po, NULL);
    if (err != NULL)
        *err = hlx_test_slurp(pe, NULL);
    return rc;
}

#ifdef HLX_TEST_TOPO
static inline hlx_topo_t *hlx_test_topo(const char *file)
{
    hlx_topo_t *t = NULL;
    char err[512] = "";
    if (hlx_topo_load(file, &t, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    return t;
}

static inline void hlx_test_cluster(const char *file, hlx_cluster_t *c)
{
    char err[512] = "";
    if (hlx_cluster_load(file, c, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
}

/* A cluster built in memory (needs <string.h>): nnodes nodes of gpus GPUs, NVLink domains
 * of nodes_per_domain nodes, RDMA at rdma_gbps between nodes (0: TCP only). Free with
 * hlx_cluster_free(). */
static inline void hlx_test_mem_cluster(hlx_cluster_t *c, int nnodes, int gpus,
                                        int nodes_per_domain, double rdma_gbps)
{
    int i;
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "mem");
    c->nnodes = nnodes;
    c->nodes = calloc((size_t)nnodes, sizeof(*c->nodes));
    assert_non_null(c->nodes);
    for (i = 0; i < nnodes; i++) {
        snprintf(c->nodes[i].name, sizeof(c->nodes[i].name), "n%d", i);
        c->nodes[i].gpus = gpus;
        c->nodes[i].nics = 1;
        c->nodes[i].domain = i / nodes_per_domain;
        c->nodes[i].rack = c->nodes[i].domain;
        c->nodes[i].nvlink = gpus > 1;
        c->nodes[i].first_gpu = i * gpus;
    }
    c->ndomains = (nnodes + nodes_per_domain - 1) / nodes_per_domain;
    c->total_gpus = nnodes * gpus;
    c->max_domain_gpus = gpus * nodes_per_domain;
    c->link[HLX_LINK_NVLINK].bw_gbps = gpus > 1 ? 450 : 0;
    c->link[HLX_LINK_RDMA].bw_gbps = rdma_gbps;
    c->link[HLX_LINK_TCP].bw_gbps = 5;
}
#endif

#endif
