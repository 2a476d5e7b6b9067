/* The planner's prediction of a `helix decode` run on this machine, added beside the
 * measured figures of `helix decode --json`. */
#ifndef HLX_DECODE_PREDICT_H
#define HLX_DECODE_PREDICT_H

#include <helix/model.h>
#include <helix/runtime.h>
#include <jansson.h>

/* Adds predicted_step_ms, predicted_phase_ms (the phases of helix/phase.h),
 * predicted_hw (the hw file used) to the report object o, from the hw file of
 * `helix bench local` (HELIX_HW_FILE or the default path). hopb: 1 on, 0 off, -1 from
 * o's "hopb" key when it has one (true or "on"), else off. Without a usable hw file the
 * predictions are null and predicted_error says why. Never fails the run. */
void hlx_decode_predict(json_t *o, const hlx_run_config_t *cfg, const hlx_model_t *m,
                        int hopb);

#endif
