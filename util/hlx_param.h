/* Settings tables: every tunable of a component declared once with type, default, bounds
 * and help. Values come from the default, then HELIX_<NAME> in the environment, then a
 * command-line flag; `helix info` prints each with where it came from. */
#ifndef HLX_PARAM_H
#define HLX_PARAM_H

#include <helix/status.h>
#include <stddef.h>
#include <stdio.h>

typedef enum { HLX_PT_INT, HLX_PT_DOUBLE, HLX_PT_STRING } hlx_ptype_t;
typedef enum { HLX_SRC_DEFAULT, HLX_SRC_ENV, HLX_SRC_FILE, HLX_SRC_FLAG } hlx_param_src_t;

#define HLX_PARAM_STRLEN 256

typedef struct hlx_param {
    const char *name;    /* upper case without prefix: "TIMEOUT" reads HELIX_TIMEOUT */
    hlx_ptype_t type;
    const char *defval;
    double      min, max; /* inclusive bounds for numbers */
    size_t      offset;   /* into the component's settings struct; strings are char[256] */
    const char *help;
} hlx_param_t;

typedef struct hlx_param_table {
    const char        *component;
    const hlx_param_t *params;
    size_t             nparams;
    size_t             size;   /* sizeof the settings struct */
} hlx_param_table_t;

/* Fills out with defaults, then environment overrides (logged at INFO). src (may be NULL)
 * receives one source per parameter. Bad values: HLX_ERR_INVALID with a message. */
hlx_status_t hlx_param_load(const hlx_param_table_t *table, void *out, hlx_param_src_t *src);
/* Sets one parameter from text (a flag); records HLX_SRC_FLAG. */
hlx_status_t hlx_param_set(const hlx_param_table_t *table, void *out, hlx_param_src_t *src,
                           const char *name, const char *value);
void hlx_param_print(FILE *f, const hlx_param_table_t *table, const void *values,
                     const hlx_param_src_t *src);
/* Warns once for each HELIX_* environment variable no table declares. */
void hlx_param_warn_unknown(const hlx_param_table_t *const *tables, size_t ntables,
                            const char *const *extra_known, size_t nextra);
const char *hlx_param_src_str(hlx_param_src_t src);

#endif
