/* Writes safetensors shards and their index (the layout Hugging Face's save_pretrained
 * produces): header padded to 8 bytes, tensors back to back, row by row from a callback.
 * Every size is worked out (overflow-checked) and the free space checked before a byte is
 * written; each file is written unnamed (or under a temporary name: util's hlx_wfile) and
 * put in place only once all of them are complete, so an interrupted or failed write leaves
 * the directory's files as they were. */
#define _GNU_SOURCE
#include "hlx_ckpt.h"
#include "hlx_err.h"
#include "hlx_file.h"
#include "hlx_parse.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>


static uint16_t hlx_f32_to_f16(float f)
{
    union { float f; uint32_t u; } v = { f };
    uint32_t s = (v.u >> 16) & 0x8000u, a = v.u & 0x7fffffffu;

    if (a > 0x7f800000u)
        return (uint16_t)(s | 0x7e00u);
    if (a >= 0x477ff000u) /* rounds past 65504 */
        return (uint16_t)(s | 0x7c00u);
    if (a < 0x38800000u) { /* subnormal: multiples of 2^-24 */
        float x = fabsf(f) * 0x1p24f;
        return (uint16_t)(s | (uint32_t)nearbyintf(x));
    }
    a += 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(s | ((a - 0x38000000u) >> 13));
}

static void hlx_w_store(uint8_t *p, hlx_st_dtype_t t, size_t i, float v)
{
    switch (t) {
    case HLX_ST_F32: memcpy(p + 4 * i, &v, 4); break;
    case HLX_ST_BF16: { uint16_t h = hlx_f32_to_bf16(v); memcpy(p + 2 * i, &h, 2); break; }
    case HLX_ST_F16: { uint16_t h = hlx_f32_to_f16(v); memcpy(p + 2 * i, &h, 2); break; }
    default: p[i] = hlx_f32_to_fp8(v); break;
    }
}

/* A checkpoint file: dir/name through util's hlx_wfile (unnamed until committed), with
 * the permissions open() would give. */
static hlx_status_t hlx_w_open(hlx_wfile_t *w, const char *dir, const char *name, char *err,
                               size_t errlen)
{
    char path[sizeof(w->path)];

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
        w->fd = -1;
        w->named = 0;
        return hlx_errbuf(err, errlen, HLX_ERR_INVALID, "%.64s...: path too long", dir);
    }
    return hlx_wfile_open(w, path, 0644, err, errlen);
}

hlx_status_t hlx_ckpt_write_file(const char *dir, const char *name, const char *text,
                                 char *err, size_t errlen)
{
    hlx_wfile_t w;
    hlx_status_t st = hlx_w_open(&w, dir, name, err, errlen);

    if (st == HLX_OK && (st = hlx_wfile_put(&w, text, strlen(text), err, errlen)) != HLX_OK)
        hlx_wfile_abort(&w);
    return st == HLX_OK ? hlx_wfile_commit(&w, err, errlen) : st;
}

hlx_status_t hlx_ckpt_space_check(const char *dir, uint64_t bytes, char *err, size_t errlen)
{
    char path[1024], hb[32], ha[32];
    struct statvfs vs;
    uint64_t avail;
    char *slash;

    if ((size_t)snprintf(path, sizeof(path), "%s", dir) >= sizeof(path))
        return hlx_errbuf(err, errlen, HLX_ERR_INVALID, "%.64s...: path too long", dir);
    /* the directory, else the nearest folder above it that exists (it will be created) */
    while (statvfs(path[0] ? path : ".", &vs) != 0) {
        size_t len = strlen(path);
        int e = errno;
        if (e == ENOENT) {
            while (len > 1 && path[len - 1] == '/')
                path[--len] = '\0'; /* trailing slashes */
            slash = strrchr(path, '/');
            if (slash == NULL)
                path[0] = '\0';
            else
                slash[slash == path ? 1 : 0] = '\0';
        }
        if (e != ENOENT || strlen(path) == len) /* an error, or nothing left to go up */
            return hlx_errbuf(err, errlen, hlx_wfile_errno_status(e),
                              "%s: cannot see its file system: %s", dir, strerror(e));
    }
    if (__builtin_mul_overflow((uint64_t)vs.f_bavail, (uint64_t)vs.f_frsize, &avail))
        avail = UINT64_MAX;
    if (bytes > avail)
        return hlx_errbuf(err, errlen, HLX_ERR_NOSPACE,
                          "%s: the checkpoint needs %llu bytes (%s) and the file system there "
                          "has %llu bytes (%s) free; free some space or write elsewhere", dir,
                          (unsigned long long)bytes, hlx_format_bytes(bytes, hb, sizeof(hb)),
                          (unsigned long long)avail, hlx_format_bytes(avail, ha, sizeof(ha)));
    return HLX_OK;
}

