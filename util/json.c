/* hlx_jdoc: jansson parsing plus a position scanner for precise error locations. */
#define _GNU_SOURCE
#include "hlx_json.h"
#include "hlx_file.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hlx_jdoc {
    char   *name;
    char   *text;
    json_t *root;
    json_t *scope;     /* hlx_jdoc_scope's object, or NULL */
    char    scope_path[80]; /* its path ("/key"), prefixed to hlx_jdoc_fail's */
    char    err[1024];
};

static hlx_status_t hlx_jdoc_parse(hlx_jdoc_t *doc)
{
    json_error_t jerr;

    if (doc->text[strspn(doc->text, " \t\r\n")] == '\0') {
        snprintf(doc->err, sizeof(doc->err), "%s:1:1: empty file (a JSON object is expected)",
                 doc->name);
        return HLX_ERR_PARSE;
    }
    if (!strncmp(doc->text, "\xef\xbb\xbf", 3)) { /* some editors write one; JSON has none */
        snprintf(doc->err, sizeof(doc->err), "%s:1:1: the file starts with a UTF-8 byte-order "
                 "mark (EF BB BF), which JSON does not allow: save it without one", doc->name);
        return HLX_ERR_PARSE;
    }
    doc->root = json_loads(doc->text, JSON_REJECT_DUPLICATES, &jerr);
    if (doc->root == NULL) {
        /* jansson counts a position at the start of a line (the end of a file ending in a
         * newline) as column 0: columns here are 1-based */
        snprintf(doc->err, sizeof(doc->err), "%s:%d:%d: %s", doc->name, jerr.line,
                 jerr.column > 0 ? jerr.column : 1, jerr.text);
        return HLX_ERR_PARSE;
    }
    return HLX_OK;
}

static hlx_jdoc_t *hlx_jdoc_new(const char *name)
{
    hlx_jdoc_t *doc = calloc(1, sizeof(*doc));

    if (doc == NULL)
        return NULL;
    doc->name = strdup(name);
    if (doc->name == NULL) {
        free(doc);
        return NULL;
    }
    return doc;
}

hlx_status_t hlx_jdoc_load_string(const char *name, const char *text, hlx_jdoc_t **doc_p)
{
    hlx_jdoc_t *doc = hlx_jdoc_new(name);

    if (doc == NULL)
        return HLX_ERR_NOMEM;
    doc->text = strdup(text);
    if (doc->text == NULL) {
        hlx_jdoc_free(doc);
        return HLX_ERR_NOMEM;
    }
    *doc_p = doc;
    return hlx_jdoc_parse(doc);
}

hlx_status_t hlx_jdoc_load_file_as(const char *path, const char *what, hlx_jdoc_t **doc_p)
{
    hlx_jdoc_t *doc = hlx_jdoc_new(path);
    size_t len;
    hlx_status_t st;

    if (doc == NULL)
        return HLX_ERR_NOMEM;
    *doc_p = doc;
    st = hlx_file_read(path, what, HLX_JDOC_MAX_BYTES, &doc->text, &len, doc->err,
                       sizeof(doc->err));
    if (st != HLX_OK)
        return st;
    /* jansson stops at a NUL byte and would report a misleading position */
    if (strlen(doc->text) != len) {
        snprintf(doc->err, sizeof(doc->err), "%s: NUL byte at offset %zu (not JSON text)",
                 path, strlen(doc->text));
        return HLX_ERR_PARSE;
    }
    return hlx_jdoc_parse(doc);
}

hlx_status_t hlx_jdoc_load_file(const char *path, hlx_jdoc_t **doc_p)
{
    return hlx_jdoc_load_file_as(path, "JSON file", doc_p);
}

void hlx_jdoc_free(hlx_jdoc_t *doc)
{
    if (doc == NULL)
        return;
    json_decref(doc->root);
    free(doc->text);
    free(doc->name);
    free(doc);
}

json_t *hlx_jdoc_root(const hlx_jdoc_t *doc)
{
    return doc->scope != NULL ? doc->scope : doc->root;
}

