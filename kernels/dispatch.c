/* Chooses the kernel variant once at init from the CPU's features (dav1d-style): the
 * reference fills the table, the best supported ISA file overrides entries. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* syscall() under strict C modes too */
#endif
#include "hlx_kernels_priv.h"
#include "hlx_param.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(HLX_HAVE_AMX)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

typedef struct hlx_kernels_variant {
    const char *name;
    int       (*supported)(void);
    void      (*fill)(hlx_kernels_t *k);
    const char *needs; /* what supported() checks, for hlx_kernels_explain */
    unsigned    kv_auto; /* KV types auto may pick it for (bits 1 << hlx_dtype_t) */
} hlx_kernels_variant_t;

#define HLX_KV_ALL 0xffffffffu

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
    { "scalar", hlx_cpu_any, hlx_kernels_reference, "any CPU", HLX_KV_ALL },
#ifdef HLX_HAVE_X86_VARIANTS
    { "avx2", hlx_cpu_avx2, hlx_kernels_avx2, "avx2, fma", HLX_KV_ALL },
    { "avx512", hlx_cpu_avx512, hlx_kernels_avx512, "avx2, fma, avx512f, avx512bw, avx512vl",
      HLX_KV_ALL },
#endif
#ifdef HLX_HAVE_AMX
    { "amx", hlx_cpu_amx, hlx_kernels_amx,
      "avx512 plus amx-tile, amx-bf16 and the kernel's grant of the tile state (Linux 5.16+)",
      /* its tiles read key rows, so f32 and fp8 KV would take the row kernel, slower than
       * avx512's blocked keys: auto picks it for bf16 KV only */
      1u << HLX_DTYPE_BF16 },
#endif
};

#define HLX_NVARIANTS (sizeof(hlx_kernels_variants) / sizeof(hlx_kernels_variants[0]))

hlx_status_t hlx_kernels_init(const char *name, hlx_kernels_t *k)
{
    return hlx_kernels_init_kv(name, HLX_DTYPE_BF16, k);
}

/* The kernels' settings table: HELIX_KERNELS, the variant when no name is given,
 * HELIX_KV_PREFETCH, how the vector attentions prefetch their KV,
 * HELIX_FP8_LOOKUP, how that attention widens fp8 KV, HELIX_W_STRIPS, the layout
 * the runtime stores its projection weights in, and HELIX_W_PACKED, whether it keeps a
 * checkpoint's integer-packed weights packed. */
typedef struct hlx_kernels_settings {
    char variant[HLX_PARAM_STRLEN];
    int  kv_prefetch;
    int  fp8_lookup;
    int  w_strips;
    int  w_packed;
} hlx_kernels_settings_t;

