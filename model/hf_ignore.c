/* Ignore lists of fp8 and int8 checkpoints (compressed-tensors' ignore, the fp8 method's
 * ignored_layers, ModelOpt's exclude_modules, fbgemm_fp8's modules_to_not_convert): which
 * Linear layers are stored unquantized, matched as the quantizer that wrote the list matched
 * it, summed up per kind of layer and layer (hlx_hf_config_t.unquant, unquant_layer).
 * docs/model.md "Ignore lists". */
#define _GNU_SOURCE
#include "hlx_ckpt.h"
#include "hlx_err.h"
#include "hlx_hf_ignore.h"
#include "hlx_json.h"

#include <ctype.h>
#include <fnmatch.h>
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    HLX_IGN_NAME = 0, /* a module's name (or a class: "Linear" names every Linear) */
    HLX_IGN_RE,       /* "re:" and a Python regular expression, matched from the start */
    HLX_IGN_GLOB,     /* ModelOpt's fnmatch wildcards */
    HLX_IGN_HF        /* transformers' modules_to_not_convert: the entry as a Python regular
                         expression from the start of the name, or the name's end */
} hlx_ign_type_t;

typedef struct {
    const char    *s;    /* the entry as the list holds it */
    hlx_ign_type_t type;
    int            list; /* which of the lists, and its index there */
    size_t         index;
    regex_t        re;
} hlx_ign_t;

/* Appends s to out[*n, cap); 0, or -1 when it does not fit. */
static int hlx_ere_put(char *out, size_t cap, size_t *n, const char *s)
{
    size_t k = strlen(s);

    if (*n + k >= cap)
        return -1;
    memcpy(out + *n, s, k + 1);
    *n += k;
    return 0;
}

/* A Python regular expression as a POSIX extended one of the same matches (for a name
 * without a newline), into out: NULL, or why it is not read. Python's escapes of classes
 * (\d, \w, \s and their negations) become bracket expressions, an escaped character a
 * bracket of it, "(?:" a plain group, a lazy quantifier a greedy one (whether there is a
 * match does not depend on it), a "{" or "}" that is not part of a count a literal one (as
 * Python reads it); lookarounds, flags, named groups, back references, anchors other than
 * ^ and $, and a quantifier right after another (Python 3.11's possessive "*+", which never
 * gives back what it took; an error before) have no POSIX form and are refused. */
