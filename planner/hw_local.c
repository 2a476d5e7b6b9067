/* The hw file of `helix bench local` (read with positions in every error, written
 * atomically), the machine as a planner cluster, and the local step predictor that
 * follows the runtime's decode step phase by phase. See docs/planner.md. */
#define _GNU_SOURCE
#include "hlx_file.h"
#include "hlx_hw_local.h"

#include "hlx_json.h"
#include "hlx_plan.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HLX_NF(_t) (sizeof(_t) / sizeof((_t)[0]))

int hlx_hw_local_path(char *buf, size_t len)
{
    const char *f = getenv("HELIX_HW_FILE"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;

    if (f && *f)
        n = snprintf(buf, len, "%s", f);
    else if (x && *x)
        n = snprintf(buf, len, "%s/helix/hw-local.json", x);
    else if (h && *h)
        n = snprintf(buf, len, "%s/.cache/helix/hw-local.json", h);
    else
        return -1;
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* ---- reading ---- */

typedef struct hlx_hw_top {
    char   format[32];
    int    version;
    char   host[64], cpu[128], kernels[32], build[64], measured[32];
    int    cores;
    double mem_gib, llc_mib, read_gbps, fma_gflops, seconds;
    int    dram_readers;
    double dram_gbps_1, dram_gbps_n;
    int    pass_f32, pass_bf16;
} hlx_hw_top_t;

static const hlx_jfield_t hlx_hw_fields[] = {
    { "format", HLX_JT_STRING, offsetof(hlx_hw_top_t, format), 1, 1, 0, 32, "\"" HLX_HW_FORMAT "\"" },
    { "version", HLX_JT_INT, offsetof(hlx_hw_top_t, version), 1, 1, 1000, 0, "file version" },
    { "host", HLX_JT_STRING, offsetof(hlx_hw_top_t, host), 0, 1, 0, 64, "host name" },
    { "cpu", HLX_JT_STRING, offsetof(hlx_hw_top_t, cpu), 0, 1, 0, 128, "CPU model" },
    { "kernels", HLX_JT_STRING, offsetof(hlx_hw_top_t, kernels), 0, 1, 0, 32, "kernel variant" },
    { "build", HLX_JT_STRING, offsetof(hlx_hw_top_t, build), 0, 1, 0, 64, "helix build that measured" },
    { "measured", HLX_JT_STRING, offsetof(hlx_hw_top_t, measured), 0, 1, 0, 32, "UTC time" },
    { "cores", HLX_JT_INT, offsetof(hlx_hw_top_t, cores), 1, 1, 65536, 0, "cores" },
    { "mem_gib", HLX_JT_DOUBLE, offsetof(hlx_hw_top_t, mem_gib), 1, 1e-3, 1e7, 0, "memory, GiB" },
    { "llc_mib", HLX_JT_DOUBLE, offsetof(hlx_hw_top_t, llc_mib), 1, 0, 1e7, 0, "last-level cache, MiB" },
    { "read_gbps", HLX_JT_DOUBLE, offsetof(hlx_hw_top_t, read_gbps), 1, 1e-3, 1e6, 0, "one-core read GB/s" },
    { "fma_gflops", HLX_JT_DOUBLE, offsetof(hlx_hw_top_t, fma_gflops), 1, 1e-3, 1e7, 0, "one-core fp32 GFLOP/s" },
    { "seconds", HLX_JT_DOUBLE, offsetof(hlx_hw_top_t, seconds), 0, 0, 1e6, 0, "measurement time" },
    { "dram_readers", HLX_JT_INT, offsetof(hlx_hw_top_t, dram_readers), 0, 1, HLX_HW_MAX_READERS, 0, "concurrent DRAM readers measured" },
    { "dram_gbps_1", HLX_JT_DOUBLE, offsetof(hlx_hw_top_t, dram_gbps_1), 0, 1e-3, 1e6, 0, "DRAM GB/s of one reader alone" },
    { "dram_gbps_n", HLX_JT_DOUBLE, offsetof(hlx_hw_top_t, dram_gbps_n), 0, 1e-3, 1e6, 0, "DRAM GB/s per reader, dram_readers at once" },
    { "gemm_pass_rows_f32", HLX_JT_INT, offsetof(hlx_hw_top_t, pass_f32), 0, 0, 4096, 0, "rows of f32 weights' GEMM run in 8-row passes" },
    { "gemm_pass_rows_bf16", HLX_JT_INT, offsetof(hlx_hw_top_t, pass_bf16), 0, 0, 4096, 0, "rows of bf16 weights' GEMM run in 8-row passes" },
    { "read_curve", HLX_JT_ANY, 0, 0, 1, 0, 0, "array of {mib, gbps}: read rate by buffer size" },
    { "attention", HLX_JT_ANY, 0, 1, 1, 0, 0, "array of attention shapes" },
    { "gemm", HLX_JT_ANY, 0, 1, 1, 0, 0, "array of GEMM points" },
    { "links", HLX_JT_ANY, 0, 1, 1, 0, 0, "object: link class -> collectives" },
    { "shared", HLX_JT_ANY, 0, 0, 1, 0, 0, "collectives with more ranks than cores" },
};

typedef struct hlx_hw_curve_raw {
    double mib, gbps;
} hlx_hw_curve_raw_t;

static const hlx_jfield_t hlx_curve_fields[] = {
    { "mib", HLX_JT_DOUBLE, offsetof(hlx_hw_curve_raw_t, mib), 1, 1e-3, 1e7, 0, "buffer, MiB" },
    { "gbps", HLX_JT_DOUBLE, offsetof(hlx_hw_curve_raw_t, gbps), 1, 1e-3, 1e6, 0, "read GB/s" },
};

typedef struct hlx_hw_attn_raw {
    char   kv_dtype[16];
    int    group, dk, dv, cached;
    double call_us, ns_tok;
} hlx_hw_attn_raw_t;

static const hlx_jfield_t hlx_attn_fields[] = {
    { "kv_dtype", HLX_JT_STRING, offsetof(hlx_hw_attn_raw_t, kv_dtype), 1, 1, 0, 16, "f32, bf16 or fp8" },
    { "group", HLX_JT_INT, offsetof(hlx_hw_attn_raw_t, group), 1, 1, 4096, 0, "query heads per KV head" },
    { "dk", HLX_JT_INT, offsetof(hlx_hw_attn_raw_t, dk), 1, 1, 65536, 0, "key size" },
    { "dv", HLX_JT_INT, offsetof(hlx_hw_attn_raw_t, dv), 1, 1, 65536, 0, "value size" },
    { "cached", HLX_JT_BOOL, offsetof(hlx_hw_attn_raw_t, cached), 1, 1, 0, 0, "KV in cache" },
    { "call_us", HLX_JT_DOUBLE, offsetof(hlx_hw_attn_raw_t, call_us), 1, 0, 1e6, 0, "us per call" },
    { "ns_tok", HLX_JT_DOUBLE, offsetof(hlx_hw_attn_raw_t, ns_tok), 1, 1e-6, 1e9, 0, "ns per token" },
};

typedef struct hlx_hw_gemm_raw {
    char   w_dtype[16];
    int    m, cached;
    double call_us, gbps;
} hlx_hw_gemm_raw_t;

static const hlx_jfield_t hlx_gemm_fields[] = {
    { "w_dtype", HLX_JT_STRING, offsetof(hlx_hw_gemm_raw_t, w_dtype), 1, 1, 0, 16, "f32 or bf16" },
    { "m", HLX_JT_INT, offsetof(hlx_hw_gemm_raw_t, m), 1, 1, 65536, 0, "rows of x" },
    { "cached", HLX_JT_BOOL, offsetof(hlx_hw_gemm_raw_t, cached), 1, 1, 0, 0, "weights in cache" },
    { "call_us", HLX_JT_DOUBLE, offsetof(hlx_hw_gemm_raw_t, call_us), 1, 0, 1e6, 0, "us per call" },
    { "gbps", HLX_JT_DOUBLE, offsetof(hlx_hw_gemm_raw_t, gbps), 1, 1e-3, 1e6, 0, "weight GB/s" },
};

static const hlx_jfield_t hlx_coll_fields[] = {
    { "ranks", HLX_JT_INT, offsetof(hlx_hw_coll_t, ranks), 1, 2, 65536, 0, "ranks measured" },
    { "a2a_us", HLX_JT_DOUBLE, offsetof(hlx_hw_coll_t, a2a_us), 1, 0, 1e7, 0, "all-to-all latency" },
    { "a2a_gbps", HLX_JT_DOUBLE, offsetof(hlx_hw_coll_t, a2a_gbps), 1, 1e-6, 1e6, 0, "all-to-all GB/s" },
    { "ar_us", HLX_JT_DOUBLE, offsetof(hlx_hw_coll_t, ar_us), 1, 0, 1e7, 0, "all-reduce latency" },
    { "ar_gbps", HLX_JT_DOUBLE, offsetof(hlx_hw_coll_t, ar_gbps), 1, 1e-6, 1e6, 0, "all-reduce GB/s" },
    { "ag_us", HLX_JT_DOUBLE, offsetof(hlx_hw_coll_t, ag_us), 1, 0, 1e7, 0, "all-gather latency" },
    { "ag_gbps", HLX_JT_DOUBLE, offsetof(hlx_hw_coll_t, ag_gbps), 1, 1e-6, 1e6, 0, "all-gather GB/s" },
    { "step_us", HLX_JT_DOUBLE, offsetof(hlx_hw_coll_t, step_us), 0, 0, 1e7, 0, "latency after compute" },
};

/* A KV type (fp8: kv 1) or a weight type. */
static hlx_status_t hlx_hw_dtype(hlx_jdoc_t *doc, const char *path, const char *s, int kv,
                                 hlx_dtype_t *t)
{
    if (hlx_dtype_parse(s, t) != 0 ||
        (*t != HLX_DTYPE_F32 && *t != HLX_DTYPE_BF16 && (!kv || *t != HLX_DTYPE_FP8)))
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "'%s' is not %s", s,
                             kv ? "f32, bf16 or fp8" : "f32 or bf16");
    return HLX_OK;
}

static hlx_status_t hlx_hw_read(hlx_jdoc_t *doc, hlx_hw_local_t *hw)
{
    json_t *root = hlx_jdoc_root(doc), *a, *v, *links;
    hlx_hw_top_t top;
    hlx_status_t st;
    const char *key;
    char path[96];
    size_t i;

    memset(&top, 0, sizeof(top));
    if (!json_is_object(root))
        return hlx_jdoc_fail(doc, "", HLX_ERR_PARSE, "expected an object");
    /* another program's file or another version: say so before anything else */
    v = json_object_get(root, "format");
    if (json_is_string(v) && strcmp(json_string_value(v), HLX_HW_FORMAT) != 0)
        return hlx_jdoc_fail(doc, "/format", HLX_ERR_PARSE, "'%s' is not \"%s\": not a file "
                             "of helix bench local", json_string_value(v), HLX_HW_FORMAT);
    v = json_object_get(root, "version");
    if (json_is_integer(v) && json_integer_value(v) != HLX_HW_VERSION)
        return hlx_jdoc_fail(doc, "/version", HLX_ERR_PARSE,
                             "version %lld is not %d: measure again (helix bench local)",
                             (long long)json_integer_value(v), HLX_HW_VERSION);
    st = hlx_jdoc_read_object(doc, root, "", hlx_hw_fields, HLX_NF(hlx_hw_fields), &top);
    if (st != HLX_OK)
        return st;
    if (strcmp(top.format, HLX_HW_FORMAT) != 0)
        return hlx_jdoc_fail(doc, "/format", HLX_ERR_PARSE, "'%s' is not \"%s\"", top.format,
                             HLX_HW_FORMAT);
    memcpy(hw->host, top.host, sizeof(hw->host));
    memcpy(hw->cpu, top.cpu, sizeof(hw->cpu));
    memcpy(hw->kernels, top.kernels, sizeof(hw->kernels));
    memcpy(hw->build, top.build, sizeof(hw->build));
    memcpy(hw->measured, top.measured, sizeof(hw->measured));
    hw->cores      = top.cores;
    hw->mem_gib    = top.mem_gib;
    hw->llc_mib    = top.llc_mib;
    hw->read_gbps  = top.read_gbps;
    hw->fma_gflops = top.fma_gflops;
    hw->seconds    = top.seconds;
    /* all three or none: a lone figure cannot say what sharing costs */
    if ((top.dram_readers > 0) != (top.dram_gbps_1 > 0) ||
        (top.dram_readers > 0) != (top.dram_gbps_n > 0))
        return hlx_jdoc_fail(doc, "/dram_readers", HLX_ERR_PARSE, "dram_readers, dram_gbps_1 "
                             "and dram_gbps_n go together");
    hw->dram_readers = top.dram_readers;
    hw->dram_gbps_1  = top.dram_gbps_1;
    hw->dram_gbps_n  = top.dram_gbps_n;
    hw->gemm_pass_rows[0] = top.pass_f32;
    hw->gemm_pass_rows[1] = top.pass_bf16;

    a = json_object_get(root, "read_curve");
    if (a != NULL) {
        if (!json_is_array(a) || json_array_size(a) < 2 || json_array_size(a) > HLX_HW_MAX_CURVE)
            return hlx_jdoc_fail(doc, "/read_curve", HLX_ERR_PARSE, "expected an array of 2 "
                                 "to %d points", HLX_HW_MAX_CURVE);
        json_array_foreach(a, i, v) {
            hlx_hw_curve_raw_t r;
            memset(&r, 0, sizeof(r));
            snprintf(path, sizeof(path), "/read_curve/%zu", i);
            if (!json_is_object(v))
                return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected an object");
            st = hlx_jdoc_read_object(doc, v, path, hlx_curve_fields, HLX_NF(hlx_curve_fields),
                                      &r);
            if (st != HLX_OK)
                return st;
            if (i > 0 && !(r.mib > hw->curve_mib[i - 1])) {
                snprintf(path, sizeof(path), "/read_curve/%zu/mib", i);
                return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%g is not larger than the "
                                     "point before (%g): sizes must grow", r.mib,
                                     hw->curve_mib[i - 1]);
            }
            hw->curve_mib[i] = r.mib, hw->curve_gbps[i] = r.gbps;
            hw->ncurve = (int)i + 1;
        }
    }
    a = json_object_get(root, "attention");
    if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > HLX_HW_MAX_ATTN)
        return hlx_jdoc_fail(doc, "/attention", HLX_ERR_PARSE, "expected an array of 1 to %d "
                             "shapes", HLX_HW_MAX_ATTN);
    json_array_foreach(a, i, v) {
        hlx_hw_attn_raw_t r;
        hlx_hw_attn_t *o = &hw->attn[hw->nattn++];
        memset(&r, 0, sizeof(r));
        snprintf(path, sizeof(path), "/attention/%zu", i);
        if (!json_is_object(v))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected an object");
        st = hlx_jdoc_read_object(doc, v, path, hlx_attn_fields, HLX_NF(hlx_attn_fields), &r);
        if (st != HLX_OK)
            return st;
        snprintf(path, sizeof(path), "/attention/%zu/kv_dtype", i);
        if ((st = hlx_hw_dtype(doc, path, r.kv_dtype, 1, &o->kv_dtype)) != HLX_OK)
            return st;
        o->group = r.group, o->dk = r.dk, o->dv = r.dv, o->cached = r.cached;
        o->call_us = r.call_us, o->ns_tok = r.ns_tok;
    }
    a = json_object_get(root, "gemm");
    if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > HLX_HW_MAX_GEMM)
        return hlx_jdoc_fail(doc, "/gemm", HLX_ERR_PARSE, "expected an array of 1 to %d "
                             "points", HLX_HW_MAX_GEMM);
    json_array_foreach(a, i, v) {
        hlx_hw_gemm_raw_t r;
        hlx_hw_gemm_t *o = &hw->gemm[hw->ngemm++];
        memset(&r, 0, sizeof(r));
        snprintf(path, sizeof(path), "/gemm/%zu", i);
        if (!json_is_object(v))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected an object");
        st = hlx_jdoc_read_object(doc, v, path, hlx_gemm_fields, HLX_NF(hlx_gemm_fields), &r);
        if (st != HLX_OK)
            return st;
        snprintf(path, sizeof(path), "/gemm/%zu/w_dtype", i);
        if ((st = hlx_hw_dtype(doc, path, r.w_dtype, 0, &o->w_dtype)) != HLX_OK)
            return st;
        o->m = r.m, o->cached = r.cached, o->call_us = r.call_us, o->gbps = r.gbps;
    }
    links = json_object_get(root, "links");
    if (!json_is_object(links))
        return hlx_jdoc_fail(doc, "/links", HLX_ERR_PARSE, "expected an object");
    /* without one measured class every collective would be predicted free */
    if (json_object_size(links) == 0)
        return hlx_jdoc_fail(doc, "/links", HLX_ERR_PARSE, "no link class measured (the "
                             "collectives' costs); measure the machine again with helix "
                             "bench local");
    json_object_foreach(links, key, v) {
        hlx_link_t lk;
        snprintf(path, sizeof(path), "/links/%s", key);
        if (hlx_link_parse(key, &lk) != 0 || lk == HLX_LINK_SELF)
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "unknown link class '%s' (shm, "
                                 "nvlink, pcie, rdma, tcp)", key);
        if (!json_is_object(v))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected an object");
        st = hlx_jdoc_read_object(doc, v, path, hlx_coll_fields, HLX_NF(hlx_coll_fields),
                                  &hw->link[lk]);
        if (st != HLX_OK)
            return st;
    }
    v = json_object_get(root, "shared");
    if (v != NULL) {
        if (!json_is_object(v))
            return hlx_jdoc_fail(doc, "/shared", HLX_ERR_PARSE, "expected an object");
        st = hlx_jdoc_read_object(doc, v, "/shared", hlx_coll_fields, HLX_NF(hlx_coll_fields),
                                  &hw->shared);
        if (st != HLX_OK)
            return st;
    }
    return HLX_OK;
}