static const hlx_param_t hlx_kernels_params[] = {
    { "KERNELS", HLX_PT_STRING, "auto", 0, 0, offsetof(hlx_kernels_settings_t, variant),
      "kernel variant when --kernels is not given: auto (the best this CPU runs for the KV "
      "type), scalar, avx2, avx512, amx", NULL },
    { "KV_PREFETCH", HLX_PT_INT, "auto", 0, 3, offsetof(hlx_kernels_settings_t, kv_prefetch),
      "how the avx512 and avx2 attentions bring in their KV: auto (2): the modes below "
      "timed on each long shard (16K tokens and more), the fastest kept and re-timed every "
      "256K tokens; software (1): the next blocks prefetched in software; software-l2 (3): "
      "that and the KV 256 tokens ahead into L2 (on a Zen 4 core 1.5x faster for f32 KV, "
      "1.07x for bf16); hardware (0): avx512 bf16 and fp8 left to the hardware prefetchers "
      "(on a Zen 5 core 8-11% faster than software most of the time, 1.6x slower at "
      "others), software otherwise",
      "hardware|software|auto|software-l2" },
    { "FP8_LOOKUP", HLX_PT_INT, "1", 0, 1, offsetof(hlx_kernels_settings_t, fp8_lookup),
      "1: the avx512 attention widens fp8 KV by byte-table lookups where the CPU has "
      "AVX512_VBMI; 0: by the fp16 widening every AVX-512 CPU has (as without VBMI, e.g. "
      "Skylake-X; about 1.1x slower on a Zen 5 core)", NULL },
    { "W_STRIPS", HLX_PT_INT, "1", 0, 1, offsetof(hlx_kernels_settings_t, w_strips),
      "1: projection weights stored in strips of 16 columns where the variant's GEMM reads "
      "them fast (avx512: from DRAM 1.1-1.9x the row-major speed at 1-8 rows on a Zen 5 "
      "core); 0: row-major everywhere (the same results, bit for bit)", NULL },
    { "W_PACKED", HLX_PT_INT, "auto", 0, 2, offsetof(hlx_kernels_settings_t, w_packed),
      "a checkpoint's integer-packed weights (GPTQ, AWQ, compressed-tensors; 4 or 8 bits) on "
      "the host backend: on (1) kept packed, a few KiB dequantized at a time inside the GEMM "
      "(4 bits: about 0.28x the bytes of bf16; the same results, bit for bit); off (0) "
      "dequantized to bf16 at load; auto (2) packed where the kernel variant's packed GEMM "
      "is the faster (avx512, amx: 1.5-2x faster from DRAM at one row), dequantized where "
      "it is slower (avx2: 2x, in registers; scalar: through scratch)",
      "off|on|auto" },
};

/* The settings as the environment gives them: a bad value (of any setting) is reported by
 * the load and keeps its default. */
static hlx_kernels_settings_t hlx_kernels_settings(void)
{
    hlx_kernels_settings_t s;

    (void)hlx_param_load(&hlx_kernels_param_table, &s, NULL);
    return s;
}

int hlx_kernels_w_packed(void)
{
    return hlx_kernels_settings().w_packed;
}

int hlx_kernels_w_packed_for(const hlx_kernels_t *k)
{
    const int s = hlx_kernels_w_packed();

    return s == 2 ? k->wq_fast : s;
}

int hlx_kernels_fp8_lookup(void)
{
    return hlx_kernels_settings().fp8_lookup;
}

int hlx_kernels_fp8_vbmi(void)
{
#ifdef HLX_HAVE_X86_VARIANTS
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vbmi") && hlx_kernels_fp8_lookup();
#else
    return 0;
#endif
}

const char *hlx_kernels_fp8_widening(const char *variant)
{
    if (variant == NULL || (strcmp(variant, "avx512") && strcmp(variant, "avx2")))
        return "exact";
    if (!strcmp(variant, "avx2"))
        return "fp32-bits";
    return hlx_kernels_fp8_vbmi() ? "lookup" : "fp16";
}

atomic_int hlx_kv_prefetch_pick = -1;

int hlx_kernels_kv_prefetch_pick(void)
{
    return atomic_load_explicit(&hlx_kv_prefetch_pick, memory_order_relaxed);
}

int hlx_kernels_kv_prefetch(void)
{
    return hlx_kernels_settings().kv_prefetch;
}

const char *hlx_kernels_kv_prefetch_name(int mode, char *buf, size_t len)
{
    size_t i;

    for (i = 0; i < sizeof(hlx_kernels_params) / sizeof(hlx_kernels_params[0]); i++)
        if (!strcmp(hlx_kernels_params[i].name, "KV_PREFETCH") &&
            hlx_param_choice(&hlx_kernels_params[i], mode, buf, len) != NULL)
            return buf;
    snprintf(buf, len, "%d", mode);
    return buf;
}

const hlx_param_table_t hlx_kernels_param_table = {
    "kernels", hlx_kernels_params, sizeof(hlx_kernels_params) / sizeof(hlx_kernels_params[0]),
    sizeof(hlx_kernels_settings_t), NULL,
};

