/* safetensors checkpoints: header parsing with every size overflow-checked, shards mapped
 * read-only, and slices converted to f32 or bf16 as they are copied out; virtual weights
 * (integer-packed ones, views of fused 3-D experts) read like stored ones. */
#define _GNU_SOURCE
#include "ckpt_cvt.h"
#include "hlx_ckpt.h"
#include "hlx_err.h"
#include "hlx_json.h"
#include "hlx_mxfp4.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *name;
    size_t      size;
} hlx_st_types[HLX_ST_COUNT] = {
    [HLX_ST_F64] = { "F64", 8 },         [HLX_ST_F32] = { "F32", 4 },
    [HLX_ST_F16] = { "F16", 2 },         [HLX_ST_BF16] = { "BF16", 2 },
    [HLX_ST_F8_E4M3] = { "F8_E4M3", 1 }, [HLX_ST_F8_E5M2] = { "F8_E5M2", 1 },
    [HLX_ST_I64] = { "I64", 8 },         [HLX_ST_I32] = { "I32", 4 },
    [HLX_ST_I16] = { "I16", 2 },         [HLX_ST_I8] = { "I8", 1 },
    [HLX_ST_U8] = { "U8", 1 },           [HLX_ST_BOOL] = { "BOOL", 1 },
};

const char *hlx_st_dtype_name(hlx_st_dtype_t t)
{
    return (unsigned)t < HLX_ST_COUNT ? hlx_st_types[t].name : "?";
}

size_t hlx_st_dtype_size(hlx_st_dtype_t t)
{
    return (unsigned)t < HLX_ST_COUNT ? hlx_st_types[t].size : 0;
}

int hlx_st_dtype_parse(const char *s, hlx_st_dtype_t *t_p)
{
    int i;

    for (i = 0; i < HLX_ST_COUNT; i++) {
        if (!strcmp(s, hlx_st_types[i].name)) {
            *t_p = (hlx_st_dtype_t)i;
            return 0;
        }
    }
    return -1;
}


/* ---- one file ------------------------------------------------------------------------ */

static int hlx_tensor_cmp_name(const void *a, const void *b)
{
    return strcmp(((const hlx_ckpt_tensor_t *)a)->name, ((const hlx_ckpt_tensor_t *)b)->name);
}

static int hlx_tensor_cmp_begin(const void *a, const void *b)
{
    const hlx_ckpt_tensor_t *x = *(const hlx_ckpt_tensor_t *const *)a;
    const hlx_ckpt_tensor_t *y = *(const hlx_ckpt_tensor_t *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

void hlx_st_file_free(hlx_st_file_t *f)
{
    size_t i;

    if (f == NULL)
        return;
    for (i = 0; i < f->count; i++)
        free((char *)f->tensors[i].name);
    free(f->tensors);
    f->tensors = NULL;
    f->count = 0;
}

/* A JSON integer in [0, 2^63). */
static int hlx_json_u63(json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* One header entry: {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]}. */
static hlx_status_t hlx_st_entry(const char *fname, const char *key, json_t *v,
                                 hlx_ckpt_tensor_t *t, char *err, size_t errlen)
{
    json_t *dt, *shape, *offs, *x;
    size_t i, n, bytes;
    uint64_t numel = 1, d;

    if (!json_is_object(v))
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s: tensor %s: header entry is not an object",
                           fname, key);
    dt = json_object_get(v, "dtype");
    shape = json_object_get(v, "shape");
    offs = json_object_get(v, "data_offsets");
    if (!json_is_string(dt) || !json_is_array(shape) || !json_is_array(offs))
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                           "%s: tensor %s: needs \"dtype\" (string), \"shape\" and "
                           "\"data_offsets\" (arrays)", fname, key);
    if (json_object_size(v) != 3)
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                           "%s: tensor %s: unexpected keys (only dtype, shape, data_offsets)",
                           fname, key);
    if (hlx_st_dtype_parse(json_string_value(dt), &t->dtype) != 0)
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s: tensor %s: unknown dtype \"%.32s\"",
                           fname, key, json_string_value(dt));
    n = json_array_size(shape);
    if (n > HLX_CKPT_MAX_DIMS)
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s: tensor %s: %zu dimensions (at most %d)",
                           fname, key, n, HLX_CKPT_MAX_DIMS);
    t->ndim = (int)n;
    json_array_foreach(shape, i, x) {
        if (hlx_json_u63(x, &d) != 0)
            return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                               "%s: tensor %s: shape[%zu] is not a non-negative integer", fname,
                               key, i);
        if (__builtin_mul_overflow(numel, d, &numel) || numel > (uint64_t)INT64_MAX)
            return hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s: tensor %s: shape overflows",
                               fname, key);
        t->shape[i] = (int64_t)d;
    }
    t->numel = numel;
    if (json_array_size(offs) != 2 || hlx_json_u63(json_array_get(offs, 0), &t->begin) ||
        hlx_json_u63(json_array_get(offs, 1), &t->end))
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                           "%s: tensor %s: data_offsets must be two non-negative integers",
                           fname, key);
    if (t->end < t->begin)
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                           "%s: tensor %s: data_offsets [%llu, %llu] end before they begin",
                           fname, key, (unsigned long long)t->begin, (unsigned long long)t->end);
    if (__builtin_mul_overflow((size_t)numel, hlx_st_dtype_size(t->dtype), &bytes) ||
        (uint64_t)numel != (size_t)numel)
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s: tensor %s: byte size overflows",
                           fname, key);
    if (t->end - t->begin != (uint64_t)bytes)
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                           "%s: tensor %s: data_offsets [%llu, %llu] hold %llu bytes, shape x %s "
                           "needs %zu", fname, key, (unsigned long long)t->begin,
                           (unsigned long long)t->end, (unsigned long long)(t->end - t->begin),
                           hlx_st_dtype_name(t->dtype), bytes);
    return HLX_OK;
}

/* The data section must be covered exactly: sorted by offset, each tensor starts where the
 * previous ended, the first at 0 and the last at the end of the file. */
static hlx_status_t hlx_st_coverage(const char *fname, hlx_st_file_t *f, uint64_t data_size,
                                    char *err, size_t errlen)
{
    hlx_ckpt_tensor_t **by = calloc(f->count ? f->count : 1, sizeof(*by));
    uint64_t at = 0;
    size_t i;
    hlx_status_t st = HLX_OK;

    if (by == NULL)
        return hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "%s: out of memory", fname);
    for (i = 0; i < f->count; i++)
        by[i] = &f->tensors[i];
    /* ranges past the end first: a truncated file is named as such, not as a hole */
    for (i = 0; i < f->count && st == HLX_OK; i++) {
        const hlx_ckpt_tensor_t *t = &f->tensors[i];
        if (t->end > data_size)
            st = hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                             "%s: tensor %s: data_offsets [%llu, %llu] run past the %llu data "
                             "bytes of the file (truncated?)", fname, t->name,
                             (unsigned long long)t->begin, (unsigned long long)t->end,
                             (unsigned long long)data_size);
    }
    qsort(by, f->count, sizeof(*by), hlx_tensor_cmp_begin);
    for (i = 0; i < f->count && st == HLX_OK; i++) {
        const hlx_ckpt_tensor_t *t = by[i];
        if (t->begin < at)
            st = hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                             "%s: tensor %s: data_offsets [%llu, %llu] overlap %s ending at %llu",
                             fname, t->name, (unsigned long long)t->begin,
                             (unsigned long long)t->end, by[i - 1]->name, (unsigned long long)at);
        else if (t->begin > at)
            st = hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                             "%s: tensor %s: data_offsets begin at %llu, leaving bytes [%llu, %llu) "
                             "unaccounted for", fname, t->name, (unsigned long long)t->begin,
                             (unsigned long long)at, (unsigned long long)t->begin);
        else
            at = t->end;
    }
    if (st == HLX_OK && at != data_size)
        st = hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                         "%s: the header covers %llu of the %llu data bytes (trailing bytes)",
                         fname, (unsigned long long)at, (unsigned long long)data_size);
    free(by);
    return st;
}

hlx_status_t hlx_st_parse(const char *name, const uint8_t *buf, uint64_t len, int file,
                          hlx_st_file_t *out, char *err, size_t errlen)
{
    uint64_t hlen = 0, data_size;
    json_t *root = NULL, *v;
    json_error_t je;
    const char *key;
    hlx_st_file_t f = { NULL, 0, 0 };
    hlx_status_t st = HLX_OK;
    size_t i;

    if (len < 8)
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                           "%s: %llu bytes, shorter than the 8-byte header size (truncated?)",
                           name, (unsigned long long)len);
    for (i = 0; i < 8; i++)
        hlen |= (uint64_t)buf[i] << (8 * i);
    if (hlen > HLX_ST_HEADER_MAX)
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                           "%s: JSON header of %llu bytes is larger than the %llu accepted",
                           name, (unsigned long long)hlen, (unsigned long long)HLX_ST_HEADER_MAX);
    if (hlen < 2 || hlen > len - 8)
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                           "%s: JSON header of %llu bytes does not fit in the %llu-byte file "
                           "(truncated?)", name, (unsigned long long)hlen,
                           (unsigned long long)len);
    data_size = len - 8 - hlen;
    root = json_loadb((const char *)buf + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL)
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s: header byte %d: %s", name,
                           je.position, je.text);
    if (!json_is_object(root)) {
        st = hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s: the header is not a JSON object", name);
        goto out_root;
    }
    f.tensors = calloc(json_object_size(root) ? json_object_size(root) : 1, sizeof(*f.tensors));
    if (f.tensors == NULL) {
        st = hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "%s: out of memory", name);
        goto out_root;
    }
    json_object_foreach(root, key, v) {
        hlx_ckpt_tensor_t *t;
        if (!strcmp(key, "__metadata__")) {
            const char *mk;
            json_t *mv;
            if (!json_is_object(v)) {
                st = hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s: __metadata__ is not an object",
                                 name);
                goto out_free;
            }
            json_object_foreach(v, mk, mv) {
                if (!json_is_string(mv)) {
                    st = hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                                     "%s: __metadata__ %s: values must be strings", name, mk);
                    goto out_free;
                }
            }
            continue;
        }
        t = &f.tensors[f.count];
        if ((st = hlx_st_entry(name, key, v, t, err, errlen)) != HLX_OK)
            goto out_free;
        t->file = file;
        if ((t->name = strdup(key)) == NULL) {
            st = hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "%s: out of memory", name);
            goto out_free;
        }
        f.count++;
    }
    if ((st = hlx_st_coverage(name, &f, data_size, err, errlen)) != HLX_OK)
        goto out_free;
    qsort(f.tensors, f.count, sizeof(*f.tensors), hlx_tensor_cmp_name);
    f.data_offset = 8 + hlen;
    *out = f;
    json_decref(root);
    return HLX_OK;

out_free:
    hlx_st_file_free(&f);
out_root:
    json_decref(root);
    return st;
}

/* ---- a directory of shards ----------------------------------------------------------- */

typedef struct hlx_ckpt_file {
    char          *name;   /* base name */
    char          *shown;  /* dir/name: what messages call it */
    const uint8_t *map;
    uint64_t       size;
    hlx_st_file_t  st;
} hlx_ckpt_file_t;

struct hlx_ckpt {
    char               dir[1024];
    hlx_ckpt_file_t   *files;
    int                nfiles, capfiles;
    hlx_ckpt_tensor_t *tensors;  /* all shards, sorted by name (names borrowed) */
    size_t             count;
    _Atomic uint64_t   bytes_read;  /* reads may run on several threads */
    int                block_rows, block_cols; /* fp8 scale blocks */
    int                fused;                  /* Phi-3's qkv_proj and gate_up_proj */
    char               pfx_from[2][32], pfx_to[2][48]; /* hlx_ckpt_set_prefix */
    int                npfx;
    float              fp8_lut[256];           /* e4m3 code -> value */
    hlx_ckpt_tensor_t *packs;    /* hlx_ckpt_set_packed's weights, sorted by name (owned) */
    size_t             npacks;
    hlx_ckpt_tensor_t *views;    /* hlx_ckpt_set_views' weights, sorted by name (owned) */
    size_t             nviews;
    const hlx_ck_cvt_t *cvt;     /* the reads' element conversions (ckpt_cvt.h) */
};

/* The last error of a call on this thread: the reads of one checkpoint may run on several
 * threads (the engine's column groups), each reporting its own. */
static _Thread_local char hlx_ckpt_terr[1024];

/* A list of virtual weights (packed ones, views) and their names, emptied. */
static void hlx_ckpt_virtual_free(hlx_ckpt_tensor_t **list, size_t *n)
{
    size_t i;

    for (i = 0; i < *n; i++)
        free((char *)(*list)[i].name);
    free(*list);
    *list = NULL;
    *n = 0;
}

static void hlx_ckpt_packs_free(hlx_ckpt_t *ck)
{
    hlx_ckpt_virtual_free(&ck->packs, &ck->npacks);
}

static void hlx_ckpt_views_free(hlx_ckpt_t *ck)
{
    hlx_ckpt_virtual_free(&ck->views, &ck->nviews);
}

void hlx_ckpt_set_fp8_block(hlx_ckpt_t *ck, int rows, int cols)
{
    ck->block_rows = rows;
    ck->block_cols = cols;
}

const char *hlx_ckpt_set_cvt(hlx_ckpt_t *ck, int best)
{
    ck->cvt = best ? hlx_ck_cvt_best() : hlx_ck_cvt_portable();
    return ck->cvt->name;
}

void hlx_ckpt_set_fused(hlx_ckpt_t *ck, int fused)
{
    ck->fused = fused;
}

int hlx_ckpt_fused(const hlx_ckpt_t *ck)
{
    return ck->fused;
}

const char *hlx_ckpt_error(const hlx_ckpt_t *ck)
{
    (void)ck;
    return hlx_ckpt_terr;
}

