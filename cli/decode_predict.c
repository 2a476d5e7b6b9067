/* Prediction of one decode configuration on this machine (planner/hlx_hw_local.h) added
 * to the JSON report of `helix decode`, so predicted and measured phases sit side by side. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strptime, timegm */
#endif
#include "hlx_build_id.h"
#include "hlx_decode_predict.h"
#include "hlx_hw_local.h"
#include "hlx_kernels.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int hlx_dp_hopb(json_t *o, int hopb)
{
    json_t *v;

    if (hopb >= 0)
        return hopb;
    v = json_object_get(o, "hopb");
    if (json_is_true(v))
        return 1;
    if (json_is_string(v))
        return !strcmp(json_string_value(v), "on");
    return 0;
}

/* Whether the file timed the kernels this run uses: its variant, or the one auto takes for
 * the run's KV type on a machine whose bf16 choice is the file's (bench local times each
 * KV type with auto's variant for it: f32 and fp8 on avx512 where bf16 takes amx). */
static int hlx_dp_same_kernels(const char *run_k, const char *kv, const hlx_hw_local_t *hw)
{
    hlx_kernels_t a, r;
    hlx_dtype_t t;

    if (!strcmp(run_k, hw->kernels))
        return 1;
    return kv != NULL && hlx_dtype_parse(kv, &t) == 0 &&
           hlx_kernels_init_kv("auto", HLX_DTYPE_BF16, &a) == HLX_OK &&
           !strcmp(a.name, hw->kernels) && hlx_kernels_init_kv("auto", t, &r) == HLX_OK &&
           !strcmp(r.name, run_k);
}

/* How old the file's measurement is (a machine shared with others drifts within minutes,
 * so the reader can weigh the prediction), and a note when the file measured other
 * kernels than the run's, or was written by another build of helix (its kernels' speed may
 * differ). No age when the file has no parsable time; no build note when it recorded none
 * (files from before the field). */
static void hlx_dp_staleness(json_t *o, const hlx_hw_local_t *hw)
{
    const char *run_k = json_string_value(json_object_get(o, "kernels"));
    struct tm tm;
    const char *end;
    char note[400];
    size_t n = 0;

    memset(&tm, 0, sizeof(tm));
    end = strptime(hw->measured, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (end != NULL && *end == '\0') {
        time_t t = timegm(&tm);
        if (t != (time_t)-1)
            json_object_set_new(o, "predicted_hw_age_s",
                                json_integer((json_int_t)difftime(time(NULL), t)));
    }
    note[0] = '\0';
    if (run_k != NULL && hw->kernels[0] != '\0' &&
        !hlx_dp_same_kernels(run_k, json_string_value(json_object_get(o, "kv_dtype")), hw))
        n += (size_t)snprintf(note, sizeof(note), "the hw file measured kernels %s, this run "
                              "uses %s", hw->kernels, run_k);
    if (hw->build[0] != '\0' && strcmp(hw->build, HLX_BUILD_ID) != 0 && n < sizeof(note))
        n += (size_t)snprintf(note + n, sizeof(note) - n, "%sthe hw file was measured by helix "
                              "%s, this is %s", n ? "; " : "", hw->build, HLX_BUILD_ID);
    if (n > 0 && n < sizeof(note))
        snprintf(note + n, sizeof(note) - n, " (measure again with: helix bench local)");
    if (n > 0)
        json_object_set_new(o, "predicted_note", json_string(note));
}

void hlx_decode_predict(json_t *o, const hlx_run_config_t *cfg, const hlx_model_t *m,
                        int hopb)
{
    hlx_hw_local_t hw;
    hlx_local_cfg_t lc;
    hlx_local_pred_t p;
    char path[4096], err[1024];
    json_t *ph;
    int64_t ctx;
    int i;

    if (hlx_hw_local_path(path, sizeof(path)) != 0) {
        snprintf(err, sizeof(err), "no hw file path (set HELIX_HW_FILE or HOME)");
        goto none;
    }
    if (hlx_hw_local_load(path, &hw, err, sizeof(err)) != HLX_OK) {
        size_t n = strlen(err);
        snprintf(err + n, sizeof(err) - n, " (measure with: helix bench local)");
        goto none;
    }
    /* the steps attend to the context and each request's prompt: the planner's context is
     * their mean (attention reads are linear in each request's length) */
    ctx = cfg->context + (hlx_run_prompt_tokens(cfg) + cfg->batch / 2) / cfg->batch;
    lc = (hlx_local_cfg_t){ .kvp = cfg->kvp, .tpa = cfg->tpa, .batch = cfg->batch,
                            .steps = cfg->steps, .kv_block = cfg->kv_block,
                            .hopb = hlx_dp_hopb(o, hopb), .context = ctx,
                            .w_dtype = m->weight_dtype,
                            .kv_dtype = cfg->kv_dtype_set ? cfg->kv_dtype : m->kv_dtype,
                            .ep = cfg->ep,
                            .threads = (int)json_integer_value(json_object_get(o, "threads")),
                            .micro_batch =
                                (int)json_integer_value(json_object_get(o, "micro_batch")) };
    if (hlx_local_predict(&hw, m, &lc, &p, err, sizeof(err)) != HLX_OK)
        goto none;
    json_object_set_new(o, "predicted_step_ms", json_real(p.step_s * 1e3));
    ph = json_object();
    for (i = 0; i < HLX_PHASE_PP; i++) /* the runtime's phases (no pipeline hand-offs) */
        json_object_set_new(ph, hlx_phase_name((hlx_phase_id_t)i), json_real(p.phase_s[i] * 1e3));
    json_object_set_new(o, "predicted_phase_ms", ph);
    json_object_set_new(o, "predicted_hw", json_string(path));
    hlx_dp_staleness(o, &hw);
    return;
none:
    json_object_set_new(o, "predicted_step_ms", json_null());
    json_object_set_new(o, "predicted_phase_ms", json_null());
    json_object_set_new(o, "predicted_error", json_string(err));
}