/* ---- the plan: every file's size before anything is written ----------------------------- */

/* The rows a tensor of the list is written as and their length: a 3-D one's first two
 * dimensions together, a 1-D one (or one value) one row. */
static int64_t hlx_w_rows(const hlx_hf_expect_t *t)
{
    return t->ndim == 3 ? t->shape[0] * t->shape[1] : t->ndim == 2 ? t->shape[0] : 1;
}

static int64_t hlx_w_cols(const hlx_hf_expect_t *t)
{
    return t->ndim == 3 ? t->shape[2] : t->ndim == 2 ? t->shape[1] : t->shape[0];
}

static hlx_status_t hlx_w_bytes(const hlx_hf_expect_t *t, uint64_t *bytes_p, char *err,
                                size_t errlen)
{
    uint64_t n;

    /* ndim 0: one value (shape[0] 1), written with shape []; 3: gpt-oss's fused experts */
    if (t->ndim < 0 || t->ndim > 3 || t->shape[0] < 0 || (t->ndim >= 2 && t->shape[1] < 0) ||
        (t->ndim == 3 && t->shape[2] < 0) || (t->ndim == 0 && t->shape[0] != 1) ||
        __builtin_mul_overflow((uint64_t)t->shape[0],
                               (uint64_t)(t->ndim >= 2 ? t->shape[1] : 1), &n) ||
        __builtin_mul_overflow(n, (uint64_t)(t->ndim == 3 ? t->shape[2] : 1), &n) ||
        __builtin_mul_overflow(n, (uint64_t)hlx_st_dtype_size(t->dtype), &n) ||
        n > (uint64_t)INT64_MAX)
        return hlx_errbuf(err, errlen, HLX_ERR_INVALID,
                          "tensor %s: %d-D, shape [%lld, %lld]: its size overflows", t->name,
                          t->ndim, (long long)t->shape[0], (long long)t->shape[1]);
    *bytes_p = n;
    return HLX_OK;
}

typedef struct {
    size_t   a, b;       /* tensors [a, b) of the list */
    char     fname[64];
    char    *hdr;        /* JSON header text */
    size_t   tlen;       /* its length */
    uint64_t hlen;       /* padded to 8 bytes */
    uint64_t file_bytes; /* 8 + hlen + data */
} hlx_w_shard_t;

typedef struct {
    hlx_w_shard_t *shards;
    int            nshards;
    char          *index;  /* index JSON text (nshards > 1) */
    char          *config; /* config.json text (a config given) */
    uint64_t       bytes;  /* every file together */
} hlx_w_plan_t;

static void hlx_w_plan_free(hlx_w_plan_t *p)
{
    int s;

    for (s = 0; p->shards != NULL && s < p->nshards; s++)
        free(p->shards[s].hdr);
    free(p->shards);
    free(p->index);
    free(p->config);
    memset(p, 0, sizeof(*p));
}

