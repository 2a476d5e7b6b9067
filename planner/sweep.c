/* Sweeps: every valid layout x batch of the selected strategies, evaluated in closed form,
 * then the Pareto frontier (tokens/s/GPU vs tokens/s/user) of each strategy and the
 * headline comparison of Helix against the best baseline. */
#include "hlx_plan.h"
#include "hlx_time.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hlx_status_t hlx_sweep_push(hlx_sweep_t *sw, const hlx_layout_t *l,
                                   const hlx_plan_result_t *r, int ci)
{
    hlx_sweep_point_t *p;

    if (sw->n >= HLX_SWEEP_MAX_POINTS) /* about 1 GiB of points: narrow the sweep */
        return HLX_ERR_NOSPACE;
    if (sw->n == sw->cap) {
        size_t cap = sw->cap ? sw->cap * 2 : 4096;
        hlx_sweep_point_t *np = realloc(sw->pts, cap * sizeof(*np));
        if (np == NULL)
            return HLX_ERR_NOMEM;
        sw->pts = np;
        sw->cap = cap;
    }
    p = &sw->pts[sw->n++];
    p->l          = *l;
    p->ttl_ms     = (float)(r->ttl_s * 1e3);
    p->tok_s_user = (float)r->tok_s_user;
    p->tok_s_gpu  = (float)r->tok_s_gpu;
    p->feasible   = (unsigned char)r->feasible;
    p->pareto     = 0;
    p->cluster    = (unsigned char)ci;
    p->why        = (unsigned char)r->why;
    return HLX_OK;
}

/* Evaluates one layout over the batch list (and both HOP-B settings where it applies). */
static hlx_status_t hlx_sweep_layout(const hlx_plan_ctx_t *ctx, const hlx_sweep_opts_t *o,
                                     hlx_layout_t *l, int ci, hlx_sweep_t *sw)
{
    int G = l->kvp * l->tpa * l->dp * l->pp, bi, h, h0, h1;
    hlx_plan_result_t r;
    hlx_status_t st;

    if (G < o->gpus_min || G > o->gpus_max)
        return HLX_OK;
    /* HOP-B only changes layouts with a KVP combine to overlap. */
    h0 = o->hopb_mode == 1 && l->kvp > 1 ? 1 : 0;
    h1 = o->hopb_mode == 0 || l->kvp == 1 ? 0 : 1;
    for (bi = 0; bi < o->nbatches; bi++) {
        l->batch = o->batches[bi];
        if (hlx_plan_check(ctx, l, NULL, 0) != HLX_OK)
            continue;
        for (h = h0; h <= h1; h++) {
            l->hopb = h;
            hlx_plan_eval(ctx, l, &r);
            sw->evaluated++;
            if ((st = hlx_sweep_push(sw, l, &r, ci)) != HLX_OK)
                return st;
        }
    }
    return HLX_OK;
}