hlx_status_t hlx_jdoc_scope(hlx_jdoc_t *doc, const char *key)
{
    json_t *v;
    char path[80];

    doc->scope = NULL;
    doc->scope_path[0] = '\0';
    if (key == NULL)
        return HLX_OK;
    if (snprintf(path, sizeof(path), "/%s", key) >= (int)sizeof(path))
        return hlx_jdoc_fail(doc, "", HLX_ERR_PARSE, "member name too long: %.40s...", key);
    v = json_object_get(doc->root, key);
    if (v == NULL)
        return HLX_ERR_NOT_FOUND;
    if (!json_is_object(v))
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected an object");
    doc->scope = v;
    snprintf(doc->scope_path, sizeof(doc->scope_path), "%s", path);
    return HLX_OK;
}

const char *hlx_jdoc_name(const hlx_jdoc_t *doc)
{
    return doc->name;
}

const char *hlx_jdoc_error(const hlx_jdoc_t *doc)
{
    return doc->err;
}

/* ---- position scanner: walks the (already validated) text tracking the current path. */

typedef struct {
    const char *s;
    size_t      i;
    int         line, col;
    const char *target;
    int         found, fline, fcol;
} hlx_jscan_t;

static void hlx_jscan_adv(hlx_jscan_t *sc)
{
    if (sc->s[sc->i] == '\n') {
        sc->line++;
        sc->col = 1;
    } else {
        sc->col++;
    }
    sc->i++;
}

static void hlx_jscan_ws(hlx_jscan_t *sc)
{
    while (sc->s[sc->i] == ' ' || sc->s[sc->i] == '\t' || sc->s[sc->i] == '\n' ||
           sc->s[sc->i] == '\r')
        hlx_jscan_adv(sc);
}

/* Copies a JSON string (escapes kept verbatim except \" and \\) into buf. */
static void hlx_jscan_string(hlx_jscan_t *sc, char *buf, size_t bufsize)
{
    size_t n = 0;

    hlx_jscan_adv(sc); /* opening quote */
    while (sc->s[sc->i] && sc->s[sc->i] != '"') {
        char c = sc->s[sc->i];
        if (c == '\\') {
            hlx_jscan_adv(sc);
            c = sc->s[sc->i];
        }
        if (buf && n + 1 < bufsize)
            buf[n++] = c;
        hlx_jscan_adv(sc);
    }
    if (sc->s[sc->i])
        hlx_jscan_adv(sc);
    if (buf)
        buf[n] = '\0';
}

static void hlx_jscan_hit(hlx_jscan_t *sc, const char *path, int line, int col)
{
    if (!sc->found && !strcmp(path, sc->target)) {
        sc->found = 1;
        sc->fline = line;
        sc->fcol  = col;
    }
}

static void hlx_jscan_value(hlx_jscan_t *sc, char *path, size_t cap, int depth)
{
    size_t plen = strlen(path);
    char c;

    hlx_jscan_ws(sc);
    hlx_jscan_hit(sc, path, sc->line, sc->col);
    c = sc->s[sc->i];
    if (depth > 64 || c == '\0')
        return;
    if (c == '{') {
        hlx_jscan_adv(sc);
        for (;;) {
            char key[256];
            int kl, kc;
            hlx_jscan_ws(sc);
            if (sc->s[sc->i] == '}' || sc->s[sc->i] == '\0') {
                if (sc->s[sc->i])
                    hlx_jscan_adv(sc);
                break;
            }
            kl = sc->line;
            kc = sc->col;
            hlx_jscan_string(sc, key, sizeof(key));
            snprintf(path + plen, cap - plen, "/%s", key);
            hlx_jscan_hit(sc, path, kl, kc);
            hlx_jscan_ws(sc);
            if (sc->s[sc->i] == ':')
                hlx_jscan_adv(sc);
            hlx_jscan_value(sc, path, cap, depth + 1);
            path[plen] = '\0';
            hlx_jscan_ws(sc);
            if (sc->s[sc->i] == ',')
                hlx_jscan_adv(sc);
        }
    } else if (c == '[') {
        int idx = 0;
        hlx_jscan_adv(sc);
        for (;;) {
            hlx_jscan_ws(sc);
            if (sc->s[sc->i] == ']' || sc->s[sc->i] == '\0') {
                if (sc->s[sc->i])
                    hlx_jscan_adv(sc);
                break;
            }
            snprintf(path + plen, cap - plen, "/%d", idx++);
            hlx_jscan_value(sc, path, cap, depth + 1);
            path[plen] = '\0';
            hlx_jscan_ws(sc);
            if (sc->s[sc->i] == ',')
                hlx_jscan_adv(sc);
        }
    } else if (c == '"') {
        hlx_jscan_string(sc, NULL, 0);
    } else {
        while (sc->s[sc->i] && !strchr(",]} \t\r\n", sc->s[sc->i]))
            hlx_jscan_adv(sc);
    }
}