hlx_status_t hlx_hw_local_load(const char *path, hlx_hw_local_t *hw, char *err, size_t errlen)
{
    hlx_jdoc_t *doc = NULL;
    hlx_status_t st;

    memset(hw, 0, sizeof(*hw));
    st = hlx_jdoc_load_file(path, &doc);
    if (st == HLX_OK)
        st = hlx_hw_read(doc, hw);
    if (st != HLX_OK) {
        if (doc)
            snprintf(err, errlen, "%s", hlx_jdoc_error(doc));
        else
            snprintf(err, errlen, "%s: cannot read", path);
    }
    hlx_jdoc_free(doc);
    return st;
}

/* ---- writing ---- */

static json_t *hlx_hw_coll_json(const hlx_hw_coll_t *c)
{
    return json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "ranks", c->ranks,
                     "a2a_us", c->a2a_us, "a2a_gbps", c->a2a_gbps, "ar_us", c->ar_us,
                     "ar_gbps", c->ar_gbps, "ag_us", c->ag_us, "ag_gbps", c->ag_gbps,
                     "step_us", c->step_us);
}

static int hlx_mkdir_parents(const char *path)
{
    char tmp[4096];
    char *p;

    if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
        return -1;
    for (p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

hlx_status_t hlx_hw_local_writable(const char *path, char *err, size_t errlen)
{
    struct stat sb;

    if (hlx_mkdir_parents(path) != 0) {
        snprintf(err, errlen, "%s: cannot create its folder: %s", path, strerror(errno));
        return HLX_ERR_IO;
    }
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: is a folder", path);
        return HLX_ERR_IO;
    }
    return hlx_out_check(path, err, errlen) == HLX_OK ? HLX_OK : HLX_ERR_IO;
}

hlx_status_t hlx_hw_local_save(const char *path, const hlx_hw_local_t *hw, char *err,
                               size_t errlen)
{
    json_t *o, *a, *links;
    hlx_status_t st;
    int i;

    o = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:i, s:f, s:f, s:f, s:f, s:f}",
                  "format", HLX_HW_FORMAT, "version", HLX_HW_VERSION, "host", hw->host,
                  "cpu", hw->cpu, "kernels", hw->kernels, "measured", hw->measured,
                  "cores", hw->cores, "mem_gib", hw->mem_gib, "llc_mib", hw->llc_mib,
                  "read_gbps", hw->read_gbps, "fma_gflops", hw->fma_gflops,
                  "seconds", hw->seconds);
    if (o == NULL) {
        snprintf(err, errlen, "%s: cannot build the JSON document", path);
        return HLX_ERR_NOMEM;
    }
    if (hw->build[0] != '\0')
        json_object_set_new(o, "build", json_string(hw->build));
    json_object_set_new(o, "gemm_pass_rows_f32", json_integer(hw->gemm_pass_rows[0]));
    json_object_set_new(o, "gemm_pass_rows_bf16", json_integer(hw->gemm_pass_rows[1]));
    if (hw->dram_readers > 0) {
        json_object_set_new(o, "dram_readers", json_integer(hw->dram_readers));
        json_object_set_new(o, "dram_gbps_1", json_real(hw->dram_gbps_1));
        json_object_set_new(o, "dram_gbps_n", json_real(hw->dram_gbps_n));
    }
    if (hw->ncurve > 0) {
        a = json_array();
        for (i = 0; i < hw->ncurve; i++)
            json_array_append_new(a, json_pack("{s:f, s:f}", "mib", hw->curve_mib[i], "gbps",
                                               hw->curve_gbps[i]));
        json_object_set_new(o, "read_curve", a);
    }
    a = json_array();
    for (i = 0; i < hw->nattn; i++) {
        const hlx_hw_attn_t *t = &hw->attn[i];
        json_array_append_new(a, json_pack("{s:s, s:i, s:i, s:i, s:b, s:f, s:f}",
                                           "kv_dtype", hlx_dtype_name(t->kv_dtype),
                                           "group", t->group, "dk", t->dk, "dv", t->dv,
                                           "cached", t->cached, "call_us", t->call_us,
                                           "ns_tok", t->ns_tok));
    }
    json_object_set_new(o, "attention", a);
    a = json_array();
    for (i = 0; i < hw->ngemm; i++) {
        const hlx_hw_gemm_t *g = &hw->gemm[i];
        json_array_append_new(a, json_pack("{s:s, s:i, s:b, s:f, s:f}",
                                           "w_dtype", hlx_dtype_name(g->w_dtype), "m", g->m,
                                           "cached", g->cached, "call_us", g->call_us,
                                           "gbps", g->gbps));
    }
    json_object_set_new(o, "gemm", a);
    links = json_object();
    for (i = 0; i < HLX_LINK_COUNT; i++)
        if (hw->link[i].ranks > 0)
            json_object_set_new(links, hlx_link_name((hlx_link_t)i),
                                hlx_hw_coll_json(&hw->link[i]));
    json_object_set_new(o, "links", links);
    if (hw->shared.ranks > 0)
        json_object_set_new(o, "shared", hlx_hw_coll_json(&hw->shared));
    if (hlx_mkdir_parents(path) != 0) {
        snprintf(err, errlen, "%s: cannot create its folder: %s", path, strerror(errno));
        json_decref(o);
        return HLX_ERR_IO;
    }
    /* whole or not at all (hlx_out: a temporary file renamed into place); any failure here
     * is the machine's (exit 1) */
    st = hlx_json_write_file(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6),
                             path, err, errlen);
    json_decref(o);
    return st == HLX_OK ? HLX_OK : HLX_ERR_IO;
}

