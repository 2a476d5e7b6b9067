/* Settings tables: defaults, environment overrides, flags, printing and unknown-name warnings. */
#define _GNU_SOURCE
#include "hlx_param.h"
#include "hlx_json.h"
#include "hlx_log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

const char *hlx_param_src_str(hlx_param_src_t src)
{
    static const char *const names[] = { "default", "env", "file", "flag" };
    return (unsigned)src < 4 ? names[src] : "?";
}

static hlx_status_t hlx_param_parse(const hlx_param_t *p, const char *text, void *out,
                                    const char *origin)
{
    char *dst = (char *)out + p->offset, *end;
    double d;
    long long l;

    switch (p->type) {
    case HLX_PT_INT:
        errno = 0;
        l = strtoll(text, &end, 0);
        if (errno || end == text || *end || l < p->min || l > p->max) {
            hlx_error("%s: HELIX_%s=\"%s\": expected an integer in [%g, %g]", origin,
                      p->name, text, p->min, p->max);
            return HLX_ERR_INVALID;
        }
        *(int *)dst = (int)l;
        return HLX_OK;
    case HLX_PT_DOUBLE:
        errno = 0;
        d = strtod(text, &end);
        if (errno || end == text || *end || !isfinite(d) || d < p->min || d > p->max) {
            hlx_error("%s: HELIX_%s=\"%s\": expected a number in [%g, %g]", origin, p->name,
                      text, p->min, p->max);
            return HLX_ERR_INVALID;
        }
        *(double *)dst = d;
        return HLX_OK;
    case HLX_PT_STRING:
        if (strlen(text) >= HLX_PARAM_STRLEN) {
            hlx_error("%s: HELIX_%s: longer than %d characters", origin, p->name,
                      HLX_PARAM_STRLEN - 1);
            return HLX_ERR_INVALID;
        }
        strcpy(dst, text);
        return HLX_OK;
    }
    return HLX_ERR_INTERNAL;
}

hlx_status_t hlx_param_load(const hlx_param_table_t *table, void *out, hlx_param_src_t *src)
{
    char envname[128];
    size_t i;
    hlx_status_t st;

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
            if (st != HLX_OK)
                return st;
            if (src)
                src[i] = HLX_SRC_ENV;
            hlx_info(HLX_SUB_CORE, "%s=%s from environment", envname, v);
        }
    }
    return HLX_OK;
}

hlx_status_t hlx_param_set(const hlx_param_table_t *table, void *out, hlx_param_src_t *src,
                           const char *name, const char *value)
{
    size_t i;
    hlx_status_t st;

    for (i = 0; i < table->nparams; i++) {
        if (strcasecmp(table->params[i].name, name))
            continue;
        st = hlx_param_parse(&table->params[i], value, out, "flag");
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
        const char *v = (const char *)values + p->offset;
        char buf[HLX_PARAM_STRLEN + 32];
        if (p->type == HLX_PT_INT)
            snprintf(buf, sizeof(buf), "%d", *(const int *)v);
        else if (p->type == HLX_PT_DOUBLE)
            snprintf(buf, sizeof(buf), "%g", *(const double *)v);
        else
            snprintf(buf, sizeof(buf), "%s", v);
        fprintf(f, "  HELIX_%-22s %-14s (%s)  %s\n", p->name, buf,
                src ? hlx_param_src_str(src[i]) : "default", p->help);
    }
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
        char name[128];
        const char *eq;
        int known = 0;
        if (strncmp(*e, "HELIX_", 6))
            continue;
        eq = strchr(*e, '=');
        if (!eq || (size_t)(eq - *e - 6) >= sizeof(name))
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)(eq - *e - 6), *e + 6);
        for (i = 0; i < n; i++)
            known |= !strcmp(names[i], name);
        if (!known) {
            const char *near = hlx_nearest_name(name, names, n);
            if (near)
                hlx_warn("unknown environment variable HELIX_%s (did you mean HELIX_%s?)",
                         name, near);
            else
                hlx_warn("unknown environment variable HELIX_%s", name);
        }
    }
}
