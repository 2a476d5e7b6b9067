/* Checks the text of an hwloc XML topology before hwloc reads it, so that a bad file is
 * refused with its line and the offending object. Written by hand because hwloc keeps no
 * line numbers, silently drops objects whose cpuset does not parse and ignores surplus
 * matrix values; this is a scanner for hwloc's own export format, not a general XML parser. */
#define _GNU_SOURCE
#include "topo_int.h"
#include "hlx_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HLX_XML_MAX_BYTES (256u << 20)
#define HLX_XML_MAX_DEPTH 256
#define HLX_XML_MAX_ATTRS 32

typedef struct {
    char name[32];
    int  line;
    char desc[160]; /* "object Core os_index=5 gp_index=37" */
} hlx_xml_elem_t;

typedef struct {
    const char *path;
    const char *s;   /* whole file, NUL-terminated */
    size_t      pos, len;
    int         line;
    char       *err;
    size_t      errlen;
    hlx_xml_elem_t stack[HLX_XML_MAX_DEPTH];
    int         depth;
    /* the distance matrix being read */
    int         in_dist, dist_line;
    long        dist_nbobjs;
    char        dist_name[64];
    long        dist_nidx, dist_nval; /* hwloc splits long lists over several elements */
    char        dist_type[32];        /* object type of a homogeneous matrix */
    char        dist_indexing[8];     /* "gp" or "os" */
    int         dist_hetero;          /* distances2hetero: indexes are "type index" pairs */
    unsigned long long *dist_idx;     /* the indexes read so far (homogeneous matrices) */
    long        dist_idx_cap;
} hlx_xml_t;

typedef struct {
    char name[32];
    const char *val; /* points into the file, not terminated */
    size_t vlen;
} hlx_xml_attr_t;