int hlx_jdoc_locate(const hlx_jdoc_t *doc, const char *path, int *line, int *col)
{
    hlx_jscan_t sc = { doc->text, 0, 1, 1, path, 0, 0, 0 };
    char buf[1024] = "";

    if (doc->text == NULL)
        return -1;
    hlx_jscan_value(&sc, buf, sizeof(buf), 0);
    if (!sc.found)
        return -1;
    *line = sc.fline;
    *col  = sc.fcol;
    return 0;
}

/* The error travels on through callers' buffers of the same size (err[1024], hlx_err.h's
 * reason-and-status shape), so a longer one is cut here, where all of them keep the mark,
 * and visibly: its end replaced by "... (cut: TOTAL bytes in all)", at a character's first
 * byte, never inside a UTF-8 sequence. */
static void hlx_jdoc_mark_cut(char *err, size_t size, size_t total)
{
    char tail[64];
    size_t tl = (size_t)snprintf(tail, sizeof(tail), "... (cut: %zu bytes in all)", total);
    size_t at = size - 1 - tl;

    while (at > 0 && ((unsigned char)err[at] & 0xc0) == 0x80)
        at--;
    memcpy(err + at, tail, tl + 1);
}

/* What an error names: the path's last key, or for an array element the nearest key with
 * its indices ("/no_rope_layers/0" -> "no_rope_layers[0]", "/a/1/2" -> "a[1][2]"). A
 * segment is an index only where the document holds an array (a key of digits in an
 * object stays a key); a path deeper than the walk keeps its last key alone. */
static void hlx_jdoc_leaf(json_t *root, const char *path, char *out, size_t size)
{
    const char *seg[32];
    size_t len[32], k;
    int idx[32], n = 0, i, j;
    json_t *v = root;

    while (*path == '/' && n < 32) { /* the segments after each '/' */
        char key[256];
        seg[n] = path + 1;
        len[n] = strcspn(path + 1, "/");
        idx[n] = json_is_array(v) && len[n] > 0 && strspn(seg[n], "0123456789") == len[n];
        snprintf(key, sizeof(key), "%.*s", (int)(len[n] < 255 ? len[n] : 255), seg[n]);
        v = idx[n] ? json_array_get(v, (size_t)strtoull(key, NULL, 10))
            : json_is_object(v) ? json_object_get(v, key) : NULL;
        path += len[n] + 1;
        n++;
    }
    if (*path == '/') /* deeper than 32: the last key as it is */
        n = 0;
    if (n == 0 || len[n - 1] == 0) {
        const char *last = strrchr(path, '/');
        snprintf(out, size, "%s", n == 0 && last && last[1] ? last + 1 : "(top level)");
        return;
    }
    for (i = n - 1; i > 0 && idx[i]; i--)
        ;
    k = (size_t)snprintf(out, size, "%.*s", idx[i] ? 0 : (int)len[i], seg[i]);
    for (j = idx[i] ? i : i + 1; j < n && k < size; j++)
        k += (size_t)snprintf(out + k, size - k, "[%.*s]", (int)len[j], seg[j]);
}