hlx_status_t hlx_ckpt_set_error(hlx_ckpt_t *ck, hlx_status_t st, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), fmt, ap);
    va_end(ap);
    return st;
}

size_t hlx_ckpt_count(const hlx_ckpt_t *ck)
{
    return ck->count;
}

const hlx_ckpt_tensor_t *hlx_ckpt_tensor(const hlx_ckpt_t *ck, size_t i)
{
    return i < ck->count ? &ck->tensors[i] : NULL;
}

const char *hlx_ckpt_file_name(const hlx_ckpt_t *ck, int file)
{
    return file >= 0 && file < ck->nfiles ? ck->files[file].name : "?";
}

const char *hlx_ckpt_file_path(const hlx_ckpt_t *ck, int file)
{
    return file >= 0 && file < ck->nfiles ? ck->files[file].shown : "?";
}

const char *hlx_ckpt_dir(const hlx_ckpt_t *ck)
{
    return ck->dir;
}

uint64_t hlx_ckpt_bytes_read(const hlx_ckpt_t *ck)
{
    return atomic_load_explicit(&ck->bytes_read, memory_order_relaxed);
}

void hlx_ckpt_close(hlx_ckpt_t *ck)
{
    int i;

    if (ck == NULL)
        return;
    for (i = 0; i < ck->nfiles; i++) {
        if (ck->files[i].map != NULL)
            munmap((void *)ck->files[i].map, ck->files[i].size);
        hlx_st_file_free(&ck->files[i].st);
        free(ck->files[i].name);
        free(ck->files[i].shown);
    }
    free(ck->files);
    free(ck->tensors);
    hlx_ckpt_packs_free(ck);
    hlx_ckpt_views_free(ck);
    free(ck);
}

/* What a path that is not a regular file is, for messages. */
static const char *hlx_file_kind(mode_t mode)
{
    return S_ISFIFO(mode) ? "a named pipe" : S_ISDIR(mode) ? "a directory"
         : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
         : S_ISSOCK(mode) ? "a socket" : "not a plain file";
}

static hlx_status_t hlx_not_regular(const char *path, const char *what, mode_t mode, char *err,
                                    size_t errlen)
{
    return hlx_errbuf(err, errlen, HLX_ERR_INVALID,
                      "%s: is not a regular file (%s); a %s must be a regular file", path,
                      hlx_file_kind(mode), what);
}

hlx_status_t hlx_ckpt_regular_file(const char *path, const char *what, char *err,
                                   size_t errlen)
{
    struct stat sb;

    /* stat() never blocks, where open() of a named pipe waits for a writer */
    if (stat(path, &sb) != 0 || S_ISREG(sb.st_mode))
        return HLX_OK;
    return hlx_not_regular(path, what, sb.st_mode, err, errlen);
}

/* Maps and parses one shard. */
static hlx_status_t hlx_ckpt_map(hlx_ckpt_t *ck, int idx, char *err, size_t errlen)
{
    hlx_ckpt_file_t *f = &ck->files[idx];
    char path[2048];
    struct stat sb;
    hlx_status_t st;
    int fd, e;
    void *map;

    snprintf(path, sizeof(path), "%s/%s", ck->dir, f->name);
    if ((st = hlx_ckpt_regular_file(path, "safetensors shard", err, errlen)) != HLX_OK)
        return st;
    /* O_NONBLOCK: should the path turn into a named pipe after the check, the open returns
     * instead of waiting for a writer, and fstat refuses it (mmap ignores the flag) */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        e = errno;
        return hlx_errbuf(err, errlen,
                          e == ENOENT ? HLX_ERR_NOT_FOUND
                          : e == EACCES || e == ELOOP || e == ENAMETOOLONG || e == ENOTDIR
                              ? HLX_ERR_INVALID : HLX_ERR_IO,
                          "%s: cannot open: %s", path, strerror(e));
    }
    if (fstat(fd, &sb) != 0) {
        e = errno;
        close(fd);
        return hlx_errbuf(err, errlen, HLX_ERR_IO, "%s: fstat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return hlx_not_regular(path, "safetensors shard", sb.st_mode, err, errlen);
    }
    if (sb.st_size == 0) {
        close(fd);
        return hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s: empty file (truncated?)", path);
    }
    map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return hlx_errbuf(err, errlen, HLX_ERR_IO, "%s: mmap: %s", path, strerror(errno));
    f->map = map;
    f->size = (uint64_t)sb.st_size;
    /* Slices are read scattered: no read-ahead of neighbouring ranks' data. */
    madvise(map, (size_t)sb.st_size, MADV_RANDOM);
    return hlx_st_parse(path, f->map, f->size, idx, &f->st, err, errlen);
}

/* Adds shard name (not there yet: the index's loop keeps a set of the names it added)
 * and returns its index, or -1 out of memory. The array grows by doubling: an index may
 * name a great many shards. */
static int hlx_ckpt_add_file(hlx_ckpt_t *ck, const char *name)
{
    hlx_ckpt_file_t *nf;

    if (ck->nfiles == ck->capfiles) {
        const int cap = ck->capfiles ? (ck->capfiles > INT_MAX / 2 ? -1 : 2 * ck->capfiles) : 4;
        if (cap < 0 || (nf = realloc(ck->files, sizeof(*nf) * (size_t)cap)) == NULL)
            return -1;
        ck->files = nf;
        ck->capfiles = cap;
    }
    nf = ck->files;
    memset(&nf[ck->nfiles], 0, sizeof(*nf));
    if ((nf[ck->nfiles].name = strdup(name)) == NULL ||
        asprintf(&nf[ck->nfiles].shown, "%s/%s", ck->dir, name) < 0) {
        free(nf[ck->nfiles].name);
        return -1;
    }
    return ck->nfiles++;
}

/* An error at path of the index document ("index.json:line:column: key: reason") into err. */
static hlx_status_t hlx_index_fail(hlx_jdoc_t *doc, const char *path, char *err, size_t errlen,
                                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static hlx_status_t hlx_index_fail(hlx_jdoc_t *doc, const char *path, char *err, size_t errlen,
                                   const char *fmt, ...)
{
    char msg[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    (void)hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%s", msg);
    return hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s", hlx_jdoc_error(doc));
}

/* Reads model.safetensors.index.json through the project's file reader (a bounded read,
 * never an open that waits on a named pipe; errors at file:line:column): the shards it
 * names, and the weight map to check. */
static hlx_status_t hlx_ckpt_index(hlx_ckpt_t *ck, const char *path, hlx_jdoc_t **doc_p,
                                   char *err, size_t errlen)
{
    hlx_jdoc_t *doc = NULL;
    json_t *wm, *v, *seen = NULL; /* the shard names added, as a set */
    const char *key;
    char at[1024];
    hlx_status_t st;

    if ((st = hlx_ckpt_regular_file(path, "checkpoint index", err, errlen)) != HLX_OK)
        return st;
    st = hlx_jdoc_load_file_as(path, "checkpoint index", &doc);
    if (st != HLX_OK) {
        (void)hlx_errbuf(err, errlen, st, "%s", doc ? hlx_jdoc_error(doc) : "out of memory");
        hlx_jdoc_free(doc);
        return st;
    }
    if (!json_is_object(hlx_jdoc_root(doc))) {
        st = hlx_index_fail(doc, "", err, errlen, "expected an object with a \"weight_map\"");
        goto fail;
    }
    wm = json_object_get(hlx_jdoc_root(doc), "weight_map");
    if (!json_is_object(wm)) {
        st = hlx_index_fail(doc, "/weight_map", err, errlen,
                            wm ? "expected an object (tensor name: shard file name)"
                               : "required key is missing (tensor name: shard file name)");
        goto fail;
    }
    if ((seen = json_object()) == NULL) {
        st = hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    json_object_foreach(wm, key, v) {
        const char *fn = json_string_value(v);
        if (fn == NULL || fn[0] == '\0' || strchr(fn, '/') != NULL) {
            snprintf(at, sizeof(at), "/weight_map/%s", key);
            st = hlx_index_fail(doc, at, err, errlen,
                                "expected the name of a file in the checkpoint directory");
            goto fail;
        }
        if (json_object_get(seen, fn) != NULL) /* a shard named before */
            continue;
        if (hlx_ckpt_add_file(ck, fn) < 0 || json_object_set_new(seen, fn, json_true()) != 0) {
            st = hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
    }
    if (ck->nfiles == 0) {
        st = hlx_index_fail(doc, "/weight_map", err, errlen, "is empty (no shard named)");
        goto fail;
    }
    json_decref(seen);
    *doc_p = doc;
    return HLX_OK;

fail:
    json_decref(seen);
    hlx_jdoc_free(doc);
    return st;
}

/* Merges the shards' tensors, refuses duplicates, checks the index (doc, NULL without one)
 * against the shards and pairs fp8 weights with their block scales. */
static hlx_status_t hlx_ckpt_merge(hlx_ckpt_t *ck, hlx_jdoc_t *doc, char *err, size_t errlen)
{
    size_t total = 0, i, k = 0;
    int f;
    json_t *wm = doc ? json_object_get(hlx_jdoc_root(doc), "weight_map") : NULL;

    for (f = 0; f < ck->nfiles; f++)
        total += ck->files[f].st.count;
    ck->tensors = calloc(total ? total : 1, sizeof(*ck->tensors));
    if (ck->tensors == NULL)
        return hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "out of memory");
    for (f = 0; f < ck->nfiles; f++)
        for (i = 0; i < ck->files[f].st.count; i++)
            ck->tensors[k++] = ck->files[f].st.tensors[i];
    ck->count = total;
    qsort(ck->tensors, total, sizeof(*ck->tensors), hlx_tensor_cmp_name);
    for (i = 1; i < total; i++)
        if (!strcmp(ck->tensors[i].name, ck->tensors[i - 1].name))
            return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                               "%s: tensor %s is stored twice (in %s and %s)", ck->dir,
                               ck->tensors[i].name, ck->files[ck->tensors[i - 1].file].name,
                               ck->files[ck->tensors[i].file].name);
    if (wm != NULL) {
        const char *key;
        json_t *v;
        char at[1024];
        json_object_foreach(wm, key, v) {
            const hlx_ckpt_tensor_t *t = hlx_ckpt_find(ck, key);
            if (t == NULL || strcmp(ck->files[t->file].name, json_string_value(v))) {
                snprintf(at, sizeof(at), "/weight_map/%s", key);
                return hlx_index_fail(doc, at, err, errlen,
                                      "weight_map puts %s in %s, but %s", key,
                                      json_string_value(v),
                                      t ? "it is stored in another shard"
                                        : "that shard does not hold it");
            }
        }
        for (i = 0; i < total; i++)
            if (json_object_get(wm, ck->tensors[i].name) == NULL)
                return hlx_index_fail(doc, "/weight_map", err, errlen,
                                      "%s holds tensor %s, which the weight_map does not list",
                                      ck->files[ck->tensors[i].file].name, ck->tensors[i].name);
    }
    for (i = 0; i < total; i++) {
        hlx_ckpt_tensor_t *t = &ck->tensors[i];
        char sname[1024];
        const hlx_ckpt_tensor_t *s;
        if ((t->dtype != HLX_ST_F8_E4M3 && t->dtype != HLX_ST_I8) || t->ndim == 3)
            continue; /* 3-D: fused experts, whose scales their views take (hlx_ckpt_view_t.sc) */
        snprintf(sname, sizeof(sname), "%s_scale_inv", t->name);
        s = t->dtype == HLX_ST_I8 ? NULL : hlx_ckpt_find(ck, sname); /* int8: _scale only */
        if (s == NULL) { /* <name>_scale per tensor or per row (docs/model.md "fp8 weights") */
            snprintf(sname, sizeof(sname), "%s_scale", t->name);
            if ((s = hlx_ckpt_find(ck, sname)) == NULL)
                continue; /* unscaled fp8: read as is; int8 is refused when read */
            if (t->ndim != 2 || !hlx_st_is_scale(s->dtype) ||
                !(s->numel == 1 ? s->ndim <= 2
                                : s->ndim == 2 && s->shape[0] >= 1 && s->shape[1] >= 1 &&
                                      (t->dtype == HLX_ST_F8_E4M3 ||
                                       (s->shape[0] == t->shape[0] && s->shape[1] == 1))))
                return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                                   "%s: tensor %s: its scale %s must be F32, BF16 or F16 of one "
                                   "value ([], [1] or [1, 1]), one per row ([%lld, 1])%s",
                                   ck->files[t->file].shown, t->name, sname,
                                   (long long)t->shape[0],
                                   t->dtype == HLX_ST_F8_E4M3 ? " or one per block" : "");
            t->scale = s;
            /* one value, one per row, else one per block (checked against the config's
             * block size when read, and by the tensor list) */
            t->scale_rows = s->numel == 1                  ? t->shape[0]
                            : s->shape[0] == t->shape[0] && s->shape[1] == 1 ? 1
                                                                             : 0;
            continue;
        }
        if (t->ndim != 2 || s->ndim != 2 || !hlx_st_is_scale(s->dtype) || s->shape[0] < 1 ||
            s->shape[1] < 1)
            return hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                               "%s: tensor %s: block scales need a 2-D F8_E4M3 weight and a 2-D "
                               "F32, BF16 or F16 %s", ck->files[t->file].shown, t->name, sname);
        t->scale = s;
    }
    return HLX_OK;
}