/* ---- the machine as a cluster ---- */

hlx_status_t hlx_hw_local_cluster(const hlx_hw_local_t *hw, hlx_cluster_t *c)
{
    int i;

    memset(c, 0, sizeof(*c));
    c->nodes = calloc(1, sizeof(*c->nodes));
    if (c->nodes == NULL)
        return HLX_ERR_NOMEM;
    snprintf(c->name, sizeof(c->name), "local");
    snprintf(c->description, sizeof(c->description), "%s, %d cores, measured %s",
             hw->cpu[0] ? hw->cpu : "this machine", hw->cores, hw->measured);
    c->nnodes = 1;
    c->ndomains = 1;
    snprintf(c->nodes[0].name, sizeof(c->nodes[0].name), "%s", hw->host[0] ? hw->host : "local");
    c->nodes[0].gpus = hw->cores;
    c->total_gpus = c->max_domain_gpus = hw->cores;
    snprintf(c->gpu.name, sizeof(c->gpu.name), "core");
    c->gpu.hbm_gib  = hw->mem_gib / hw->cores;
    c->gpu.hbm_gbps = hw->read_gbps;
    /* fp32 FMA peak; bf16 runs on the same units after widening, fp8/fp4 are not run */
    for (i = 0; i < HLX_DTYPE_COUNT; i++)
        c->gpu.peak_tflops[i] = hw->fma_gflops * 1e-3;
    c->link[HLX_LINK_SELF].bw_gbps = hw->read_gbps;
    for (i = HLX_LINK_SHM; i < HLX_LINK_COUNT; i++)
        if (hw->link[i].ranks > 0) {
            /* the cost model's alpha-beta per step: take the all-reduce's, which the
             * runtime pays twice per layer */
            c->link[i].bw_gbps    = hw->link[i].ar_gbps;
            c->link[i].latency_us = hw->link[i].ar_us;
        }
    return HLX_OK;
}

