/* Sweep output: CSV and JSON Lines (one point per line, printf-formatted: plain numbers
 * and fixed keys need no JSON library) and an SVG plot of the Pareto frontiers. */
#include "hlx_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *hlx_why_name(int why)
{
    switch (why) {
    case HLX_FEAS_OK:     return "";
    case HLX_FEAS_MEMORY: return "memory";
    case HLX_FEAS_GPUS:   return "gpus";
    default:              return "?";
    }
}

/* Names come from user files: quote them for JSON and CSV. */
static void hlx_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void hlx_csv_str(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\n\r") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Pieces each query head is cut into for l's all-to-all (hlx_model_q_split, as the cost
 * model and the runtime cut them): past a Helix TPA shard's heads over GQA; 1 otherwise,
 * 0 where no cut gives every rank a piece (an infeasible point). */
static int hlx_point_q_split(const hlx_model_t *m, const hlx_layout_t *l)
{
    hlx_helix_split_t sp;

    if (m == NULL || l->strategy != HLX_STRAT_HELIX || m->attn == HLX_ATTN_MLA || l->kvp <= 1)
        return 1;
    return hlx_helix_split(m->q_heads, m->kv_heads, hlx_model_value_dim(m), l->kvp, l->tpa,
                           &sp, NULL, 0) == HLX_OK ? sp.q_split : 0;
}

int hlx_sweep_write_csv(FILE *f, const hlx_sweep_t *sw, const char *const *clusters,
                        const hlx_model_t *m)
{
    size_t i;

    fprintf(f, "cluster,strategy,gpus,kvp,tpa,dp,tpf,ep,pp,batch,hopb,q_split,ttl_ms,"
               "tokens_per_s_user,tokens_per_s_gpu,feasible,pareto,reason\n");
    for (i = 0; i < sw->n; i++) {
        const hlx_sweep_point_t *p = &sw->pts[i];
        const hlx_layout_t *l = &p->l;
        hlx_csv_str(f, clusters[p->cluster]);
        fprintf(f, ",%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.6g,%.6g,%.6g,%d,%d,%s\n",
                hlx_strategy_name(l->strategy),
                l->kvp * l->tpa * l->dp * l->pp, l->kvp, l->tpa, l->dp, l->tpf, l->ep, l->pp,
                l->batch, l->hopb, hlx_point_q_split(m, l), p->ttl_ms, p->tok_s_user,
                p->tok_s_gpu, p->feasible, p->pareto, hlx_why_name(p->why));
    }
    return ferror(f) ? -1 : 0;
}

int hlx_sweep_write_jsonl(FILE *f, const hlx_sweep_t *sw, const char *const *clusters,
                          const hlx_model_t *m)
{
    size_t i;

    for (i = 0; i < sw->n; i++) {
        const hlx_sweep_point_t *p = &sw->pts[i];
        const hlx_layout_t *l = &p->l;
        fputs("{\"cluster\":", f);
        hlx_json_str(f, clusters[p->cluster]);
        fprintf(f,
                ",\"strategy\":\"%s\",\"gpus\":%d,\"kvp\":%d,\"tpa\":%d,"
                "\"dp\":%d,\"tpf\":%d,\"ep\":%d,\"pp\":%d,\"batch\":%d,\"hopb\":%s,"
                "\"q_split\":%d,"
                "\"ttl_ms\":%.6g,\"tokens_per_s_user\":%.6g,\"tokens_per_s_gpu\":%.6g,"
                "\"feasible\":%s,\"pareto\":%s,\"reason\":\"%s\"}\n",
                hlx_strategy_name(l->strategy),
                l->kvp * l->tpa * l->dp * l->pp, l->kvp, l->tpa, l->dp, l->tpf, l->ep, l->pp,
                l->batch, l->hopb ? "true" : "false", hlx_point_q_split(m, l), p->ttl_ms,
                p->tok_s_user, p->tok_s_gpu, p->feasible ? "true" : "false",
                p->pareto ? "true" : "false", hlx_why_name(p->why));
    }
    return ferror(f) ? -1 : 0;
}