hlx_status_t hlx_ckpt_open(const char *dir, hlx_ckpt_t **ck_p, char *err, size_t errlen)
{
    hlx_ckpt_t *ck = calloc(1, sizeof(*ck));
    char path[2048];
    struct stat sb;
    hlx_jdoc_t *index = NULL;
    hlx_status_t st;
    int f;

    if (ck == NULL)
        return hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "out of memory");
    if (strlen(dir) >= sizeof(ck->dir)) {
        free(ck);
        return hlx_errbuf(err, errlen, HLX_ERR_INVALID, "%.64s...: path too long", dir);
    }
    snprintf(ck->dir, sizeof(ck->dir), "%s", dir);
    ck->block_rows = ck->block_cols = 128;
    ck->cvt = hlx_ck_cvt_best();
    for (f = 0; f < 256; f++)
        ck->fp8_lut[f] = hlx_fp8_to_f32((uint8_t)f);
    snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
    if (stat(path, &sb) == 0) {
        st = hlx_ckpt_index(ck, path, &index, err, errlen);
    } else {
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        if (stat(path, &sb) != 0)
            st = hlx_errbuf(err, errlen, HLX_ERR_NOT_FOUND,
                             "%s: no model.safetensors.index.json or model.safetensors", dir);
        else
            st = hlx_ckpt_add_file(ck, "model.safetensors") < 0
                     ? hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "out of memory") : HLX_OK;
    }
    for (f = 0; st == HLX_OK && f < ck->nfiles; f++) {
        st = hlx_ckpt_map(ck, f, err, errlen);
        if (st == HLX_ERR_NOT_FOUND && index != NULL)
            st = hlx_errbuf(err, errlen, HLX_ERR_PARSE,
                             "%s/model.safetensors.index.json names shard %s, which is missing",
                             dir, ck->files[f].name);
    }
    if (st == HLX_OK)
        st = hlx_ckpt_merge(ck, index, err, errlen);
    hlx_jdoc_free(index);
    if (st != HLX_OK) {
        hlx_ckpt_close(ck);
        return st;
    }
    *ck_p = ck;
    return HLX_OK;
}

void hlx_ckpt_set_prefix(hlx_ckpt_t *ck, const char *from, const char *to)
{
    if (from == NULL || to == NULL) {
        ck->npfx = 0;
        return;
    }
    if (ck->npfx >= 2 || strlen(from) >= sizeof(ck->pfx_from[0]) ||
        strlen(to) >= sizeof(ck->pfx_to[0]))
        return; /* the callers' fixed pairs fit */
    snprintf(ck->pfx_from[ck->npfx], sizeof(ck->pfx_from[0]), "%s", from);
    snprintf(ck->pfx_to[ck->npfx], sizeof(ck->pfx_to[0]), "%s", to);
    ck->npfx++;
}

/* The file's name of tensor name under hlx_ckpt_set_prefix's pairs (buf, or name). */
static const char *hlx_ckpt_prefixed(const hlx_ckpt_t *ck, const char *name, char *buf,
                                     size_t len)
{
    int i;

    for (i = 0; i < ck->npfx; i++) {
        size_t n = strlen(ck->pfx_from[i]);
        if (!strncmp(name, ck->pfx_from[i], n) &&
            snprintf(buf, len, "%s%s", ck->pfx_to[i], name + n) < (int)len)
            return buf;
    }
    return name;
}

/* Where t's bytes are in the mapping of its shard. */
static const uint8_t *hlx_ck_data(const hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t)
{
    const hlx_ckpt_file_t *f = &ck->files[t->file];

    return f->map + f->st.data_offset + t->begin;
}

/* ck's stored tensor of this exact name (no prefix mapping), or NULL. */
static const hlx_ckpt_tensor_t *hlx_ckpt_find_stored(const hlx_ckpt_t *ck, const char *name)
{
    hlx_ckpt_tensor_t key;

    key.name = name;
    return bsearch(&key, ck->tensors, ck->count, sizeof(key), hlx_tensor_cmp_name);
}

/* HLX_PACK_*'s names: in the configs and model info's JSON, and in messages */
static const struct {
    const char *name, *title;
} hlx_pack_names[] = {
    [0] = { "none", "unpacked" },
    [HLX_PACK_GPTQ] = { "gptq", "GPTQ" },
    [HLX_PACK_GPTQ_V2] = { "gptq_v2", "GPTQ v2" },
    [HLX_PACK_AWQ] = { "awq", "AWQ" },
    [HLX_PACK_CT] = { "compressed-tensors", "compressed-tensors pack-quantized" },
};

const char *hlx_ckpt_pack_name(int pack)
{
    return pack >= 0 && pack <= HLX_PACK_CT ? hlx_pack_names[pack].name : "?";
}

/* For messages: "GPTQ", "AWQ", ... */
static const char *hlx_pack_form(int pack)
{
    return pack >= 0 && pack <= HLX_PACK_CT ? hlx_pack_names[pack].title : "?";
}

const hlx_ckpt_tensor_t *hlx_ckpt_find(const hlx_ckpt_t *ck, const char *name)
{
    char mapped[256];

    return hlx_ckpt_find_exact(ck, hlx_ckpt_prefixed(ck, name, mapped, sizeof(mapped)));
}

const hlx_ckpt_tensor_t *hlx_ckpt_find_exact(const hlx_ckpt_t *ck, const char *name)
{
    hlx_ckpt_tensor_t key;
    const hlx_ckpt_tensor_t *t = hlx_ckpt_find_stored(ck, name);

    key.name = name;
    if (t == NULL && ck->npacks > 0)
        t = bsearch(&key, ck->packs, ck->npacks, sizeof(key), hlx_tensor_cmp_name);
    if (t == NULL && ck->nviews > 0)
        t = bsearch(&key, ck->views, ck->nviews, sizeof(key), hlx_tensor_cmp_name);
    return t;
}

static void hlx_shape_str(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t used = 0;
    int i;

    used += (size_t)snprintf(buf, len, "[");
    for (i = 0; i < ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
                                 (long long)shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

void hlx_ckpt_shape_str(const hlx_ckpt_tensor_t *t, char *buf, size_t len)
{
    hlx_shape_str(buf, len, t->ndim, t->shape);
}

/* name's tensor into *t_p, or HLX_ERR_NOT_FOUND saying which (under its prefix) is missing */
static hlx_status_t hlx_ckpt_lookup(hlx_ckpt_t *ck, const char *name, const hlx_ckpt_tensor_t **t_p)
{
    char mapped[256];

    if ((*t_p = hlx_ckpt_find(ck, name)) != NULL)
        return HLX_OK;
    return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOT_FOUND,
                      "%s: tensor %s is missing", ck->dir,
                      hlx_ckpt_prefixed(ck, name, mapped, sizeof(mapped)));
}

hlx_status_t hlx_ckpt_get(hlx_ckpt_t *ck, const char *name, int ndim, const int64_t *shape,
                          const hlx_ckpt_tensor_t **t_p)
{
    const hlx_ckpt_tensor_t *t;
    char have[160], want[160];
    hlx_status_t st = hlx_ckpt_lookup(ck, name, &t);

    if (st != HLX_OK)
        return st;
    if (t->ndim != ndim || memcmp(t->shape, shape, sizeof(*shape) * (size_t)ndim) != 0) {
        char packed[400] = "";
        hlx_shape_str(have, sizeof(have), t->ndim, t->shape);
        hlx_shape_str(want, sizeof(want), ndim, shape);
        if (t->pack) { /* a packed weight's shape is what its words hold */
            char words[64], why[160] = "";
            hlx_shape_str(words, sizeof(words), t->packed->ndim, t->packed->shape);
            if (t->bits == 3 && ndim == 2 && shape[1] % 32 != 0) /* 32 values in 3 words */
                snprintf(why, sizeof(why), ": its words hold the in-features in runs of 32, "
                         "and %lld is not a multiple of 32 (vLLM refuses it too)",
                         (long long)shape[1]);
            snprintf(packed, sizeof(packed), " (packed in %s %s, %s %d-bit%s)", t->packed->name,
                     words, hlx_pack_form(t->pack), t->bits, why);
        }
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                           "%s: tensor %s: shape %s, expected %s%s", ck->files[t->file].shown,
                           t->name, have, want, packed);
    }
    *t_p = t;
    return HLX_OK;
}

hlx_status_t hlx_ckpt_get_value(hlx_ckpt_t *ck, const char *name, const hlx_ckpt_tensor_t **t_p)
{
    const hlx_ckpt_tensor_t *t;
    char have[160];
    hlx_status_t st = hlx_ckpt_lookup(ck, name, &t);

    if (st != HLX_OK)
        return st;
    if (t->numel != 1 || t->ndim > 2) {
        hlx_shape_str(have, sizeof(have), t->ndim, t->shape);
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                           "%s: tensor %s: shape %s, expected one value ([], [1] or [1, 1])",
                           ck->files[t->file].shown, t->name, have);
    }
    *t_p = t;
    return HLX_OK;
}

/* ---- conversion ---------------------------------------------------------------------- */

int hlx_st_is_scale(hlx_st_dtype_t t)
{
    return t == HLX_ST_F32 || t == HLX_ST_BF16 || t == HLX_ST_F16;
}

hlx_status_t hlx_ckpt_read_value(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int64_t n,
                                 int64_t i, double *v_p)
{
    const hlx_ckpt_file_t *f = &ck->files[t->file];
    const uint8_t *p = hlx_ck_data(ck, t);
    int d, ones = 1;

    for (d = 0; d < t->ndim; d++) /* [], [n], [n, 1], [1, n]: n values, no other axis */
        ones += t->shape[d] != 1;
    if ((int64_t)t->numel != n || ones > 2 || t->ndim > 2 || i < 0 || i >= n) {
        char have[160];
        hlx_shape_str(have, sizeof(have), t->ndim, t->shape);
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                           "%s: tensor %s: shape %s, expected %lld value%s (%s)", f->shown,
                           t->name, have, (long long)n, n == 1 ? "" : "s",
                           n == 1 ? "[] or [1]" : "[n] or [n, 1]");
    }
    if (t->dtype != HLX_ST_F32 && t->dtype != HLX_ST_BF16 && t->dtype != HLX_ST_F16 &&
        t->dtype != HLX_ST_F64)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                           "%s: tensor %s: dtype %s, expected F32, BF16, F16 or F64", f->shown,
                           t->name, hlx_st_dtype_name(t->dtype));
    if (t->dtype == HLX_ST_F64)
        memcpy(v_p, p + 8 * (size_t)i, sizeof(*v_p));
    else
        *v_p = hlx_st_load(p, t->dtype, (size_t)i);
    atomic_fetch_add_explicit(&ck->bytes_read, (uint64_t)hlx_st_dtype_size(t->dtype),
                              memory_order_relaxed);
    return HLX_OK;
}

/* ---- integer-packed weights (docs/model.md "Integer weights") ---------------------------- */

/* Part `suffix` of the packed set base: dtype (HLX_ST_COUNT: a scale's F32, BF16 or F16)
 * and shape [d0, d1] (d1 < 0: 1-D [d0]); *p_p NULL when absent and optional. */
static hlx_status_t hlx_pack_part(const hlx_ckpt_t *ck, const hlx_ckpt_packing_t *pk,
                                  const char *base, const char *suffix, int required,
                                  hlx_st_dtype_t dtype, int64_t d0, int64_t d1,
                                  const char *layout, const hlx_ckpt_tensor_t **p_p)
{
    char name[600], have[160], want[160];
    const int64_t shape[2] = { d0, d1 };
    const hlx_ckpt_tensor_t *p;

    snprintf(name, sizeof(name), "%s%s", base, suffix);
    *p_p = p = hlx_ckpt_find_stored(ck, name);
    if (p == NULL)
        return required ? hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                                     "%s: tensor %s is missing (%s %d-bit: %s)", ck->dir, name,
                                     hlx_pack_form(pk->pack), pk->bits, layout)
                        : HLX_OK;
    if (dtype == HLX_ST_COUNT ? !hlx_st_is_scale(p->dtype) : p->dtype != dtype)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: dtype %s, expected %s (%s %d-bit: %s)",
                          ck->files[p->file].shown, name, hlx_st_dtype_name(p->dtype),
                          dtype == HLX_ST_COUNT ? "F32, BF16 or F16" : hlx_st_dtype_name(dtype),
                          hlx_pack_form(pk->pack), pk->bits, layout);
    if (p->ndim != (d1 < 0 ? 1 : 2) || memcmp(p->shape, shape, 8 * (size_t)p->ndim) != 0) {
        hlx_shape_str(have, sizeof(have), p->ndim, p->shape);
        hlx_shape_str(want, sizeof(want), d1 < 0 ? 1 : 2, shape);
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: shape %s, expected %s (%s %d-bit, group %lld: %s)",
                          ck->files[p->file].shown, name, have, want, hlx_pack_form(pk->pack),
                          pk->bits, (long long)pk->group, layout);
    }
    return HLX_OK;
}

/* compressed-tensors' weight_shape: [out, in] as I64 or I32 values. */
static hlx_status_t hlx_pack_dims(const hlx_ckpt_t *ck, const char *base, int64_t *out_p,
                                  int64_t *in_p, const hlx_ckpt_tensor_t **d_p)
{
    char name[600];
    const hlx_ckpt_tensor_t *d;
    const uint8_t *p;
    int64_t v[2];
    int k;

    snprintf(name, sizeof(name), "%s.weight_shape", base);
    if ((*d_p = d = hlx_ckpt_find_stored(ck, name)) == NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s is missing (compressed-tensors pack-quantized: the "
                          "[out, in] of %s.weight_packed)", ck->dir, name, base);
    if (d->ndim != 1 || d->shape[0] != 2 || (d->dtype != HLX_ST_I64 && d->dtype != HLX_ST_I32))
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: %s of %lld dimension%s, expected two I64 or I32 "
                          "values (out, in)", ck->files[d->file].shown, name,
                          hlx_st_dtype_name(d->dtype), (long long)d->numel,
                          d->numel == 1 ? "" : "s");
    p = hlx_ck_data(ck, d);
    for (k = 0; k < 2; k++) {
        if (d->dtype == HLX_ST_I64) {
            memcpy(&v[k], p + 8 * k, 8);
        } else {
            int32_t w;
            memcpy(&w, p + 4 * k, 4);
            v[k] = w;
        }
        if (v[k] < 1 || v[k] > (int64_t)1 << 40)
            return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                              "%s: tensor %s: value %d is %lld, not a dimension (1 to 2^40)",
                              ck->files[d->file].shown, name, k, (long long)v[k]);
    }
    *out_p = v[0];
    *in_p = v[1];
    return HLX_OK;
}