static hlx_status_t hlx_xml_fail(hlx_xml_t *x, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static hlx_status_t hlx_xml_fail(hlx_xml_t *x, int line, const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    hlx_topo_seterr(x->err, x->errlen, "%s:%d: %s", x->path, line, msg);
    return HLX_ERR_PARSE;
}

static void hlx_xml_advance(hlx_xml_t *x, size_t n)
{
    size_t end = x->pos + n > x->len ? x->len : x->pos + n;
    for (; x->pos < end; x->pos++)
        if (x->s[x->pos] == '\n')
            x->line++;
}

/* Moves past the next occurrence of tok; returns 0 if it is not there. */
static int hlx_xml_skip_past(hlx_xml_t *x, const char *tok)
{
    const char *p = strstr(x->s + x->pos, tok);
    if (p == NULL)
        return 0;
    hlx_xml_advance(x, (size_t)(p - (x->s + x->pos)) + strlen(tok));
    return 1;
}

static const hlx_xml_attr_t *hlx_xml_attr(const hlx_xml_attr_t *a, int n, const char *name)
{
    int i;
    for (i = 0; i < n; i++)
        if (!strcmp(a[i].name, name))
            return &a[i];
    return NULL;
}

static void hlx_xml_attr_str(const hlx_xml_attr_t *a, char *out, size_t outlen)
{
    size_t n = a->vlen < outlen - 1 ? a->vlen : outlen - 1;
    memcpy(out, a->val, n);
    out[n] = '\0';
}

static int hlx_xml_is_io_or_misc(const char *type)
{
    return !strcmp(type, "Bridge") || !strcmp(type, "PCIDev") || !strcmp(type, "OSDev") ||
           !strcmp(type, "Misc");
}

/* hwloc bitmap text: "0x" words of hex digits separated by single commas, optionally after
 * the infinite prefix "0xf...f". Checked here because hwloc_bitmap_sscanf asserts (aborts)
 * on some malformed text, e.g. a leading comma. */
static int hlx_xml_bitmap_ok(const char *s)
{
    if (!strncmp(s, "0xf...f", 7)) {
        s += 7;
        if (*s == '\0')
            return 1;
        if (*s++ != ',')
            return 0;
    }
    for (;;) {
        int digits = 0;
        if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
            return 0;
        for (s += 2; isxdigit((unsigned char)*s); s++)
            digits++;
        if (digits < 1 || digits > 16)
            return 0;
        if (*s == '\0')
            return 1;
        if (*s++ != ',')
            return 0;
    }
}

/* cpusets and nodesets of an object: hwloc bitmap syntax, and CPUs for normal objects. */
static hlx_status_t hlx_xml_check_object(hlx_xml_t *x, hlx_xml_elem_t *e,
                                         const hlx_xml_attr_t *a, int n, int line)
{
    static const char *const sets[] = { "cpuset", "complete_cpuset", "allowed_cpuset",
                                        "nodeset", "complete_nodeset", "allowed_nodeset" };
    static const char *const required[] = { "cpuset", "complete_cpuset", "nodeset",
                                            "complete_nodeset" };
    const hlx_xml_attr_t *type = hlx_xml_attr(a, n, "type");
    const hlx_xml_attr_t *os = hlx_xml_attr(a, n, "os_index");
    const hlx_xml_attr_t *gp = hlx_xml_attr(a, n, "gp_index");
    const hlx_xml_attr_t *busid = hlx_xml_attr(a, n, "pci_busid");
    const hlx_xml_attr_t *name = hlx_xml_attr(a, n, "name");
    char tname[32] = "?", small[HLX_TOPO_CPUSET_LEN], *buf;
    hwloc_bitmap_t bm;
    size_t i;
    int len;
    hlx_status_t st = HLX_OK;

    if (type != NULL)
        hlx_xml_attr_str(type, tname, sizeof(tname));
    len = snprintf(e->desc, sizeof(e->desc), "object %s", tname);
#define HLX_XML_DESC(_a, _k) \
    if ((_a) != NULL && len < (int)sizeof(e->desc)) \
        len += snprintf(e->desc + len, sizeof(e->desc) - len, " " _k "=%.*s", \
                        (int)((_a)->vlen > 40 ? 40 : (_a)->vlen), (_a)->val)
    HLX_XML_DESC(os, "os_index");
    HLX_XML_DESC(busid, "pci_busid");
    HLX_XML_DESC(name, "name");
    HLX_XML_DESC(gp, "gp_index");
#undef HLX_XML_DESC
    if (type == NULL)
        return hlx_xml_fail(x, line, "%s: no type attribute", e->desc);

    /* hwloc 2.9 crashes on a normal object without these (seen by fuzzing); its own
     * exports always write them */
    for (i = 0; i < sizeof(required) / sizeof(required[0]) && !hlx_xml_is_io_or_misc(tname);
         i++)
        if (hlx_xml_attr(a, n, required[i]) == NULL)
            return hlx_xml_fail(x, line, "%s: no %s attribute (hwloc 2 XML gives every CPU "
                                "or memory object cpuset, complete_cpuset, nodeset and "
                                "complete_nodeset)", e->desc, required[i]);

    bm = hwloc_bitmap_alloc();
    if (bm == NULL)
        return HLX_ERR_NOMEM;
    for (i = 0; i < sizeof(sets) / sizeof(sets[0]) && st == HLX_OK; i++) {
        const hlx_xml_attr_t *s = hlx_xml_attr(a, n, sets[i]);
        if (s == NULL)
            continue;
        /* large machines have long sets: copy to the heap only then */
        buf = s->vlen < sizeof(small) ? small : malloc(s->vlen + 1);
        if (buf == NULL) {
            st = HLX_ERR_NOMEM;
            break;
        }
        hlx_xml_attr_str(s, buf, s->vlen + 1);
        if (!hlx_xml_bitmap_ok(buf) || hwloc_bitmap_sscanf(bm, buf) < 0) {
            st = hlx_xml_fail(x, line, "%s: %s \"%s\" is not an hwloc bitmap (0x... words)",
                              e->desc, sets[i], buf);
        } else if (!strcmp(sets[i], "cpuset") && hwloc_bitmap_iszero(bm) &&
                   !hlx_xml_is_io_or_misc(tname)) {
            st = hlx_xml_fail(x, line, "%s: empty cpuset", e->desc);
        }
        if (buf != small)
            free(buf);
    }
    hwloc_bitmap_free(bm);
    return st;
}

/* Counts whitespace-separated tokens of a text node; checks they are unsigned integers
 * when digits is set (a "-5" would be read by hwloc as 2^64 - 5). */
static long hlx_xml_count_tokens(const char *s, size_t n, int digits, const char **bad_p,
                                 size_t *badlen_p)
{
    size_t i = 0;
    long count = 0;

    while (i < n) {
        size_t start;
        while (i < n && isspace((unsigned char)s[i]))
            i++;
        if (i >= n)
            break;
        start = i;
        while (i < n && !isspace((unsigned char)s[i]))
            i++;
        count++;
        if (digits && *bad_p == NULL) {
            size_t k;
            for (k = start; k < i; k++)
                if (!isdigit((unsigned char)s[k]))
                    break;
            if (k < i) {
                *bad_p = s + start;
                *badlen_p = i - start;
            }
        }
    }
    return count;
}

/* Keeps the indexes of a homogeneous matrix (for the duplicate check at its end); each
 * must be an unsigned integer, and at most nbobjs of them are kept. */
static hlx_status_t hlx_xml_keep_indexes(hlx_xml_t *x, const char *s, size_t n, int line)
{
    size_t i = 0;

    while (i < n) {
        unsigned long long v = 0;
        size_t start;
        while (i < n && isspace((unsigned char)s[i]))
            i++;
        if (i >= n)
            break;
        start = i;
        while (i < n && isdigit((unsigned char)s[i]) && v <= (~0ull - 9) / 10)
            v = v * 10 + (unsigned)(s[i++] - '0');
        if (i == start || (i < n && !isspace((unsigned char)s[i])))
            return hlx_xml_fail(x, line,
                                "distances \"%s\" (line %d): index \"%.*s\" is not a "
                                "non-negative integer", x->dist_name, x->dist_line,
                                (int)(n - start > 30 ? 30 : n - start), s + start);
        if (x->dist_nidx < x->dist_nbobjs) {
            if (x->dist_nidx >= x->dist_idx_cap) {
                long cap = x->dist_idx_cap ? x->dist_idx_cap * 2 : 64;
                unsigned long long *p = realloc(x->dist_idx, sizeof(*p) * (size_t)cap);
                if (p == NULL)
                    return HLX_ERR_NOMEM;
                x->dist_idx = p;
                x->dist_idx_cap = cap;
            }
            x->dist_idx[x->dist_nidx] = v;
        }
        x->dist_nidx++;
    }
    return HLX_OK;
}

static int hlx_xml_cmp_u64(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

static hlx_status_t hlx_xml_check_matrix_text(hlx_xml_t *x, const char *elem, int line)
{
    const char *start = x->s + x->pos;
    const char *end = strchr(start, '<');
    const char *bad = NULL;
    size_t badlen = 0;
    long count;
    int isvalues = !strcmp(elem, "u64values");

    if (end == NULL)
        end = x->s + x->len;
    count = hlx_xml_count_tokens(start, (size_t)(end - start), isvalues, &bad, &badlen);
    if (bad != NULL)
        return hlx_xml_fail(x, line,
                            "distances \"%s\" (line %d): value \"%.*s\" is not a "
                            "non-negative integer",
                            x->dist_name, x->dist_line, (int)(badlen > 30 ? 30 : badlen), bad);
    if (isvalues) {
        x->dist_nval += count;
        return HLX_OK;
    }
    if (!x->dist_hetero)
        return hlx_xml_keep_indexes(x, start, (size_t)(end - start), line);
    x->dist_nidx += count;
    return HLX_OK;
}

/* At </distances2>: nbobjs indexes and a square nbobjs x nbobjs matrix. */
static hlx_status_t hlx_xml_check_matrix_size(hlx_xml_t *x, int line)
{
    long n = x->dist_nbobjs;

    if (x->dist_nidx != n)
        return hlx_xml_fail(x, line, "distances \"%s\" (line %d): %ld indexes for nbobjs=%ld",
                            x->dist_name, x->dist_line, x->dist_nidx, n);
    if (x->dist_nval != n * n)
        return hlx_xml_fail(x, line,
                            "distances \"%s\" (line %d): %ld values for nbobjs=%ld, expected "
                            "%ld (a square %ldx%ld matrix)",
                            x->dist_name, x->dist_line, x->dist_nval, n, n * n, n, n);
    /* the same object twice would make two rows of one GPU (hwloc accepts it) */
    if (!x->dist_hetero && n > 1) {
        long i;
        qsort(x->dist_idx, (size_t)n, sizeof(*x->dist_idx), hlx_xml_cmp_u64);
        for (i = 1; i < n; i++)
            if (x->dist_idx[i] == x->dist_idx[i - 1])
                return hlx_xml_fail(x, line, "distances \"%s\" (line %d): index %llu "
                                    "(%s object %s_index=%llu) is listed twice",
                                    x->dist_name, x->dist_line, x->dist_idx[i],
                                    x->dist_type, x->dist_indexing, x->dist_idx[i]);
    }
    return HLX_OK;
}

static hlx_status_t hlx_xml_start_tag(hlx_xml_t *x)
{
    hlx_xml_attr_t attrs[HLX_XML_MAX_ATTRS];
    hlx_xml_elem_t *e;
    int nattrs = 0, line = x->line, selfclose = 0, closed = 0;
    char name[32];
    size_t n = 0;
    hlx_status_t st = HLX_OK;

    hlx_xml_advance(x, 1); /* '<' */
    while (x->pos < x->len && (isalnum((unsigned char)x->s[x->pos]) || x->s[x->pos] == '_' ||
                               x->s[x->pos] == '-' || x->s[x->pos] == ':')) {
        if (n < sizeof(name) - 1)
            name[n++] = x->s[x->pos];
        hlx_xml_advance(x, 1);
    }
    name[n] = '\0';
    if (n == 0)
        return hlx_xml_fail(x, line, "malformed tag");
    for (;;) {
        char an[32];
        size_t k = 0;
        char q;
        const char *vend;
        while (x->pos < x->len && isspace((unsigned char)x->s[x->pos]))
            hlx_xml_advance(x, 1);
        if (x->pos >= x->len)
            break;
        if (x->s[x->pos] == '>') {
            hlx_xml_advance(x, 1);
            closed = 1;
            break;
        }
        if (x->s[x->pos] == '/' && x->pos + 1 < x->len && x->s[x->pos + 1] == '>') {
            hlx_xml_advance(x, 2);
            selfclose = closed = 1;
            break;
        }
        while (x->pos < x->len && x->s[x->pos] != '=' && !isspace((unsigned char)x->s[x->pos])
               && x->s[x->pos] != '>') {
            if (k < sizeof(an) - 1)
                an[k++] = x->s[x->pos];
            hlx_xml_advance(x, 1);
        }
        an[k] = '\0';
        if (x->pos >= x->len || x->s[x->pos] != '=' || x->pos + 1 >= x->len ||
            (x->s[x->pos + 1] != '"' && x->s[x->pos + 1] != '\''))
            return hlx_xml_fail(x, x->line, "<%s>: malformed attribute \"%s\"", name, an);
        q = x->s[x->pos + 1];
        hlx_xml_advance(x, 2);
        vend = memchr(x->s + x->pos, q, x->len - x->pos);
        if (vend == NULL)
            return hlx_xml_fail(x, line, "<%s>: attribute %s is never closed (truncated?)",
                                name, an);
        if (nattrs < HLX_XML_MAX_ATTRS) {
            snprintf(attrs[nattrs].name, sizeof(attrs[nattrs].name), "%s", an);
            attrs[nattrs].val = x->s + x->pos;
            attrs[nattrs].vlen = (size_t)(vend - (x->s + x->pos));
            nattrs++;
        }
        hlx_xml_advance(x, (size_t)(vend - (x->s + x->pos)) + 1);
    }
    if (!closed)
        return hlx_xml_fail(x, line, "<%s> is cut off: the file is truncated", name);

    if (x->depth >= HLX_XML_MAX_DEPTH)
        return hlx_xml_fail(x, line, "elements nested more than %d deep", HLX_XML_MAX_DEPTH);
    e = &x->stack[x->depth];
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->line = line;
    snprintf(e->desc, sizeof(e->desc), "<%s>", name);

    if (!strcmp(name, "object")) {
        st = hlx_xml_check_object(x, e, attrs, nattrs, line);
    } else if (!strcmp(name, "distances2") || !strcmp(name, "distances2hetero")) {
        const hlx_xml_attr_t *nb = hlx_xml_attr(attrs, nattrs, "nbobjs");
        const hlx_xml_attr_t *dn = hlx_xml_attr(attrs, nattrs, "name");
        const hlx_xml_attr_t *ty = hlx_xml_attr(attrs, nattrs, "type");
        const hlx_xml_attr_t *ix = hlx_xml_attr(attrs, nattrs, "indexing");
        char buf[32] = "";
        char *endp;
        x->in_dist = 1;
        x->dist_line = line;
        x->dist_nidx = x->dist_nval = 0;
        x->dist_hetero = !strcmp(name, "distances2hetero");
        snprintf(x->dist_name, sizeof(x->dist_name), "(unnamed)");
        if (dn != NULL)
            hlx_xml_attr_str(dn, x->dist_name, sizeof(x->dist_name));
        snprintf(x->dist_type, sizeof(x->dist_type), "?");
        if (ty != NULL)
            hlx_xml_attr_str(ty, x->dist_type, sizeof(x->dist_type));
        snprintf(x->dist_indexing, sizeof(x->dist_indexing), "os");
        if (ix != NULL)
            hlx_xml_attr_str(ix, x->dist_indexing, sizeof(x->dist_indexing));
        /* NVLink joins GPUs (PCI devices or their OS devices) and NVSwitches only */
        if (!x->dist_hetero && !strcmp(x->dist_name, "NVLinkBandwidth") &&
            strcmp(x->dist_type, "PCIDev") && strcmp(x->dist_type, "OSDev"))
            return hlx_xml_fail(x, line, "distances \"NVLinkBandwidth\" is over %s objects; "
                                "an NVLink matrix joins GPUs (PCIDev or OSDev) and NVSwitches",
                                x->dist_type);
        if (nb != NULL)
            hlx_xml_attr_str(nb, buf, sizeof(buf));
        errno = 0;
        x->dist_nbobjs = strtol(buf, &endp, 10);
        if (nb == NULL || errno || endp == buf || *endp || x->dist_nbobjs < 1 ||
            x->dist_nbobjs > 65536)
            st = hlx_xml_fail(x, line, "distances \"%s\": nbobjs \"%s\" is not a count",
                              x->dist_name, buf);
        snprintf(e->desc, sizeof(e->desc), "distances \"%s\"", x->dist_name);
    } else if (x->in_dist && !selfclose &&
               (!strcmp(name, "indexes") || !strcmp(name, "u64values"))) {
        st = hlx_xml_check_matrix_text(x, name, line);
    }
    if (st != HLX_OK)
        return st;
    if (!selfclose)
        x->depth++;
    else if (!strcmp(name, "distances2") || !strcmp(name, "distances2hetero"))
        return hlx_xml_fail(x, line, "distances \"%s\" has no values", x->dist_name);
    return HLX_OK;
}

static hlx_status_t hlx_xml_end_tag(hlx_xml_t *x)
{
    char name[32];
    size_t n = 0;
    int line = x->line;
    hlx_xml_elem_t *e;

    hlx_xml_advance(x, 2); /* "</" */
    while (x->pos < x->len && x->s[x->pos] != '>' && !isspace((unsigned char)x->s[x->pos])) {
        if (n < sizeof(name) - 1)
            name[n++] = x->s[x->pos];
        hlx_xml_advance(x, 1);
    }
    name[n] = '\0';
    if (!hlx_xml_skip_past(x, ">"))
        return hlx_xml_fail(x, line, "</%s> is cut off: the file is truncated", name);
    if (x->depth == 0)
        return hlx_xml_fail(x, line, "</%s> closes nothing", name);
    e = &x->stack[x->depth - 1];
    if (strcmp(e->name, name))
        return hlx_xml_fail(x, line, "</%s> closes <%s> opened at line %d (%s)", name,
                            e->name, e->line, e->desc);
    if (!strcmp(name, "distances2") || !strcmp(name, "distances2hetero")) {
        hlx_status_t st = hlx_xml_check_matrix_size(x, line);
        if (st != HLX_OK)
            return st;
        x->in_dist = 0;
    }
    x->depth--;
    return HLX_OK;
}

static hlx_status_t hlx_xml_scan(hlx_xml_t *x)
{
    int seen_root = 0;
    hlx_status_t st;

    while (x->pos < x->len) {
        const char *lt = strchr(x->s + x->pos, '<');
        if (lt == NULL)
            break;
        hlx_xml_advance(x, (size_t)(lt - (x->s + x->pos)));
        if (!strncmp(lt, "<?", 2)) {
            const char *end = strstr(lt, "?>"), *enc = strstr(lt, "encoding=");
            /* hwloc writes UTF-8; other encodings only reach libxml2's error paths */
            if (end != NULL && enc != NULL && enc < end && !strncmp(lt, "<?xml", 5) &&
                strncasecmp(enc + 10, "UTF-8", 5) != 0)
                return hlx_xml_fail(x, x->line, "encoding %.*s: hwloc topologies are UTF-8",
                                    (int)(end - enc - 9 > 20 ? 20 : end - enc - 9), enc + 9);
            if (!hlx_xml_skip_past(x, "?>"))
                return hlx_xml_fail(x, x->line, "unterminated <? ... ?>: truncated");
        } else if (!strncmp(lt, "<!--", 4)) {
            if (!hlx_xml_skip_past(x, "-->"))
                return hlx_xml_fail(x, x->line, "unterminated comment: truncated");
        } else if (!strncmp(lt, "<!", 2)) {
            if (!hlx_xml_skip_past(x, ">"))
                return hlx_xml_fail(x, x->line, "unterminated <!...>: truncated");
        } else if (!strncmp(lt, "</", 2)) {
            st = hlx_xml_end_tag(x);
            if (st != HLX_OK)
                return st;
        } else {
            if (!seen_root && strncmp(lt, "<topology", 9))
                return hlx_xml_fail(x, x->line, "not an hwloc XML topology (no <topology>)");
            seen_root = 1;
            st = hlx_xml_start_tag(x);
            if (st != HLX_OK)
                return st;
        }
    }
    if (!seen_root)
        return hlx_xml_fail(x, x->line, "not an hwloc XML topology (no <topology>)");
    if (x->depth > 0) {
        hlx_xml_elem_t *e = &x->stack[x->depth - 1];
        return hlx_xml_fail(x, x->line,
                            "the file is truncated: %s opened at line %d is never closed",
                            e->desc, e->line);
    }
    return HLX_OK;
}

hlx_status_t hlx_topo_xml_check_text(const char *name, const char *text, size_t len, char *err,
                                     size_t errlen)
{
    hlx_xml_t x;
    char *buf;
    hlx_status_t st;

    if (len == 0 || memchr(text, '\0', len) != NULL) {
        hlx_topo_seterr(err, errlen, "%s:1: %s", name,
                        len == 0 ? "empty file" : "NUL byte in the file (not XML text)");
        return HLX_ERR_PARSE;
    }
    /* the scanner relies on a terminating NUL */
    buf = malloc(len + 1);
    if (buf == NULL)
        return HLX_ERR_NOMEM;
    memcpy(buf, text, len);
    buf[len] = '\0';
    memset(&x, 0, sizeof(x));
    x.path = name;
    x.s = buf;
    x.len = len;
    x.line = 1;
    x.err = err;
    x.errlen = errlen;
    st = hlx_xml_scan(&x);
    free(x.dist_idx);
    free(buf);
    return st;
}

hlx_status_t hlx_topo_xml_check(const char *path, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    hlx_status_t st;

    st = hlx_file_read(path, "topology file", HLX_XML_MAX_BYTES, &buf, &len, err, errlen);
    if (st != HLX_OK)
        return st;
    st = hlx_topo_xml_check_text(path, buf, len, err, errlen);
    free(buf);
    return st;
}