static const char *hlx_pyre_to_ere(const char *py, char *out, size_t cap)
{
    static const char special[] = ".[]()*+?{}|^$\\";
    size_t n = 0;
    const char *p = py;
    char one[40];
    int braces = 0, quant = 0; /* quant: the last thing emitted is a quantifier */
    long expand = 1;           /* the product of the counts' largest values */

    out[0] = '\0';
    while (*p) {
        const char *r = NULL;
        int q = 0;
        if (*p == '\\') {
            const char c = p[1];
            switch (c) {
            case 'd': r = "[0-9]"; break;
            case 'D': r = "[^0-9]"; break;
            case 'w': r = "[[:alnum:]_]"; break;
            case 'W': r = "[^[:alnum:]_]"; break;
            case 's': r = "[[:space:]]"; break;
            case 'S': r = "[^[:space:]]"; break;
            default:
                if (c == '\0')
                    return "a trailing backslash";
                if (isalnum((unsigned char)c))
                    return "an escape other than \\d, \\w, \\s, their capitals or an escaped "
                           "punctuation character";
                if (strchr(special, c) != NULL)
                    snprintf(one, sizeof(one), "\\%c", c);
                else
                    snprintf(one, sizeof(one), "[%c]", c);
                r = one;
            }
            p += 2;
        } else if (*p == '(' && p[1] == '?') {
            if (p[2] != ':')
                return "a group of the form (?...) other than (?:...) (lookarounds, flags, "
                       "named groups)";
            r = "(";
            p += 3;
        } else if (*p == '[') { /* a bracket expression: copied up to its end */
            size_t k = 1, in;
            if (hlx_ere_put(out, cap, &n, "[") != 0)
                return "too long";
            if (p[k] == '^' && hlx_ere_put(out, cap, &n, "^") == 0)
                k++;
            in = n; /* where its characters begin */
            if (p[k] == ']' && hlx_ere_put(out, cap, &n, "]") == 0)
                k++;
            for (; p[k] && p[k] != ']'; k++) {
                char ch[3] = { p[k], 0, 0 };
                if (p[k] == '\\') {
                    const char c = p[++k];
                    if (c != 'd' && (c == '\0' || isalnum((unsigned char)c) || strchr("]^-\\", c)))
                        return "an escape inside brackets other than \\d or a punctuation "
                               "character other than ] ^ - \\";
                    if (c == 'd' && hlx_ere_put(out, cap, &n, "0-9") != 0)
                        return "too long";
                    if (c == 'd')
                        continue;
                    ch[0] = c;
                }
                /* "[" then ":", "." or "=" opens a POSIX class or collating element, also
                 * where Python's "[" or the second character was escaped ("[\[:a:]]") */
                if (n > in && out[n - 1] == '[' && strchr(":.=", ch[0]) != NULL)
                    return "a POSIX class ([:name:]) inside brackets";
                if (hlx_ere_put(out, cap, &n, ch) != 0)
                    return "too long";
            }
            if (p[k] != ']')
                return "an unterminated [";
            r = "]";
            p += k + 1;
        } else if (*p == '{') { /* a count as Python reads one: {m}, {m,}, {,n}, {m,n} */
            const char *q0 = p + 1, *qe;
            long lo = 0, hi = -1, v = 0;
            int digits = 0, comma = 0;
            for (qe = q0; isdigit((unsigned char)*qe) || (*qe == ',' && !comma); qe++) {
                if (*qe == ',') {
                    lo = v, v = 0, digits = 0, comma = 1;
                    continue;
                }
                if ((v = v * 10 + (*qe - '0')) > 16)
                    return "a repetition count above 16";
                digits++;
            }
            if (*qe != '}' || qe == q0) { /* "{" and no count: Python's literal "{" */
                r = "\\{";
                p++;
            } else {
                if (comma)
                    hi = digits ? v : -1;
                else
                    lo = hi = v;
                /* a nest of counts is expanded into their product by regcomp: small ones
                 * only, at most two */
                if (++braces > 2)
                    return "more than 2 counted repetitions ({m,n})";
                expand *= (hi >= 0 ? hi : lo) + 1;
                snprintf(one, sizeof(one), "{%.*s}", (int)(qe - q0), q0);
                r = one;
                q = 1;
                p = qe + 1;
                p += *p == '?'; /* lazy: as greedy */
            }
        } else if (*p == '}') { /* not closing a count: Python's literal "}" */
            r = "\\}";
            p++;
        } else if (strchr("*+?", *p) != NULL) {
            one[0] = *p;
            one[1] = '\0';
            r = one;
            q = 1;
            p++;
            p += *p == '?'; /* lazy: as greedy */
        } else {
            one[0] = *p;
            one[1] = '\0';
            r = one;
            p++;
        }
        if (q && quant)
            return "a quantifier right after another (possessive, or Python's \"multiple "
                   "repeat\")";
        quant = q;
        if (hlx_ere_put(out, cap, &n, r) != 0)
            return "too long";
    }
    /* regcomp's automaton grows with the expression times its counts' product: a hostile
     * list must not take gigabytes (a name is under 200 characters) */
    if ((long)n * expand > 4096)
        return "too large once its counts are expanded (its length times their product above "
               "4096)";
    return NULL;
}

/* The Python expression py compiled into *re, matched from the start (re.match), not to
 * the end: 0, or -1 with why it is not read in why. */
static int hlx_ign_regcomp(const char *py, regex_t *re, char *why, size_t whylen)
{
    char ere[1024], full[1100];
    const char *bad;
    int rc;

    if ((bad = hlx_pyre_to_ere(py, ere, sizeof(ere))) != NULL) {
        snprintf(why, whylen, "%s is not read (Python's re syntax, as its quantizer matched "
                 "it, in the part POSIX regular expressions share)", bad);
        return -1;
    }
    snprintf(full, sizeof(full), "^(%s)", ere);
    if ((rc = regcomp(re, full, REG_EXTENDED | REG_NOSUB)) != 0) {
        regerror(rc, re, why, whylen);
        return -1;
    }
    return 0;
}

/* Entry e of list `list`, index i, compiled into *g under the list's mode; the error at
 * its place in doc. */
