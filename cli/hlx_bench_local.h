/* `helix bench local`: measuring this machine into a hw file (planner/hlx_hw_local.h),
 * shared by the bench command and `helix plan --hw local` (which measures when there is
 * no file yet). */
#ifndef HLX_BENCH_LOCAL_H
#define HLX_BENCH_LOCAL_H

#include "hlx_hw_local.h"

#include <stdio.h>

/* Measures (compute on one core, collectives under helixrun) and stores hw at path (NULL:
 * not stored). Returns 0, or 1 with the reason in err. */
int  hlx_bench_local_measure(const char *path, int quiet, hlx_hw_local_t *hw, char *err,
                             size_t errlen);
/* The measured machine as a table. */
void hlx_bench_local_print(FILE *f, const hlx_hw_local_t *hw, const char *path);
int  hlx_cmd_bench_local(int argc, char **argv);

#endif
