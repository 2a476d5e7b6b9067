/* launcher/iof.c: the collapsing of identical stderr lines of several ranks, driven with
 * chosen times (no clock): what is held, what is printed, the summary lines and their
 * place (before helixrun's own lines), the masked log header, the bounds (long lines, a
 * full table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlx_launch.h"

/* A collapse table writing into a memory buffer. */
typedef struct {
    hlx_iof_collapse_t c;
    FILE              *f;
    char              *text;
    size_t             len;
} dup_t;

static void dup_open(dup_t *d, hlx_prefix_t prefix)
{
    d->text = NULL;
    d->len  = 0;
    d->f    = open_memstream(&d->text, &d->len);
    assert_non_null(d->f);
    assert_int_equal(hlx_iof_collapse_init(&d->c, d->f, prefix), 0);
}

/* What the table printed so far. */
static const char *dup_text(dup_t *d)
{
    fflush(d->f);
    return d->text ? d->text : "";
}

static void dup_close(dup_t *d)
{
    hlx_iof_collapse_fini(&d->c);
    fclose(d->f);
    free(d->text);
}

/* One line of rank at time t: 1 if held. */
static int line(dup_t *d, int rank, const char *s, double t)
{
    return hlx_iof_collapse_line(&d->c, rank, s, strlen(s), t);
}

static void expect_text(dup_t *d, const char *want)
{
    if (strcmp(dup_text(d), want) != 0)
        fail_msg("printed \"%s\", expected \"%s\"", dup_text(d), want);
}

static void test_copies_held(void **state)
{
    dup_t d;

    (void)state;
    dup_open(&d, HLX_PREFIX_RANK);
    assert_int_equal(line(&d, 0, "same", 10.0), 0); /* the first: printed by the caller */
    for (int r = 1; r < 4; r++)
        assert_int_equal(line(&d, r, "same", 10.1), 1);
    assert_int_equal(line(&d, 2, "other", 10.2), 0);
    expect_text(&d, ""); /* nothing until the window closes */
    assert_true(fabs(hlx_iof_collapse_next(&d.c) - (10.0 + HLX_IOF_DUP_WINDOW_S)) < 1e-9);
    hlx_iof_collapse_flush(&d.c, 11.0);
    expect_text(&d, "");
    hlx_iof_collapse_flush(&d.c, 10.0 + HLX_IOF_DUP_WINDOW_S);
    expect_text(&d, "[1-3] (the same line as [0] above)\n");
    /* the window is over: a late copy is a first occurrence again */
    assert_int_equal(line(&d, 3, "same", 12.5), 0);
    dup_close(&d);
}

static void test_rank_list(void **state)
{
    static const int held[] = { 1, 2, 3, 5, 7, 8, 9, 255 };
    dup_t            d;

    (void)state;
    dup_open(&d, HLX_PREFIX_RANK);
    assert_int_equal(line(&d, 4, "x", 0), 0);
    for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
        assert_int_equal(line(&d, held[i], "x", 0), 1);
    hlx_iof_collapse_flush(&d.c, HUGE_VAL);
    expect_text(&d, "[1-3,5,7-9,255] (the same line as [4] above)\n");
    dup_close(&d);
}

static void test_own_repeat(void **state)
{
    dup_t d;

    (void)state;
    dup_open(&d, HLX_PREFIX_RANK);
    /* a rank's own line twice: printed twice, nothing to sum up */
    assert_int_equal(line(&d, 0, "twice", 0), 0);
    assert_int_equal(line(&d, 0, "twice", 0.1), 0);
    hlx_iof_collapse_flush(&d.c, HUGE_VAL);
    expect_text(&d, "");
    /* a held rank says it again: its held copy is summed up before the line is printed */
    assert_int_equal(line(&d, 0, "again", 1), 0);
    assert_int_equal(line(&d, 1, "again", 1), 1);
    assert_int_equal(line(&d, 1, "again", 1.1), 0);
    expect_text(&d, "[1] (the same line as [0] above)\n");
    /* and the line rank 1 printed is now the first for the others */
    assert_int_equal(line(&d, 2, "again", 1.2), 1);
    hlx_iof_collapse_flush(&d.c, HUGE_VAL);
    expect_text(&d, "[1] (the same line as [0] above)\n[2] (the same line as [1] above)\n");
    dup_close(&d);
}

/* helixrun's own line comes: what is held is said first, and the window stays open. */
static void test_say_before_own_line(void **state)
{
    dup_t d;

    (void)state;
    dup_open(&d, HLX_PREFIX_RANK);
    assert_int_equal(line(&d, 0, "x", 0), 0);
    assert_int_equal(line(&d, 1, "x", 0), 1);
    hlx_iof_collapse_say(&d.c);
    expect_text(&d, "[1] (the same line as [0] above)\n");
    hlx_iof_collapse_say(&d.c); /* said once only */
    expect_text(&d, "[1] (the same line as [0] above)\n");
    assert_int_equal(line(&d, 2, "x", 0.5), 1); /* a late copy: still held */
    assert_int_equal(line(&d, 1, "x", 0.6), 0); /* rank 1 again: its own, printed */
    expect_text(&d, "[1] (the same line as [0] above)\n[2] (the same line as [0] above)\n");
    dup_close(&d);
}