/* ---- the local predictor ---- */

/* Time of one attention call over len tokens at this shape. The nearest measured shape
 * of the same dtype and residency scales by the KV bytes per token when the exact shape
 * was not measured (the kernel streams K and V once per call, the group rides along). */
static double hlx_attn_time(const hlx_hw_local_t *hw, hlx_dtype_t t, int group, int dk,
                            int dv, int cached, double len)
{
    const hlx_hw_attn_t *best = NULL;
    double bestd = 1e300, scale;
    int i;

    for (i = 0; i < hw->nattn; i++) {
        const hlx_hw_attn_t *a = &hw->attn[i];
        double d;
        if (a->cached != cached && hw->nattn > 1)
            d = 1e6;
        else
            d = 0;
        d += (a->kv_dtype != t ? 1e3 : 0) + fabs(log((double)a->group / group)) +
             fabs(log((double)(a->dk + a->dv) / (dk + dv)));
        if (d < bestd)
            bestd = d, best = a;
    }
    if (best == NULL)
        return 0;
    scale = (double)(dk + dv) / (best->dk + best->dv) * hlx_dtype_bytes(t) /
            hlx_dtype_bytes(best->kv_dtype);
    /* more query heads per KV head than measured: the flops grow with the group */
    if (group > best->group)
        scale *= fmax(1.0, 0.5 + 0.5 * (double)group / best->group);
    return best->call_us * 1e-6 + len * best->ns_tok * 1e-9 * scale;
}