/* Every g_idx value a group in [0, groups). */
static hlx_status_t hlx_pack_gidx(const hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *g,
                                  int64_t groups)
{
    const uint8_t *p = hlx_ck_data(ck, g);
    int64_t i;

    for (i = 0; i < g->shape[0]; i++) {
        int32_t v;
        memcpy(&v, p + 4 * i, 4);
        if (v < 0 || v >= groups)
            return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                              "%s: tensor %s: value %lld is %d, not a group (0 to %lld)",
                              ck->files[g->file].shown, g->name, (long long)i, v,
                              (long long)groups - 1);
    }
    return HLX_OK;
}

/* GPTQ's [in, out] from its qweight [in x bits / 32, out] (w): 32 / bits values a word,
 * or at 3 bits each 32 values in 3 words (AutoGPTQ's pack: a 96-bit run), and its qzeros
 * the same along out; so at 3 bits both counts are multiples of 32, as vLLM requires. */
static hlx_status_t hlx_pack_gptq_dims(const hlx_ckpt_t *ck, const hlx_ckpt_packing_t *pk,
                                       const hlx_ckpt_tensor_t *w, int64_t *in_p,
                                       int64_t *out_p)
{
    char have[160];
    int64_t in;

    hlx_shape_str(have, sizeof(have), 2, w->shape);
    if (__builtin_mul_overflow(w->shape[0], (int64_t)32, &in))
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: shape %s overflows", ck->files[w->file].shown,
                          w->name, have);
    if (in % pk->bits != 0)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: shape %s, expected [in / 32 x %d, out]: %lld rows "
                          "are not a multiple of %d, so the in-features are not a multiple of "
                          "32 (%s %d-bit packs each 32 input features into %d words; vLLM "
                          "requires the same)", ck->files[w->file].shown, w->name, have,
                          pk->bits, (long long)w->shape[0], pk->bits, hlx_pack_form(pk->pack),
                          pk->bits, pk->bits);
    if (pk->bits == 3 && w->shape[1] % 32 != 0)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: shape %s: %lld out-features, not a multiple of 32 "
                          "(%s 3-bit packs the zero points of each 32 output features into 3 "
                          "words; vLLM requires the same)", ck->files[w->file].shown, w->name,
                          have, (long long)w->shape[1], hlx_pack_form(pk->pack));
    *in_p = in / pk->bits;
    *out_p = w->shape[1];
    return HLX_OK;
}

/* The int32 words that hold n values of bits each, packed without gaps: ceil(n / (32 /
 * bits)) at 2, 4 and 8 bits, n / 32 x 3 at 3 (n a multiple of 32 there); -1 on overflow. */
static int64_t hlx_pack_words(int64_t n, int bits)
{
    int64_t b;

    if (__builtin_mul_overflow(n, (int64_t)bits, &b) || b > INT64_MAX - 31)
        return -1;
    return (b + 31) / 32;
}

/* The packed set whose words are w (name base + the form's suffix) as v. */
static hlx_status_t hlx_pack_one(const hlx_ckpt_t *ck, const hlx_ckpt_packing_t *pk,
                                 const hlx_ckpt_tensor_t *w, const char *base,
                                 hlx_ckpt_tensor_t *v)
{
    const int64_t p = 32 / pk->bits;
    char have[160], layout[160];
    int64_t out = 0, in = 0, words, zwords;
    hlx_status_t st;
    const hlx_ckpt_tensor_t *s, *z = NULL, *g = NULL, *d = NULL;

    if (w->dtype != HLX_ST_I32 || w->ndim != 2 || w->shape[0] < 1 || w->shape[1] < 1 ||
        w->shape[0] > (int64_t)1 << 40 || w->shape[1] > (int64_t)1 << 40) {
        hlx_shape_str(have, sizeof(have), w->ndim, w->shape);
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: %s %s, expected 2-D I32 of 1 to 2^40 words each way "
                          "(%s: packed words)", ck->files[w->file].shown, w->name,
                          hlx_st_dtype_name(w->dtype), have, hlx_pack_form(pk->pack));
    }
    if (pk->pack == HLX_PACK_CT) {
        if ((st = hlx_pack_dims(ck, base, &out, &in, &d)) != HLX_OK)
            return st;
        words = (in + p - 1) / p;
        if (w->shape[0] != out || w->shape[1] != words) {
            hlx_shape_str(have, sizeof(have), 2, w->shape);
            return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                              "%s: tensor %s: shape %s, expected [%lld, %lld] (%s's [out, "
                              "in] = [%lld, %lld] in %lld-value words)",
                              ck->files[w->file].shown, w->name, have, (long long)out,
                              (long long)words, d->name, (long long)out, (long long)in,
                              (long long)p);
        }
    } else if (pk->pack == HLX_PACK_AWQ) {
        in = w->shape[0];
        out = w->shape[1] * 8;
    } else if ((st = hlx_pack_gptq_dims(ck, pk, w, &in, &out)) != HLX_OK) {
        return st;
    }
    if ((zwords = hlx_pack_words(out, pk->bits)) < 0 ||
        __builtin_mul_overflow((uint64_t)out, (uint64_t)in, &v->numel)) {
        hlx_shape_str(have, sizeof(have), 2, w->shape);
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: shape %s: its [out, in] = [%lld, %lld] overflows",
                          ck->files[w->file].shown, w->name, have, (long long)out,
                          (long long)in);
    }
    v->groups = pk->group > 0 ? (in + pk->group - 1) / pk->group : 1;
    v->group = pk->group > 0 ? pk->group : in;
    switch (pk->pack) {
    case HLX_PACK_CT:
        snprintf(layout, sizeof(layout), "weight_scale [out, G], weight_zero_point "
                 "[ceil(out / %lld), G], G = %lld", (long long)p, (long long)v->groups);
        if ((st = hlx_pack_part(ck, pk, base, ".weight_scale", 1, HLX_ST_COUNT, out, v->groups,
                                layout, &s)) != HLX_OK ||
            (!pk->sym &&
             (st = hlx_pack_part(ck, pk, base, ".weight_zero_point", 1, HLX_ST_I32,
                                 (out + p - 1) / p, v->groups, layout, &z)) != HLX_OK) ||
            (st = hlx_pack_part(ck, pk, base, ".weight_g_idx", pk->act_order, HLX_ST_I32, in, -1,
                                layout, &g)) != HLX_OK)
            return st;
        if (pk->sym && (st = hlx_pack_part(ck, pk, base, ".weight_zero_point", 0, HLX_ST_I32,
                                           (out + p - 1) / p, v->groups, layout, &z)) == HLX_OK &&
            z != NULL)
            return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                              "%s: tensor %s: the quantization config declares symmetric "
                              "weights (no zero points), but the checkpoint holds them: set "
                              "\"symmetric\": false", ck->files[z->file].shown, z->name);
        if (st != HLX_OK)
            return st;
        break;
    case HLX_PACK_AWQ:
        snprintf(layout, sizeof(layout), "qweight [in, out / 8], qzeros [G, out / 8], scales "
                 "[G, out], G = %lld", (long long)v->groups);
        if ((st = hlx_pack_part(ck, pk, base, ".scales", 1, HLX_ST_COUNT, v->groups, out, layout,
                                &s)) != HLX_OK ||
            (st = hlx_pack_part(ck, pk, base, ".qzeros", 1, HLX_ST_I32, v->groups, out / 8,
                                layout, &z)) != HLX_OK)
            return st;
        break;
    default:
        if (pk->bits == 3) /* 32 values in 3 words */
            snprintf(layout, sizeof(layout), "qweight [in / 32 x 3, out], qzeros [G, out / 32 "
                     "x 3], scales [G, out], G = %lld", (long long)v->groups);
        else
            snprintf(layout, sizeof(layout), "qweight [in / %lld, out], qzeros [G, ceil(out / "
                     "%lld)], scales [G, out], G = %lld", (long long)p, (long long)p,
                     (long long)v->groups);
        if ((st = hlx_pack_part(ck, pk, base, ".scales", 1, HLX_ST_COUNT, v->groups, out, layout,
                                &s)) != HLX_OK ||
            (st = hlx_pack_part(ck, pk, base, ".qzeros", 1, HLX_ST_I32, v->groups, zwords,
                                layout, &z)) != HLX_OK ||
            (st = hlx_pack_part(ck, pk, base, ".g_idx", pk->act_order, HLX_ST_I32, in, -1,
                                layout, &g)) != HLX_OK)
            return st;
        break;
    }
    if (g != NULL && (st = hlx_pack_gidx(ck, g, v->groups)) != HLX_OK)
        return st;
    v->dtype = HLX_ST_I32;
    v->ndim = 2;
    v->shape[0] = out;
    v->shape[1] = in;
    v->begin = v->end = 0;
    v->file = w->file;
    v->scale = s;
    v->scale_rows = 0;
    v->pack = pk->pack;
    v->bits = pk->bits;
    v->packed = w;
    v->zero = z;
    v->gidx = g;
    v->dims = d;
    return HLX_OK;
}

hlx_status_t hlx_ckpt_set_packed(hlx_ckpt_t *ck, const hlx_ckpt_packing_t *pk,
                                 int (*skip)(const char *name, const void *arg),
                                 const void *arg)
{
    const char *suffix = pk->pack == HLX_PACK_CT ? ".weight_packed" : ".qweight";
    const size_t sl = strlen(suffix);
    size_t i, n = 0;
    hlx_status_t st = HLX_OK;

    hlx_ckpt_packs_free(ck);
    if (pk->pack == 0)
        return HLX_OK;
    if (pk->bits != 4 && pk->bits != 8 &&
        !((pk->bits == 2 || pk->bits == 3) &&
          (pk->pack == HLX_PACK_GPTQ || pk->pack == HLX_PACK_GPTQ_V2)))
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                          "%s: %d-bit packed weights (4 or 8; GPTQ also 2 or 3)", ck->dir,
                          pk->bits);
    ck->packs = calloc(ck->count ? ck->count : 1, sizeof(*ck->packs));
    if (ck->packs == NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOMEM, "out of memory");
    for (i = 0; i < ck->count && st == HLX_OK; i++) {
        const hlx_ckpt_tensor_t *w = &ck->tensors[i];
        const size_t nl = strlen(w->name);
        hlx_ckpt_tensor_t *v = &ck->packs[n];
        char base[512], *name;
        if (nl <= sl || strcmp(w->name + nl - sl, suffix) || (skip != NULL && skip(w->name, arg)))
            continue;
        if (nl - sl >= sizeof(base) - 8) {
            st = hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                            "%s: tensor %.64s...: a name of %zu characters (at most %zu)",
                            ck->files[w->file].shown, w->name, nl, sizeof(base) - 9 + sl);
            break;
        }
        memcpy(base, w->name, nl - sl);
        base[nl - sl] = '\0';
        if ((name = malloc(nl - sl + 8)) == NULL) {
            st = hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOMEM, "out of memory");
            break;
        }
        memcpy(name, base, nl - sl);
        memcpy(name + nl - sl, ".weight", 8);
        v->name = name;
        ck->npacks = ++n; /* freed with the others from here on */
        if (hlx_ckpt_find_stored(ck, name) != NULL)
            st = hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                            "%s: tensor %s is stored both packed (%s) and as it is",
                            ck->files[w->file].shown, name, w->name);
        else
            st = hlx_pack_one(ck, pk, w, base, v);
    }
    if (st != HLX_OK) {
        hlx_ckpt_packs_free(ck);
        return st;
    }
    qsort(ck->packs, ck->npacks, sizeof(*ck->packs), hlx_tensor_cmp_name);
    return HLX_OK;
}

int hlx_ckpt_packed_groups(const hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int *bits_p,
                           int64_t *group_p, const uint8_t **lut_p)
{
    const uint8_t *pg;
    int64_t i, in;

    if (lut_p != NULL)
        *lut_p = NULL;
    if (t != NULL && t->mxs != NULL) { /* MXFP4: nibbles that stand for the codes, a group a
                                          block (hlx_ck_mx_part) */
        *bits_p = 4;
        *group_p = HLX_MXFP4_BLOCK;
        if (lut_p != NULL)
            *lut_p = hlx_mxfp4_codes;
        return 1;
    }
    if (t == NULL || !t->pack || t->group < 1 || (t->bits != 4 && t->bits != 8))
        return 0;
    *bits_p = t->bits;
    *group_p = t->group;
    if (t->gidx == NULL)
        return 1;
    pg = hlx_ck_data(ck, t->gidx);
    in = t->shape[1];
    for (i = 0; i < in; i++) /* desc_act false still writes g_idx: i / group */
        if ((int64_t)(int32_t)hlx_ck_u32(pg, (uint64_t)i) != i / t->group)
            return t->groups < (int64_t)1 << 24 ? 2 : 0; /* act order (read as f32) */
    return 1;
}

/* ---- views of fused 3-D tensors ------------------------------------------------------ */

/* A view's place in its tensor f (file, name): the last of its out columns (rows of an
 * MXFP4 view: along) c0 + step (out - 1) inside cols, without overflow, and its name not
 * stored as well (how: "fused", "as MXFP4"). */
