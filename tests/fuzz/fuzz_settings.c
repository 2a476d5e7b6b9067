/* libFuzzer target: settings text (HELIX_* values, --set NAME=VALUE, whole command lines)
 * through the one parser, the settings tables and the flag tables. Accepted integers lie
 * in their bounds and print back to text that parses to the same value; nothing outside
 * the settings is ever written. */
#include "fuzz_common.h"

#include "hlx_flags.h"
#include "hlx_param.h"
#include "hlx_parse.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int    n;
    double d;
    char   s[HLX_PARAM_STRLEN];
    int    c;
    char   guard[8];
} fuzz_set_t;

static const hlx_param_t fuzz_params[] = {
    { "FUZZ_N", HLX_PT_INT, "1", -1000, 1 << 30, offsetof(fuzz_set_t, n), "int", NULL },
    { "FUZZ_D", HLX_PT_DOUBLE, "1", -1e6, 1e6, offsetof(fuzz_set_t, d), "double", NULL },
    { "FUZZ_S", HLX_PT_STRING, "x", 0, 0, offsetof(fuzz_set_t, s), "string", NULL },
    { "FUZZ_C", HLX_PT_INT, "b", 3, 5, offsetof(fuzz_set_t, c), "choice", "a|b|c" },
};
static const hlx_param_table_t fuzz_table = { "fuzz", fuzz_params, 4, sizeof(fuzz_set_t), NULL };

typedef struct {
    int64_t     n;
    double      d;
    const char *s;
    int         b, c;
    char        guard[8];
} fuzz_opts_t;

static const hlx_flag_t fuzz_flag_list[] = {
    { "n", HLX_FT_INT, "4K", 1, INT64_C(1) << 40, 0, 0, NULL, offsetof(fuzz_opts_t, n), "N", "" },
    { "d", HLX_FT_NUM, "1", 0, 0, -1, 1, NULL, offsetof(fuzz_opts_t, d), "X", "" },
    { "s", HLX_FT_STRING, NULL, 0, 0, 0, 0, NULL, offsetof(fuzz_opts_t, s), "S", "" },
    { "b", HLX_FT_BOOL, NULL, 0, 0, 0, 0, NULL, offsetof(fuzz_opts_t, b), NULL, "" },
    { "c", HLX_FT_CHOICE, "on", 0, 0, 0, 0, "on|off|auto", offsetof(fuzz_opts_t, c), "C", "" },
};
static const hlx_flag_table_t fuzz_flags = { "fuzz", fuzz_flag_list, 5, NULL, 0 };

/* The input split at spaces as a command line "fuzz ARG...". */
static void fuzz_command_line(const char *text)
{
    char *copy = strdup(text), *argv[17], *save = NULL, *tok;
    int argc = 1, i, given[HLX_FLAGS_MAX];
    fuzz_opts_t o;

    if (copy == NULL)
        return;
    argv[0] = "fuzz";
    for (tok = strtok_r(copy, " ", &save); tok && argc < 16; tok = strtok_r(NULL, " ", &save))
        argv[argc++] = tok;
    argv[argc] = NULL;
    memset(&o, 0, sizeof(o));
    memset(o.guard, 0x5a, sizeof(o.guard));
    if (hlx_flags_parse(&fuzz_flags, argc, argv, &o, given, NULL, NULL) == -1 &&
        (o.n < 1 || o.n > (INT64_C(1) << 40) || !(o.d >= -1 && o.d <= 1) || o.c < 0 ||
         o.c > 2 || (o.s != NULL && o.s[0] == '\0')))
        abort();
    for (i = 0; i < 8; i++)
        if (o.guard[i] != 0x5a)
            abort();
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), why[256], back[32];
    const char *eq;
    fuzz_set_t set;
    int64_t v, w;
    double d;
    int idx;

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (hlx_parse_int(text, -5, INT64_MAX / 3, &v, why, sizeof(why)) == HLX_OK) {
        if (v < -5 || v > INT64_MAX / 3)
            abort();
        snprintf(back, sizeof(back), "%" PRId64, v);
        if (hlx_parse_int(back, -5, INT64_MAX / 3, &w, why, sizeof(why)) != HLX_OK || w != v)
            abort();
    }
    if (hlx_parse_num(text, -1e300, 1e300, &d, why, sizeof(why)) == HLX_OK &&
        !(d >= -1e300 && d <= 1e300))
        abort();
    if (hlx_parse_choice(text, "ERROR|WARN|INFO|DEBUG|TRACE", &idx, why, sizeof(why)) == HLX_OK &&
        (idx < 0 || idx > 4))
        abort();
    memset(&set, 0, sizeof(set));
    memset(set.guard, 0x5a, sizeof(set.guard));
    /* NAME=VALUE as --set gives it, and each type taking the whole text */
    eq = strchr(text, '=');
    if (eq != NULL) {
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - text < 63 ? eq - text : 63), text);
        (void)hlx_param_set(&fuzz_table, &set, NULL, name, eq + 1);
    }
    (void)hlx_param_set(&fuzz_table, &set, NULL, "FUZZ_N", text);
    (void)hlx_param_set(&fuzz_table, &set, NULL, "FUZZ_D", text);
    (void)hlx_param_set(&fuzz_table, &set, NULL, "FUZZ_S", text);
    set.c = 4;
    (void)hlx_param_set(&fuzz_table, &set, NULL, "FUZZ_C", text);
    if (set.n < -1000 || set.n > (1 << 30) || !(set.d >= -1e6 && set.d <= 1e6) ||
        memchr(set.s, '\0', sizeof(set.s)) == NULL || set.c < 3 || set.c > 5)
        abort();
    for (idx = 0; idx < 8; idx++)
        if (set.guard[idx] != 0x5a)
            abort();
    fuzz_command_line(text);
    free(text);
    return 0;
}