#define HLX_W_ADD(_acc, _v)                                                            \
    do {                                                                               \
        if (__builtin_add_overflow((_acc), (uint64_t)(_v), &(_acc)) ||                 \
            (_acc) > (uint64_t)INT64_MAX) {                                            \
            st = hlx_errbuf(err, errlen, HLX_ERR_INVALID, "the checkpoint's size "     \
                            "overflows 63 bits");                                      \
            goto out;                                                                  \
        }                                                                              \
    } while (0)

/* Cuts the list into shards by bytes (shard s ends once the bytes so far reach (s + 1) /
 * nshards), builds each header, the index and config.json, and adds up every size. */
static hlx_status_t hlx_w_plan(const hlx_hf_expect_t *list, size_t n, int nshards,
                               const hlx_hf_config_t *cfg, hlx_w_plan_t *p, char *err,
                               size_t errlen)
{
    uint64_t total = 0, acc = 0, nb;
    json_t *index = NULL, *wm = NULL;
    hlx_status_t st = HLX_OK;
    size_t i, a = 0;
    int s;

    memset(p, 0, sizeof(*p));
    if (nshards < 1 || (size_t)nshards > n)
        return hlx_errbuf(err, errlen, HLX_ERR_INVALID, "%d shards for %zu tensors", nshards, n);
    for (i = 0; i < n; i++) {
        if (list[i].dtype != HLX_ST_F32 && list[i].dtype != HLX_ST_BF16 &&
            list[i].dtype != HLX_ST_F16 && list[i].dtype != HLX_ST_F8_E4M3)
            return hlx_errbuf(err, errlen, HLX_ERR_INVALID,
                              "tensor %s: cannot write %s (F32, BF16, F16 or F8_E4M3)",
                              list[i].name, hlx_st_dtype_name(list[i].dtype));
        if ((st = hlx_w_bytes(&list[i], &nb, err, errlen)) != HLX_OK)
            return st;
        HLX_W_ADD(total, nb);
    }
    p->nshards = nshards;
    p->shards = calloc((size_t)nshards, sizeof(*p->shards));
    if (p->shards == NULL)
        goto nomem;
    if (nshards > 1) {
        index = json_object();
        wm = json_object();
        if (index == NULL || wm == NULL)
            goto nomem;
        json_object_set_new(index, "metadata", json_pack("{s:I}", "total_size", (json_int_t)total));
        json_object_set(index, "weight_map", wm);
    }
    for (s = 0; s < nshards; s++) {
        hlx_w_shard_t *sh = &p->shards[s];
        json_t *hdr = json_object();
        uint64_t off = 0;
        size_t b = a;
        while (b < n) {
            (void)hlx_w_bytes(&list[b], &nb, err, errlen); /* checked above */
            if (!(b == a || acc + nb <= total / (uint64_t)nshards * (uint64_t)(s + 1) ||
                  s == nshards - 1) || n - b <= (size_t)(nshards - 1 - s))
                break;
            acc += nb;
            b++;
        }
        sh->a = a;
        sh->b = b;
        if (nshards == 1)
            snprintf(sh->fname, sizeof(sh->fname), "model.safetensors");
        else
            snprintf(sh->fname, sizeof(sh->fname), "model-%05d-of-%05d.safetensors", s + 1,
                     nshards);
        if (hdr == NULL)
            goto nomem;
        for (i = a; i < b; i++) {
            const hlx_hf_expect_t *t = &list[i];
            json_t *shape = t->ndim == 3 ? json_pack("[I, I, I]", (json_int_t)t->shape[0],
                                                     (json_int_t)t->shape[1],
                                                     (json_int_t)t->shape[2])
                          : t->ndim == 2 ? json_pack("[I, I]", (json_int_t)t->shape[0],
                                                     (json_int_t)t->shape[1])
                                         : t->ndim == 1 ? json_pack("[I]", (json_int_t)t->shape[0])
                                                        : json_array();
            (void)hlx_w_bytes(t, &nb, err, errlen);
            json_object_set_new(hdr, t->name,
                                json_pack("{s:s, s:o, s:[I, I]}", "dtype",
                                          hlx_st_dtype_name(t->dtype), "shape", shape,
                                          "data_offsets", (json_int_t)off,
                                          (json_int_t)(off + nb)));
            off += nb;
            if (wm != NULL)
                json_object_set_new(wm, t->name, json_string(sh->fname));
        }
        sh->hdr = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(hdr);
        if (sh->hdr == NULL)
            goto nomem;
        sh->tlen = strlen(sh->hdr);
        /* data starts 8-byte aligned; the header is padded with spaces */
        sh->hlen = ((uint64_t)sh->tlen + 7) / 8 * 8;
        sh->file_bytes = 8;
        HLX_W_ADD(sh->file_bytes, sh->hlen);
        HLX_W_ADD(sh->file_bytes, off);
        HLX_W_ADD(p->bytes, sh->file_bytes);
        a = b;
    }
    if (index != NULL) {
        p->index = json_dumps(index, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (p->index == NULL)
            goto nomem;
        HLX_W_ADD(p->bytes, strlen(p->index));
    }
    if (cfg != NULL) {
        if ((p->config = hlx_hf_config_text(cfg)) == NULL)
            goto nomem;
        HLX_W_ADD(p->bytes, strlen(p->config));
    }
    json_decref(wm);
    json_decref(index);
    return HLX_OK;

nomem:
    st = hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "out of memory planning the checkpoint");
out:
    json_decref(wm);
    json_decref(index);
    hlx_w_plan_free(p);
    return st;
}