static hlx_status_t hlx_view_place(const hlx_ckpt_t *ck, const hlx_ckpt_view_t *v,
                                   const char *name, const hlx_ckpt_tensor_t *f,
                                   const char *along, const char *how)
{
    const int64_t step = v->step > 1 ? v->step : 1;
    const char *file = ck->files[f->file].shown;

    if (v->index < 0 || v->index >= v->experts || v->c0 < 0 || v->out < 1 || v->step < 0 ||
        v->c0 >= v->cols || (v->out - 1) > (v->cols - 1 - v->c0) / step ||
        (!v->vec && v->in < 1))
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                          "%s: tensor %s: expert %lld, %lld %s from %lld by %lld outside it",
                          file, f->name, (long long)v->index, (long long)v->out, along,
                          (long long)v->c0, (long long)step);
    if (hlx_ckpt_find_stored(ck, name) != NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                          "%s: tensor %s is stored both on its own and %s in %s", file, name,
                          how, f->name);
    return HLX_OK;
}

/* An MXFP4 view (hlx_ckpt_view_t.mx): its blocks [experts][cols][in / 32][16] and scales
 * [experts][cols][in / 32], both U8, in = a multiple of 32, the rows c0 + step x o inside
 * cols; out filled as a BF16 [out][in] tensor reading them. */
static hlx_status_t hlx_view_mx(hlx_ckpt_t *ck, const hlx_ckpt_view_t *v, const char *name,
                                const hlx_ckpt_tensor_t *b, hlx_ckpt_tensor_t *out)
{
    const int64_t g = v->in / HLX_MXFP4_BLOCK, step = v->step > 1 ? v->step : 1;
    const int64_t wb[4] = { v->experts, v->cols, g, HLX_MXFP4_BLOCK_BYTES };
    const int64_t ws[3] = { v->experts, v->cols, g };
    const size_t nl = strlen(b->name);
    const char *file = ck->files[b->file].shown;
    char sname[256], have[160], exp[160];
    const hlx_ckpt_tensor_t *s;
    hlx_status_t st;

    if (v->in < HLX_MXFP4_BLOCK || v->in % HLX_MXFP4_BLOCK != 0 || nl < 7 ||
        strcmp(b->name + nl - 7, "_blocks") != 0)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: MXFP4 blocks need an input count that is a multiple "
                          "of %d (this one: %lld) and a name X_blocks", file, b->name,
                          HLX_MXFP4_BLOCK, (long long)v->in);
    snprintf(sname, sizeof(sname), "%.*s_scales", (int)(nl - 7), b->name);
    if ((s = hlx_ckpt_find_stored(ck, sname)) == NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOT_FOUND,
                          "%s: tensor %s is missing (the MXFP4 scales of %s)", ck->dir, sname,
                          b->name);
    if (b->ndim != 4 || memcmp(b->shape, wb, sizeof(wb)) != 0 || b->dtype != HLX_ST_U8 ||
        s->ndim != 3 || memcmp(s->shape, ws, sizeof(ws)) != 0 || s->dtype != HLX_ST_U8) {
        const hlx_ckpt_tensor_t *bad = b->ndim != 4 || memcmp(b->shape, wb, sizeof(wb)) != 0 ||
                                               b->dtype != HLX_ST_U8 ? b : s;
        hlx_shape_str(have, sizeof(have), bad->ndim, bad->shape);
        hlx_shape_str(exp, sizeof(exp), bad == b ? 4 : 3, bad == b ? wb : ws);
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: %s %s, expected U8 %s (MXFP4 %s: [experts, out, in / "
                          "32%s])", ck->files[bad->file].shown, bad->name,
                          hlx_st_dtype_name(bad->dtype), have, exp,
                          bad == b ? "blocks" : "scales", bad == b ? ", 16" : "");
    }
    if ((st = hlx_view_place(ck, v, name, b, "rows", "as MXFP4")) != HLX_OK)
        return st;
    /* the shapes matched the files' byte ranges when they were read: index x cols + c0 +
     * step (out - 1) < experts x cols rows, each in / 2 and in / 32 bytes, fit */
    if ((out->name = strdup(name)) == NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOMEM, "out of memory");
    out->dtype = HLX_ST_BF16;
    out->ndim = 2;
    out->shape[0] = v->out;
    out->shape[1] = v->in;
    out->numel = (uint64_t)v->out * (uint64_t)v->in;
    out->begin = out->end = b->begin;
    out->file = b->file;
    out->fused = b;
    out->mxs = s;
    out->mxrow = v->index * v->cols + v->c0;
    out->cstep = step;
    return HLX_OK;
}

/* An output-major view (hlx_ckpt_view_t.omajor) of f, [experts][cols][in] as checked: its
 * expert's rows c0 + step x o, each in elements, read as a stored [out][in] weight whose
 * rows lie in x step apart; no bytes of its own (begin == end). */
static hlx_status_t hlx_view_rows(hlx_ckpt_t *ck, const hlx_ckpt_view_t *v, const char *name,
                                  const hlx_ckpt_tensor_t *f, hlx_ckpt_tensor_t *out)
{
    const int64_t step = v->step > 1 ? v->step : 1;
    uint64_t at, off;

    /* the first element: (index * cols + c0) * in elements into f */
    if (__builtin_mul_overflow((uint64_t)v->index, (uint64_t)v->cols, &at) ||
        __builtin_add_overflow(at, (uint64_t)v->c0, &at) ||
        __builtin_mul_overflow(at, (uint64_t)v->in, &at) ||
        __builtin_mul_overflow(at, (uint64_t)hlx_st_dtype_size(f->dtype), &off) ||
        __builtin_add_overflow(off, f->begin, &off) || off >= f->end ||
        __builtin_mul_overflow((uint64_t)v->out, (uint64_t)v->in, &out->numel))
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                          "%s: tensor %s: expert %lld's offset overflows",
                          ck->files[f->file].shown, f->name, (long long)v->index);
    if ((out->name = strdup(name)) == NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOMEM, "out of memory");
    out->dtype = f->dtype;
    out->ndim = 2;
    out->shape[0] = v->out;
    out->shape[1] = v->in;
    out->begin = out->end = off;
    out->file = f->file;
    out->fused = f;
    out->stride = v->in * step;
    out->omajor = 1;
    return HLX_OK;
}

/* One view: checks its tensor (stored, [experts][in][cols] exactly, or [experts][cols] for
 * a 1-D view; floating point) and its columns (c0 + step x (out - 1) inside cols), every
 * byte offset overflow-checked, and fills out (its name owned by the caller's list from
 * here on). */
static hlx_status_t hlx_view_one(hlx_ckpt_t *ck, const hlx_ckpt_view_t *v, hlx_ckpt_tensor_t *out)
{
    const int flat = v->omajor && v->flat && !v->vec; /* [cols][in], one linear */
    const int64_t want3[3] = { v->experts, v->omajor ? v->cols : v->in,
                               v->omajor ? v->in : v->cols },
                  want2[2] = { flat ? v->cols : v->experts, flat ? v->in : v->cols };
    const int nd = v->vec || flat ? 2 : 3;
    const int64_t *want = v->vec || flat ? want2 : want3, step = v->step > 1 ? v->step : 1;
    int64_t want_sc[3] = { v->experts, 1, v->cols }; /* or [experts][cols][1] */
    char mapped[256], fmapped[256], have[160], exp[160];
    const char *name = hlx_ckpt_prefixed(ck, v->name, mapped, sizeof(mapped));
    const char *fname = hlx_ckpt_prefixed(ck, v->fused, fmapped, sizeof(fmapped));
    const hlx_ckpt_tensor_t *f = hlx_ckpt_find_stored(ck, fname);
    uint64_t at, off;
    hlx_status_t st;
    const char *file;

    hlx_shape_str(exp, sizeof(exp), nd, v->sc ? want_sc : want);
    if (f == NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOT_FOUND,
                          "%s: tensor %s is missing (the fused experts %s reads, %s%s)",
                          ck->dir, fname, name, exp, v->sc ? " or its [experts, out, 1]" : "");
    if (v->mx)
        return hlx_view_mx(ck, v, name, f, out);
    file = ck->files[f->file].shown;
    if (v->sc) { /* the scales: [experts][1][cols] or [experts][cols][1], one per column */
        if (f->ndim == 3 && f->shape[0] == v->experts && f->shape[1] == v->cols &&
            f->shape[2] == 1) {
            want_sc[1] = v->cols;
            want_sc[2] = 1;
        }
        want = want_sc;
        hlx_shape_str(exp, sizeof(exp), 3, want);
        if (!hlx_st_is_scale(f->dtype))
            return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                              "%s: tensor %s: dtype %s: fused expert scales are F32, BF16 or "
                              "F16", file, f->name, hlx_st_dtype_name(f->dtype));
    }
    if (f->ndim != nd || memcmp(f->shape, want, sizeof(int64_t) * (size_t)nd) != 0) {
        hlx_shape_str(have, sizeof(have), f->ndim, f->shape);
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: shape %s, expected %s (%s)", file, f->name, have, exp,
                          v->sc ? "fused expert scales: [experts, 1, out] or [experts, "
                                  "out, 1]"
                          : v->vec ? "fused expert biases: [experts, out]"
                          : flat ? "a fused linear: [out, in]"
                          : v->omajor ? "fused experts: [experts, out, in], output-major"
                                      : "fused experts: [experts, in, out], input-major");
    }
    if (f->dtype != HLX_ST_F32 && f->dtype != HLX_ST_BF16 && f->dtype != HLX_ST_F16 &&
        !(f->dtype == HLX_ST_F8_E4M3 && !v->vec && !v->omajor && step == 1))
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: dtype %s: fused %s are read in F32, BF16 or F16 "
                          "(quantized fused experts are not read)", file, f->name,
                          hlx_st_dtype_name(f->dtype), v->vec ? "expert biases" : "3-D experts");
    if ((st = hlx_view_place(ck, v, name, f, v->omajor ? "rows" : "columns", "fused")) !=
        HLX_OK)
        return st;
    if (v->omajor && !v->vec)
        return hlx_view_rows(ck, v, name, f, out);
    /* the first element: (index * in * cols + c0) elements into f ((index * cols + c0) for
     * a row of a 2-D one, or for scales) */
    if (__builtin_mul_overflow((uint64_t)v->index, (uint64_t)(v->vec || v->sc ? 1 : v->in),
                               &at) ||
        __builtin_mul_overflow(at, (uint64_t)v->cols, &at) ||
        __builtin_add_overflow(at, (uint64_t)v->c0, &at) ||
        __builtin_mul_overflow(at, (uint64_t)hlx_st_dtype_size(f->dtype), &off) ||
        __builtin_add_overflow(off, f->begin, &off) || off >= f->end ||
        __builtin_mul_overflow((uint64_t)v->out, (uint64_t)(v->vec || v->sc ? 1 : v->in),
                               &out->numel))
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                          "%s: tensor %s: expert %lld's offset overflows", file, f->name,
                          (long long)v->index);
    if ((out->name = strdup(name)) == NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOMEM, "out of memory");
    out->dtype = f->dtype;
    out->ndim = v->vec ? 1 : 2;
    out->shape[0] = v->out;
    out->shape[1] = v->vec ? 0 : v->sc ? 1 : v->in;
    out->begin = out->end = off;
    out->file = f->file;
    out->fused = f;
    out->stride = v->cols;
    out->cstep = step > 1 ? step : 0;
    return HLX_OK;
}

hlx_status_t hlx_ckpt_set_views(hlx_ckpt_t *ck, const hlx_ckpt_view_t *v, size_t n)
{
    hlx_status_t st = HLX_OK;
    size_t i;

    hlx_ckpt_views_free(ck);
    if (n == 0)
        return HLX_OK;
    if ((ck->views = calloc(n, sizeof(*ck->views))) == NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOMEM, "out of memory");
    for (i = 0; i < n && st == HLX_OK; i++)
        if ((st = hlx_view_one(ck, &v[i], &ck->views[i])) == HLX_OK)
            ck->nviews = i + 1; /* freed with the others from here on */
    if (st != HLX_OK) {
        hlx_ckpt_views_free(ck);
        return st;
    }
    qsort(ck->views, ck->nviews, sizeof(*ck->views), hlx_tensor_cmp_name);
    for (i = 1; i < ck->nviews; i++)
        if (!strcmp(ck->views[i - 1].name, ck->views[i].name)) {
            st = hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                            "%s: view %s given twice", ck->dir, ck->views[i].name);
            hlx_ckpt_views_free(ck);
            return st;
        }
    /* an fp8 view's scales: the view X_scale, one per output row (after the sort: the
     * array no longer moves) */
    for (i = 0; i < ck->nviews; i++) {
        hlx_ckpt_tensor_t *t = &ck->views[i], key;
        const hlx_ckpt_tensor_t *sc;
        char sname[200];
        if (t->dtype != HLX_ST_F8_E4M3)
            continue;
        snprintf(sname, sizeof(sname), "%s_scale", t->name);
        key.name = sname;
        sc = bsearch(&key, ck->views, ck->nviews, sizeof(*ck->views), hlx_tensor_cmp_name);
        if (sc == NULL || sc->ndim != 2 || sc->shape[0] != t->shape[0] || sc->shape[1] != 1) {
            st = hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOT_FOUND,
                            "%s: tensor %s: fp8 fused experts without their scales (%s_scale "
                            "beside %s, one per output channel)", ck->dir, t->fused->name,
                            t->fused->name, t->fused->name);
            hlx_ckpt_views_free(ck);
            return st;
        }
        t->scale = sc;
        t->scale_rows = 1;
    }
    return HLX_OK;
}

size_t hlx_ckpt_packed_count(const hlx_ckpt_t *ck)
{
    size_t i, n = ck->npacks;

    for (i = 0; i < ck->nviews; i++)
        n += ck->views[i].mxs != NULL;
    return n;
}

/* Value k (3 bits) of a run of 3-bit values (AutoGPTQ's pack: each 32 values in 3 words,
 * value k at bits [3 k, 3 k + 3) of the run's 96, little-endian, values 10 and 21 across
 * a word boundary), its word j at index base + j x stride of p. */