/* ---- SVG ---- */

static const char *const hlx_strat_color[HLX_STRAT_COUNT] = {
    "#1f77b4", /* tp */
    "#9467bd", /* pp */
    "#2ca02c", /* dp-ep */
    "#ff7f0e", /* medha */
    "#d62728", /* helix */
};

/* Baselines dashed so overlapping frontiers stay visible under Helix's solid line. */
static const char *const hlx_strat_dash[HLX_STRAT_COUNT] = {
    "stroke-dasharray='7 3' ", "stroke-dasharray='2 3' ", "stroke-dasharray='9 3 2 3' ",
    "stroke-dasharray='4 2' ", "",
};

static const char *const hlx_strat_label[HLX_STRAT_COUNT] = {
    "TP", "TP + PP", "DP attention + EP FFN", "Medha (KVP, TP FFN)", "Helix (KVP x TPA, TPF x EP)",
};

typedef struct {
    double x0, y0, w, h;       /* plot area in pixels */
    double lx0, lx1, ly0, ly1; /* log10 ranges */
} hlx_svg_panel_t;

static double hlx_px(const hlx_svg_panel_t *p, double v)
{
    return p->x0 + (log10(v) - p->lx0) / (p->lx1 - p->lx0) * p->w;
}

static double hlx_py(const hlx_svg_panel_t *p, double v)
{
    return p->y0 + p->h - (log10(v) - p->ly0) / (p->ly1 - p->ly0) * p->h;
}

static void hlx_svg_fmt(double v, char *buf, size_t len)
{
    if (v >= 1e6 || v < 1e-3)
        snprintf(buf, len, "1e%d", (int)lround(log10(v)));
    else
        snprintf(buf, len, "%g", v);
}

/* Text content with XML's special characters escaped (names come from user files). */
static void hlx_svg_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':  fputs("&amp;", f); break;
        case '<':  fputs("&lt;", f); break;
        case '>':  fputs("&gt;", f); break;
        case '\'': fputs("&apos;", f); break;
        case '"':  fputs("&quot;", f); break;
        default:   fputc(*s, f);
        }
    }
}

static void hlx_svg_axes(FILE *f, const hlx_svg_panel_t *p, const char *title)
{
    int d, k;
    char buf[32];

    fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='#fcfcfc' "
               "stroke='#444'/>\n", p->x0, p->y0, p->w, p->h);
    for (d = (int)floor(p->lx0); d <= (int)ceil(p->lx1); d++) {
        for (k = 1; k <= 9; k++) {
            double v = k * pow(10.0, d), x;
            if (log10(v) < p->lx0 - 1e-9 || log10(v) > p->lx1 + 1e-9)
                continue;
            x = hlx_px(p, v);
            fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s'/>\n", x, p->y0,
                    x, p->y0 + p->h, k == 1 ? "#ccc" : "#eee");
            if (k == 1 || ((k == 2 || k == 5) && p->lx1 - p->lx0 < 2.5)) {
                hlx_svg_fmt(v, buf, sizeof(buf));
                fprintf(f, "<text x='%.1f' y='%.1f' class='tick' text-anchor='middle'>%s</text>\n",
                        x, p->y0 + p->h + 16, buf);
            }
        }
    }
    for (d = (int)floor(p->ly0); d <= (int)ceil(p->ly1); d++) {
        for (k = 1; k <= 9; k++) {
            double v = k * pow(10.0, d), y;
            if (log10(v) < p->ly0 - 1e-9 || log10(v) > p->ly1 + 1e-9)
                continue;
            y = hlx_py(p, v);
            fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s'/>\n", p->x0, y,
                    p->x0 + p->w, y, k == 1 ? "#ccc" : "#eee");
            if (k == 1 || ((k == 2 || k == 5) && p->ly1 - p->ly0 < 2.5)) {
                hlx_svg_fmt(v, buf, sizeof(buf));
                fprintf(f, "<text x='%.1f' y='%.1f' class='tick' text-anchor='end'>%s</text>\n",
                        p->x0 - 6, y + 4, buf);
            }
        }
    }
    fprintf(f, "<text x='%.1f' y='%.1f' class='axis' text-anchor='middle'>tokens/s/user "
               "(interactivity, 1/TTL) &#8594;</text>\n", p->x0 + p->w / 2, p->y0 + p->h + 38);
    fprintf(f, "<text transform='translate(%.1f,%.1f) rotate(-90)' class='axis' "
               "text-anchor='middle'>tokens/s/GPU (throughput) &#8594;</text>\n", p->x0 - 52,
            p->y0 + p->h / 2);
    fprintf(f, "<text x='%.1f' y='%.1f' class='panel' text-anchor='middle'>", p->x0 + p->w / 2,
            p->y0 - 10);
    hlx_svg_text(f, title);
    fprintf(f, "</text>\n");
}

