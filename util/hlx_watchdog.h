/* A last-resort deadline for code that may hang (PMIx_Init, the abort path, later a decode
 * step): a thread armed with a deadline, an exit code and a message _exit()s the process
 * when the deadline passes before it is disarmed. */
#ifndef HLX_WATCHDOG_H
#define HLX_WATCHDOG_H

#include "hlx_param.h"

#include <helix/status.h>

typedef struct hlx_watchdog hlx_watchdog_t;

/* HELIX_ABORT_GRACE: seconds from an abort to a forced _exit. */
extern const hlx_param_table_t hlx_watchdog_param_table;

typedef struct hlx_watchdog_settings {
    double abort_grace;
} hlx_watchdog_settings_t;

/* Loads the table (defaults, then HELIX_*); falls back to the defaults on a bad value,
 * which the loader has reported. */
void hlx_watchdog_settings(hlx_watchdog_settings_t *s);

/* Starts the watchdog thread, disarmed. */
hlx_status_t hlx_watchdog_create(hlx_watchdog_t **wd_p);

/* From now, if seconds pass before hlx_watchdog_disarm (or another arm), the thread
 * writes "<prefix>: <what> did not finish within S s; exiting with status C" to stderr
 * and calls _exit(exit_code). Re-arming replaces the previous deadline. what is copied. Neither call wakes the
 * thread unless the new deadline is sooner than the one it sleeps until. */
void hlx_watchdog_arm(hlx_watchdog_t *wd, double seconds, int exit_code, const char *what);
void hlx_watchdog_disarm(hlx_watchdog_t *wd);

/* Where the watched code is: when it fires, the message adds "(in <*where>)" read at that
 * moment. The owner stores static strings only (a phase name), atomically; NULL or a NULL
 * string: nothing added. Ranks waiting in a collective then read apart from the one that
 * hangs elsewhere. */
void hlx_watchdog_set_where(hlx_watchdog_t *wd, _Atomic(const char *) *where);

/* How many times the thread has woken (deadlines, arms sooner than its sleep, spurious):
 * arming and disarming in a loop with the same seconds must not add to it. */
unsigned long hlx_watchdog_wakeups(hlx_watchdog_t *wd);

/* Stops the thread (disarming it first). NULL is accepted. */
void hlx_watchdog_destroy(hlx_watchdog_t *wd);

#endif