hlx_status_t hlx_sweep_run(const hlx_plan_ctx_t *ctx, const hlx_sweep_opts_t *o, int ci,
                           hlx_sweep_t *sw)
{
    const int gmax = o->gpus_max;
    const int moe = ctx->m->experts > 0;
    size_t first = sw->n;
    double t0 = hlx_now_s();
    hlx_status_t st = HLX_OK;
    int s, a, b, e;

    for (s = 0; s < HLX_STRAT_COUNT && st == HLX_OK; s++) {
        hlx_layout_t l = { (hlx_strategy_t)s, 1, 1, 1, 1, 1, 1, 1, 0 };
        if (!(o->strategies & (1u << s)))
            continue;
        if (o->progress)
            fprintf(stderr, "\rsweep: %-6s %zu points", hlx_strategy_name(l.strategy), sw->n);
        switch (l.strategy) {
        case HLX_STRAT_TP:
            for (a = 1; a <= gmax && st == HLX_OK; a++) {
                l.tpa = l.tpf = a;
                st = hlx_sweep_layout(ctx, o, &l, ci, sw);
            }
            break;
        case HLX_STRAT_PP:
            for (a = 1; a <= gmax && st == HLX_OK; a++)
                for (b = 2; a * b <= gmax && st == HLX_OK; b++) {
                    l.tpa = l.tpf = a;
                    l.pp  = b;
                    st    = hlx_sweep_layout(ctx, o, &l, ci, sw);
                }
            break;
        case HLX_STRAT_DPEP:
            for (a = 1; a <= gmax && st == HLX_OK; a++)
                for (e = 1; e <= (moe ? a : 1) && st == HLX_OK; e++) {
                    if (a % e)
                        continue;
                    l.dp  = a;
                    l.ep  = e;
                    l.tpf = a / e;
                    st    = hlx_sweep_layout(ctx, o, &l, ci, sw);
                }
            break;
        case HLX_STRAT_MEDHA:
            for (a = 1; a <= gmax && st == HLX_OK; a++)
                for (b = 2; a * b <= gmax && st == HLX_OK; b++) {
                    l.tpa = l.tpf = a;
                    l.kvp = b;
                    st    = hlx_sweep_layout(ctx, o, &l, ci, sw);
                }
            break;
        case HLX_STRAT_HELIX:
            for (a = 1; a <= gmax && st == HLX_OK; a++)
                for (b = 1; a * b <= gmax && st == HLX_OK; b++)
                    for (e = 1; e <= (moe ? a * b : 1) && st == HLX_OK; e++) {
                        if ((a * b) % e)
                            continue;
                        l.tpa = a;
                        l.kvp = b;
                        l.ep  = e;
                        l.tpf = a * b / e;
                        st    = hlx_sweep_layout(ctx, o, &l, ci, sw);
                    }
            break;
        default:
            break;
        }
    }
    sw->seconds += hlx_now_s() - t0;
    if (o->progress)
        fprintf(stderr, "\rsweep: %zu points in %.2f s%20s\n", sw->n - first, sw->seconds, "");
    if (st == HLX_OK)
        hlx_sweep_pareto(sw, first, sw->n);
    return st;
}

void hlx_sweep_free(hlx_sweep_t *sw)
{
    free(sw->pts);
    memset(sw, 0, sizeof(*sw));
}

/* Frontier points as (user, gpu, index) so qsort needs no context. */
typedef struct { float user, gpu; size_t i; } hlx_fpt_t;

/* Most interactive first; among equals, the highest throughput first. */
static int hlx_cmp_fpt(const void *a, const void *b)
{
    const hlx_fpt_t *pa = a, *pb = b;

    if (pa->user != pb->user)
        return pa->user > pb->user ? -1 : 1;
    if (pa->gpu != pb->gpu)
        return pa->gpu > pb->gpu ? -1 : 1;
    return 0;
}

void hlx_sweep_pareto(hlx_sweep_t *sw, size_t first, size_t last)
{
    hlx_fpt_t *f = malloc((last - first + 1) * sizeof(*f));
    size_t i;
    int s;

    if (f == NULL)
        return;
    for (i = first; i < last; i++)
        sw->pts[i].pareto = 0;
    for (s = 0; s < HLX_STRAT_COUNT; s++) {
        size_t n = 0;
        float best_gpu = -1.0f;
        for (i = first; i < last; i++) {
            const hlx_sweep_point_t *p = &sw->pts[i];
            if (p->l.strategy == (hlx_strategy_t)s && p->feasible) {
                f[n].user = p->tok_s_user;
                f[n].gpu  = p->tok_s_gpu;
                f[n].i    = i;
                n++;
            }
        }
        qsort(f, n, sizeof(*f), hlx_cmp_fpt);
        /* Walking from the most interactive point down, a point is on the frontier when
         * it beats every more interactive point on throughput. */
        for (i = 0; i < n; i++) {
            if (f[i].gpu > best_gpu) {
                sw->pts[f[i].i].pareto = 1;
                best_gpu = f[i].gpu;
            }
        }
    }
    free(f);
}

/* Frontier of the Helix points (helix = 1, optionally HOP-B off only) or of every other
 * strategy together (helix = 0), sorted by user descending, gpu ascending. */