double hlx_hw_cached_span_mib(double llc_mib)
{
    return fmin(8.0, fmax(4.0, llc_mib / 4.0));
}

/* Read rate at a buffer of mib from the curve: log-log between points, the first point's
 * below it, the DRAM rate past the last. */
static double hlx_hw_curve_gbps(const hlx_hw_local_t *hw, double mib)
{
    int i;

    if (mib <= hw->curve_mib[0])
        return hw->curve_gbps[0];
    for (i = 1; i < hw->ncurve; i++)
        if (mib <= hw->curve_mib[i]) {
            double x = log(mib / hw->curve_mib[i - 1]) /
                       log(hw->curve_mib[i] / hw->curve_mib[i - 1]);
            return exp(log(hw->curve_gbps[i - 1]) +
                       x * (log(hw->curve_gbps[i]) - log(hw->curve_gbps[i - 1])));
        }
    return fmin(hw->curve_gbps[hw->ncurve - 1], hw->read_gbps);
}

double hlx_hw_dram_frac(const hlx_hw_local_t *hw, double ws)
{
    const double llc = hw->llc_mib * 1048576.0;
    double rc, rw, rd = hw->read_gbps;

    if (hw->ncurve < 2)
        return llc <= 0 ? 1.0 : fmin(1.0, fmax(0.0, (ws - 0.5 * llc) / (0.5 * llc)));
    rc = hlx_hw_curve_gbps(hw, hlx_hw_cached_span_mib(hw->llc_mib));
    rw = hlx_hw_curve_gbps(hw, ws / 1048576.0);
    if (!(rc > rd * 1.05)) /* no cache the curve can see */
        return ws > hlx_hw_cached_span_mib(hw->llc_mib) * 1048576.0 ? 1.0 : 0.0;
    return fmin(1.0, fmax(0.0, (1.0 / rw - 1.0 / rc) / (1.0 / rd - 1.0 / rc)));
}

/* Weight-streaming time of one GEMM at M rows: the measured rows nearest below and above
 * M interpolated linearly; more rows than measured extrapolate from the largest. */
