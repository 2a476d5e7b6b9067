/* The variant choice for a rank's shape (hlx_kernels_init_shape): auto follows the KV type,
 * the head size, the group and the threads per rank; a name or HELIX_KERNELS binds whatever
 * the shape.
 * Exit 0 on success, 1 on the first failure. */
#include "kt_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int kt_fail;

/* Chooses for (name, kv, head size, group (0: not known), threads) and checks the variant
 * and the reason's start. */
static void kt_pick_full(const char *name, hlx_dtype_t kv, int dk, int group, int softcap,
                         int threads, const char *want, const char *why_has)
{
    const hlx_kernels_shape_t sh = { dk, group, softcap, threads };
    hlx_kernels_t k, ref;
    char why[256];
    hlx_status_t st = hlx_kernels_init_shape(name, kv, &sh, &k, why, sizeof(why));

    KT_EXPECT(st == HLX_OK, "%s kv %d dk %d threads %d: status %d", name ? name : "NULL",
             (int)kv, dk, threads, (int)st);
    if (st != HLX_OK)
        return;
    KT_EXPECT(!strcmp(k.name, want), "%s kv %d dk %d threads %d: %s, expected %s",
             name ? name : "NULL", (int)kv, dk, threads, k.name, want);
    KT_EXPECT(!strncmp(why, want, strlen(want)) && strstr(why, why_has) != NULL,
             "reason '%s' should name %s and say '%s'", why, want, why_has);
    /* the table is the named variant's, the KV layout included */
    KT_EXPECT(hlx_kernels_init_kv(want, kv, &ref) == HLX_OK && ref.attn == k.attn &&
             ref.kv_layout.k_block == k.kv_layout.k_block &&
             ref.kv_layout.v_block == k.kv_layout.v_block &&
             ref.kv_layout.k_chunk == k.kv_layout.k_chunk &&
             ref.kv_layout.v_chunk == k.kv_layout.v_chunk, "%s: table differs", want);
}

static void kt_pick(const char *name, hlx_dtype_t kv, int dk, int threads, const char *want,
                    const char *why_has)
{
    kt_pick_full(name, kv, dk, 0, 0, threads, want, why_has);
}

static void kt_pick_cap(const char *name, hlx_dtype_t kv, int dk, int softcap, int threads,
                        const char *want, const char *why_has)
{
    kt_pick_full(name, kv, dk, 0, softcap, threads, want, why_has);
}