static size_t hlx_frontier(const hlx_sweep_t *sw, int ci, int helix, int nohopb,
                           hlx_fpt_t *out)
{
    size_t n = 0, i, k = 0;
    float best = -1.0f;

    for (i = 0; i < sw->n; i++) {
        const hlx_sweep_point_t *p = &sw->pts[i];
        if (p->cluster != ci || !p->feasible)
            continue;
        if ((p->l.strategy == HLX_STRAT_HELIX) != helix || (nohopb && p->l.hopb))
            continue;
        out[n].user = p->tok_s_user;
        out[n].gpu  = p->tok_s_gpu;
        out[n].i    = i;
        n++;
    }
    qsort(out, n, sizeof(*out), hlx_cmp_fpt);
    for (i = 0; i < n; i++) {
        if (out[i].gpu > best) {
            best     = out[i].gpu;
            out[k++] = out[i];
        }
    }
    return k;
}

/* Best tokens/s/GPU among frontier points at least as interactive as u (0 if none). */
static double hlx_frontier_gpu_at(const hlx_fpt_t *f, size_t n, double u)
{
    double best = 0.0;
    size_t i;

    for (i = 0; i < n && f[i].user >= u; i++)
        if (f[i].gpu > best)
            best = f[i].gpu;
    return best;
}

void hlx_sweep_summarize(const hlx_sweep_t *sw, int ci, hlx_sweep_summary_t *s)
{
    hlx_fpt_t *fh = malloc((sw->n + 1) * sizeof(*fh));
    hlx_fpt_t *fb = malloc((sw->n + 1) * sizeof(*fb));
    size_t nh, nb, i;

    memset(s, 0, sizeof(*s));
    if (fh == NULL || fb == NULL)
        goto out;
    nb = hlx_frontier(sw, ci, 0, 0, fb);
    nh = hlx_frontier(sw, ci, 1, 1, fh);
    if (nh > 0)
        s->helix_nohopb_best_user = fh[0].user;
    nh = hlx_frontier(sw, ci, 1, 0, fh);
    s->have_helix = nh > 0;
    s->have_base  = nb > 0;
    if (nh > 0) {
        s->helix_best_user = fh[0].user;
        s->helix_best_gpu  = fh[nh - 1].gpu;
        s->helix_best_idx  = fh[0].i;
    }
    if (nb > 0) {
        s->base_best_user       = fb[0].user;
        s->base_best_gpu        = fb[nb - 1].gpu;
        s->base_best_idx        = fb[0].i;
        s->base_best_user_strat = sw->pts[fb[0].i].l.strategy;
        s->base_best_user_tput  = fb[0].gpu;
    }
    /* HOP-B: each HOP-B-on frontier point against its HOP-B-off twin (pushed just before) */
    for (i = 1; i < sw->n; i++) {
        const hlx_sweep_point_t *p = &sw->pts[i], *q = &sw->pts[i - 1];
        if (p->cluster != ci || !p->pareto || !p->l.hopb || q->l.hopb ||
            p->l.strategy != HLX_STRAT_HELIX || q->l.strategy != p->l.strategy ||
            q->l.kvp != p->l.kvp || q->l.tpa != p->l.tpa || q->l.tpf != p->l.tpf ||
            q->l.ep != p->l.ep || q->l.batch != p->l.batch)
            continue;
        if (q->ttl_ms / p->ttl_ms - 1.0 > s->hopb_gain_max) {
            s->hopb_gain_max = q->ttl_ms / p->ttl_ms - 1.0;
            s->hopb_gain_idx = i;
        }
    }
    if (nh > 0 && nb > 0) {
        s->helix_tput_at_base_best = hlx_frontier_gpu_at(fh, nh, fb[0].user);
        s->tput_ratio_at_base_best = s->helix_tput_at_base_best / fb[0].gpu;
        for (i = 0; i < nb; i++) {
            double g = hlx_frontier_gpu_at(fh, nh, fb[i].user);
            if (g > 0 && g / fb[i].gpu > s->tput_ratio_max) {
                s->tput_ratio_max     = g / fb[i].gpu;
                s->tput_ratio_at_user = fb[i].user;
            }
        }
    }
out:
    free(fh);
    free(fb);
}