static uint32_t hlx_ck_field3(const uint8_t *p, uint64_t base, uint64_t stride, int64_t k)
{
    const int b = 3 * (int)(k & 31), sh = b & 31;
    const uint64_t j = (uint64_t)(k >> 5) * 3 + (uint64_t)(b >> 5);
    uint32_t v = hlx_ck_u32(p, base + j * stride) >> sh;

    if (sh > 29) /* the rest in the next word's low bits */
        v |= hlx_ck_u32(p, base + (j + 1) * stride) << (32 - sh);
    return v & 7u;
}

/* Row o's zero point (*z_p; compressed-tensors' less 2^(bits - 1)) and scale (*s_p) in
 * group g of the packed weight t; a scale that is not finite is refused. */
static hlx_status_t hlx_ck_group(const hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int64_t o,
                                 int64_t g, int32_t *z_p, float *s_p)
{
    const uint8_t *pz = t->zero ? hlx_ck_data(ck, t->zero) : NULL;
    const int bits = t->bits, ps2 = bits == 2 ? 4 : bits == 4 ? 3 : 2, pm = (1 << ps2) - 1;
    const uint32_t mask = (1u << bits) - 1u;
    const int64_t nout = t->shape[0], zcols = t->zero ? t->zero->shape[1] : 0;
    uint64_t si;
    int32_t z;
    float s;

    switch (t->pack) {
    case HLX_PACK_AWQ:
        z = (int32_t)((hlx_ck_u32(pz, (uint64_t)(g * zcols + (o >> 3))) >>
                       (4 * hlx_awq_field[o & 7])) & 15u);
        si = (uint64_t)(g * nout + o);
        break;
    case HLX_PACK_CT:
        z = pz ? (int32_t)((hlx_ck_u32(pz, (uint64_t)((o >> ps2) * zcols + g)) >>
                            (bits * (int)(o & pm))) & mask) - (1 << (bits - 1))
               : 0;
        si = (uint64_t)(o * t->groups + g);
        break;
    default: /* GPTQ: its zeros stored minus one, except in its v2 format */
        if (bits == 3)
            z = (int32_t)hlx_ck_field3(pz, (uint64_t)(g * zcols), 1, o);
        else
            z = (int32_t)((hlx_ck_u32(pz, (uint64_t)(g * zcols + (o >> ps2))) >>
                           (bits * (int)(o & pm))) & mask);
        z += t->pack == HLX_PACK_GPTQ;
        si = (uint64_t)(g * nout + o);
        break;
    }
    s = hlx_st_load(hlx_ck_data(ck, t->scale), t->scale->dtype, si);
    if (!isfinite(s)) /* negative ones are real: AutoRound's symmetric scales */
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                          "%s: tensor %s: value %llu is %g, not a weight scale (a finite "
                          "value)", ck->files[t->scale->file].shown, t->scale->name,
                          (unsigned long long)si, s);
    *z_p = z;
    *s_p = s;
    return HLX_OK;
}

/* The codes of columns [i, i + n) of row o of the packed weight t, one of the forms read
 * along a row (compressed-tensors' words, GPTQ's 3-bit runs; hlx_ck_unpack_tile reads the
 * others across its rows), into out: (q - z) x s (value set) or the field as stored (q +
 * off: compressed-tensors' fields are signed less 2^(bits - 1)); a word read once per 32 /
 * bits fields. */
static void hlx_ck_codes(const hlx_ckpt_tensor_t *t, const uint8_t *pw, int64_t o, int64_t i,
                         int64_t n, int value, int32_t z, float s, float *out)
{
    const int bits = t->bits, ps2 = bits == 2 ? 4 : bits == 4 ? 3 : 2, pm = (1 << ps2) - 1;
    const uint32_t mask = (1u << bits) - 1u;
    const int32_t off = t->pack == HLX_PACK_CT ? 1 << (bits - 1) : 0;
    const int64_t wcols = t->packed->shape[1];
    uint32_t word = 0;
    int64_t k;
    int32_t q;

    for (k = 0; k < n; k++) {
        if (t->pack != HLX_PACK_CT) { /* GPTQ's 3 bits */
            q = (int32_t)hlx_ck_field3(pw, (uint64_t)o, (uint64_t)t->shape[0], i + k);
        } else {
            if (k == 0 || ((i + k) & pm) == 0)
                word = hlx_ck_u32(pw, (uint64_t)(o * wcols + ((i + k) >> ps2)));
            q = (int32_t)((word >> (bits * (int)((i + k) & pm))) & mask) - off;
        }
        out[k] = value ? (float)(q - z) * s : (float)(q + off);
    }
}

/* Whether the packed weight t is read across its rows (GPTQ's words, [in / p][out], but
 * its 3-bit runs; AWQ's, [in][out / 8]): a word's fields are then a column's elements
 * (AWQ) or a row's elements of consecutive words (GPTQ), a tile of it is best filled
 * column by column. */
static int hlx_ck_across(const hlx_ckpt_tensor_t *t)
{
    return t->pack == HLX_PACK_AWQ || (t->pack != HLX_PACK_CT && t->bits != 3);
}

/* Rows [o0, o0 + th) x columns [c0, c0 + nc) of the packed weight t into tile (element (k,
 * j) at tile[k rs + j cs]; th at most HLX_CK_TILE; forms read across, hlx_ck_across,
 * column by column: rs 1, cs HLX_CK_TILE): (q - z) x s in f32 (exact for F16 and BF16
 * scales), or one of its parts (mode HLX_CKPT_Q*). A scale that is not finite is refused.
 * Run by run of columns in one group (the groups advance by counters, not divisions; with
 * g_idx a run is the columns of equal g_idx): the rows' scales and zero points read once,
 * then the run's codes or the part filled in. GPTQ's and AWQ's words are read across the
 * tile's rows, a word row at a time: down one row of the weight they lie a power-of-two
 * stride apart, which aliases in the caches (a load spent 6.7 ns an element so); 8 rows'
 * words are one vector in the AVX2 conversions (ckpt_cvt.c). */
static hlx_status_t hlx_ck_unpack_tile(const hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t,
                                       int64_t o0, int64_t th, int64_t c0, int64_t nc,
                                       float *tile, int64_t rs, int64_t cs, hlx_dtype_t mode)
{
    const uint8_t *pw = hlx_ck_data(ck, t->packed);
    const uint8_t *pg = t->gidx ? hlx_ck_data(ck, t->gidx) : NULL;
    const int bits = t->bits, ps2 = bits == 2 ? 4 : bits == 4 ? 3 : 2, pm = (1 << ps2) - 1;
    const int32_t off = t->pack == HLX_PACK_CT ? 1 << (bits - 1) : 0;
    const int64_t nout = t->shape[0], wcols = t->packed->shape[1];
    const int value = !hlx_ckpt_qmode(mode);
    const int across = hlx_ck_across(t);
    /* without g_idx: the group of column i is i / group, the rest of it from i on */
    int64_t j, k, n, c, m, i = c0, g = pg ? 0 : c0 / t->group;
    int64_t gleft = pg ? 0 : t->group - c0 % t->group;
    int32_t z[HLX_CK_TILE];
    float s[HLX_CK_TILE];
    hlx_status_t st;

    for (j = 0; j < nc; j += n, i += n) {
        if (pg != NULL) { /* the run of columns of i's g_idx */
            g = (int32_t)hlx_ck_u32(pg, (uint64_t)i);
            for (n = 1; j + n < nc && (int64_t)(int32_t)hlx_ck_u32(pg, (uint64_t)(i + n)) == g; n++)
                ;
        } else {
            if (j > 0) { /* the next group */
                g++;
                gleft = t->group;
            }
            n = nc - j < gleft ? nc - j : gleft;
        }
        for (k = 0; k < th; k++)
            if ((st = hlx_ck_group(ck, t, o0 + k, g, &z[k], &s[k])) != HLX_OK)
                return st;
        if (mode != HLX_CKPT_QCODE && !value) { /* a part: the zero point as stored (the
                                                    offset folded in), the scale, the group */
            for (k = 0; k < th; k++)
                for (c = 0; c < n; c++)
                    tile[k * rs + (j + c) * cs] = mode == HLX_CKPT_QZERO    ? (float)(z[k] + off)
                                                  : mode == HLX_CKPT_QSCALE ? s[k]
                                                                            : (float)g;
        } else if (!across) { /* row by row (cs 1) */
            for (k = 0; k < th; k++)
                hlx_ck_codes(t, pw, o0 + k, i, n, value, z[k], s[k], tile + k * rs + j);
        } else if (t->pack == HLX_PACK_AWQ) { /* column i + c: the tile's rows in th / 8 words */
            ck->cvt->awq(tile + j * cs, cs, pw, i, wcols, n, o0, th, z, s, value);
        } else { /* GPTQ: the fields of word row (i + c) / p left in the run, for each row */
            for (c = 0; c < n; c += m) {
                const int f = (int)((i + c) & pm);
                m = n - c < pm + 1 - f ? n - c : pm + 1 - f;
                ck->cvt->gptq(tile + (j + c) * cs, cs, pw,
                              (uint64_t)(((i + c) >> ps2) * nout + o0), th, bits, f, (int)m, z,
                              s, value);
            }
        }
    }
    return HLX_OK;
}

/* n elements of es bytes from src, cstep elements apart, into dst (contiguous): a stepped
 * view's row (gpt-oss's interleaved gate and up), with the 2- and 4-byte types copied as
 * words rather than by a call per element. */
static void hlx_ck_gather(uint8_t *dst, const uint8_t *src, size_t es, int64_t cstep, int64_t n)
{
    int64_t j;

    if (es == 2) {
        for (j = 0; j < n; j++) {
            uint16_t v;
            memcpy(&v, src + (size_t)(j * cstep) * 2, 2);
            memcpy(dst + (size_t)j * 2, &v, 2);
        }
    } else if (es == 4) {
        for (j = 0; j < n; j++) {
            uint32_t v;
            memcpy(&v, src + (size_t)(j * cstep) * 4, 4);
            memcpy(dst + (size_t)j * 4, &v, 4);
        }
    } else {
        for (j = 0; j < n; j++)
            memcpy(dst + (size_t)j * es, src + (size_t)(j * cstep) * es, es);
    }
}

/* A tile of th rows of nc f32 values (tnc apart) at row i of the block in dst (ld apart):
 * its rows as dst's rows, or (transpose) as dst's columns, converted to dt. */
static void hlx_ck_put_tile(const hlx_ckpt_t *ck, void *dst, hlx_dtype_t dt, int64_t i,
                            int64_t ld, const float *tile, int64_t tnc, int64_t th, int64_t nc,
                            int transpose)
{
    if (!transpose)
        ck->cvt->store(dst, dt, (size_t)(i * ld), ld, tile, tnc, th, nc);
    else
        ck->cvt->tstore(dst, dt, (size_t)i, ld, tile, tnc, th, nc);
}

/* Elements [c0, c0 + n) of one row of an MXFP4 matrix (as hlx_mxfp4_row) as the parts of
 * a packed weight (mode HLX_CKPT_Q*) whose (code - zero) x scale is the element: code
 * 12 + 2 e for E2M1 value e (hlx_mxfp4_codes: 0 .. 24, -0 as 0), zero 12, scale
 * 2^(s - 128) for scale byte s, each block of 32 a group. The packed GEMMs (docs/kernels.md
 * "Packed integer weights") keep each code as the nibble that stands for it in that table
 * (hlx_ckpt_packed_groups's lut), 0.75 bytes a weight with the group's zero and scale, the
 * products exact (a power of two times a small integer) and rounded to bf16 as the load's
 * conversion rounds the element. A scale of 255 (E8M0's NaN) is refused, naming where: row is the row of the
 * stored [experts x cols] rows. */
static hlx_status_t hlx_ck_mx_part(const hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t,
                                   int64_t row, const uint8_t *blocks, const uint8_t *scales,
                                   int64_t c0, int64_t n, hlx_dtype_t mode, float *out)
{
    int64_t i = 0;

    if (mode == HLX_CKPT_QCODE) { /* a byte's two codes at a time (the load's most work) */
        if (n > 0 && (c0 & 1))
            out[i++] = (float)hlx_mxfp4_codes[blocks[c0 >> 1] >> 4];
        for (; i + 1 < n; i += 2) {
            const uint8_t b = blocks[(c0 + i) >> 1];
            out[i] = (float)hlx_mxfp4_codes[b & 15];
            out[i + 1] = (float)hlx_mxfp4_codes[b >> 4];
        }
        if (i < n)
            out[i] = (float)hlx_mxfp4_codes[blocks[(c0 + i) >> 1] & 15];
        return HLX_OK;
    }
    for (i = 0; i < n; i++) {
        const int64_t c = c0 + i, blk = c / HLX_MXFP4_BLOCK;
        const uint8_t s = scales[blk];
        if (mode == HLX_CKPT_QZERO)
            out[i] = 12.0f;
        else if (mode == HLX_CKPT_QGROUP)
            out[i] = (float)blk;
        else if (s == 255)
            return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                              "%s: tensor %s: scale byte 255 (E8M0's NaN) at [%lld, %lld, "
                              "%lld]; replace it (`helix model info %s --scan` lists every such "
                              "tensor)", ck->files[t->mxs->file].shown, t->mxs->name,
                              (long long)(row / t->mxs->shape[1]),
                              (long long)(row % t->mxs->shape[1]), (long long)blk, ck->dir);
        else
            out[i] = ldexpf(1.0f, (int)s - 128);
    }
    return HLX_OK;
}

/* Rows [r0, +nr) x cols [c0, +nc) of an MXFP4 view (hlx_view_mx) into dst as
 * hlx_ckpt_read_block stores a block: tiles of HLX_CK_TILE rows decoded into f32, then
 * stored (transposed or not) in dst_dtype, exact in either; or with dst_dtype a part
 * (HLX_CKPT_Q*: hlx_ck_mx_part), those as f32. */