static hlx_status_t hlx_ign_compile(hlx_jdoc_t *doc, const char *at, size_t i, const char *e,
                                    hlx_ign_mode_t mode, hlx_ign_t *g)
{
    char path[256], why[256];
    const char *py;

    g->s = e;
    g->index = i;
    if (mode == HLX_IGN_MODE_GLOB) {
        g->type = strpbrk(e, "*?[") != NULL ? HLX_IGN_GLOB : HLX_IGN_NAME;
        return HLX_OK;
    }
    if (mode == HLX_IGN_MODE_CT && strncmp(e, "re:", 3)) {
        g->type = HLX_IGN_NAME;
        return HLX_OK;
    }
    g->type = mode == HLX_IGN_MODE_HF ? HLX_IGN_HF : HLX_IGN_RE;
    py = g->type == HLX_IGN_RE ? e + 3 : e;
    if (hlx_ign_regcomp(py, &g->re, why, sizeof(why)) == 0)
        return HLX_OK;
    snprintf(path, sizeof(path), "%s/%zu", at, i);
    return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "regular expression %s: %s", py, why);
}

static int hlx_ign_match(const hlx_ign_t *g, const char *module)
{
    size_t n, k;

    switch (g->type) {
    case HLX_IGN_RE:
        return regexec(&g->re, module, 0, NULL, 0) == 0;
    case HLX_IGN_HF:
        n = strlen(module);
        k = strlen(g->s);
        return regexec(&g->re, module, 0, NULL, 0) == 0 ||
               (k <= n && !strcmp(module + n - k, g->s));
    case HLX_IGN_GLOB:
        return fnmatch(g->s, module, FNM_NOESCAPE) == 0;
    default:
        return !strcmp(g->s, module) || !strcmp(g->s, "Linear"); /* a class: every Linear */
    }
}

int hlx_hf_ignore_names(const char *e, const char *module)
{
    hlx_ign_t g = { .s = e, .type = HLX_IGN_RE };
    char why[256];
    int hit;

    if (strncmp(e, "re:", 3))
        return !strcmp(e, module);
    if (hlx_ign_regcomp(e + 3, &g.re, why, sizeof(why)) != 0)
        return 0;
    hit = hlx_ign_match(&g, module);
    regfree(&g.re);
    return hit;
}

/* Whether g names module under any of its names (a multimodal checkpoint's text model under
 * language_model.model., model.language_model. or Idefics3's model.text_model. too, as
 * transformers has named it). */
static int hlx_ign_names(const hlx_ign_t *g, const char *module, int nested)
{
    const char *rest = !strncmp(module, "model.", 6) ? module + 6 : module;
    char alt[192];

    if (hlx_ign_match(g, module))
        return 1;
    if (!nested)
        return 0;
    snprintf(alt, sizeof(alt), "language_model.%.160s", module);
    if (hlx_ign_match(g, alt))
        return 1;
    snprintf(alt, sizeof(alt), "model.language_model.%.160s", rest);
    if (hlx_ign_match(g, alt))
        return 1;
    snprintf(alt, sizeof(alt), "model.text_model.%.160s", rest);
    return hlx_ign_match(g, alt);
}

/* A Linear weight's module: its name without ".weight", in place. */
static void hlx_ign_module(char *name)
{
    size_t n = strlen(name);

    if (n >= 7 && !strcmp(name + n - 7, ".weight"))
        name[n - 7] = '\0';
}

/* What the lists say of one kind of layer: per layer (the last slot: every layer past
 * HLX_HF_UNQ_LAYERS, and names without one) the first module named and the first not. */
typedef struct {
    long hit[HLX_HF_UNQ_LAYERS + 1], miss[HLX_HF_UNQ_LAYERS + 1];
    int  any_hit, any_miss;
} hlx_ign_kind_t;

/* Refuses (at the entry that named list[hit], who[hit]) a kind named for hit and not for
 * miss. */
static hlx_status_t hlx_ign_partial(hlx_jdoc_t *doc, const hlx_hf_expect_t *list,
                                    const long *who, const hlx_ign_t *g, long hit, long miss,
                                    const char *const *at, const char *why)
{
    const hlx_ign_t *e = &g[who[hit]];
    char path[256];

    snprintf(path, sizeof(path), "%s/%zu", at[e->list], e->index);
    return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "leaves %s unquantized but not %s: %s",
                         list[hit].name, list[miss].name, why);
}

