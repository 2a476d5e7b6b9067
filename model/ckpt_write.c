/* Writes safetensors shards and their index (the layout Hugging Face's save_pretrained
 * produces): header padded to 8 bytes, tensors back to back, row by row from a callback. */
#define _GNU_SOURCE
#include "hlx_ckpt.h"
#include "hlx_err.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


uint8_t hlx_f32_to_fp8(float v)
{
    uint8_t sign = signbit(v) ? 0x80 : 0, lo = 0, hi = 126, mid;
    float a = fabsf(v);

    if (isnan(v))
        return 0x7f;
    if (a >= 448.0f)
        return sign | 126;
    /* positive codes 0..126 increase with their value: find the neighbours of a */
    while (hi - lo > 1) {
        mid = (uint8_t)((lo + hi) / 2);
        if (hlx_fp8_to_f32(mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    {
        float dl = a - hlx_fp8_to_f32(lo), dh = hlx_fp8_to_f32(hi) - a;
        uint8_t c = dl < dh ? lo : dh < dl ? hi : (lo & 1) ? hi : lo;
        return sign | c;
    }
}

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

static uint64_t hlx_w_bytes(const hlx_hf_expect_t *t)
{
    uint64_t n = (uint64_t)t->shape[0] * (uint64_t)(t->ndim == 2 ? t->shape[1] : 1);
    return n * hlx_st_dtype_size(t->dtype);
}

/* One shard: tensors [a, b) of list. */
static hlx_status_t hlx_w_shard(const char *path, const hlx_hf_expect_t *list, size_t a,
                                size_t b, hlx_ckpt_fill_fn fill, void *ctx, char *err,
                                size_t errlen)
{
    json_t *hdr = json_object();
    char *text = NULL;
    uint64_t off = 0, hlen;
    size_t i, tlen;
    FILE *f = NULL;
    float *row = NULL;
    uint8_t *out = NULL, lenbuf[8];
    int64_t maxc = 1, r;
    hlx_status_t st = HLX_OK;

    for (i = a; i < b; i++) {
        const hlx_hf_expect_t *t = &list[i];
        uint64_t nb = hlx_w_bytes(t);
        json_t *shape = t->ndim == 2 ? json_pack("[I, I]", (json_int_t)t->shape[0],
                                                 (json_int_t)t->shape[1])
                                     : json_pack("[I]", (json_int_t)t->shape[0]);
        json_object_set_new(hdr, t->name,
                            json_pack("{s:s, s:o, s:[I, I]}", "dtype", hlx_st_dtype_name(t->dtype),
                                      "shape", shape, "data_offsets", (json_int_t)off,
                                      (json_int_t)(off + nb)));
        off += nb;
        if ((t->ndim == 2 ? t->shape[1] : t->shape[0]) > maxc)
            maxc = t->ndim == 2 ? t->shape[1] : t->shape[0];
    }
    text = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(hdr);
    row = malloc(sizeof(float) * (size_t)maxc);
    out = malloc(sizeof(float) * (size_t)maxc);
    if (text == NULL || row == NULL || out == NULL) {
        st = hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "%s: out of memory", path);
        goto out;
    }
    tlen = strlen(text);
    hlen = (tlen + 7) / 8 * 8; /* data starts 8-byte aligned; the header is padded with spaces */
    for (i = 0; i < 8; i++)
        lenbuf[i] = (uint8_t)(hlen >> (8 * i));
    f = fopen(path, "wb");
    if (f == NULL) {
        st = hlx_errbuf(err, errlen, HLX_ERR_IO, "%s: %s", path, strerror(errno));
        goto out;
    }
    fwrite(lenbuf, 1, 8, f);
    fwrite(text, 1, tlen, f);
    for (i = tlen; i < hlen; i++)
        fputc(' ', f);
    for (i = a; i < b && st == HLX_OK; i++) {
        const hlx_hf_expect_t *t = &list[i];
        int64_t rows = t->ndim == 2 ? t->shape[0] : 1, cols = t->ndim == 2 ? t->shape[1] : t->shape[0], c;
        for (r = 0; r < rows && st == HLX_OK; r++) {
            if ((st = fill(ctx, t, i, r, row)) != HLX_OK) {
                snprintf(err, errlen, "%s: tensor %s: no values for row %lld", path, t->name,
                         (long long)r);
                break;
            }
            for (c = 0; c < cols; c++)
                hlx_w_store(out, t->dtype, (size_t)c, row[c]);
            fwrite(out, hlx_st_dtype_size(t->dtype), (size_t)cols, f);
        }
    }
    if (st == HLX_OK && (ferror(f) || fclose(f) != 0))
        st = hlx_errbuf(err, errlen, HLX_ERR_IO, "%s: write failed", path);
    else if (st != HLX_OK)
        fclose(f);
    f = NULL;
out:
    free(text);
    free(row);
    free(out);
    return st;
}

hlx_status_t hlx_ckpt_write(const char *dir, const hlx_hf_expect_t *list, size_t n,
                            int nshards, hlx_ckpt_fill_fn fill, void *ctx, char *err,
                            size_t errlen)
{
    char path[2048], fname[64];
    json_t *index = NULL, *wm = NULL;
    uint64_t total = 0, acc = 0;
    size_t i, a = 0;
    int s;
    hlx_status_t st = HLX_OK;

    if (nshards < 1 || (size_t)nshards > n)
        return hlx_errbuf(err, errlen, HLX_ERR_INVALID, "%d shards for %zu tensors", nshards, n);
    for (i = 0; i < n; i++)
        if (list[i].dtype != HLX_ST_F32 && list[i].dtype != HLX_ST_BF16 &&
            list[i].dtype != HLX_ST_F16 && list[i].dtype != HLX_ST_F8_E4M3)
            return hlx_errbuf(err, errlen, HLX_ERR_INVALID,
                              "tensor %s: cannot write %s (F32, BF16, F16 or F8_E4M3)",
                              list[i].name, hlx_st_dtype_name(list[i].dtype));
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return hlx_errbuf(err, errlen, HLX_ERR_IO, "%s: %s", dir, strerror(errno));
    /* the other layout's entry point would shadow or contradict this one */
    snprintf(path, sizeof(path), "%s/%s", dir,
             nshards == 1 ? "model.safetensors.index.json" : "model.safetensors");
    if (unlink(path) != 0 && errno != ENOENT)
        return hlx_errbuf(err, errlen, HLX_ERR_IO, "%s: %s", path, strerror(errno));
    for (i = 0; i < n; i++)
        total += hlx_w_bytes(&list[i]);
    if (nshards > 1) {
        index = json_object();
        wm = json_object();
        json_object_set_new(index, "metadata", json_pack("{s:I}", "total_size", (json_int_t)total));
        json_object_set(index, "weight_map", wm);
    }
    /* Shards cut by bytes: shard s ends once the bytes so far reach (s + 1) / nshards. */
    for (s = 0; s < nshards && st == HLX_OK; s++) {
        size_t b = a;
        while (b < n && (b == a || acc + hlx_w_bytes(&list[b]) <= total / (uint64_t)nshards *
                                                               (uint64_t)(s + 1) ||
                         s == nshards - 1) &&
               n - b > (size_t)(nshards - 1 - s))
            acc += hlx_w_bytes(&list[b++]);
        if (nshards == 1)
            snprintf(fname, sizeof(fname), "model.safetensors");
        else
            snprintf(fname, sizeof(fname), "model-%05d-of-%05d.safetensors", s + 1, nshards);
        snprintf(path, sizeof(path), "%s/%s", dir, fname);
        st = hlx_w_shard(path, list, a, b, fill, ctx, err, errlen);
        for (i = a; wm != NULL && i < b; i++)
            json_object_set_new(wm, list[i].name, json_string(fname));
        a = b;
    }
    if (st == HLX_OK && index != NULL) {
        snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
        if (json_dump_file(index, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
            st = hlx_errbuf(err, errlen, HLX_ERR_IO, "%s: cannot write", path);
    }
    json_decref(wm);
    json_decref(index);
    return st;
}