hlx_status_t hlx_jdoc_fail(hlx_jdoc_t *doc, const char *path, hlx_status_t status,
                           const char *fmt, ...)
{
    char msg[sizeof(doc->err)], full[600], label[sizeof(full) + 64];
    const char *key;
    int line = 1, col = 1, n;
    size_t total, keep, ll;
    va_list ap;

    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* inside hlx_jdoc_scope's object: its path first */
    snprintf(full, sizeof(full), "%s%s", doc->scope_path, path);
    path = full;
    key = strrchr(path, '/');
    /* Missing keys have no position: point at their parent object instead. */
    if (hlx_jdoc_locate(doc, path, &line, &col) != 0) {
        char parent[512];
        size_t plen = key ? (size_t)(key - path) : 0;
        snprintf(parent, sizeof(parent), "%.*s", (int)plen, path);
        if (hlx_jdoc_locate(doc, parent, &line, &col) != 0)
            line = col = 1;
    }
    hlx_jdoc_leaf(doc->root, path, label, sizeof(label));
    /* a message that begins with the element it names ("moe_layers[0]: ...",
     * "no_rope_layers[0] is 0 ...") names it once */
    ll = strlen(label);
    if (strchr(label, '[') && !strncmp(msg, label, ll) && (msg[ll] == ':' || msg[ll] == ' '))
        label[0] = '\0';
    total = (size_t)snprintf(doc->err, sizeof(doc->err), "%s:%d:%d: %s%s", doc->name, line, col,
                             label, label[0] ? ": " : "");
    total += n > 0 ? (size_t)n : 0;
    keep = strlen(doc->err);
    snprintf(doc->err + keep, sizeof(doc->err) - keep, "%s", msg);
    if (total >= sizeof(doc->err))
        hlx_jdoc_mark_cut(doc->err, sizeof(doc->err), total);
    return status;
}

static size_t hlx_levenshtein(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), i, j, row[64], prev, tmp;

    if (lb >= 63 || la >= 63)
        return 99;
    for (j = 0; j <= lb; j++)
        row[j] = j;
    for (i = 1; i <= la; i++) {
        prev   = row[0];
        row[0] = i;
        for (j = 1; j <= lb; j++) {
            size_t best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            tmp    = row[j];
            row[j] = best;
            prev   = tmp;
        }
    }
    return row[lb];
}

hlx_status_t hlx_json_write_file(json_t *root, size_t flags, const char *path, char *err,
                                 size_t errlen)
{
    hlx_out_t out;
    hlx_status_t st;
    int rc, e;

    if ((st = hlx_out_begin(&out, path, err, errlen)) != HLX_OK)
        return st;
    errno = 0;
    rc = json_dumpf(root, out.f, flags);
    e = errno; /* the failed write's reason (ENOSPC, EFBIG), before the end's calls */
    st = hlx_out_end(&out, rc == 0, err, errlen);
    if (st == HLX_OK && rc != 0) {
        snprintf(err, errlen, "%s: writing failed: %s (nothing replaced)", path,
                 e != 0 ? strerror(e) : "I/O error");
        st = HLX_ERR_IO;
    }
    return st;
}

const char *hlx_nearest_name(const char *name, const char *const *candidates, size_t n)
{
    const char *best = NULL;
    size_t bestd = 4, i, d, shorter;

    /* at most 3 edits, and at most half of the shorter word: "--bogus" is not "--out" */
    for (i = 0; i < n; i++) {
        d = hlx_levenshtein(name, candidates[i]);
        shorter = strlen(name) < strlen(candidates[i]) ? strlen(name) : strlen(candidates[i]);
        if (d < bestd && 2 * d <= shorter) {
            bestd = d;
            best  = candidates[i];
        }
    }
    return best;
}

static const char *hlx_jtype_name(hlx_jtype_t t)
{
    switch (t) {
    case HLX_JT_INT:    return "an integer";
    case HLX_JT_DOUBLE: return "a number";
    case HLX_JT_STRING: return "a string";
    case HLX_JT_BOOL:   return "true or false";
    default:            return "a value";
    }
}