hlx_status_t hlx_ckpt_write_size(const hlx_hf_expect_t *list, size_t n, int nshards,
                                 const hlx_hf_config_t *cfg, uint64_t *bytes_p, char *err,
                                 size_t errlen)
{
    hlx_w_plan_t p;
    hlx_status_t st = hlx_w_plan(list, n, nshards, cfg, &p, err, errlen);

    if (st != HLX_OK)
        return st;
    *bytes_p = p.bytes;
    hlx_w_plan_free(&p);
    return HLX_OK;
}

/* ---- writing -------------------------------------------------------------------------- */

/* One shard's bytes into w: the header, then tensors [a, b) row by row. */
static hlx_status_t hlx_w_shard(hlx_wfile_t *w, const hlx_w_shard_t *sh,
                                const hlx_hf_expect_t *list, hlx_ckpt_fill_fn fill, void *ctx,
                                char *err, size_t errlen)
{
    float *row = NULL;
    uint8_t *out = NULL, lenbuf[8];
    int64_t maxc = 1, r;
    hlx_status_t st = HLX_OK;
    FILE *f = NULL;
    size_t i;
    int fd = -1, e = 0;

    for (i = sh->a; i < sh->b; i++) {
        const hlx_hf_expect_t *t = &list[i];
        if (hlx_w_cols(t) > maxc)
            maxc = hlx_w_cols(t);
    }
    row = malloc(sizeof(float) * (size_t)maxc);
    out = malloc(sizeof(float) * (size_t)maxc);
    if (row == NULL || out == NULL) {
        st = hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "%s: out of memory", w->path);
        goto out;
    }
    /* buffered writes through a second descriptor: w keeps its own for the commit */
    if ((fd = dup(w->fd)) < 0 || (f = fdopen(fd, "wb")) == NULL) {
        e = errno;
        if (fd >= 0)
            close(fd);
        st = hlx_errbuf(err, errlen, HLX_ERR_IO, "%s: %s", w->path, strerror(e));
        goto out;
    }
    errno = 0;
    for (i = 0; i < 8; i++)
        lenbuf[i] = (uint8_t)(sh->hlen >> (8 * i));
    if (fwrite(lenbuf, 1, 8, f) != 8 || fwrite(sh->hdr, 1, sh->tlen, f) != sh->tlen)
        goto werr;
    for (i = sh->tlen; i < sh->hlen; i++)
        if (fputc(' ', f) == EOF)
            goto werr;
    for (i = sh->a; i < sh->b; i++) {
        const hlx_hf_expect_t *t = &list[i];
        int64_t rows = hlx_w_rows(t), cols = hlx_w_cols(t), c;
        for (r = 0; r < rows; r++) {
            if ((st = fill(ctx, t, i, r, row)) != HLX_OK) {
                snprintf(err, errlen, "%s: tensor %s: no values for row %lld", w->path, t->name,
                         (long long)r);
                goto out;
            }
            for (c = 0; c < cols; c++)
                hlx_w_store(out, t->dtype, (size_t)c, row[c]);
            if (fwrite(out, hlx_st_dtype_size(t->dtype), (size_t)cols, f) != (size_t)cols)
                goto werr;
        }
    }
    if (fflush(f) != 0)
        goto werr;
    goto out;

