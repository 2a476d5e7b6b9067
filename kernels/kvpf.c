/* HELIX_KV_PREFETCH for the vector attentions (avx512, avx2): the setting, the far
 * prefetch's blocks, and auto's timed choice of how a long shard's KV is brought in
 * (hardware prefetchers, software prefetches of the next blocks, those plus the far
 * prefetch into L2), made per segment of the shard and shared by every call and thread of
 * the process. Plain C; the variants call it. */
#include "hlx_kernels_priv.h"
#include "hlx_time.h"

#include <stdint.h>

/* HELIX_KV_PREFETCH as the last variant table filled read it (HLX_KV_PREFETCH_*) */
static atomic_int hlx_kv_setting = HLX_KV_PREFETCH_AUTO;
/* auto's candidates: with the hardware prefetchers alone (avx512 bf16 and fp8), and the
 * two software modes (f32 KV, whose hardware-only reads took 58-67 ms at 1M tokens on a
 * Zen 5 core against 45-49, and the avx2 variant, which always prefetches the next blocks) */
static const int hlx_kv_modes_hw[3] = { HLX_KV_PREFETCH_HARDWARE, HLX_KV_PREFETCH_SOFTWARE,
                                        HLX_KV_PREFETCH_SOFTWARE_L2 };
static const int hlx_kv_modes_sw[2] = { HLX_KV_PREFETCH_SOFTWARE, HLX_KV_PREFETCH_SOFTWARE_L2 };

void hlx_kv_prefetch_load(void)
{
    atomic_store_explicit(&hlx_kv_setting, hlx_kernels_kv_prefetch(), memory_order_relaxed);
}

int hlx_kv_mode(int *is_auto)
{
    const int set = atomic_load_explicit(&hlx_kv_setting, memory_order_relaxed);
    const int pick = atomic_load_explicit(&hlx_kv_prefetch_pick, memory_order_relaxed);

    *is_auto = set == HLX_KV_PREFETCH_AUTO;
    return !*is_auto ? set : pick >= 0 ? pick : HLX_KV_PREFETCH_HARDWARE;
}

const hlx_kv_far_t *hlx_kv_far_at(hlx_kv_far_t *f, int mode, size_t b, size_t nblk, int block,
                                  const char *kb, size_t kbb, const char *vr, size_t vsb,
                                  int alias, int dk)
{
    const size_t ahead = HLX_KV_FAR / (size_t)block;

    if (mode != HLX_KV_PREFETCH_SOFTWARE_L2 || b + ahead >= nblk)
        return NULL;
    f->k = kb + ahead * kbb;
    f->kb = kbb;
    f->v = alias ? NULL : vr + HLX_KV_FAR * vsb;
    f->vb = alias ? 0 : (size_t)block * vsb;
    f->r = ((f->kb > f->vb ? f->kb : f->vb) + (size_t)dk - 1) / (size_t)dk;
    return f;
}

/* segments run in the chosen mode since the last trials (starts due) */
static atomic_int hlx_kv_untimed = HLX_KV_TUNE_ROUND;

/* At the start of segment ph of a round (t->t0: when its previous segment started): the
 * mode of the segment that starts. Trials are segments 0 .. 2n - 1 (the modes in order, then
 * back), the choice is made at 2n; later segments run the choice. */
static int hlx_kv_tune_at(hlx_kv_tune_t *t, size_t ph)
{
    const size_t trials = 2 * (size_t)t->n;
    uint64_t now;
    int mode, i;

    if (ph > trials) { /* the chosen mode (another thread's trials may have changed it) */
        atomic_fetch_add_explicit(&hlx_kv_untimed, 1, memory_order_relaxed);
        return atomic_load_explicit(&hlx_kv_prefetch_pick, memory_order_relaxed);
    }
    now = hlx_now_ns();
    if (ph >= 1) { /* the segment just done was trial ph - 1 */
        const int md = t->modes[ph - 1 < (size_t)t->n ? ph - 1 : trials - ph];
        if (now - t->t0 < t->trial[md])
            t->trial[md] = now - t->t0;
    }
    if (ph < trials) {
        mode = t->modes[ph < (size_t)t->n ? ph : trials - 1 - ph];
    } else {
        mode = t->modes[0];
        for (i = 1; i < t->n; i++)
            if (t->trial[t->modes[i]] < t->trial[mode])
                mode = t->modes[i];
        for (i = 0; i < 4; i++)
            t->trial[i] = UINT64_MAX;
        atomic_store_explicit(&hlx_kv_prefetch_pick, mode, memory_order_relaxed);
        atomic_store_explicit(&hlx_kv_untimed, 0, memory_order_relaxed);
    }
    t->t0 = now;
    return mode;
}

int hlx_kv_tune_begin(hlx_kv_tune_t *t, int with_hardware)
{
    int i, is_auto;

    t->modes = with_hardware ? hlx_kv_modes_hw : hlx_kv_modes_sw;
    t->n = with_hardware ? 3 : 2;
    t->t0 = 0;
    for (i = 0; i < 4; i++)
        t->trial[i] = UINT64_MAX;
    /* trials now when due, else the chosen mode up to the round's end */
    if (atomic_load_explicit(&hlx_kv_untimed, memory_order_relaxed) >= HLX_KV_TUNE_ROUND) {
        t->off = 0;
        return hlx_kv_tune_at(t, 0);
    }
    t->off = 2 * (size_t)t->n + 1;
    return hlx_kv_mode(&is_auto);
}

int hlx_kv_tune_next(hlx_kv_tune_t *t, size_t seg)
{
    return hlx_kv_tune_at(t, (seg + t->off) % HLX_KV_TUNE_ROUND);
}
