/* Settings tables: defaults, environment overrides, flags, printing and unknown-name warnings. */
#define _GNU_SOURCE
#include "hlx_param.h"
#include "hlx_json.h"
#include "hlx_log.h"
#include "hlx_parse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

const char *hlx_param_src_str(hlx_param_src_t src)
{
    static const char *const names[] = { "default", "env", "file", "flag" };
    return (unsigned)src < 4 ? names[src] : "?";
}

/* Names already reported (a bad value or an override), so that a table loaded by several
 * layers reports each variable once per process. */
static struct {
    char names[64][48];
    int  n;
} hlx_param_reported;

static int hlx_param_first_report(const char *name)
{
    int i;

    for (i = 0; i < hlx_param_reported.n; i++)
        if (!strcmp(hlx_param_reported.names[i], name))
            return 0;
    if (hlx_param_reported.n < 64)
        snprintf(hlx_param_reported.names[hlx_param_reported.n++], 48, "%s", name);
    return 1;
}

static int hlx_param_clamp(double d)
{
    return d < INT_MIN ? INT_MIN : d > INT_MAX ? INT_MAX : (int)d;
}

const char *hlx_param_choice(const hlx_param_t *p, int v, char *buf, size_t len)
{
    const char *c = p->type == HLX_PT_INT ? p->choices : NULL;
    const int k = v - hlx_param_clamp(p->min);
    int i;

    for (i = 0; c != NULL && i < k; i++) {
        c = strchr(c, '|');
        c = c ? c + 1 : NULL;
    }
    if (k >= 0 && c != NULL && *c) {
        const char *bar = strchr(c, '|');
        snprintf(buf, len, "%.*s", bar ? (int)(bar - c) : (int)strlen(c), c);
        return buf;
    }
    return NULL;
}

/* A value as helix info shows it: choices by name ("auto (2)"), numbers, strings. */
static void hlx_param_format(const hlx_param_t *p, const void *val, char *buf, size_t len)
{
    if (p->type == HLX_PT_INT && p->choices != NULL) {
        const int v = *(const int *)val;
        char name[HLX_PARAM_STRLEN];
        if (hlx_param_choice(p, v, name, sizeof(name)) != NULL)
            snprintf(buf, len, "%s (%d)", name, v);
        else
            snprintf(buf, len, "%d", v);
    } else if (p->type == HLX_PT_INT) {
        snprintf(buf, len, "%d", *(const int *)val);
    } else if (p->type == HLX_PT_DOUBLE) {
        snprintf(buf, len, "%g", *(const double *)val);
    } else {
        snprintf(buf, len, "%s", (const char *)val);
    }
}

/* Converts text to the parameter's type into out; why receives the reason on error. */
static hlx_status_t hlx_param_convert(const hlx_param_t *p, const char *text, void *out,
                                      char *why, size_t whylen)
{
    char *dst = (char *)out + p->offset;
    hlx_status_t st;
    int64_t l;
    double d;

    switch (p->type) {
    case HLX_PT_INT:
        if (p->choices != NULL && !(text[0] >= '0' && text[0] <= '9') && text[0] != '-' &&
            text[0] != '+') { /* a name: the first is min */
            int idx;
            st = hlx_parse_choice(text, p->choices, &idx, why, whylen);
            if (st == HLX_OK)
                *(int *)dst = hlx_param_clamp(p->min) + idx;
            else
                snprintf(why + strlen(why), whylen - strlen(why), " (or %d to %d)",
                         hlx_param_clamp(p->min), hlx_param_clamp(p->max));
            return st;
        }
        st = hlx_parse_int(text, hlx_param_clamp(p->min), hlx_param_clamp(p->max), &l, why,
                           whylen);
        if (st == HLX_OK)
            *(int *)dst = (int)l;
        return st;
    case HLX_PT_DOUBLE:
        st = hlx_parse_num(text, p->min, p->max, &d, why, whylen);
        if (st == HLX_OK)
            *(double *)dst = d;
        return st;
    case HLX_PT_STRING:
        if (strlen(text) >= HLX_PARAM_STRLEN) {
            snprintf(why, whylen, "longer than %d characters", HLX_PARAM_STRLEN - 1);
            return HLX_ERR_INVALID;
        }
        if (p->choices != NULL) { /* one of the names, stored as the table spells it */
            char names[HLX_PARAM_STRLEN], *save = NULL, *tok;
            int idx, i;
            st = hlx_parse_choice(text, p->choices, &idx, why, whylen);
            if (st != HLX_OK)
                return st;
            snprintf(names, sizeof(names), "%s", p->choices);
            for (tok = strtok_r(names, "|", &save), i = 0; tok && i < idx;
                 tok = strtok_r(NULL, "|", &save), i++)
                ;
            strcpy(dst, tok ? tok : text);
            return HLX_OK;
        }
        strcpy(dst, text);
        return HLX_OK;
    }
    snprintf(why, whylen, "unknown parameter type");
    return HLX_ERR_INTERNAL;
}