int main(void)
{
    hlx_kernels_t k, best;
    char why[256];

    unsetenv("HELIX_KERNELS");
    if (hlx_kernels_init_kv(NULL, HLX_DTYPE_BF16, &best) != HLX_OK) {
        fprintf(stderr, "FAIL: no variant for bf16 KV\n");
        return 1;
    }
    /* whatever the CPU: one thread or a large head keeps init_kv's choice */
    kt_pick(NULL, HLX_DTYPE_BF16, 32, 1, best.name, "auto, the best");
    kt_pick("auto", HLX_DTYPE_BF16, 128, 2, best.name, "auto, the best");
    kt_pick(NULL, HLX_DTYPE_BF16, 0, 4, best.name, "auto, the best"); /* head size unknown */
    kt_pick("scalar", HLX_DTYPE_BF16, 32, 2, "scalar", "named by --kernels");
    if (!strcmp(best.name, "amx")) {
        /* several threads, small heads: avx512 (its blocked keys: a different layout) */
        kt_pick(NULL, HLX_DTYPE_BF16, 32, 2, "avx512", "head size 32 < 64 and 2 threads");
        kt_pick(NULL, HLX_DTYPE_BF16, 63, 8, "avx512", "head size 63 < 64 and 8 threads");
        kt_pick(NULL, HLX_DTYPE_BF16, 64, 2, "amx", "auto, the best");
        /* groups below 4: the tiles' 16 columns mostly empty; 4 and more keep amx, and a
         * group not known (0) keeps it too */
        kt_pick_full(NULL, HLX_DTYPE_BF16, 128, 1, 0, 1, "avx512", "1 query head per KV head < 4");
        kt_pick_full(NULL, HLX_DTYPE_BF16, 128, 3, 0, 1, "avx512", "3 query heads per KV head");
        kt_pick_full(NULL, HLX_DTYPE_BF16, 128, 4, 0, 1, "amx", "group 4, 1 thread");
        kt_pick_full(NULL, HLX_DTYPE_BF16, 576, 128, 0, 1, "amx", "auto, the best");
        kt_pick_full("amx", HLX_DTYPE_BF16, 128, 1, 0, 1, "amx", "named by --kernels");
        kt_pick_full(NULL, HLX_DTYPE_F32, 128, 1, 0, 1, "avx512", "auto, the best");
        kt_pick("amx", HLX_DTYPE_BF16, 32, 2, "amx", "named by --kernels");
        setenv("HELIX_KERNELS", "amx", 1);
        kt_pick(NULL, HLX_DTYPE_BF16, 32, 2, "amx", "named by HELIX_KERNELS");
        kt_pick("", HLX_DTYPE_BF16, 32, 2, "amx", "named by HELIX_KERNELS");
        /* an explicit auto ignores the environment, as hlx_kernels_init_kv does */
        kt_pick("auto", HLX_DTYPE_BF16, 32, 2, "avx512", "head size 32 < 64");
        unsetenv("HELIX_KERNELS");
        kt_pick(NULL, HLX_DTYPE_F32, 32, 2, "avx512", "auto, the best this CPU runs for f32");
        /* soft-capped scores (Gemma 2): the blocked keys cap them, the tiles do not */
        kt_pick_cap(NULL, HLX_DTYPE_BF16, 256, 1, 1, "avx512", "soft-capped scores");
        kt_pick_cap("amx", HLX_DTYPE_BF16, 256, 1, 1, "amx", "named by --kernels");
    } else
        printf("no amx here: the threads rule is not exercised (best for bf16: %s)\n",
               best.name);
    if (kt_usable("avx2"))
        kt_pick("avx2", HLX_DTYPE_FP8, 32, 2, "avx2", "named by --kernels");
    /* without amx, soft-capped scores keep auto's choice, whose blocked keys cap them */
    if (strcmp(best.name, "amx"))
        kt_pick_cap(NULL, HLX_DTYPE_BF16, 256, 1, 1, best.name, "auto, the best");
    /* how fp8 KV is widened: by the variant, the CPU and HELIX_FP8_LOOKUP */
    KT_EXPECT(!strcmp(hlx_kernels_fp8_widening("scalar"), "exact") &&
             !strcmp(hlx_kernels_fp8_widening("amx"), "exact") &&
             !strcmp(hlx_kernels_fp8_widening(NULL), "exact") &&
             !strcmp(hlx_kernels_fp8_widening("avx2"), "fp32-bits"), "fp8 widening of scalar, amx, "
             "avx2: %s %s %s", hlx_kernels_fp8_widening("scalar"),
             hlx_kernels_fp8_widening("amx"), hlx_kernels_fp8_widening("avx2"));
#if defined(__x86_64__) || defined(__i386__)
    if (kt_usable("avx512")) {
        const char *w = hlx_kernels_fp8_widening("avx512");
        KT_EXPECT(!strcmp(w, __builtin_cpu_supports("avx512vbmi") ? "lookup" : "fp16"),
                 "avx512 fp8 widening %s", w);
        setenv("HELIX_FP8_LOOKUP", "0", 1);
        w = hlx_kernels_fp8_widening("avx512");
        KT_EXPECT(!strcmp(w, "fp16"), "avx512 fp8 widening under HELIX_FP8_LOOKUP=0: %s", w);
        unsetenv("HELIX_FP8_LOOKUP");
    }
#endif
    {
        const hlx_kernels_shape_t sh = { 32, 4, 0, 2 };
        KT_EXPECT(hlx_kernels_init_shape("no-such", HLX_DTYPE_BF16, &sh, &k, why,
                                         sizeof(why)) == HLX_ERR_UNSUPPORTED && why[0] == '\0',
                 "unknown name: expected UNSUPPORTED");
        KT_EXPECT(hlx_kernels_init_shape(NULL, HLX_DTYPE_BF16, &sh, &k, NULL, 0) == HLX_OK,
                 "why may be NULL");
        KT_EXPECT(hlx_kernels_init_shape(NULL, HLX_DTYPE_BF16, NULL, &k, why, sizeof(why)) ==
                  HLX_OK && !strcmp(k.name, best.name), "no shape: init_kv's choice");
    }
    if (kt_fail) {
        fprintf(stderr, "%d failure(s)\n", kt_fail);
        return 1;
    }
    printf("variant choice: all checks passed\n");
    return 0;
}