static void test_header_masked(void **state)
{
    dup_t d;

    (void)state;
    dup_open(&d, HLX_PREFIX_RANK);
    assert_int_equal(line(&d, 0, "helix vm:18392:0 ERROR helix decode: 2 rank(s)", 0), 0);
    assert_int_equal(line(&d, 1, "helix vm:18393:1 ERROR helix decode: 2 rank(s)", 0), 1);
    assert_int_equal(line(&d, 2, "helix vm:18394:-1 ERROR helix decode: 2 rank(s)", 0), 1);
    /* another level, another text: not the same line */
    assert_int_equal(line(&d, 3, "helix vm:18395:3 WARN helix decode: 2 rank(s)", 0), 0);
    /* the watchdog's header has no rank */
    assert_int_equal(line(&d, 0, "helix vm:18392: watchdog: PMIx_Init did not finish", 0), 0);
    assert_int_equal(line(&d, 1, "helix vm:18393: watchdog: PMIx_Init did not finish", 0), 1);
    /* only the header is masked: numbers in the text still count */
    assert_int_equal(line(&d, 0, "helix decode: rank 0 failed", 0), 0);
    assert_int_equal(line(&d, 1, "helix decode: rank 1 failed", 0), 0);
    assert_int_equal(line(&d, 0, "helix vm:1:0 ERROR pid 17", 0), 0);
    assert_int_equal(line(&d, 1, "helix vm:2:1 ERROR pid 18", 0), 0);
    hlx_iof_collapse_flush(&d.c, HUGE_VAL);
    expect_text(&d, "[1-2] (the same line as [0] above)\n[1] (the same line as [0] above)\n");
    dup_close(&d);
}

static void test_burst_one_summary(void **state)
{
    static const char *const block[] = { "usage: x", "", "  -a  one", "  -b  two" };
    dup_t                    d;

    (void)state;
    dup_open(&d, HLX_PREFIX_RANK);
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 4; i++) {
            /* the block's empty line: rank 0 says it once, so it is held for the others */
            assert_int_equal(line(&d, r, block[i], 5.0 + 0.01 * r), r > 0);
        }
    hlx_iof_collapse_flush(&d.c, 5.0 + HLX_IOF_DUP_WINDOW_S);
    expect_text(&d, "[1-2] (the same 4 lines as [0] above)\n");
    dup_close(&d);
}

static void test_prefixes(void **state)
{
    dup_t d;

    (void)state;
    dup_open(&d, HLX_PREFIX_TAG);
    line(&d, 1, "t", 0);
    line(&d, 0, "t", 0);
    hlx_iof_collapse_flush(&d.c, HUGE_VAL);
    expect_text(&d, "[0]<stderr>: (the same line as [1] above)\n");
    dup_close(&d);
    dup_open(&d, HLX_PREFIX_NONE);
    line(&d, 0, "n", 0);
    line(&d, 1, "n", 0);
    line(&d, 2, "n", 0);
    line(&d, 0, "m", 0);
    line(&d, 3, "m", 0);
    hlx_iof_collapse_flush(&d.c, HUGE_VAL);
    expect_text(&d, "(ranks 1-2: the same line as rank 0 above)\n"
                    "(rank 3: the same line as rank 0 above)\n");
    dup_close(&d);
}

static void test_bounds(void **state)
{
    char  big[HLX_IOF_DUP_TEXT + 2], name[32];
    dup_t d;
    int   held = 0, sums = 0;

    (void)state;
    dup_open(&d, HLX_PREFIX_RANK);
    /* a line longer than the bound is never held */
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(line(&d, 0, big, 0), 0);
    assert_int_equal(line(&d, 1, big, 0), 0);
    big[HLX_IOF_DUP_TEXT] = '\0'; /* at the bound: held */
    assert_int_equal(line(&d, 0, big, 0), 0);
    assert_int_equal(line(&d, 1, big, 0), 1);
    hlx_iof_collapse_flush(&d.c, HUGE_VAL);
    expect_text(&d, "[1] (the same line as [0] above)\n");
    dup_close(&d);

    /* more distinct lines than slots, rank by rank (one rank's burst read whole before the
     * next rank's, as the pipes are): the first 64 are remembered and rank 1's copies of
     * them held; the rest are printed for both ranks, none lost */
    dup_open(&d, HLX_PREFIX_RANK);
    for (int i = 0; i < HLX_IOF_DUP_SLOTS + 10; i++) {
        snprintf(name, sizeof(name), "line %d", i);
        assert_int_equal(line(&d, 0, name, 0), 0);
    }
    for (int i = 0; i < HLX_IOF_DUP_SLOTS + 10; i++) {
        snprintf(name, sizeof(name), "line %d", i);
        held += line(&d, 1, name, 0);
    }
    assert_int_equal(held, HLX_IOF_DUP_SLOTS);
    hlx_iof_collapse_flush(&d.c, HUGE_VAL);
    for (const char *p = dup_text(&d); (p = strstr(p, "as [0] above)")); p++)
        sums++;
    assert_int_equal(sums, 1);
    assert_non_null(strstr(dup_text(&d), "[1] (the same 64 lines as [0] above)\n"));
    dup_close(&d);
    /* and line by line: the same */
    dup_open(&d, HLX_PREFIX_RANK);
    held = 0;
    for (int i = 0; i < HLX_IOF_DUP_SLOTS + 10; i++) {
        snprintf(name, sizeof(name), "line %d", i);
        assert_int_equal(line(&d, 0, name, 0), 0);
        held += line(&d, 1, name, 0);
    }
    assert_int_equal(held, HLX_IOF_DUP_SLOTS);
    /* once the windows close the slots are free again */
    hlx_iof_collapse_flush(&d.c, HUGE_VAL);
    assert_int_equal(line(&d, 0, "after", 10), 0);
    assert_int_equal(line(&d, 1, "after", 10), 1);
    dup_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copies_held),
        cmocka_unit_test(test_rank_list),
        cmocka_unit_test(test_own_repeat),
        cmocka_unit_test(test_say_before_own_line),
        cmocka_unit_test(test_header_masked),
        cmocka_unit_test(test_burst_one_summary),
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