hlx_status_t hlx_hf_ignore_apply(hlx_jdoc_t *doc, hlx_hf_config_t *c, json_t *const *lists,
                                 const char *const *at, int nlists, hlx_ign_mode_t mode)
{
    hlx_hf_expect_t *list = NULL;
    hlx_ign_t *g = NULL;
    hlx_ign_kind_t *ks = NULL;
    size_t n = 0, ne = 0, total = 0, i, j;
    long *who = NULL, first = -1;
    int k, li, nkinds = 0, all = 1, nested = (c->fused & (HLX_HF_NESTED | HLX_HF_LLAMA4)) != 0;
    char err[256], kn[64], why[160];
    hlx_status_t st = HLX_OK;

    c->unquant = 0;
    memset(c->unquant_layer, 0, sizeof(c->unquant_layer));
    if (!c->fp8)
        return HLX_OK;
    for (li = 0; li < nlists; li++)
        total += json_is_array(lists[li]) ? json_array_size(lists[li]) : 0;
    if (total == 0)
        return HLX_OK;
    if ((st = hlx_hf_expect(c, &list, &n, err, sizeof(err))) != HLX_OK)
        return hlx_jdoc_fail(doc, at[0], st, "%s", err);
    if ((g = calloc(total, sizeof(*g))) == NULL ||
        (who = malloc((n + 1) * sizeof(*who))) == NULL ||
        (ks = malloc(HLX_HF_MAX_KINDS * sizeof(*ks))) == NULL) {
        free(g);
        free(who);
        free(list);
        return hlx_jdoc_fail(doc, at[0], HLX_ERR_NOMEM, "out of memory");
    }
    for (i = 0; i < n; i++) {
        char *x;
        who[i] = -1;
        if (list[i].kind < 0)
            continue;
        hlx_ign_module(list[i].name);
        /* transformers matches Llama 4's routed experts as the one module that holds them
         * (Llama4TextExperts, converted whole): "experts" names them, "down_proj" does not */
        if (mode == HLX_IGN_MODE_HF && c->moe_gqa == HLX_HF_MOE_LLAMA4 &&
            (x = strstr(list[i].name, ".feed_forward.experts.")) != NULL)
            x[sizeof(".feed_forward.experts") - 1] = '\0';
    }
    /* each entry compiled, matched against every module and freed before the next: a long
     * list holds one automaton at a time; each module's first entry naming it kept */
    for (li = 0; li < nlists && st == HLX_OK; li++)
        for (i = 0; json_is_array(lists[li]) && i < json_array_size(lists[li]) && st == HLX_OK;
             i++) {
            const char *e = json_string_value(json_array_get(lists[li], i));
            if (e == NULL) /* hlx_cfg_ignore has seen to it */
                continue;
            g[ne].list = li;
            if ((st = hlx_ign_compile(doc, at[li], i, e, mode, &g[ne])) != HLX_OK)
                break;
            for (j = 0; j < n; j++)
                if (list[j].kind >= 0 && who[j] < 0 && hlx_ign_names(&g[ne], list[j].name, nested))
                    who[j] = (long)ne;
            if (g[ne].type == HLX_IGN_RE || g[ne].type == HLX_IGN_HF)
                regfree(&g[ne].re);
            ne++;
        }
    for (k = 0; k < HLX_HF_MAX_KINDS; k++) {
        for (j = 0; j <= HLX_HF_UNQ_LAYERS; j++)
            ks[k].hit[j] = ks[k].miss[j] = -1;
        ks[k].any_hit = ks[k].any_miss = 0;
    }
    for (i = 0; st == HLX_OK && i < n; i++) {
        hlx_ign_kind_t *q;
        long l;
        k = list[i].kind;
        if (k < 0)
            continue;
        l = hlx_hf_layer_of(list[i].name);
        if (l < 0 || l >= HLX_HF_UNQ_LAYERS)
            l = HLX_HF_UNQ_LAYERS;
        q = &ks[k];
        if (k >= nkinds)
            nkinds = k + 1;
        if (who[i] >= 0 && q->hit[l] < 0)
            q->hit[l] = (long)i;
        else if (who[i] < 0 && q->miss[l] < 0)
            q->miss[l] = (long)i;
        q->any_hit |= who[i] >= 0;
        q->any_miss |= who[i] < 0;
        if (who[i] >= 0 && first < 0)
            first = (long)i;
    }
    for (k = 0; st == HLX_OK && k < nkinds; k++) {
        hlx_ign_kind_t *q = &ks[k];
        long l;
        all &= q->any_hit && !q->any_miss;
        if (!q->any_hit)
            continue;
        if (!q->any_miss) {
            c->unquant |= (uint64_t)1 << k;
            continue;
        }
        /* some layers: each whole (its experts alike), within the first 256 */
        for (l = 0; st == HLX_OK && l <= HLX_HF_UNQ_LAYERS; l++) {
            long other = q->miss[l];
            if (q->hit[l] < 0)
                continue;
            hlx_hf_kind_name(list[q->hit[l]].name, kn, sizeof(kn));
            if (l == HLX_HF_UNQ_LAYERS)
                snprintf(why, sizeof(why), "a kind of layer (%s) is read unquantized in every "
                         "layer or in some of the first %d", kn, HLX_HF_UNQ_LAYERS);
            else if (other >= 0)
                snprintf(why, sizeof(why), "a layer's experts are read unquantized all or "
                         "none");
            if (other >= 0 || l == HLX_HF_UNQ_LAYERS) {
                for (j = 0; other < 0 && j <= HLX_HF_UNQ_LAYERS; j++)
                    other = q->miss[j];
                st = hlx_ign_partial(doc, list, who, g, q->hit[l], other, at, why);
                break;
            }
            c->unquant_layer[l] |= (uint64_t)1 << k;
        }
    }
    /* at the list of an entry that named one (ModelOpt's two lists: either may be absent) */
    if (st == HLX_OK && nkinds > 0 && all)
        st = hlx_jdoc_fail(doc, at[g[who[first]].list], HLX_ERR_PARSE, "leaves every Linear "
                           "layer unquantized: nothing is read quantized (remove "
                           "quantization_config if the checkpoint holds no quantized weight)");
    if (st != HLX_OK) {
        c->unquant = 0;
        memset(c->unquant_layer, 0, sizeof(c->unquant_layer));
    }
    free(ks);
    free(who);
    free(list);
    free(g);
    return st;
}