hlx_status_t hlx_param_check(const hlx_param_t *p, const char *text, char *why, size_t whylen)
{
    union { double d; int64_t l; char s[HLX_PARAM_STRLEN]; } scratch;
    hlx_param_t at0 = *p;

    at0.offset = 0; /* converted into scratch, not into a settings struct */
    return hlx_param_convert(&at0, text, &scratch, why, whylen);
}

static hlx_status_t hlx_param_parse(const hlx_param_t *p, const char *text, void *out,
                                    const char *origin)
{
    char why[256];
    hlx_status_t st = hlx_param_convert(p, text, out, why, sizeof(why));

    if (st != HLX_OK) {
        if (!strcmp(origin, "environment")) {
            char name[48];
            snprintf(name, sizeof(name), "HELIX_%s", p->name);
            if (hlx_param_first_report(name))
                hlx_error("%s: %s", name, why);
        } else if (!strcmp(origin, "default")) {
            hlx_error("default of HELIX_%s: %s", p->name, why);
        } else {
            hlx_error("%s %s: %s", origin, p->name, why);
        }
    }
    return st;
}

hlx_status_t hlx_param_load(const hlx_param_table_t *table, void *out, hlx_param_src_t *src)
{
    char envname[128];
    size_t i;
    hlx_status_t st, bad = HLX_OK;

    for (i = 0; i < table->nparams; i++) {
        const hlx_param_t *p = &table->params[i];
        const char *v;
        st = hlx_param_parse(p, p->defval, out, "default");
        if (st != HLX_OK)
            return st;
        if (src)
            src[i] = HLX_SRC_DEFAULT;
        snprintf(envname, sizeof(envname), "HELIX_%s", p->name);
        v = getenv(envname);
        if (v != NULL) {
            st = hlx_param_parse(p, v, out, "environment");
            if (st != HLX_OK) {
                /* go on: every bad value of the table is reported in one run */
                bad = st;
                continue;
            }
            if (src)
                src[i] = HLX_SRC_ENV;
            if (hlx_log_enabled(HLX_LOG_INFO, HLX_SUB_CORE) && hlx_param_first_report(envname))
                hlx_info(HLX_SUB_CORE, "%s=%s from environment", envname, v);
        }
    }
    /* The rules between parameters, once each value is valid on its own. */
    if (bad == HLX_OK && table->check != NULL) {
        char why[512], key[48];
        if (table->check(out, why, sizeof(why)) != HLX_OK) {
            snprintf(key, sizeof(key), "rules of %s", table->component);
            if (hlx_param_first_report(key))
                hlx_error("%s", why);
            bad = HLX_ERR_INVALID;
        }
    }
    return bad;
}

hlx_status_t hlx_param_check_env(const hlx_param_table_t *const *tables, size_t ntables)
{
    hlx_status_t st = HLX_OK;
    size_t t;

    for (t = 0; t < ntables; t++) {
        void *vals = calloc(1, tables[t]->size);
        if (vals == NULL)
            return HLX_ERR_NOMEM;
        /* every table is checked, so that all bad values are reported in one run */
        if (hlx_param_load(tables[t], vals, NULL) != HLX_OK)
            st = HLX_ERR_INVALID;
        free(vals);
    }
    return st;
}

hlx_status_t hlx_param_set(const hlx_param_table_t *table, void *out, hlx_param_src_t *src,
                           const char *name, const char *value)
{
    size_t i;
    hlx_status_t st;

    for (i = 0; i < table->nparams; i++) {
        if (strcasecmp(table->params[i].name, name))
            continue;
        st = hlx_param_parse(&table->params[i], value, out, "setting");
        if (st == HLX_OK && src)
            src[i] = HLX_SRC_FLAG;
        return st;
    }
    return HLX_ERR_NOT_FOUND;
}

