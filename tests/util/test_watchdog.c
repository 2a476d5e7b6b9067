/* util: the watchdog _exits with the armed code and a message when its deadline passes,
 * never when disarmed or re-armed in time, also when a sooner deadline replaces a later
 * one; arming and disarming every step does not wake its thread; HELIX_ABORT_GRACE comes
 * from its table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hlx_time.h"
#include "hlx_watchdog.h"

#include <stdatomic.h>

static void nap(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Runs body in a child with stderr captured; returns its wait status and what it wrote. */
static int in_child(void (*body)(void), char *errbuf, size_t size)
{
    int   fds[2], status = 0;
    pid_t pid;
    ssize_t n, used = 0;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        body();
        _exit(0);
    }
    close(fds[1]);
    while ((n = read(fds[0], errbuf + used, size - 1 - (size_t)used)) > 0)
        used += n;
    errbuf[used] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void body_fires(void)
{
    hlx_watchdog_t *wd;

    if (hlx_watchdog_create(&wd) != HLX_OK)
        _exit(99);
    hlx_watchdog_arm(wd, 0.2, 7, "the test operation");
    nap(5); /* a hang */
    _exit(0);
}

/* The owner's "where", read when it fires (the last stored name, not the first). */
static _Atomic(const char *) where_now;

static void body_where(void)
{
    hlx_watchdog_t *wd;

    if (hlx_watchdog_create(&wd) != HLX_OK)
        _exit(99);
    atomic_store(&where_now, "phase one");
    hlx_watchdog_set_where(wd, &where_now);
    hlx_watchdog_arm(wd, 0.2, 9, "the staged operation");
    atomic_store(&where_now, "phase two");
    nap(5);
    _exit(0);
}

static void test_where(void **state)
{
    char err[1024];
    int  st = in_child(body_where, err, sizeof(err));

    (void)state;
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 9);
    if (strstr(err, "the staged operation did not finish within 0.2 s (in phase two); "
                    "exiting with status 9") == NULL)
        fail_msg("unexpected message: %s", err);
}

static void body_disarmed(void)
{
    hlx_watchdog_t *wd;

    if (hlx_watchdog_create(&wd) != HLX_OK)
        _exit(99);
    hlx_watchdog_arm(wd, 0.2, 7, "the test operation");
    nap(0.05);
    hlx_watchdog_disarm(wd);
    nap(0.4);
    /* Re-armed before each deadline: never fires. */
    for (int i = 0; i < 4; i++) {
        hlx_watchdog_arm(wd, 0.2, 8, "the re-armed operation");
        nap(0.1);
    }
    hlx_watchdog_destroy(wd);
    _exit(0);
}

static void body_sooner(void)
{
    hlx_watchdog_t *wd;

    if (hlx_watchdog_create(&wd) != HLX_OK)
        _exit(99);
    hlx_watchdog_arm(wd, 30, 5, "the long operation");
    nap(0.05); /* the thread now sleeps until the 30 s deadline */
    hlx_watchdog_disarm(wd);
    hlx_watchdog_arm(wd, 0.2, 6, "the short operation");
    nap(5); /* a hang */
    _exit(0);
}

static void test_sooner_deadline_fires(void **state)
{
    char   err[1024];
    double t0 = hlx_now_s();
    int    st = in_child(body_sooner, err, sizeof(err));
    double dt = hlx_now_s() - t0;

    (void)state;
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 6);
    if (strstr(err, "the short operation did not finish within 0.2 s") == NULL)
        fail_msg("unexpected message: %s", err);
    assert_true(dt >= 0.19 && dt < 4.0);
}

/* A decode loop arms and disarms once a step: the thread must stay asleep (before, each
 * call signalled it: two wake-ups a step, taking the rank's core). */
static void test_rearm_no_wakeups(void **state)
{
    hlx_watchdog_t *wd;
    unsigned long   w0, w1;
    int             i;

    (void)state;
    assert_int_equal(hlx_watchdog_create(&wd), HLX_OK);
    hlx_watchdog_arm(wd, 60, 1, "a step");
    nap(0.05);
    hlx_watchdog_disarm(wd);
    w0 = hlx_watchdog_wakeups(wd);
    for (i = 0; i < 20000; i++) {
        hlx_watchdog_arm(wd, 60, 1, "a step");
        hlx_watchdog_disarm(wd);
    }
    nap(0.05);
    w1 = hlx_watchdog_wakeups(wd);
    /* spurious wake-ups are allowed by POSIX; a handful, not one per call */
    if (w1 - w0 > 4)
        fail_msg("the watchdog thread woke %lu times in 20000 arm/disarm pairs", w1 - w0);
    hlx_watchdog_destroy(wd);
}

static void test_fires(void **state)
{
    char   err[1024];
    double t0 = hlx_now_s();
    int    st = in_child(body_fires, err, sizeof(err));
    double dt = hlx_now_s() - t0;

    (void)state;
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 7);
    if (strstr(err, "watchdog: the test operation did not finish within 0.2 s; exiting "
                    "with status 7") == NULL)
        fail_msg("unexpected message: %s", err);
    /* Fired at the deadline, not at the end of the 5 s hang (upper bound only). */
    assert_true(dt >= 0.19 && dt < 4.0);
}

static void test_disarmed(void **state)
{
    char err[1024];
    int  st = in_child(body_disarmed, err, sizeof(err));

    (void)state;
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_string_equal(err, "");
}

static void test_settings(void **state)
{
    hlx_watchdog_settings_t s;

    (void)state;
    unsetenv("HELIX_ABORT_GRACE");
    hlx_watchdog_settings(&s);
    assert_true(s.abort_grace == 10.0);
    setenv("HELIX_ABORT_GRACE", "0.5", 1);
    hlx_watchdog_settings(&s);
    assert_true(s.abort_grace == 0.5);
    unsetenv("HELIX_ABORT_GRACE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fires),
        cmocka_unit_test(test_where),
        cmocka_unit_test(test_disarmed),
        cmocka_unit_test(test_sooner_deadline_fires),
        cmocka_unit_test(test_rearm_no_wakeups),
        cmocka_unit_test(test_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