static double hlx_gemm_time(const hlx_hw_local_t *hw, hlx_dtype_t t, int M, int cached,
                            double wbytes)
{
    const hlx_hw_gemm_t *lo = NULL, *hi = NULL;
    int i, pass;

    for (pass = 0; pass < 2 && lo == NULL && hi == NULL; pass++)
        for (i = 0; i < hw->ngemm; i++) {
            const hlx_hw_gemm_t *g = &hw->gemm[i];
            if (g->w_dtype != t || (pass == 0 && g->cached != cached))
                continue;
            if (g->m <= M && (lo == NULL || g->m > lo->m))
                lo = g;
            if (g->m >= M && (hi == NULL || g->m < hi->m))
                hi = g;
        }
    if (lo == NULL && hi == NULL) /* no point of this dtype: the read roofline */
        return wbytes / (hw->read_gbps * 1e9);
    /* rows the kernels run as passes of their 8-row kernel over W (the hw file says up to
     * how many: avx512 and amx 16 rows of f32 weights, 64 of bf16), each pass reading W */
    if (M > 8 && M <= hw->gemm_pass_rows[t == HLX_DTYPE_BF16])
        return hlx_gemm_time(hw, t, 8, cached, wbytes) +
               hlx_gemm_time(hw, t, M - 8, cached, wbytes);
    if (lo == NULL)
        lo = hi;
    if (hi == NULL) {
        /* beyond the largest M: the time per weight byte grows with the rows past it */
        double tl = lo->call_us * 1e-6 + wbytes / (lo->gbps * 1e9);
        return tl * fmax(1.0, (double)M / lo->m * 0.5 + 0.5);
    }
    {
        double tl = lo->call_us * 1e-6 + wbytes / (lo->gbps * 1e9);
        double th = hi->call_us * 1e-6 + wbytes / (hi->gbps * 1e9);
        double f = hi->m == lo->m ? 0 : (double)(M - lo->m) / (hi->m - lo->m);
        return tl + f * (th - tl);
    }
}

/* The measured group a collective over n ranks of this host uses: shm (or the first
 * measured class), the "shared" group when n exceeds the cores; NULL if none. */
static const hlx_hw_coll_t *hlx_coll_link(const hlx_hw_local_t *hw, int n)
{
    const hlx_hw_coll_t *c = &hw->link[HLX_LINK_SHM];
    int i;

    if (c->ranks == 0)
        for (i = HLX_LINK_SHM; i < HLX_LINK_COUNT && c->ranks == 0; i++)
            c = &hw->link[i];
    if (n > hw->cores && hw->shared.ranks > 0)
        c = &hw->shared;
    return c->ranks == 0 ? NULL : c;
}

/* Collective alpha-beta over n ranks: the measured class (shm on one host); past the
 * cores, the oversubscribed measurement. kind 0 all-to-all, 1 all-reduce, 2 all-gather. */
static double hlx_coll_time(const hlx_hw_local_t *hw, int kind, int n, double M)
{
    const hlx_hw_coll_t *c = hlx_coll_link(hw, n);
    double a, b, steps;

    if (n <= 1 || c == NULL)
        return 0;
    a = kind == 0 ? c->a2a_us : kind == 1 ? c->ar_us : c->ag_us;
    b = kind == 0 ? c->a2a_gbps : kind == 1 ? c->ar_gbps : c->ag_gbps;
    /* latency grows with the rounds of the algorithm (log2), bandwidth term with (n-1)/n
     * of the buffer, both relative to the measured group */
    steps = fmax(1.0, log2((double)n) / log2((double)c->ranks));
    return a * 1e-6 * steps + ((double)(n - 1) / n) / ((double)(c->ranks - 1) / c->ranks) *
                                  M / (b * 1e9);
}

#define HLX_BAD(...) \
    do { \
        snprintf(err, errlen, __VA_ARGS__); \
        return HLX_ERR_INVALID; \
    } while (0)

/* What a collective over n ranks costs in a step beyond hlx_coll_time: measured right
 * after compute (bench local's step_us): its lines gone cold, the ranks arriving apart,
 * the wake-up, and with more ranks than cores the turn of the rank sharing the core.
 * 0 when not measured (older hw files). */
static double hlx_coll_wait(const hlx_hw_local_t *hw, int n)
{
    const hlx_hw_coll_t *c = hlx_coll_link(hw, n);

    if (n <= 1 || c == NULL || c->step_us <= 0)
        return 0;
    return fmax(0.0, c->step_us - c->ar_us) * 1e-6;
}

/* A GEMM split over T threads by output columns (hlx_pool_gemm): each thread a 1/T share
 * of the weights at the measured rate, its own call overhead, all at once. */
static double hlx_gemm_time_split(const hlx_hw_local_t *hw, int T, hlx_dtype_t t, int M,
                                  int cached, double wbytes)
{
    return hlx_gemm_time(hw, t, M, cached, wbytes / T);
}