void hlx_param_print(FILE *f, const hlx_param_table_t *table, const void *values,
                     const hlx_param_src_t *src)
{
    size_t i;

    for (i = 0; i < table->nparams; i++) {
        const hlx_param_t *p = &table->params[i];
        char buf[HLX_PARAM_STRLEN + 32];
        hlx_param_format(p, (const char *)values + p->offset, buf, sizeof(buf));
        fprintf(f, "  HELIX_%-22s %-14s (%s)  %s\n", p->name, buf,
                src ? hlx_param_src_str(src[i]) : "default", p->help);
    }
}

void hlx_param_env_show(const char *name, size_t len, char *buf, size_t buflen)
{
    if (len <= HLX_PARAM_SHOW_NAME)
        snprintf(buf, buflen, "%.*s", (int)len, name);
    else
        snprintf(buf, buflen, "%.*s... (%zu characters)", HLX_PARAM_SHOW_NAME, name, len);
}

void hlx_param_warn_unknown(const hlx_param_table_t *const *tables, size_t ntables,
                            const char *const *extra_known, size_t nextra)
{
    const char *names[256];
    size_t n = 0, t, i;
    char **e;

    for (t = 0; t < ntables; t++)
        for (i = 0; i < tables[t]->nparams && n < 256; i++)
            names[n++] = tables[t]->params[i].name;
    for (i = 0; i < nextra && n < 256; i++)
        names[n++] = extra_known[i];
    for (e = environ; e && *e; e++) {
        char name[128], show[HLX_PARAM_SHOW_NAME + 32];
        const char *eq, *nm = *e + 6, *near = NULL;
        size_t len;
        int known = 0;
        if (strncmp(*e, "HELIX_", 6))
            continue;
        eq = strchr(*e, '=');
        if (!eq)
            continue;
        len = (size_t)(eq - nm); /* any length: a long name is warned about too */
        for (i = 0; i < n; i++) {
            size_t l = strlen(names[i]);
            /* "RUN_*" declares the variables of another program (helixrun) by prefix */
            if (l > 0 && names[i][l - 1] == '*')
                known |= len >= l - 1 && !strncmp(names[i], nm, l - 1);
            else
                known |= len == l && !strncmp(names[i], nm, l);
        }
        if (known)
            continue;
        if (len < sizeof(name)) { /* a longer one is near no declared name */
            snprintf(name, sizeof(name), "%.*s", (int)len, nm);
            near = hlx_nearest_name(name, names, n);
        }
        hlx_param_env_show(nm, len, show, sizeof(show));
        if (near)
            hlx_warn("unknown environment variable HELIX_%s (did you mean HELIX_%s?)", show,
                     near);
        else
            hlx_warn("unknown environment variable HELIX_%s", show);
    }
}

void hlx_param_print_env(FILE *f, const hlx_param_table_t *table)
{
    char envname[128], why[256], buf[HLX_PARAM_STRLEN + 32];
    unsigned char *vals = calloc(1, table->size);
    size_t i;

    if (vals == NULL)
        return;
    for (i = 0; i < table->nparams; i++) {
        const hlx_param_t *p = &table->params[i];
        const char *v, *src = "default";
        const void *val = vals + p->offset;
        snprintf(envname, sizeof(envname), "HELIX_%s", p->name);
        v = getenv(envname);
        if (hlx_param_convert(p, p->defval, vals, why, sizeof(why)) != HLX_OK) {
            snprintf(buf, sizeof(buf), "%s", p->defval);
            src = "default, invalid";
        } else if (v != NULL && hlx_param_convert(p, v, vals, why, sizeof(why)) != HLX_OK) {
            fprintf(f, "  %-28s %-14s (env, INVALID: %s)  %s\n", envname, v, why, p->help);
            continue;
        } else if (v != NULL) {
            src = "env";
        }
        hlx_param_format(p, val, buf, sizeof(buf));
        fprintf(f, "  %-28s %-14s (%s)  %s\n", envname, buf[0] ? buf : "\"\"", src, p->help);
    }
    /* A bad value above kept the default; the rules are judged on what would be used. */
    if (table->check != NULL && table->check(vals, why, sizeof(why)) != HLX_OK)
        fprintf(f, "  INVALID together: %s\n", why);
    free(vals);
}
