/* Chooses the kernel variant once at init from the CPU's features (dav1d-style): the
 * reference fills the table, the best supported ISA file overrides entries. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* syscall() under strict C modes too */
#endif
#include "hlx_kernels_priv.h"

#include <stdlib.h>
#include <string.h>
#ifdef HLX_HAVE_AMX
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

typedef struct hlx_kernels_variant {
    const char *name;
    int       (*supported)(void);
    void      (*fill)(hlx_kernels_t *k);
} hlx_kernels_variant_t;

static int hlx_cpu_any(void)
{
    return 1;
}

#ifdef HLX_HAVE_X86_VARIANTS
static int hlx_cpu_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static int hlx_cpu_avx512(void)
{
    __builtin_cpu_init();
    return hlx_cpu_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}
#endif

#ifdef HLX_HAVE_AMX
/* AMX-TILE and AMX-BF16 (CPUID 7.0 EDX bits 24, 22), and the kernel's grant of the tile
 * state to this process (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA, Linux 5.16+; asked
 * once here, at init, never in a kernel). */
static int hlx_cpu_amx(void)
{
    unsigned a, b, c, d;

    if (!hlx_cpu_avx512() || !__get_cpuid_count(7, 0, &a, &b, &c, &d) ||
        !(d & (1u << 24)) || !(d & (1u << 22)))
        return 0;
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                   18 /* XFEATURE_XTILEDATA */) == 0;
}
#endif

/* Worst to best; hlx_kernels_init(NULL) takes the last supported one. */
static const hlx_kernels_variant_t hlx_kernels_variants[] = {
    { "scalar", hlx_cpu_any, hlx_kernels_reference },
#ifdef HLX_HAVE_X86_VARIANTS
    { "avx2", hlx_cpu_avx2, hlx_kernels_avx2 },
    { "avx512", hlx_cpu_avx512, hlx_kernels_avx512 },
#endif
#ifdef HLX_HAVE_AMX
    { "amx", hlx_cpu_amx, hlx_kernels_amx },
#endif
};

#define HLX_NVARIANTS (sizeof(hlx_kernels_variants) / sizeof(hlx_kernels_variants[0]))

hlx_status_t hlx_kernels_init(const char *name, hlx_kernels_t *k)
{
    const hlx_kernels_variant_t *best = NULL;
    size_t i;

    if (name == NULL)
        name = getenv("HELIX_KERNELS");
    if (name != NULL && name[0] == '\0')
        name = NULL;
    for (i = 0; i < HLX_NVARIANTS; i++) {
        const hlx_kernels_variant_t *v = &hlx_kernels_variants[i];
        if (name != NULL && strcmp(name, "auto") != 0) {
            if (!strcmp(name, v->name)) {
                if (!v->supported())
                    return HLX_ERR_UNSUPPORTED;
                v->fill(k);
                return HLX_OK;
            }
            continue;
        }
        if (v->supported())
            best = v;
    }
    if (best == NULL)
        return HLX_ERR_UNSUPPORTED; /* a named variant that is not compiled in */
    best->fill(k);
    return HLX_OK;
}

size_t hlx_kernels_list(const char **names, size_t max)
{
    size_t i, n = 0;

    for (i = 0; i < HLX_NVARIANTS; i++) {
        if (!hlx_kernels_variants[i].supported())
            continue;
        if (n < max)
            names[n] = hlx_kernels_variants[i].name;
        n++;
    }
    return n;
}