const char *hlx_kernels_env_variant(char *buf, size_t n)
{
    hlx_kernels_settings_t s;
    hlx_param_src_t src[sizeof(hlx_kernels_params) / sizeof(hlx_kernels_params[0])];

    /* a bad HELIX_KV_PREFETCH is reported by the load and does not hide HELIX_KERNELS; a
     * bad HELIX_KERNELS keeps its default source */
    (void)hlx_param_load(&hlx_kernels_param_table, &s, src);
    if (src[0] != HLX_SRC_ENV ||
        s.variant[0] == '\0' || !strcmp(s.variant, "auto"))
        return NULL;
    snprintf(buf, n, "%s", s.variant);
    return buf;
}

hlx_status_t hlx_kernels_init_kv(const char *name, hlx_dtype_t kv_dtype, hlx_kernels_t *k)
{
    const hlx_kernels_variant_t *best = NULL;
    size_t i;

    char env[HLX_PARAM_STRLEN];

    if (name == NULL)
        name = hlx_kernels_env_variant(env, sizeof(env));
    if (name != NULL && name[0] == '\0')
        name = NULL;
    for (i = 0; i < HLX_NVARIANTS; i++) {
        const hlx_kernels_variant_t *v = &hlx_kernels_variants[i];
        if (name != NULL && strcmp(name, "auto") != 0) {
            if (!strcmp(name, v->name)) {
                if (!v->supported())
                    return HLX_ERR_UNSUPPORTED;
                v->fill(k);
                k->w_s16 &= hlx_kernels_settings().w_strips;
                return HLX_OK;
            }
            continue;
        }
        if (v->supported() && (v->kv_auto >> (unsigned)kv_dtype & 1u))
            best = v;
    }
    if (best == NULL)
        return HLX_ERR_UNSUPPORTED; /* a named variant that is not compiled in */
    best->fill(k);
    k->w_s16 &= hlx_kernels_settings().w_strips;
    return HLX_OK;
}

