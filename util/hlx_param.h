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
    /* or NULL. Integers: the names of min, min + 1, ... separated by '|' ("hardware|
     * software|auto"); a name is then taken as its value (numbers too) and printed for it.
     * Strings: the accepted values ("auto|on|off", any case, stored as spelled here) */
    const char *choices;
} hlx_param_t;

typedef struct hlx_param_table {
    const char        *component;
    const hlx_param_t *params;
    size_t             nparams;
    size_t             size;   /* sizeof the settings struct */
    /* or NULL: the rules between parameters (a timeout longer than an interval), given
     * the loaded values; on failure it writes the reason (naming the variables) to why.
     * hlx_param_load reports it once and fails, `helix info` marks it. */
    hlx_status_t (*check)(const void *values, char *why, size_t whylen);
} hlx_param_table_t;

/* The core settings of util (HELIX_DEBUG, HELIX_DEBUG_SUBSYS, HELIX_DATA_DIR,
 * HELIX_INPUT_TIMEOUT), filling an hlx_core_settings_t (hlx_log.h). */
extern const hlx_param_table_t hlx_core_param_table;

/* Fills out with defaults, then environment overrides (logged at INFO). src (may be NULL)
 * receives one source per parameter. Bad values: HLX_ERR_INVALID after a message for each
 * (the parameter keeps its default); each bad or overriding variable is reported once per
 * process however often a table is loaded.
 * Integers follow hlx_parse_int (K, M, G, T suffixes), numbers hlx_parse_num. */
/* Whether text is a valid value of p (its bounds, choices, length), without storing or
 * logging it: the reason goes to why. For callers that report bad values themselves. */
hlx_status_t hlx_param_check(const hlx_param_t *p, const char *text, char *why, size_t whylen);
hlx_status_t hlx_param_load(const hlx_param_table_t *table, void *out, hlx_param_src_t *src);
/* Sets one parameter from text (a flag); records HLX_SRC_FLAG. */
hlx_status_t hlx_param_set(const hlx_param_table_t *table, void *out, hlx_param_src_t *src,
                           const char *name, const char *value);
void hlx_param_print(FILE *f, const hlx_param_table_t *table, const void *values,
                     const hlx_param_src_t *src);
/* Prints every parameter of the table with the value it has in this environment and its
 * source (default or env); a bad environment value is shown with its reason. */
void hlx_param_print_env(FILE *f, const hlx_param_table_t *table);
/* Loads every table once to check the environment: HLX_ERR_INVALID when a value is bad
 * (each reported once, already logged). */
hlx_status_t hlx_param_check_env(const hlx_param_table_t *const *tables, size_t ntables);
/* Warns once for each HELIX_* environment variable no table declares, with the nearest
 * declared name. An extra_known name ending in '*' is a prefix ("RUN_*"). */
void hlx_param_warn_unknown(const hlx_param_table_t *const *tables, size_t ntables,
                            const char *const *extra_known, size_t nextra);
/* The name[0, len) of an environment variable as a warning shows it, into buf: whole up to
 * HLX_PARAM_SHOW_NAME characters, else its start, "..." and its length, so that a name of
 * any length can be warned about. */
#define HLX_PARAM_SHOW_NAME 100
void hlx_param_env_show(const char *name, size_t len, char *buf, size_t buflen);
const char *hlx_param_src_str(hlx_param_src_t src);
/* The name choices gives an integer parameter's value v ("software-l2"), copied into buf;
 * NULL when it names none (no choices, or v out of them). */
const char *hlx_param_choice(const hlx_param_t *p, int v, char *buf, size_t len);

#endif