void hlx_hf_unquant_each(const hlx_hf_config_t *c, void (*fn)(const char *item, void *arg),
                         void *arg)
{
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i, off;
    uint64_t done = 0, some = 0;
    char err[128], item[64 + 4 * HLX_HF_UNQ_LAYERS + 16];
    int l;

    for (l = 0; l < HLX_HF_UNQ_LAYERS; l++)
        some |= c->unquant_layer[l];
    if ((c->unquant | some) == 0 || hlx_hf_expect(c, &list, &n, err, sizeof(err)) != HLX_OK)
        return;
    for (i = 0; i < n; i++) {
        const int k = list[i].kind;
        if (k < 0 || !((c->unquant | some) >> k & 1) || (done >> k & 1))
            continue;
        done |= (uint64_t)1 << k;
        hlx_hf_kind_name(list[i].name, item, 64);
        off = strlen(item);
        /* in some layers: " (layers 0 125)" */
        for (l = 0; !(c->unquant >> k & 1) && l < HLX_HF_UNQ_LAYERS; l++)
            if (c->unquant_layer[l] >> k & 1)
                off += (size_t)snprintf(item + off, sizeof(item) - off, "%s%d",
                                        strchr(item, '(') ? " " : " (layers ", l);
        if (!(c->unquant >> k & 1))
            snprintf(item + off, sizeof(item) - off, ")");
        fn(item, arg);
    }
    free(list);
}

/* hlx_hf_unquant_str's items, joined */
typedef struct {
    char  *buf;
    size_t len, off;
} hlx_unq_join_t;

static void hlx_unq_join(const char *item, void *arg)
{
    hlx_unq_join_t *j = arg;

    if (j->off + 1 < j->len)
        j->off += (size_t)snprintf(j->buf + j->off, j->len - j->off, "%s%s", j->off ? ", " : "",
                                   item);
}

const char *hlx_hf_unquant_str(const hlx_hf_config_t *c, char *buf, size_t len)
{
    hlx_unq_join_t j = { buf, len, 0 };

    if (len == 0)
        return buf;
    buf[0] = '\0';
    hlx_hf_unquant_each(c, hlx_unq_join, &j);
    if (j.off >= len)
        buf[len - 1] = '\0';
    return buf;
}
