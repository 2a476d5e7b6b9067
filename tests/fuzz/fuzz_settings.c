/* libFuzzer target: settings text (flags, HELIX_* values, --set NAME=VALUE) through the one
 * parser and the settings tables. Accepted integers lie in their bounds and print back to
 * text that parses to the same value; nothing else is ever written. */
#include "fuzz_common.h"

#include "hlx_param.h"
#include "hlx_parse.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int    n;
    double d;
    char   s[HLX_PARAM_STRLEN];
    char   guard[8];
} fuzz_set_t;

static const hlx_param_t fuzz_params[] = {
    { "FUZZ_N", HLX_PT_INT, "1", -1000, 1 << 30, offsetof(fuzz_set_t, n), "int" },
    { "FUZZ_D", HLX_PT_DOUBLE, "1", -1e6, 1e6, offsetof(fuzz_set_t, d), "double" },
    { "FUZZ_S", HLX_PT_STRING, "x", 0, 0, offsetof(fuzz_set_t, s), "string" },
};
static const hlx_param_table_t fuzz_table = { "fuzz", fuzz_params, 3, sizeof(fuzz_set_t) };

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
    if (set.n < -1000 || set.n > (1 << 30) || !(set.d >= -1e6 && set.d <= 1e6) ||
        memchr(set.s, '\0', sizeof(set.s)) == NULL)
        abort();
    for (idx = 0; idx < 8; idx++)
        if (set.guard[idx] != 0x5a)
            abort();
    free(text);
    return 0;
}