static hlx_status_t hlx_ck_read_mx(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int64_t r0,
                                   int64_t nr, int64_t c0, int64_t nc, int transpose, void *dst,
                                   hlx_dtype_t dst_dtype, int64_t ld)
{
    const hlx_dtype_t mode = hlx_ckpt_qmode(dst_dtype) ? dst_dtype : HLX_DTYPE_F32;
    hlx_status_t st = HLX_OK;
    const int64_t in = t->shape[1], bb = in / 2, sb = in / HLX_MXFP4_BLOCK;
    const uint8_t *blocks = hlx_ck_data(ck, t->fused), *scales = hlx_ck_data(ck, t->mxs);
    const int64_t tnc = nc + 16;
    int64_t i, k;
    float *tile;

    if (mode != HLX_DTYPE_F32)
        dst_dtype = HLX_DTYPE_F32;
    if (r0 < 0 || nr < 0 || c0 < 0 || nc < 0 || r0 > t->shape[0] - nr || c0 > in - nc ||
        ld < (transpose ? nr : nc) || (dst_dtype != HLX_DTYPE_F32 && dst_dtype != HLX_DTYPE_BF16))
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                          "%s: tensor %s: block rows [%lld, +%lld) cols [%lld, +%lld) (ld %lld, "
                          "%s) outside its %lld x %lld MXFP4 elements",
                          ck->files[t->file].shown, t->name, (long long)r0, (long long)nr,
                          (long long)c0, (long long)nc, (long long)ld,
                          hlx_dtype_name(dst_dtype), (long long)t->shape[0], (long long)in);
    if (nr == 0 || nc == 0)
        return HLX_OK;
    if ((tile = malloc(sizeof(float) * (size_t)(HLX_CK_TILE * tnc))) == NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOMEM,
                          "%s: tensor %s: out of memory", ck->files[t->file].shown, t->name);
    for (i = 0; i < nr && st == HLX_OK; i += HLX_CK_TILE) {
        const int64_t th = nr - i < HLX_CK_TILE ? nr - i : HLX_CK_TILE;
        for (k = 0; k < th && st == HLX_OK; k++) {
            const int64_t row = t->mxrow + (r0 + i + k) * t->cstep;
            if (mode == HLX_DTYPE_F32)
                hlx_mxfp4_row(blocks + (size_t)(row * bb), scales + (size_t)(row * sb), c0, nc,
                              tile + k * tnc);
            else
                st = hlx_ck_mx_part(ck, t, row, blocks + (size_t)(row * bb),
                                    scales + (size_t)(row * sb), c0, nc, mode, tile + k * tnc);
        }
        if (st == HLX_OK)
            hlx_ck_put_tile(ck, dst, dst_dtype, i, ld, tile, tnc, th, nc, transpose);
    }
    free(tile);
    if (st != HLX_OK)
        return st;
    /* half a byte an element, a scale byte a block */
    atomic_fetch_add_explicit(&ck->bytes_read,
                              (uint64_t)nr * ((uint64_t)nc / 2 + (uint64_t)nc / HLX_MXFP4_BLOCK),
                              memory_order_relaxed);
    return HLX_OK;
}

hlx_status_t hlx_ckpt_read_block(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int64_t r0,
                                 int64_t nr, int64_t c0, int64_t nc, int transpose, void *dst,
                                 hlx_dtype_t dst_dtype, int64_t ld)
{
    const hlx_ckpt_file_t *f = &ck->files[t->file];
    const hlx_ckpt_tensor_t *s = t->scale;
    int64_t rows = t->ndim >= 2 ? t->shape[0] : 1, cols, i, j;
    const size_t es = hlx_st_dtype_size(t->dtype);
    const uint8_t *base = hlx_ck_data(ck, t);
    int64_t brow = 1, bcol = 1, tnc, stride, cstep;
    uint8_t *gather = NULL; /* a strided view's elements of one row, as stored */
    hlx_dtype_t mode = HLX_DTYPE_F32; /* packed: the values, or a part (HLX_CKPT_Q*) */
    int colmajor;
    float *tile;

    if (t->mxs != NULL)
        return hlx_ck_read_mx(ck, t, r0, nr, c0, nc, transpose, dst, dst_dtype, ld);
    if (t->fused != NULL && t->ndim == 2 && !t->omajor) {
        /* a view [out][in] of input-major rows: the block read from them, the other way */
        hlx_ckpt_tensor_t sv = *t;
        if (r0 < 0 || nr < 0 || c0 < 0 || nc < 0 || r0 > t->shape[0] - nr ||
            c0 > t->shape[1] - nc)
            return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                              "%s: tensor %s: block rows [%lld, +%lld) cols [%lld, +%lld) "
                              "outside its %lld x %lld elements", f->shown, t->name,
                              (long long)r0, (long long)nr, (long long)c0, (long long)nc,
                              (long long)t->shape[0], (long long)t->shape[1]);
        hlx_ckpt_tensor_t ss;
        sv.fused = NULL;
        sv.shape[0] = t->shape[1];
        sv.shape[1] = t->shape[0];
        if (s != NULL) { /* a scale per output row: per stored column, across all rows */
            ss = *s;
            ss.shape[0] = 1;
            ss.shape[1] = t->shape[0];
            sv.scale = &ss;
            sv.scale_rows = 0;
            sv.sblock[0] = t->shape[1];
            sv.sblock[1] = 1;
        }
        return hlx_ckpt_read_block(ck, &sv, c0, nc, r0, nr, !transpose, dst, dst_dtype, ld);
    }
    if (t->ndim > 2 || t->ndim < 1)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                           "%s: tensor %s: %d-D, a 2-D block needs a 1-D or 2-D tensor", f->shown,
                           t->name, t->ndim);
    cols = t->ndim == 2 ? t->shape[1] : t->shape[0];
    stride = t->stride > 0 ? t->stride : cols; /* a view's rows lie stride apart */
    if (t->dtype != HLX_ST_F32 && t->dtype != HLX_ST_BF16 && t->dtype != HLX_ST_F16 &&
        t->dtype != HLX_ST_F64 && t->dtype != HLX_ST_F8_E4M3 && !t->pack &&
        !(t->dtype == HLX_ST_I8 && s != NULL))
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                           "%s: tensor %s: dtype %s, expected a floating-point weight (F32, "
                           "BF16, F16, F8_E4M3), an I8 one with its _scale or a packed "
                           "integer one", f->shown, t->name, hlx_st_dtype_name(t->dtype));
    if (hlx_ckpt_qmode(dst_dtype) && !t->pack)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_UNSUPPORTED,
                           "%s: tensor %s: not integer-packed: no codes, zero points or scales "
                           "to read", f->shown, t->name);
    if (hlx_ckpt_qmode(dst_dtype)) { /* f32 reads of the packed parts */
        mode = dst_dtype;
        dst_dtype = HLX_DTYPE_F32;
    }
    if (dst_dtype != HLX_DTYPE_F32 && dst_dtype != HLX_DTYPE_BF16)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INTERNAL,
                           "%s: tensor %s: cannot convert to %s (f32 or bf16)", f->shown, t->name,
                           hlx_dtype_name(dst_dtype));
    if (r0 < 0 || nr < 0 || c0 < 0 || nc < 0 || r0 > rows - nr || c0 > cols - nc ||
        ld < (transpose ? nr : nc))
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                           "%s: tensor %s: block rows [%lld, +%lld) cols [%lld, +%lld) (ld %lld) "
                           "outside its %lld x %lld elements", f->shown, t->name, (long long)r0,
                           (long long)nr, (long long)c0, (long long)nc, (long long)ld,
                           (long long)rows, (long long)cols);
    if (t->pack) {
        /* packed words: dequantized a tile of rows at a time (hlx_ck_unpack_tile) */
    } else if (s != NULL && t->scale_rows > 0) {
        /* `<name>_scale`: one factor (a row of them) for every scale_rows rows */
        brow = t->scale_rows;
        bcol = cols;
    } else if (s != NULL) {
        /* DeepSeek: scale_inv[ceil(rows / br)][ceil(cols / bc)], the last blocks partial */
        brow = t->sblock[0] > 0 ? t->sblock[0] : ck->block_rows;
        bcol = t->sblock[1] > 0 ? t->sblock[1] : ck->block_cols;
        if ((rows + brow - 1) / brow != s->shape[0] || (cols + bcol - 1) / bcol != s->shape[1])
            return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                               "%s: tensor %s: scale %s is [%lld, %lld], blocks of %lld x %lld "
                               "over [%lld, %lld] need [%lld, %lld]", f->shown, t->name, s->name,
                               (long long)s->shape[0], (long long)s->shape[1], (long long)brow,
                               (long long)bcol, (long long)rows, (long long)cols,
                               (long long)((rows + brow - 1) / brow),
                               (long long)((cols + bcol - 1) / bcol));
    }
    cstep = t->cstep > 1 ? t->cstep : 1; /* a view's columns lie cstep apart */
    if (cstep > 1 && (gather = malloc(es * (size_t)(nc > 0 ? nc : 1))) == NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOMEM,
                          "%s: tensor %s: out of memory", f->shown, t->name);
    if (cstep == 1 && !transpose && s == NULL && t->dtype == HLX_ST_BF16 &&
        dst_dtype == HLX_DTYPE_BF16) {
        for (i = 0; i < nr; i++) /* same type: rows copied as they are */
            memcpy((uint16_t *)dst + (size_t)(i * ld), base + (size_t)((r0 + i) * stride + c0) * 2,
                   (size_t)nc * 2);
        atomic_fetch_add_explicit(&ck->bytes_read, (uint64_t)nr * (uint64_t)nc * es,
                                  memory_order_relaxed);
        return HLX_OK;
    }
    if (cstep == 1 && s == NULL && t->dtype == HLX_ST_BF16 && dst_dtype == HLX_DTYPE_BF16) {
        /* same type, transposed: straight from the mapping, no f32 between (a dense bf16
         * model's whole load but the embedding's rows) */
        ck->cvt->bf16_t((uint16_t *)dst, ld, base + (size_t)(r0 * stride + c0) * 2, stride, nr,
                        nc);
        atomic_fetch_add_explicit(&ck->bytes_read, (uint64_t)nr * (uint64_t)nc * es,
                                  memory_order_relaxed);
        return HLX_OK;
    }
    /* Tiles of HLX_CK_TILE rows: converted into f32 row by row (the packed forms read across
     * their rows column by column instead), then stored; a transposed store writes
     * HLX_CK_TILE consecutive elements per column instead of one. Tile rows are padded off
     * a power of two so that a column walk does not alias in L1. */
    colmajor = t->pack && hlx_ck_across(t);
    tnc = colmajor ? HLX_CK_TILE : nc + 16;
    tile = malloc(sizeof(float) * (size_t)(HLX_CK_TILE * (nc + 16)));
    if (tile == NULL) {
        free(gather);
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_NOMEM, "%s: tensor %s: out of memory",
                           f->shown, t->name);
    }
    for (i = 0; i < nr; i += HLX_CK_TILE) {
        int64_t th = nr - i < HLX_CK_TILE ? nr - i : HLX_CK_TILE, k;
        if (t->pack) {
            hlx_status_t st = hlx_ck_unpack_tile(ck, t, r0 + i, th, c0, nc, tile,
                                                 colmajor ? 1 : tnc, colmajor ? tnc : 1, mode);
            if (st != HLX_OK) {
                free(tile);
                free(gather);
                return st;
            }
        }
        for (k = 0; k < th && !t->pack; k++) {
            float *out = tile + k * tnc;
            if (cstep > 1) { /* a view's strided columns gathered first, then converted */
                const uint8_t *row = base + (size_t)((r0 + i + k) * stride + c0 * cstep) * es;
                hlx_ck_gather(gather, row, es, cstep, nc);
                ck->cvt->convert(out, gather, t->dtype, nc, ck->fp8_lut);
            } else {
                ck->cvt->convert(out, base + (size_t)((r0 + i + k) * stride + c0) * es,
                                 t->dtype, nc, ck->fp8_lut);
            }
            if (s != NULL) {
                /* factors per scale row: blocks across (weight_scale_inv), or one */
                const int64_t scols = t->scale_rows > 0 ? 1 : s->shape[1];
                const uint8_t *sbase = hlx_ck_data(ck, s);
                const size_t srow = (size_t)((r0 + i + k) / brow * scols);
                for (j = 0; j < nc;) {
                    int64_t blk = (c0 + j) / bcol, end = (blk + 1) * bcol - c0;
                    const float sc = hlx_st_load(sbase, s->dtype, srow + (size_t)blk);
                    if (!(sc >= 0.0f) || !isfinite(sc)) { /* 0: a block of zeros */
                        free(tile);
                        free(gather);
                        /* a view's scales (fused experts'): the stored tensor and the
                         * value's index in it */
                        const hlx_ckpt_tensor_t *st_ = s->fused != NULL ? s->fused : s;
                        const uint64_t at = (s->begin - st_->begin) /
                                                hlx_st_dtype_size(s->dtype) +
                                            srow + (size_t)blk;
                        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_MISMATCH,
                                           "%s: tensor %s: value %llu is %g, not a weight "
                                           "scale (a finite value >= 0)%s%s",
                                           ck->files[s->file].shown, st_->name,
                                           (unsigned long long)at, sc,
                                           s->fused != NULL ? ", read as " : "",
                                           s->fused != NULL ? s->name : "");
                    }
                    if (end > nc)
                        end = nc;
                    ck->cvt->scale(out + j, end - j, sc);
                    j = end;
                }
            }
        }
        if (colmajor && transpose) /* a column of the tile: a run of a row of dst */
            ck->cvt->store(dst, dst_dtype, (size_t)i, ld, tile, tnc, nc, th);
        else if (colmajor)
            ck->cvt->tstore(dst, dst_dtype, (size_t)(i * ld), ld, tile, tnc, nc, th);
        else
            hlx_ck_put_tile(ck, dst, dst_dtype, i, ld, tile, tnc, th, nc, transpose);
    }
    free(tile);
    free(gather);
    /* packed: the words' bytes of the elements (a nibble or a byte each) */
    atomic_fetch_add_explicit(&ck->bytes_read,
                              t->pack ? (uint64_t)nr * (uint64_t)nc * (uint64_t)t->bits / 8
                                      : (uint64_t)nr * (uint64_t)nc * es,
                              memory_order_relaxed);
    return HLX_OK;
}