static hlx_status_t hlx_jdoc_read_field(hlx_jdoc_t *doc, const char *path,
                                        const hlx_jfield_t *f, json_t *v, void *out)
{
    char *dst = (char *)out + f->offset;
    int bounded = f->min <= f->max;
    double d;

    switch (f->type) {
    case HLX_JT_INT:
        if (!json_is_integer(v))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected %s",
                                 hlx_jtype_name(f->type));
        d = (double)json_integer_value(v);
        if (bounded && (d < f->min || d > f->max))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%lld is outside [%g, %g]",
                                 (long long)json_integer_value(v), f->min, f->max);
        /* the field is an int: an unbounded field still may not wrap */
        if (json_integer_value(v) < INT_MIN || json_integer_value(v) > INT_MAX)
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%lld is outside [%d, %d]",
                                 (long long)json_integer_value(v), INT_MIN, INT_MAX);
        *(int *)dst = (int)json_integer_value(v);
        return HLX_OK;
    case HLX_JT_DOUBLE:
        if (!json_is_number(v))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected %s",
                                 hlx_jtype_name(f->type));
        d = json_number_value(v);
        if (!isfinite(d))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "not a finite number");
        if (bounded && (d < f->min || d > f->max))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%g is outside [%g, %g]", d,
                                 f->min, f->max);
        *(double *)dst = d;
        return HLX_OK;
    case HLX_JT_STRING:
        if (!json_is_string(v))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected %s",
                                 hlx_jtype_name(f->type));
        if (strlen(json_string_value(v)) + 1 > f->strsize)
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "longer than %zu characters",
                                 f->strsize - 1);
        /* for strings, min >= 1 means "not empty" */
        if (f->min >= 1 && json_string_value(v)[0] == '\0')
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "must not be empty");
        /* names end up in terminals and reports: no control characters */
        {
            const unsigned char *c;
            for (c = (const unsigned char *)json_string_value(v); *c; c++)
                if (*c < 0x20 || *c == 0x7f)
                    return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                                         "control character 0x%02x in the string", *c);
        }
        strcpy(dst, json_string_value(v));
        return HLX_OK;
    case HLX_JT_BOOL:
        if (!json_is_boolean(v))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected %s",
                                 hlx_jtype_name(f->type));
        *(int *)dst = json_is_true(v);
        return HLX_OK;
    case HLX_JT_ANY:
        return HLX_OK;
    }
    return HLX_ERR_INTERNAL;
}

hlx_status_t hlx_jdoc_read_object(hlx_jdoc_t *doc, json_t *obj, const char *path,
                                  const hlx_jfield_t *fields, size_t nfields, void *out)
{
    const char *names[128];
    char sub[512];
    const char *key;
    json_t *v;
    size_t i;
    hlx_status_t st;

    if (!json_is_object(obj))
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected an object");
    for (i = 0; i < nfields && i < 128; i++)
        names[i] = fields[i].key;
    json_object_foreach(obj, key, v) {
        const hlx_jfield_t *f = NULL;
        for (i = 0; i < nfields; i++)
            if (!strcmp(fields[i].key, key))
                f = &fields[i];
        snprintf(sub, sizeof(sub), "%s/%s", path, key);
        if (f == NULL) {
            const char *near = hlx_nearest_name(key, names, nfields < 128 ? nfields : 128);
            return near ? hlx_jdoc_fail(doc, sub, HLX_ERR_PARSE,
                                        "unknown key (did you mean \"%s\"?)", near)
                        : hlx_jdoc_fail(doc, sub, HLX_ERR_PARSE, "unknown key");
        }
        st = hlx_jdoc_read_field(doc, sub, f, v, out);
        if (st != HLX_OK)
            return st;
    }
    for (i = 0; i < nfields; i++) {
        if (fields[i].required && json_object_get(obj, fields[i].key) == NULL) {
            snprintf(sub, sizeof(sub), "%s/%s", path, fields[i].key);
            return hlx_jdoc_fail(doc, sub, HLX_ERR_PARSE, "required key is missing (%s)",
                                 fields[i].help ? fields[i].help : hlx_jtype_name(fields[i].type));
        }
    }
    return HLX_OK;
}