static void hlx_kx_put(char *buf, size_t n, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

hlx_status_t hlx_kernels_init_shape(const char *name, hlx_dtype_t kv_dtype,
                                    const hlx_kernels_shape_t *s, hlx_kernels_t *k, char *why,
                                    size_t whylen)
{
    static const hlx_kernels_shape_t none = { 0, 0, 0, 1 };
    const hlx_kernels_shape_t *sh = s != NULL ? s : &none;
    const int head_dim = sh->head_dim, group = sh->group, softcap = sh->softcap,
              threads = sh->threads > 0 ? sh->threads : 1;
    char env[HLX_PARAM_STRLEN];
    /* NULL or "": HELIX_KERNELS when set (as hlx_kernels_init_kv); "auto": auto */
    const char *named = name != NULL && name[0] != '\0' && strcmp(name, "auto") != 0 ? name
                        : name == NULL || name[0] == '\0'
                            ? hlx_kernels_env_variant(env, sizeof(env))
                            : NULL;
    hlx_status_t st = hlx_kernels_init_kv(named != NULL ? named : "auto", kv_dtype, k);
    size_t at = 0;

    if (why != NULL && whylen > 0)
        why[0] = '\0';
    if (st != HLX_OK)
        return st;
    if (named != NULL) {
        if (why != NULL)
            hlx_kx_put(why, whylen, &at, "%s: named by %s, kept whatever the shape", k->name,
                       named == name ? "--kernels" : "HELIX_KERNELS");
        return HLX_OK;
    }
    /* auto's amx gives way to avx512 where its tiles lose (hlx_kernels.h): the first reason
     * that holds */
    if (!strcmp(k->name, "amx")) {
        char r[256];
        r[0] = '\0';
        if (softcap)
            snprintf(r, sizeof(r), "soft-capped scores (amx's tiles do not cap them; its row "
                     "kernel would run the reference loop)");
        else if (kv_dtype == HLX_DTYPE_BF16 && group > 0 && group < HLX_KERNELS_AMX_MIN_GROUP)
            snprintf(r, sizeof(r), "bf16 KV with %d query head%s per KV head < %d (amx's tile "
                     "products would hold %d of their 16 columns)", group,
                     group == 1 ? "" : "s", HLX_KERNELS_AMX_MIN_GROUP, group);
        else if (kv_dtype == HLX_DTYPE_BF16 && threads > 1 && head_dim > 0 &&
                 head_dim < HLX_KERNELS_AMX_MIN_HEAD)
            snprintf(r, sizeof(r), "bf16 KV with head size %d < %d and %d threads per rank "
                     "(amx's tiles scale worse over the rank's cores at this head size; one "
                     "thread would take amx)", head_dim, HLX_KERNELS_AMX_MIN_HEAD, threads);
        if (r[0] != '\0' && hlx_kernels_init_kv("avx512", kv_dtype, k) == HLX_OK) {
            if (why != NULL)
                hlx_kx_put(why, whylen, &at, "avx512: auto for %s", r);
            return HLX_OK;
        }
    }
    if (why != NULL)
        hlx_kx_put(why, whylen, &at, "%s: auto, the best this CPU runs for %s KV (head size "
                   "%d, group %d, %d thread%s per rank)", k->name, hlx_dtype_name(kv_dtype),
                   head_dim, group, threads, threads == 1 ? "" : "s");
    return HLX_OK;
}

/* snprintf that appends at *at and never runs past n. */
static void hlx_kx_put(char *buf, size_t n, size_t *at, const char *fmt, ...)
{
    va_list ap;
    int w;

    if (*at >= n)
        return;
    va_start(ap, fmt);
    w = vsnprintf(buf + *at, n - *at, fmt, ap);
    va_end(ap);
    if (w > 0)
        *at = *at + (size_t)w < n ? *at + (size_t)w : n;
}

void hlx_kernels_init_error(const char *name, char *buf, size_t n)
{
    const char *names[8];
    const char *src = "--kernels";
    size_t i, m = hlx_kernels_list(names, 8), at = 0;

    if (n == 0)
        return;
    buf[0] = '\0';
    if (name == NULL || !strcmp(name, "auto")) {
        char ebuf[HLX_PARAM_STRLEN];
        const char *env = hlx_kernels_env_variant(ebuf, sizeof(ebuf));
        if (name == NULL && env != NULL) {
            name = env;
            src = "HELIX_KERNELS";
        }
    }
    hlx_kx_put(buf, n, &at, "%s%s%s: not a kernel variant this CPU runs (available: auto", src,
               !strcmp(src, "HELIX_KERNELS") ? "=" : " ", name ? name : "auto");
    for (i = 0; i < m && i < 8; i++)
        hlx_kx_put(buf, n, &at, ", %s", names[i]);
    hlx_kx_put(buf, n, &at, ")");
}

size_t hlx_kernels_explain(char *buf, size_t n)
{
    static const char *const feats[] = {
        "sse4.2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq",
        "avx512bf16", "avx512vbmi", "avx512fp16",
    };
    char ebuf[HLX_PARAM_STRLEN];
    const char *env = hlx_kernels_env_variant(ebuf, sizeof(ebuf));
    hlx_kernels_t k;
    size_t i, at = 0;

    if (n == 0)
        return 0;
    buf[0] = '\0';
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    hlx_kx_put(buf, n, &at, "cpu features found:");
#define HLX_KX_FEAT(f) \
    if (!strcmp(feats[i], f) && __builtin_cpu_supports(f)) \
        hlx_kx_put(buf, n, &at, " %s", f);
    for (i = 0; i < sizeof(feats) / sizeof(feats[0]); i++) {
        HLX_KX_FEAT("sse4.2") HLX_KX_FEAT("avx") HLX_KX_FEAT("avx2") HLX_KX_FEAT("fma")
        HLX_KX_FEAT("f16c") HLX_KX_FEAT("avx512f") HLX_KX_FEAT("avx512bw")
        HLX_KX_FEAT("avx512vl") HLX_KX_FEAT("avx512dq") HLX_KX_FEAT("avx512bf16")
        HLX_KX_FEAT("avx512vbmi") HLX_KX_FEAT("avx512fp16")
    }
#undef HLX_KX_FEAT
#ifdef HLX_HAVE_AMX
    {
        unsigned a, b, c, d;
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
            if (d & (1u << 24))
                hlx_kx_put(buf, n, &at, " amx-tile");
            if (d & (1u << 22))
                hlx_kx_put(buf, n, &at, " amx-bf16");
        }
    }
#endif
    hlx_kx_put(buf, n, &at, "\n");
#else
    (void)feats;
#endif
    for (i = 0; i < HLX_NVARIANTS; i++) {
        const hlx_kernels_variant_t *v = &hlx_kernels_variants[i];
        const int ok = v->supported();
        hlx_kx_put(buf, n, &at, "  %-7s %s (needs %s)", v->name,
                   ok ? "usable     " : "not usable ", v->needs);
        if (ok) { /* the KV layout its attention reads (hlx_kv_layout_t) */
            v->fill(&k);
            if (k.kv_layout.k_block > 1)
                hlx_kx_put(buf, n, &at, "; KV: keys in %d-token blocks, ", k.kv_layout.k_block);
            else
                hlx_kx_put(buf, n, &at, "; KV: key rows, ");
            if (k.kv_layout.v_block > 1 && k.kv_layout.v_chunk > 1)
                hlx_kx_put(buf, n, &at, "values in %d-token blocks of %d-element runs",
                           k.kv_layout.v_block, k.kv_layout.v_chunk);
            else if (k.kv_layout.v_block > 1)
                hlx_kx_put(buf, n, &at, "values in %d-token blocks", k.kv_layout.v_block);
            else
                hlx_kx_put(buf, n, &at, "value rows");
        }
        hlx_kx_put(buf, n, &at, "\n");
    }
    if (env != NULL && env[0] != '\0' && strcmp(env, "auto") != 0)
        hlx_kx_put(buf, n, &at, "selected: %s, named by HELIX_KERNELS=%s%s\n",
                   hlx_kernels_init(NULL, &k) == HLX_OK ? k.name : "none", env,
                   hlx_kernels_init(NULL, &k) == HLX_OK ? "" : " (not usable here)");
    else {
        static const hlx_dtype_t kv[] = { HLX_DTYPE_BF16, HLX_DTYPE_F32, HLX_DTYPE_FP8 };
        hlx_kx_put(buf, n, &at, "selected: the last usable variant in the order above that "
                   "auto takes for the KV type (HELIX_KERNELS or --kernels/--variant name "
                   "another):");
        for (i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
            if (hlx_kernels_init_kv("auto", kv[i], &k) == HLX_OK)
                hlx_kx_put(buf, n, &at, " %s KV %s%s", hlx_dtype_name(kv[i]), k.name,
                           i + 1 < sizeof(kv) / sizeof(kv[0]) ? "," : "\n");
        if (hlx_kernels_init_kv("auto", HLX_DTYPE_BF16, &k) == HLX_OK &&
            !strcmp(k.name, "amx"))
            hlx_kx_put(buf, n, &at, "  a rank with fewer than %d query heads per KV head, or "
                       "with several threads and head size below %d, takes avx512 for bf16 "
                       "KV (amx's tiles would run mostly empty, or scale worse over the "
                       "cores); helix decode logs the choice per run\n",
                       HLX_KERNELS_AMX_MIN_GROUP, HLX_KERNELS_AMX_MIN_HEAD);
    }
    return at;
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

int hlx_kernels_attn_vector(const hlx_kernels_t *k, hlx_dtype_t t, int group, int dk, int dv,
                            int v_is_k, int softcap)
{
    static const char kv[2]; /* only the pointers' equality is read: v == k or not */
    const hlx_attn_desc_t d = { .group = group, .dk = dk, .dv = dv, .kv_dtype = t,
                                .k = &kv[0], .v = v_is_k ? &kv[0] : &kv[1],
                                .softcap = softcap ? 1.0f : 0.0f };

    return k->attn_covers == NULL || k->attn_covers(&d);
}