werr:
    e = errno ? errno : EIO; /* stdio sets errno for the write that failed */
    st = hlx_errbuf(err, errlen, hlx_wfile_errno_status(e), "%s: write failed: %s", w->path,
                    strerror(e));
out:
    if (f != NULL && fclose(f) != 0 && st == HLX_OK) {
        e = errno;
        st = hlx_errbuf(err, errlen, hlx_wfile_errno_status(e), "%s: write failed: %s",
                        w->path, strerror(e));
    }
    free(row);
    free(out);
    return st;
}

/* Most bytes of an old index read for its shard names: the largest real ones (DeepSeek-V3's
 * 163 shards, about 94,000 names) take a few MB. */
#define HLX_W_OLD_INDEX_MAX ((off_t)64 << 20)

/* The shards an index already in dir names (its weight_map's values: plain file names
 * ending in .safetensors, each a regular file or a symbolic link there) that the plan p
 * does not write, as a JSON object used as a set (NULL: none, or no readable index: not a
 * regular file, larger than HLX_W_OLD_INDEX_MAX, not JSON), to be removed once p's files
 * are in place: a checkpoint written again with fewer shards leaves none of its old ones
 * behind. Files the old index does not name are never touched, nor a name whose path
 * would not fit. */
static json_t *hlx_w_old_shards(const char *dir, const hlx_w_plan_t *p, int nshards)
{
    json_t *idx, *wm, *v, *old = NULL;
    const char *key, *name;
    char path[1200];
    struct stat sb;
    size_t len;
    int s, n;

    n = snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
    if (n < 0 || (size_t)n >= sizeof(path) || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        sb.st_size > HLX_W_OLD_INDEX_MAX || (idx = json_load_file(path, 0, NULL)) == NULL)
        return NULL;
    wm = json_object_get(idx, "weight_map");
    json_object_foreach(wm, key, v) {
        if ((name = json_string_value(v)) == NULL || strchr(name, '/') || name[0] == '.' ||
            (len = strlen(name)) <= 12 || strcmp(name + len - 12, ".safetensors") != 0 ||
            (old != NULL && json_object_get(old, name) != NULL))
            continue;
        for (s = 0; s < nshards && strcmp(p->shards[s].fname, name) != 0; s++)
            ;
        n = snprintf(path, sizeof(path), "%s/%s", dir, name);
        if (s < nshards || n < 0 || (size_t)n >= sizeof(path) || lstat(path, &sb) != 0 ||
            !(S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode)))
            continue;
        if ((old == NULL && (old = json_object()) == NULL) ||
            json_object_set_new(old, name, json_true()) != 0)
            break; /* out of memory: those found so far */
    }
    json_decref(idx);
    return old;
}

/* Removes dir's files named in old (hlx_w_old_shards), every one tried; the first failure
 * (the new checkpoint already in place) said in err: HLX_ERR_IO, a run that failed, not a
 * refusal of input. */