hlx_status_t hlx_ckpt_read_slice(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int dim,
                                 int64_t first, int64_t count, void *dst,
                                 hlx_dtype_t dst_dtype)
{
    int64_t outer = 1, inner = 1, o;
    size_t esz = dst_dtype == HLX_DTYPE_BF16 ? 2 : 4;
    int d;
    hlx_status_t st;

    if (dim < 0 || dim >= t->ndim || first < 0 || count < 0 || first > t->shape[dim] - count)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_INVALID,
                           "%s: tensor %s: slice [%lld, +%lld) of dimension %d is outside it",
                           ck->files[t->file].shown, t->name, (long long)first, (long long)count,
                           dim);
    if (t->ndim == 1)
        return hlx_ckpt_read_block(ck, t, 0, 1, first, count, 0, dst, dst_dtype, count);
    if (t->ndim == 2 && dim == 0)
        return hlx_ckpt_read_block(ck, t, first, count, 0, t->shape[1], 0, dst, dst_dtype,
                                   t->shape[1]);
    if (t->ndim == 2)
        return hlx_ckpt_read_block(ck, t, 0, t->shape[0], first, count, 0, dst, dst_dtype, count);
    if (t->scale != NULL)
        return hlx_errbuf(hlx_ckpt_terr, sizeof(hlx_ckpt_terr), HLX_ERR_UNSUPPORTED,
                           "%s: tensor %s: block-scaled tensors must be 2-D",
                           ck->files[t->file].shown, t->name);
    /* N-D: a sequence of 2-D views [1][shape[dim] * inner], one per outer index. */
    for (d = 0; d < dim; d++)
        outer *= t->shape[d];
    for (d = dim + 1; d < t->ndim; d++)
        inner *= t->shape[d];
    for (o = 0; o < outer; o++) {
        hlx_ckpt_tensor_t v = *t;
        v.ndim = 1;
        v.shape[0] = t->shape[dim] * inner;
        v.begin = t->begin + (uint64_t)(o * v.shape[0]) * hlx_st_dtype_size(t->dtype);
        st = hlx_ckpt_read_block(ck, &v, 0, 1, first * inner, count * inner, 0,
                                 (char *)dst + (size_t)(o * count * inner) * esz, dst_dtype,
                                 count * inner);
        if (st != HLX_OK)
            return st;
    }
    return HLX_OK;
}

/* ---- non-finite values ------------------------------------------------------------- */

/* Elements counted per block, in runs of HLX_NF_RUN: constant trip counts, so that the
 * compiler vectorises the count at the project's -O2 (no epilogue needed), and a run's
 * count fits a counter as wide as the element (a compare per lane, no widening). */
#define HLX_NF_BLOCK 4096
#define HLX_NF_RUN   128
/* Bytes scanned between two releases of the pages behind the scan. */
#define HLX_NF_CHUNK ((uint64_t)64 << 20)

/* An element is not finite when its exponent bits are all set (the IEEE formats, e5m2) or,
 * for e4m3 (no infinities), when exponent and mantissa are all set (0x7f, 0xff). */
#define HLX_NF_COUNTER(_name, _ty)                                                        \
    static size_t _name##_block(const uint8_t *p, _ty mask)                               \
    {                                                                                     \
        size_t c = 0, i, j;                                                               \
        for (j = 0; j < HLX_NF_BLOCK; j += HLX_NF_RUN) {                                  \
            _ty run = 0;                                                                  \
            for (i = 0; i < HLX_NF_RUN; i++) {                                            \
                _ty v;                                                                    \
                memcpy(&v, p + (j + i) * sizeof(_ty), sizeof(_ty));                       \
                run += (_ty)((v & mask) == mask);                                         \
            }                                                                             \
            c += run;                                                                     \
        }                                                                                 \
        return c;                                                                         \
    }                                                                                     \
    /* count of [0, n), *first_p the index of the first (unchanged when none) */          \
    static uint64_t _name(const uint8_t *p, uint64_t n, _ty mask, uint64_t *first_p)      \
    {                                                                                     \
        uint64_t c = 0, i = 0, k;                                                         \
        for (; i + HLX_NF_BLOCK <= n; i += HLX_NF_BLOCK) {                                \
            size_t b = _name##_block(p + i * sizeof(_ty), mask);                          \
            if (b > 0 && c == 0)                                                          \
                for (k = i; k < i + HLX_NF_BLOCK && *first_p == UINT64_MAX; k++) {        \
                    _ty v;                                                                \
                    memcpy(&v, p + k * sizeof(_ty), sizeof(_ty));                         \
                    if ((v & mask) == mask)                                               \
                        *first_p = k;                                                     \
                }                                                                         \
            c += b;                                                                       \
        }                                                                                 \
        for (; i < n; i++) {                                                              \
            _ty v;                                                                        \
            memcpy(&v, p + i * sizeof(_ty), sizeof(_ty));                                 \
            if ((v & mask) == mask && c++ == 0 && *first_p == UINT64_MAX)                 \
                *first_p = i;                                                             \
        }                                                                                 \
        return c;                                                                         \
    }
HLX_NF_COUNTER(hlx_nf_count8, uint8_t)
HLX_NF_COUNTER(hlx_nf_count16, uint16_t)
HLX_NF_COUNTER(hlx_nf_count32, uint32_t)
HLX_NF_COUNTER(hlx_nf_count64, uint64_t)

/* The mask of t's non-finite bit patterns (0: t holds no floating-point values). */
static uint64_t hlx_nf_mask(hlx_st_dtype_t t)
{
    switch (t) {
    case HLX_ST_F64:     return 0x7ff0000000000000ull;
    case HLX_ST_F32:     return 0x7f800000u;
    case HLX_ST_F16:     return 0x7c00u;
    case HLX_ST_BF16:    return 0x7f80u;
    case HLX_ST_F8_E4M3: return 0x7fu;
    case HLX_ST_F8_E5M2: return 0x7cu;
    default:             return 0;
    }
}

/* n elements of t at p: the count, the first's index offset by base into nf. */
static void hlx_nf_scan(const uint8_t *p, hlx_st_dtype_t t, uint64_t n, uint64_t base,
                        hlx_ckpt_nonfinite_t *nf)
{
    uint64_t mask = hlx_nf_mask(t), first = UINT64_MAX, c;

    switch (hlx_st_dtype_size(t)) {
    case 1:  c = hlx_nf_count8(p, n, (uint8_t)mask, &first); break;
    case 2:  c = hlx_nf_count16(p, n, (uint16_t)mask, &first); break;
    case 4:  c = hlx_nf_count32(p, n, (uint32_t)mask, &first); break;
    default: c = hlx_nf_count64(p, n, mask, &first); break;
    }
    if (c > 0 && nf->count == 0) {
        size_t es = hlx_st_dtype_size(t), k;
        nf->first = base + first;
        nf->bits = 0;
        for (k = 0; k < es; k++) /* little-endian, as stored */
            nf->bits |= (uint64_t)p[first * es + k] << (8 * k);
    }
    nf->count += c;
}

/* MXFP4's E8M0 scales (U8 bytes whose 255 is NaN) when t is X_scales beside an X_blocks,
 * the pair an MXFP4 view reads (hlx_view_mx), known by their names alone so that a
 * checkpoint opened without its config (runtime/check.c's scan after a non-finite value)
 * is scanned alike: the blocks tensor, else NULL. */
static const hlx_ckpt_tensor_t *hlx_ckpt_mx_scales(const hlx_ckpt_t *ck,
                                                   const hlx_ckpt_tensor_t *t)
{
    const size_t n = strlen(t->name);
    char blocks[256];

    if (t->dtype != HLX_ST_U8 || n < 7 || strcmp(t->name + n - 7, "_scales") != 0 ||
        n - 7 + sizeof("_blocks") > sizeof(blocks))
        return NULL;
    snprintf(blocks, sizeof(blocks), "%.*s_blocks", (int)(n - 7), t->name);
    return hlx_ckpt_find_stored(ck, blocks);
}

/* Whether block i of an MXFP4 pair decodes to something not finite: scale 255 (NaN), or a
 * scale of 2^126 or 2^127 (bytes 253, 254) under an element of magnitude 4 or more, resp.
 * 2 or more (E2M1 codes & 7 >= 6, resp. >= 4), whose product passes f32's (and bf16's)
 * largest value, 2^128 - 2^104. bl: the pair's blocks, 16 bytes a scale, nb of them. */
static int hlx_ckpt_mx_bad(uint8_t s, const uint8_t *bl, uint64_t i, uint64_t nb)
{
    int k, min;

    if (s == 255)
        return 1;
    if (s < 253 || bl == NULL || i >= nb)
        return 0;
    min = s == 254 ? 4 : 6;
    for (k = 0; k < HLX_MXFP4_BLOCK_BYTES; k++) {
        const uint8_t b = bl[i * HLX_MXFP4_BLOCK_BYTES + (uint64_t)k];
        if ((b & 7) >= min || (b >> 4 & 7) >= min)
            return 1;
    }
    return 0;
}

void hlx_ckpt_scan_tensor(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, hlx_ckpt_nonfinite_t *nf)
{
    const hlx_ckpt_file_t *f = &ck->files[t->file];
    const uint8_t *base = f->map + f->st.data_offset + t->begin;
    const size_t es = hlx_st_dtype_size(t->dtype), page = (size_t)sysconf(_SC_PAGESIZE);
    uint64_t per = HLX_NF_CHUNK / es, at = 0;
    const hlx_ckpt_tensor_t *mx;
    uintptr_t lo, hi;

    memset(nf, 0, sizeof(*nf));
    if ((mx = hlx_ckpt_mx_scales(ck, t)) != NULL) {
        /* MXFP4's E8M0 scales: 255 is NaN; 253 and 254 overflow under large elements */
        const hlx_ckpt_file_t *bf = &ck->files[mx->file];
        const uint8_t *bl = mx->dtype == HLX_ST_U8 ? bf->map + bf->st.data_offset + mx->begin
                                                   : NULL;
        const uint64_t nb = mx->numel / HLX_MXFP4_BLOCK_BYTES;
        for (at = 0; at < t->numel; at++)
            if (base[at] >= 253 && hlx_ckpt_mx_bad(base[at], bl, at, nb) && nf->count++ == 0) {
                nf->first = at;
                nf->bits = base[at];
            }
        return;
    }
    if (hlx_nf_mask(t->dtype) == 0 || t->numel == 0)
        return;
    /* read ahead (the mapping is MADV_RANDOM for slices), and let go of what was read: a
     * checkpoint larger than memory is scanned in one pass without holding it mapped */
    lo = (uintptr_t)base / page * page;
    hi = ((uintptr_t)(base + t->numel * es) + page - 1) / page * page;
    madvise((void *)lo, hi - lo, MADV_SEQUENTIAL);
    while (at < t->numel) {
        uint64_t n = t->numel - at < per ? t->numel - at : per;
        uintptr_t done;
        hlx_nf_scan(base + at * es, t->dtype, n, at, nf);
        at += n;
        /* whole pages behind the scan (the first may hold the previous tensor's tail) */
        done = (uintptr_t)(base + at * es) / page * page;
        if (done > lo) {
            madvise((void *)lo, done - lo, MADV_DONTNEED);
            lo = done;
        }
    }
    madvise((void *)((uintptr_t)base / page * page), hi - (uintptr_t)base / page * page,
            MADV_RANDOM);
}

const char *hlx_ckpt_nonfinite_value(hlx_st_dtype_t t, uint64_t bits)
{
    size_t es = hlx_st_dtype_size(t);
    uint64_t sign = bits >> (8 * es - 1) & 1, mant;

    switch (t) {
    case HLX_ST_F64:     mant = bits & 0xfffffffffffffull; break;
    case HLX_ST_F32:     mant = bits & 0x7fffffu; break;
    case HLX_ST_F16:     mant = bits & 0x3ffu; break;
    case HLX_ST_BF16:    mant = bits & 0x7fu; break;
    case HLX_ST_F8_E5M2: mant = bits & 0x3u; break;
    case HLX_ST_U8: /* MXFP4's E8M0 scale: 255 NaN, 253 and 254 an overflowing block */
        return bits == 255 ? "nan" : "inf (the block's values overflow)";
    default:             mant = 1; break; /* e4m3: NaN only */
    }
    return mant ? "nan" : sign ? "-inf" : "inf";
}

void hlx_ckpt_unravel(const hlx_ckpt_tensor_t *t, uint64_t flat, int64_t *idx)
{
    int d;

    for (d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->shape[d] > 0 ? (int64_t)(flat % (uint64_t)t->shape[d]) : 0;
        flat = t->shape[d] > 0 ? flat / (uint64_t)t->shape[d] : 0;
    }
}

void hlx_ckpt_nonfinite_str(const hlx_ckpt_tensor_t *t, const hlx_ckpt_nonfinite_t *nf,
                            char *buf, size_t len)
{
    int64_t idx[HLX_CKPT_MAX_DIMS];
    size_t used;
    int d;

    used = (size_t)snprintf(buf, len, "%llu non-finite value%s, the first %s (bits 0x%0*llx) at [",
                            (unsigned long long)nf->count, nf->count == 1 ? "" : "s",
                            hlx_ckpt_nonfinite_value(t->dtype, nf->bits),
                            (int)(2 * hlx_st_dtype_size(t->dtype)),
                            (unsigned long long)nf->bits);
    hlx_ckpt_unravel(t, nf->first, idx);
    for (d = 0; d < t->ndim && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", d ? ", " : "",
                                 (long long)idx[d]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}