/* Frontier points of one strategy on one cluster, sorted by interactivity. */
static size_t hlx_svg_collect(const hlx_sweep_t *sw, int ci, int s, size_t *idx)
{
    size_t n = 0, i, j;

    for (i = 0; i < sw->n; i++)
        if (sw->pts[i].cluster == ci && sw->pts[i].pareto &&
            sw->pts[i].l.strategy == (hlx_strategy_t)s)
            idx[n++] = i;
    for (i = 1; i < n; i++) { /* insertion sort: frontiers are short */
        size_t v = idx[i];
        for (j = i; j > 0 && sw->pts[idx[j - 1]].tok_s_user > sw->pts[v].tok_s_user; j--)
            idx[j] = idx[j - 1];
        idx[j] = v;
    }
    return n;
}

int hlx_sweep_write_svg(FILE *f, const hlx_sweep_t *sw, const char *const *clusters,
                        int nclusters, const char *title)
{
    const double pw = 620, ph = 440, ml = 80, mt = 90, gap = 110;
    size_t *idx = malloc((sw->n + 1) * sizeof(*idx));
    /* Panels in a grid of up to three columns; the legend right of the first row. */
    const int cols = nclusters < 3 ? (nclusters > 0 ? nclusters : 1) : nclusters == 4 ? 2 : 3;
    const int rows = (nclusters + cols - 1) / cols;
    const double vgap = 100;
    double W = ml + cols * (pw + gap) - gap + 250, Hh = mt + rows * (ph + vgap) - vgap + 70;
    double umin = INFINITY, umax = 0, gmin = INFINITY, gmax = 0, lx0, lx1, ly0, ly1;
    size_t i;
    int ci, s;

    if (idx == NULL)
        return -1;
    fprintf(f, "<?xml version='1.0' encoding='UTF-8'?>\n"
               "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
               "viewBox='0 0 %.0f %.0f' font-family='Helvetica, Arial, sans-serif'>\n"
               "<style>.tick{font-size:11px;fill:#444}.axis{font-size:13px;fill:#222}"
               ".panel{font-size:14px;font-weight:bold;fill:#222}.title{font-size:17px;"
               "font-weight:bold}.legend{font-size:12px}circle:hover{stroke:#000;"
               "stroke-width:2}</style>\n"
               "<rect width='100%%' height='100%%' fill='white'/>\n"
               "<text x='%.0f' y='28' class='title'>",
            W, Hh, W, Hh, ml);
    hlx_svg_text(f, title);
    fprintf(f, "</text>\n<text x='%.0f' y='48' class='tick'>Pareto frontiers per strategy "
               "(log axes); each point is one (layout, batch): hover it for the layout.</text>\n",
            ml);
    /* One range for every panel so topologies compare at a glance. */
    for (i = 0; i < sw->n; i++) {
        const hlx_sweep_point_t *q = &sw->pts[i];
        if (!q->pareto)
            continue;
        if (q->tok_s_user < umin) umin = q->tok_s_user;
        if (q->tok_s_user > umax) umax = q->tok_s_user;
        if (q->tok_s_gpu < gmin) gmin = q->tok_s_gpu;
        if (q->tok_s_gpu > gmax) gmax = q->tok_s_gpu;
    }
    if (umax <= 0) { /* nothing feasible anywhere */
        umin = gmin = 1;
        umax = gmax = 10;
    }
    lx0 = floor(log10(umin) * 5) / 5 - 0.05;
    lx1 = ceil(log10(umax) * 5) / 5 + 0.05;
    ly0 = floor(log10(gmin) * 5) / 5 - 0.05;
    ly1 = ceil(log10(gmax) * 5) / 5 + 0.05;
    for (ci = 0; ci < nclusters; ci++) {
        hlx_svg_panel_t p = { ml + (ci % cols) * (pw + gap), mt + (ci / cols) * (ph + vgap), pw,
                              ph, 0, 0, 0, 0 };
        hlx_sweep_summary_t sum;
        p.lx0 = lx0;
        p.lx1 = lx1;
        p.ly0 = ly0;
        p.ly1 = ly1;
        hlx_svg_axes(f, &p, clusters[ci]);
        hlx_sweep_summarize(sw, ci, &sum);
        if (sum.have_helix && sum.have_base)
            fprintf(f, "<text x='%.1f' y='%.1f' class='tick'>Helix vs best baseline: %.2fx "
                       "tokens/s/user; up to %.2fx tokens/s/GPU at matched interactivity"
                       "</text>\n", p.x0 + 8, p.y0 + p.h - 10,
                    sum.helix_best_user / sum.base_best_user, sum.tput_ratio_max);
        for (s = 0; s < HLX_STRAT_COUNT; s++) {
            size_t n = hlx_svg_collect(sw, ci, s, idx);
            if (n == 0)
                continue;
            fprintf(f, "<g><polyline fill='none' stroke='%s' stroke-width='%s' %s"
                       "stroke-linejoin='round' points='", hlx_strat_color[s],
                    s == HLX_STRAT_HELIX ? "3" : "2", hlx_strat_dash[s]);
            for (i = 0; i < n; i++)
                fprintf(f, "%.1f,%.1f ", hlx_px(&p, sw->pts[idx[i]].tok_s_user),
                        hlx_py(&p, sw->pts[idx[i]].tok_s_gpu));
            fprintf(f, "'/>\n");
            for (i = 0; i < n; i++) {
                const hlx_sweep_point_t *q = &sw->pts[idx[i]];
                char lay[128];
                hlx_layout_format(&q->l, lay, sizeof(lay));
                fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3.5' fill='%s' fill-opacity='0.85'>"
                           "<title>%s (%d GPUs): TTL %.3g ms, %.4g tok/s/user, %.4g tok/s/GPU"
                           "</title></circle>\n",
                        hlx_px(&p, q->tok_s_user), hlx_py(&p, q->tok_s_gpu), hlx_strat_color[s],
                        lay, q->l.kvp * q->l.tpa * q->l.dp * q->l.pp, q->ttl_ms, q->tok_s_user,
                        q->tok_s_gpu);
            }
            fprintf(f, "</g>\n");
        }
    }
    {
        double lx = ml + cols * (pw + gap) - gap + 20, ly = mt + 10;
        for (s = 0; s < HLX_STRAT_COUNT; s++) {
            int any = 0;
            for (i = 0; i < sw->n && !any; i++)
                any = sw->pts[i].pareto && sw->pts[i].l.strategy == (hlx_strategy_t)s;
            if (!any)
                continue;
            fprintf(f, "<line x1='%.0f' y1='%.0f' x2='%.0f' y2='%.0f' stroke='%s' "
                       "stroke-width='3' %s/><circle cx='%.0f' cy='%.0f' r='3.5' fill='%s'/>"
                       "<text x='%.0f' y='%.0f' class='legend'>%s</text>\n",
                    lx, ly, lx + 24, ly, hlx_strat_color[s], hlx_strat_dash[s], lx + 12, ly,
                    hlx_strat_color[s], lx + 30, ly + 4, hlx_strat_label[s]);
            ly += 22;
        }
    }
    fprintf(f, "</svg>\n");
    free(idx);
    return ferror(f) ? -1 : 0;
}