static hlx_status_t hlx_w_drop_old(const char *dir, json_t *old, char *err, size_t errlen)
{
    const char *name;
    json_t *v;
    char path[1200];
    hlx_status_t st = HLX_OK;

    json_object_foreach(old, name, v) {
        snprintf(path, sizeof(path), "%s/%s", dir, name); /* fits: hlx_w_old_shards */
        if (unlink(path) != 0 && errno != ENOENT && st == HLX_OK)
            st = hlx_errbuf(err, errlen, HLX_ERR_IO, "%s: cannot remove the previous "
                            "checkpoint's shard (the new checkpoint is in place): %s", path,
                            strerror(errno));
    }
    return st;
}

hlx_status_t hlx_ckpt_write(const char *dir, const hlx_hf_expect_t *list, size_t n,
                            int nshards, const hlx_hf_config_t *cfg, hlx_ckpt_fill_fn fill,
                            void *ctx, char *err, size_t errlen)
{
    hlx_w_plan_t p;
    hlx_wfile_t *w = NULL;
    json_t *old = NULL; /* the previous index's shards this write leaves out */
    struct stat sb;
    char path[1200];
    hlx_status_t st;
    int s, nw = 0, nfiles;

    if ((st = hlx_w_plan(list, n, nshards, cfg, &p, err, errlen)) != HLX_OK)
        return st;
    if ((st = hlx_ckpt_space_check(dir, p.bytes, err, errlen)) != HLX_OK)
        goto out;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        int e = errno;
        st = hlx_errbuf(err, errlen, hlx_wfile_errno_status(e),
                        "%s: cannot create the directory: %s", dir, strerror(e));
        goto out;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        st = hlx_errbuf(err, errlen, HLX_ERR_INVALID, "%s: exists and is not a directory", dir);
        goto out;
    }
    nfiles = nshards + (p.index != NULL) + (p.config != NULL);
    if ((w = calloc((size_t)nfiles, sizeof(*w))) == NULL) {
        st = hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* every file complete before any is put in place */
    for (s = 0; s < nshards && st == HLX_OK; s++) {
        if ((st = hlx_w_open(&w[nw], dir, p.shards[s].fname, err, errlen)) != HLX_OK)
            break;
        nw++;
        st = hlx_w_shard(&w[nw - 1], &p.shards[s], list, fill, ctx, err, errlen);
    }
    if (st == HLX_OK && p.index != NULL &&
        (st = hlx_w_open(&w[nw], dir, "model.safetensors.index.json", err, errlen)) == HLX_OK)
        st = hlx_wfile_put(&w[nw++], p.index, strlen(p.index), err, errlen);
    if (st == HLX_OK && p.config != NULL &&
        (st = hlx_w_open(&w[nw], dir, "config.json", err, errlen)) == HLX_OK)
        st = hlx_wfile_put(&w[nw++], p.config, strlen(p.config), err, errlen);
    /* shards, the index, then the other layout's entry point removed (it would shadow or
     * contradict this one), config.json last; then the previous index's other shards */
    old = st == HLX_OK ? hlx_w_old_shards(dir, &p, nshards) : NULL;
    for (s = 0; st == HLX_OK && s < nw - (p.config != NULL); s++)
        st = hlx_wfile_commit(&w[s], err, errlen);
    if (st == HLX_OK) {
        snprintf(path, sizeof(path), "%s/%s", dir,
                 nshards == 1 ? "model.safetensors.index.json" : "model.safetensors");
        if (unlink(path) != 0 && errno != ENOENT)
            st = hlx_errbuf(err, errlen, hlx_wfile_errno_status(errno),
                            "%s: cannot remove: %s", path, strerror(errno));
    }
    if (st == HLX_OK && p.config != NULL)
        st = hlx_wfile_commit(&w[nw - 1], err, errlen);
    if (st == HLX_OK && old != NULL)
        st = hlx_w_drop_old(dir, old, err, errlen);
    json_decref(old);
    for (s = 0; s < nw; s++)
        hlx_wfile_abort(&w[s]); /* nothing left to do for a committed file */
out:
    free(w);
    hlx_w_plan_free(&p);
    return st;
}