hlx_status_t hlx_local_predict(const hlx_hw_local_t *hw, const hlx_model_t *m,
                               const hlx_local_cfg_t *cfg, hlx_local_pred_t *p, char *err,
                               size_t errlen)
{
    const int Q = m->q_heads, K = m->kv_heads, H = m->hidden, B = cfg->batch;
    const int dk = hlx_model_key_dim(m), dv = hlx_model_value_dim(m);
    const double wb = hlx_dtype_bytes(cfg->w_dtype), kb = hlx_dtype_bytes(cfg->kv_dtype);
    const double L = m->layers;
    int64_t n64 = (int64_t)cfg->kvp * cfg->tpa;
    hlx_helix_split_t sp;
    int n, q_local, group, kv_local, q_slice, pw, fc, vc, vpad, ph;
    double cap, len, kv_rank, w_rank, t_attn1, a2a, req, share, f, ws, dram_slow;
    double wait_s[HLX_PHASE_COUNT] = { 0 };
    double qkv_cols, ow, Lm, e_loc, e_cols, s_cols, e_hit, e_rows, dmat;
    int ep, a2a_n = 1; /* exchanges a layer that wait for their peers' turn */
    const int mb = cfg->micro_batch < 1 ? 1 : cfg->micro_batch < B ? cfg->micro_batch : B;
    const int mla = m->attn == HLX_ATTN_MLA, T = cfg->threads > 1 ? cfg->threads : 1;

    memset(p, 0, sizeof(*p));
    if (cfg->kvp < 1 || cfg->tpa < 1 || B < 1 || cfg->kv_block < 1 || cfg->context < 0 ||
        cfg->steps < 0)
        HLX_BAD("kvp, tpa, batch and kv_block must be at least 1, context and steps at least 0");
    if (n64 > (1 << 20))
        HLX_BAD("kvp x tpa = %d x %d = %lld exceeds %d ranks", cfg->kvp, cfg->tpa,
                (long long)n64, 1 << 20);
    if (cfg->context > ((int64_t)1 << 50) || cfg->steps > 100000000)
        HLX_BAD("context %lld + steps %d is out of range", (long long)cfg->context, cfg->steps);
    n = (int)n64;
    if (mla && cfg->tpa != 1)
        HLX_BAD("tpa %d: model %s uses MLA, whose latent KV cache is one head shared by every "
                "query head: the runtime runs it with tpa 1 (all ranks on kvp)", cfg->tpa,
                m->name);
    /* MLA's heads are never cut (kvp at most Q, its one TPA shard's heads) */
    if (mla && cfg->kvp > Q)
        HLX_BAD("kvp %d: model %s uses MLA, whose %d query heads are merged whole (W_UV needs "
                "a head's whole latent): kvp at most %d", cfg->kvp, m->name, Q, Q);
    if (hlx_helix_split(Q, K, hlx_model_value_dim(m), cfg->kvp, cfg->tpa, &sp, err,
                        errlen) != HLX_OK)
        return HLX_ERR_INVALID;
    if (n > H || (hlx_model_moe_layers(m) < m->layers && n > m->ffn) || n > m->vocab)
        HLX_BAD("N = %d ranks is larger than hidden, ffn or vocab", n);
    if (hw->cores < 1 || hw->read_gbps <= 0)
        HLX_BAD("the hw file describes no cores or no bandwidth");

    /* the busiest rank's share of the work, as runtime/layout.c cuts it (uneven splits:
     * the largest share; every collective waits for that rank) */
    q_local  = sp.q_local_max;
    group    = sp.group;
    kv_local = sp.kv_local_max;
    q_slice  = sp.q_slice_max;           /* head pieces, pw of the dv values each */
    pw       = dv / sp.q_split;
    fc       = (int)(((int64_t)m->ffn + n - 1) / n);
    dmat     = hlx_model_ffn_mats(m); /* dense FFN matrices: a plain MLP has no gate */
    vc       = (int)(((int64_t)m->vocab + n - 1) / n);
    vpad     = (m->vocab + n - 1) / n;
    qkv_cols = (double)q_local * dk + (double)kv_local * (dk + dv);
    /* W_o rows of the rank's head pieces; MLA: W_UV of those heads too (latent -> v) */
    ow = (double)q_slice * (m->v_head_dim / sp.q_split) * (H + (mla ? m->kv_lora_rank : 0));
    if (mla) { /* q (q_a + q_b, or q_proj), kv_a, and W_UK of every head (absorbed) */
        double qk = m->qk_nope_dim + m->qk_rope_dim, ql = m->q_lora_rank;
        qkv_cols = (ql > 0 ? ql + ql * Q * qk / H : Q * qk) + dk +
                   (double)Q * m->qk_nope_dim * m->kv_lora_rank / H;
    }
    /* KV positions of rank 0: blocks of kv_block round-robin over KVP, windowed layers
     * keeping (in a ring) and reading their window only (hlx_model_attn_tokens); the mean
     * length seen during the steps is the context plus half of them */
    cap = ceil(hlx_model_attn_tokens(m, (double)(cfg->context + cfg->steps)) / cfg->kvp);
    len = hlx_model_attn_tokens(m, (double)cfg->context + cfg->steps * 0.5) / cfg->kvp;
    kv_rank = L * B * kv_local * cap * (dk + (mla ? 0 : dv)) * kb; /* MLA: one latent row */
    /* MoE layers: rank 0's slices (E / EP experts of expert_ffn / TPF columns, shared
     * columns over N), the f32 router; dense layers the dense FFN columns */
    ep   = cfg->ep > 1 ? cfg->ep : 1;
    Lm   = (double)hlx_model_moe_layers(m);
    e_loc = m->experts > 0 ? (double)m->experts / ep : 0.0;
    e_cols = (double)m->expert_ffn / ((double)n / ep);
    s_cols = (double)m->shared_experts * m->expert_ffn / n;
    /* experts of this EP group hit by B requests of top_k each, and requests per hit */
    e_hit = m->experts > 0 ? e_loc * (1.0 - pow(1.0 - (double)m->top_k / m->experts, B)) : 0.0;
    e_rows = e_hit > 0 ? fmax(1.0, (double)B * m->top_k / m->experts) : 0.0;
    w_rank  = ((L - Lm) * dmat * H * fc + Lm * 3.0 * H * (e_loc * e_cols + s_cols) +
               L * (H * qkv_cols + ow) + (double)vc * H) * wb +
              Lm * (double)H * m->experts * 4.0;
    ws = (kv_rank + w_rank) * n;
    /* what one step reads, over every rank on this host, against the caches: the share
     * of it read at DRAM rates, from the measured read curve (hlx_hw_dram_frac) */
    f = hlx_hw_dram_frac(hw, ws);
    /* cores in use: T per rank */
    share = (double)n * T > hw->cores ? (double)n * T / hw->cores : 1.0;
    /* the ranks that run at once share the memory: each streams from DRAM at the rate
     * measured with that many attention kernels at once, each on its own core and KV
     * (linear between 1 and the measured count) against the one-kernel rate the kernel
     * timings were taken at. Saturating readers said 1.52x slower each while two decode
     * ranks streamed 23 GB/s each, as fast as one alone: kernels that compute while they
     * read ask less of the memory. (Two kernels at once measured 4-10% faster each on the
     * Zen 5 VM, and the decode ranks 0-9%: never counted as faster than one alone.) */
    dram_slow = 1.0;
    if (hw->dram_readers > 1 && hw->dram_gbps_1 > 0 && hw->dram_gbps_n > 0) {
        int k = (int)fmin((double)n * T, (double)hw->cores);
        double x = fmin(1.0, (double)(k - 1) / (hw->dram_readers - 1));
        double per = hw->dram_gbps_1 + x * (hw->dram_gbps_n - hw->dram_gbps_1);
        dram_slow = fmax(1.0, hw->dram_gbps_1 / per);
    }

    /* a blend of the cached and the DRAM rate; DRAM never counts as faster than the cache
     * (two noisy measurements must not make a larger working set cheaper) */
#define HLX_MIX(_fn_cached, _fn_dram) \
    ((1.0 - f) * (_fn_cached) + f * fmax((_fn_cached), (_fn_dram) * dram_slow))
#define HLX_GEMM_MIX(_t, _rows, _bytes) \
    HLX_MIX(hlx_gemm_time_split(hw, T, (_t), (_rows), 1, (_bytes)), \
            hlx_gemm_time_split(hw, T, (_t), (_rows), 0, (_bytes)))
    /* qkv: norm + fused QKV GEMM + RoPE + append */
    p->phase_s[HLX_PHASE_QKV] = L * HLX_GEMM_MIX(cfg->w_dtype, B, H * qkv_cols * wb);
    /* attention: B x kv_local calls over the local shard, each split over the T threads
     * (a 1/T share of the shard each, at once; their merge is small) */
    t_attn1 = kv_local * HLX_MIX(hlx_attn_time(hw, cfg->kv_dtype, group, dk, dv, 1, len / T),
                                 hlx_attn_time(hw, cfg->kv_dtype, group, dk, dv, 0, len / T));
    p->phase_s[HLX_PHASE_ATTN] = L * B * t_attn1;
    /* the KVP all-to-all: peer j gets [B][q_slice][pw + 1] floats (a piece and its head's
     * LSE), req of them a request */
    req = (double)q_slice * (pw + 1) * 4.0 * (cfg->kvp - 1);
    a2a = hlx_coll_time(hw, 0, cfg->kvp, B * req);
    if (cfg->hopb && cfg->kvp > 1 && B > 1 && mb < B) {
        /* micro-batches of mb requests (the last one smaller): c + (nb-1) max(c, m) + m;
         * attention keeps its own time, the all-to-all shows what is left exposed. With
         * more ranks than cores nothing hides: the peer an exchange waits for computes
         * when this rank stops, so each of the nb exchanges is exposed with its wait. */
        const int nb = (B + mb - 1) / mb, last = B - (nb - 1) * mb;
        const double m_mb = hlx_coll_time(hw, 0, cfg->kvp, mb * req);
        const double m_last = hlx_coll_time(hw, 0, cfg->kvp, last * req);
        if (share > 1.0) {
            p->phase_s[HLX_PHASE_A2A] = L * ((nb - 1) * m_mb + m_last);
            a2a_n = nb;
        } else {
            p->phase_s[HLX_PHASE_A2A] =
                L * fmax(0.0, hlx_hopb_pipeline(nb, mb * t_attn1, m_mb, last * t_attn1, m_last) -
                                  B * t_attn1);
        }
    } else {
        p->phase_s[HLX_PHASE_A2A] = L * a2a;
    }
    /* merge: reads kvp partials of every merged piece (cache resident) */
    p->phase_s[HLX_PHASE_MERGE] = L * (2.0 * cfg->kvp * B * q_slice * (pw + 1) * 4.0) /
                                  (hw->read_gbps * 2e9);
    p->phase_s[HLX_PHASE_OPROJ] = L * HLX_GEMM_MIX(cfg->w_dtype, B, ow * wb);
    p->phase_s[HLX_PHASE_OPROJ_AR] = L * hlx_coll_time(hw, 1, n, (double)B * H * 4.0);
    p->phase_s[HLX_PHASE_FFN] = (L - Lm) *
        (HLX_GEMM_MIX(cfg->w_dtype, B, (dmat - 1.0) * H * fc * wb) + /* gate | up, or up */
         HLX_GEMM_MIX(cfg->w_dtype, B, (double)H * fc * wb));
    /* MoE: the router (f32, read whole), the shared columns for the batch, and each
     * expert hit for its share of the requests */
    p->phase_s[HLX_PHASE_MOE] = Lm * (HLX_GEMM_MIX(HLX_DTYPE_F32, B, (double)H * m->experts * 4.0) +
                                      HLX_GEMM_MIX(cfg->w_dtype, B, 3.0 * H * s_cols * wb) +
                                      e_hit * HLX_GEMM_MIX(cfg->w_dtype, (int)e_rows,
                                                           3.0 * H * e_cols * wb));
    p->phase_s[HLX_PHASE_FFN_AR] = L * hlx_coll_time(hw, 1, n, (double)B * H * 4.0);
    p->phase_s[HLX_PHASE_HEAD] = HLX_GEMM_MIX(cfg->w_dtype, B, (double)vc * H * wb) +
        hlx_coll_time(hw, 2, n, (double)B * vpad * 4.0 * n);
    /* the embedding: B rows of this rank's vocabulary slice (small), summed over N ranks */
    p->phase_s[HLX_PHASE_EMBED] = hlx_coll_time(hw, 1, n, (double)B * H * 4.0);
#undef HLX_GEMM_MIX
#undef HLX_MIX
    /* each collective as the step meets it, after compute (not scaled by the share below) */
    wait_s[HLX_PHASE_A2A] = L * a2a_n * hlx_coll_wait(hw, cfg->kvp);
    wait_s[HLX_PHASE_OPROJ_AR] = L * hlx_coll_wait(hw, n);
    wait_s[HLX_PHASE_FFN_AR] = L * hlx_coll_wait(hw, n);
    wait_s[HLX_PHASE_HEAD] = hlx_coll_wait(hw, n);
    wait_s[HLX_PHASE_EMBED] = hlx_coll_wait(hw, n);
    /* more ranks than cores: every rank's compute waits its turn on a shared core */
    for (ph = 0; ph < HLX_PHASE_COUNT; ph++) {
        if (ph == HLX_PHASE_QKV || ph == HLX_PHASE_ATTN || ph == HLX_PHASE_MERGE ||
            ph == HLX_PHASE_OPROJ || ph == HLX_PHASE_FFN || ph == HLX_PHASE_MOE ||
            ph == HLX_PHASE_HEAD)
            p->phase_s[ph] *= share;
        p->phase_s[ph] += wait_s[ph];
        p->step_s += p->phase_s[ph];
    }
    p->ws_bytes  = ws;
    p->dram_frac = f;
    p->share     = share;
    p->dram_slow = dram_slow;
    return HLX_OK;
}
