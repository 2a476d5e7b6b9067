/* Names of element types. */
#include <helix/types.h>
#include <string.h>
#include <strings.h>

const char *hlx_dtype_name(hlx_dtype_t t)
{
    static const char *const names[HLX_DTYPE_COUNT] = { "f32", "bf16", "fp8", "fp4" };
    return (unsigned)t < HLX_DTYPE_COUNT ? names[t] : "?";
}

int hlx_dtype_parse(const char *s, hlx_dtype_t *t_p)
{
    static const struct { const char *name; hlx_dtype_t t; } tab[] = {
        { "f32", HLX_DTYPE_F32 },  { "fp32", HLX_DTYPE_F32 }, { "float32", HLX_DTYPE_F32 },
        { "bf16", HLX_DTYPE_BF16 }, { "bfloat16", HLX_DTYPE_BF16 },
        { "fp8", HLX_DTYPE_FP8 },  { "e4m3", HLX_DTYPE_FP8 }, { "fp8_e4m3", HLX_DTYPE_FP8 },
        { "fp4", HLX_DTYPE_FP4 },
    };
    size_t i;

    for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
        if (!strcasecmp(s, tab[i].name)) {
            *t_p = tab[i].t;
            return 0;
        }
    }
    return -1;
}
