/* util: the one integer/number/choice parser (suffix rule, bounds, overflow), the whole-file
 * reader (missing, directory, too large, empty, pipe), output files written whole or not at
 * all, and settings tables (environment
 * values through the same parser, each bad value reported once per process). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hlx_file.h"
#include "hlx_flags.h"
#include "hlx_param.h"
#include "hlx_parse.h"

static void ok_int(const char *s, int64_t min, int64_t max, int64_t want)
{
    char why[256] = "";
    int64_t v = -12345;

    if (hlx_parse_int(s, min, max, &v, why, sizeof(why)) != HLX_OK)
        fail_msg("'%s' refused: %s", s, why);
    if (v != want)
        fail_msg("'%s' gave %lld, expected %lld", s, (long long)v, (long long)want);
}

static void bad_int(const char *s, int64_t min, int64_t max, const char *msg)
{
    char why[256] = "";
    int64_t v = 777;

    assert_int_equal(hlx_parse_int(s, min, max, &v, why, sizeof(why)), HLX_ERR_INVALID);
    assert_true(v == 777); /* untouched on error */
    if (strstr(why, msg) == NULL)
        fail_msg("'%s': expected \"%s\" in \"%s\"", s ? s : "(null)", msg, why);
}

static void test_int(void **state)
{
    (void)state;
    ok_int("0", 0, 10, 0);
    ok_int("4096", 1, INT64_MAX, 4096);
    ok_int("256K", 1, INT64_MAX, 262144);
    ok_int("256k", 1, INT64_MAX, 262144);
    ok_int("1M", 1, INT64_MAX, 1048576);
    ok_int("1G", 1, INT64_MAX, 1073741824);
    ok_int("2T", 1, INT64_MAX, 2199023255552ll);
    ok_int("-5", -10, 10, -5);
    ok_int("9223372036854775807", 0, INT64_MAX, INT64_MAX);
    ok_int("-9223372036854775808", INT64_MIN, 0, INT64_MIN);
    ok_int("007", 0, 10, 7); /* decimal, never octal */
    bad_int("", 0, 10, "is not an integer");
    bad_int(NULL, 0, 10, "is not an integer");
    bad_int("abc", 0, 10, "'abc' is not an integer");
    bad_int("0x10", 0, 100, "is not an integer");
    bad_int("1.5", 0, 100, "is not an integer");
    bad_int(" 5", 0, 100, "is not an integer");
    bad_int("5 ", 0, 100, "is not an integer");
    bad_int("+5", 0, 100, "is not an integer");
    bad_int("1KB", 0, 1 << 20, "is not an integer");
    bad_int("K", 0, 100, "is not an integer");
    bad_int("-", 0, 100, "is not an integer");
    bad_int("1Q", 0, 100, "optionally followed by K, M, G or T");
    bad_int("11", 0, 10, "'11' is outside [0, 10]");
    bad_int("-1", 0, 10, "outside [0, 10]");
    bad_int("1G", 1, 2147483647 / 2, "'1G' (1073741824) is outside");
    bad_int("9223372036854775808", 0, INT64_MAX, "outside");
    bad_int("99999999999999999999999", 0, INT64_MAX, "outside");
    bad_int("8388608T", 0, INT64_MAX, "outside"); /* 2^63: one past the largest */
    ok_int("8388607T", 0, INT64_MAX, 8388607ll << 40);
}

static void test_num(void **state)
{
    char why[256];
    double d = -1;

    (void)state;
    assert_int_equal(hlx_parse_num("0.5", 0, 1, &d, why, sizeof(why)), HLX_OK);
    assert_true(d == 0.5);
    assert_int_equal(hlx_parse_num("1e-3", 0, 1, &d, why, sizeof(why)), HLX_OK);
    assert_true(d == 1e-3);
    assert_int_equal(hlx_parse_num("30", 0.001, 86400, &d, why, sizeof(why)), HLX_OK);
    assert_true(d == 30);
    d = 7;
    assert_int_equal(hlx_parse_num("nan", -1e300, 1e300, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_non_null(strstr(why, "not a finite decimal number"));
    assert_int_equal(hlx_parse_num("inf", -1e300, 1e300, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_int_equal(hlx_parse_num("-Infinity", -1e300, 1e300, &d, why, sizeof(why)),
                     HLX_ERR_INVALID);
    assert_int_equal(hlx_parse_num("0x1p3", 0, 100, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_int_equal(hlx_parse_num("1e999", 0, 1e300, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_non_null(strstr(why, "'1e999' is too large to represent"));
    assert_int_equal(hlx_parse_num("-1e999", -1e300, 0, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_non_null(strstr(why, "'-1e999' is too large to represent"));
    /* strtod's ERANGE with 0 or a subnormal: said as what it is, where it read "not finite" */
    assert_int_equal(hlx_parse_num("1e-400", 0, 1, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_non_null(strstr(why, "'1e-400' underflows: too small to represent"));
    assert_null(strstr(why, "finite"));
    assert_int_equal(hlx_parse_num("-4e-320", -1, 1, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_non_null(strstr(why, "'-4e-320' underflows"));
    assert_int_equal(hlx_parse_num("0e-999", 0, 1, &d, why, sizeof(why)), HLX_OK); /* exact */
    assert_true(d == 0);
    assert_int_equal(hlx_parse_num("2.2250738585072014e-308", 0, 1, &d, why, sizeof(why)),
                     HLX_OK); /* the smallest normal */
    d = 7;
    assert_int_equal(hlx_parse_num("", 0, 1, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_int_equal(hlx_parse_num(" 1", 0, 1, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_int_equal(hlx_parse_num("1s", 0, 10, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_int_equal(hlx_parse_num("11", 0, 10, &d, why, sizeof(why)), HLX_ERR_INVALID);
    assert_non_null(strstr(why, "'11' is outside [0, 10]"));
    assert_true(d == 7);
}

static void test_choice(void **state)
{
    char why[256];
    int i = -1;

    (void)state;
    assert_int_equal(hlx_parse_choice("info", "ERROR|WARN|INFO", &i, why, sizeof(why)), HLX_OK);
    assert_int_equal(i, 2);
    assert_int_equal(hlx_parse_choice("infoo", "ERROR|WARN|INFO", &i, why, sizeof(why)),
                     HLX_ERR_INVALID);
    assert_non_null(strstr(why, "(did you mean INFO?)"));
    assert_int_equal(hlx_parse_choice("", "on|off", &i, why, sizeof(why)), HLX_ERR_INVALID);
    assert_non_null(strstr(why, "is not one of on|off"));
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
}

static void test_file(void **state)
{
    char dir[] = "/tmp/hlx_test_file_XXXXXX", path[512], err[512] = "", *buf = NULL;
    size_t len = 0;
    int fds[2];

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/missing.json", dir);
    assert_int_equal(hlx_file_read(path, "model file", 1 << 20, &buf, &len, err, sizeof(err)),
                     HLX_ERR_NOT_FOUND);
    assert_non_null(strstr(err, "missing.json: no such model file"));
    assert_int_equal(hlx_file_read(dir, "model file", 1 << 20, &buf, &len, err, sizeof(err)),
                     HLX_ERR_INVALID);
    assert_non_null(strstr(err, "is a directory, not a model file"));
    snprintf(path, sizeof(path), "%s/empty", dir);
    write_file(path, "", 0);
    assert_int_equal(hlx_file_read(path, "x", 100, &buf, &len, err, sizeof(err)), HLX_OK);
    assert_int_equal(len, 0);
    assert_string_equal(buf, "");
    free(buf);
    write_file(path, "0123456789", 10);
    assert_int_equal(hlx_file_read(path, "x", 10, &buf, &len, err, sizeof(err)), HLX_OK);
    assert_int_equal(len, 10);
    free(buf);
    assert_int_equal(hlx_file_read(path, "cluster file", 9, &buf, &len, err, sizeof(err)),
                     HLX_ERR_INVALID);
    assert_non_null(strstr(err, "larger than 9 bytes"));
    unlink(path);
    /* a pipe has no size: it is read up to the bound and refused past it */
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "0123456789abc", 13), 13);
    close(fds[1]);
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
    assert_int_equal(hlx_file_read(path, "x", 12, &buf, &len, err, sizeof(err)),
                     HLX_ERR_INVALID);
    close(fds[0]);
    /* a named pipe nobody writes to: read as empty at once, never a hang */
    snprintf(path, sizeof(path), "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(hlx_file_read(path, "x", 100, &buf, &len, err, sizeof(err)), HLX_OK);
    assert_int_equal(len, 0);
    free(buf);
    unlink(path);
    /* a character device without end: the bound stops it */
    assert_int_equal(hlx_file_read("/dev/zero", "x", 1 << 16, &buf, &len, err, sizeof(err)),
                     HLX_ERR_INVALID);
    rmdir(dir);
}

/* Output files: written whole through a temporary file or not at all. */
static void test_out(void **state)
{
    char dir[] = "/tmp/hlx_test_out_XXXXXX", path[512], err[600] = "", *buf = NULL;
    size_t len = 0;
    hlx_out_t o;
    struct stat sb;
    mode_t mask = umask(022);
    DIR *dp;
    struct dirent *de;
    int n;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/out.txt", dir);
    write_file(path, "OLD", 3);
    /* not ok: the old file stays, the temporary file goes */
    assert_int_equal(hlx_out_begin(&o, path, err, sizeof(err)), HLX_OK);
    fputs("NEW", o.f);
    assert_int_equal(hlx_out_end(&o, 0, err, sizeof(err)), HLX_OK);
    assert_int_equal(hlx_file_read(path, "x", 100, &buf, &len, err, sizeof(err)), HLX_OK);
    assert_string_equal(buf, "OLD");
    free(buf);
    /* while it is written, the old content is still in place */
    assert_int_equal(hlx_out_begin(&o, path, err, sizeof(err)), HLX_OK);
    fputs("NEW", o.f);
    fflush(o.f);
    assert_int_equal(hlx_file_read(path, "x", 100, &buf, &len, err, sizeof(err)), HLX_OK);
    assert_string_equal(buf, "OLD");
    free(buf);
    assert_int_equal(hlx_out_end(&o, 1, err, sizeof(err)), HLX_OK);
    assert_int_equal(hlx_file_read(path, "x", 100, &buf, &len, err, sizeof(err)), HLX_OK);
    assert_string_equal(buf, "NEW");
    free(buf);
    /* the permissions fopen gives (not mkstemp's 0600) */
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0644);
    umask(mask);
    /* nothing else is left in the folder */
    assert_non_null(dp = opendir(dir));
    for (n = 0; (de = readdir(dp)) != NULL;)
        n += de->d_name[0] != '.';
    closedir(dp);
    assert_int_equal(n, 1);
    /* paths that cannot take a file, found before anything is written */
    assert_int_equal(hlx_out_check(dir, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "is a directory"));
    snprintf(path, sizeof(path), "%s/no/such/dir/x", dir);
    assert_int_equal(hlx_out_check(path, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "cannot create a file there"));
    assert_int_equal(hlx_out_check("", err, sizeof(err)), HLX_ERR_INVALID);
    /* a named pipe: checked without opening it (that would wait for a reader) */
    snprintf(path, sizeof(path), "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(hlx_out_check(path, err, sizeof(err)), HLX_OK);
    unlink(path);
    /* a device is written as it is; a write error is reported, nothing renamed */
    if (access("/dev/full", W_OK) == 0) {
        assert_int_equal(hlx_out_begin(&o, "/dev/full", err, sizeof(err)), HLX_OK);
        fputs("x", o.f);
        assert_int_equal(hlx_out_end(&o, 1, err, sizeof(err)), HLX_ERR_IO);
        assert_non_null(strstr(err, "No space left"));
    }
    snprintf(path, sizeof(path), "%s/out.txt", dir);
    unlink(path);
    rmdir(dir);
}

typedef struct {
    int    n;
    double t;
    char   s[HLX_PARAM_STRLEN];
    int    c;
} test_set_t;

static const hlx_param_t test_params[] = {
    { "TEST_PARSE_N", HLX_PT_INT, "4K", 0, 1 << 20, offsetof(test_set_t, n), "an int", NULL },
    { "TEST_PARSE_T", HLX_PT_DOUBLE, "30", 0.001, 86400, offsetof(test_set_t, t), "a time", NULL },
    { "TEST_PARSE_S", HLX_PT_STRING, "x", 0, 0, offsetof(test_set_t, s), "a string", NULL },
    { "TEST_PARSE_C", HLX_PT_INT, "auto", 0, 2, offsetof(test_set_t, c), "a choice",
      "low|mid|auto" },
};
static const hlx_param_table_t test_table = { "test", test_params, 4, sizeof(test_set_t), NULL };

/* Counts the lines of a file that contain needle. */
static int count_in(const char *path, const char *needle)
{
    char line[1024];
    int n = 0;
    FILE *f = fopen(path, "r");

    assert_non_null(f);
    while (fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* Sends stderr to a new temporary file (its path in path, a mkstemp template) until
 * stderr_end; returns the saved descriptor. */
static int stderr_begin(char *path)
{
    int fd = mkstemp(path), saved;

    assert_true(fd >= 0);
    fflush(stderr);
    saved = dup(2);
    dup2(fd, 2);
    close(fd);
    return saved;
}

static void stderr_end(int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

static void test_param(void **state)
{
    char errpath[] = "/tmp/hlx_test_param_XXXXXX";
    const hlx_param_table_t *tables[] = { &test_table };
    hlx_param_src_t src[4];
    test_set_t set;
    int saved;
    char *out = NULL;
    size_t outlen = 0;
    FILE *mf;

    (void)state;
    unsetenv("HELIX_TEST_PARSE_N");
    unsetenv("HELIX_TEST_PARSE_T");
    unsetenv("HELIX_TEST_PARSE_C");
    assert_int_equal(hlx_param_load(&test_table, &set, src), HLX_OK);
    assert_int_equal(set.n, 4096); /* the same suffix rule as the flags */
    assert_true(set.t == 30);
    assert_int_equal(src[0], HLX_SRC_DEFAULT);
    /* a choice: by name (any case) or by number, printed by name */
    assert_int_equal(set.c, 2);
    assert_int_equal(hlx_param_set(&test_table, &set, src, "test_parse_c", "MID"), HLX_OK);
    assert_int_equal(set.c, 1);
    assert_int_equal(hlx_param_set(&test_table, &set, src, "test_parse_c", "0"), HLX_OK);
    assert_int_equal(set.c, 0);
    assert_int_equal(hlx_param_set(&test_table, &set, src, "test_parse_c", "3"),
                     HLX_ERR_INVALID);
    assert_int_equal(hlx_param_set(&test_table, &set, src, "test_parse_c", "lo"),
                     HLX_ERR_INVALID);
    assert_int_equal(hlx_param_set(&test_table, &set, src, "test_parse_c", ""),
                     HLX_ERR_INVALID);
    assert_int_equal(set.c, 0);
    assert_int_equal(hlx_param_set(&test_table, &set, src, "test_parse_c", "mid"), HLX_OK);
    mf = open_memstream(&out, &outlen);
    assert_non_null(mf);
    hlx_param_print(mf, &test_table, &set, src);
    fclose(mf);
    assert_non_null(strstr(out, "HELIX_TEST_PARSE_C"));
    assert_non_null(strstr(out, "mid (1)"));
    free(out);
    { /* a value's name alone, and none for a value the choices do not name */
        const hlx_param_t *pc = NULL;
        char name[16];
        size_t i;
        for (i = 0; i < test_table.nparams; i++)
            if (!strcmp(test_table.params[i].name, "TEST_PARSE_C"))
                pc = &test_table.params[i];
        assert_non_null(pc);
        assert_ptr_equal(hlx_param_choice(pc, 1, name, sizeof(name)), name);
        assert_string_equal(name, "mid");
        assert_non_null(hlx_param_choice(pc, 2, name, sizeof(name)));
        assert_null(hlx_param_choice(pc, 3, name, sizeof(name)));
        assert_null(hlx_param_choice(pc, -1, name, sizeof(name)));
        assert_null(hlx_param_choice(&test_table.params[0], 0, name, sizeof(name)));
    }
    setenv("HELIX_TEST_PARSE_N", "64K", 1);
    assert_int_equal(hlx_param_load(&test_table, &set, src), HLX_OK);
    assert_int_equal(set.n, 65536);
    assert_int_equal(src[0], HLX_SRC_ENV);
    assert_int_equal(hlx_param_set(&test_table, &set, src, "test_parse_t", "0.5"), HLX_OK);
    assert_true(set.t == 0.5);
    assert_int_equal(src[1], HLX_SRC_FLAG);
    assert_int_equal(hlx_param_set(&test_table, &set, src, "TEST_PARSE_T", "nan"),
                     HLX_ERR_INVALID);

    /* a bad value is reported once however many times the table is loaded */
    saved = stderr_begin(errpath);
    setenv("HELIX_TEST_PARSE_T", "abc", 1);
    assert_int_equal(hlx_param_load(&test_table, &set, NULL), HLX_ERR_INVALID);
    assert_int_equal(hlx_param_load(&test_table, &set, NULL), HLX_ERR_INVALID);
    assert_int_equal(hlx_param_check_env(tables, 1), HLX_ERR_INVALID);
    stderr_end(saved);
    assert_int_equal(count_in(errpath, "HELIX_TEST_PARSE_T: 'abc' is not a finite decimal"), 1);
    unlink(errpath);
    unsetenv("HELIX_TEST_PARSE_T");
    unsetenv("HELIX_TEST_PARSE_N");
}

/* A rule between two parameters: t (seconds) must cover n (milliseconds). */
static hlx_status_t test_rules(const void *values, char *why, size_t whylen)
{
    const test_set_t *s = values;

    if (s->t * 1000 < s->n) {
        snprintf(why, whylen, "HELIX_TEST_PARSE_T=%g s shorter than HELIX_TEST_PARSE_N=%d ms",
                 s->t, s->n);
        return HLX_ERR_INVALID;
    }
    return HLX_OK;
}
static const hlx_param_table_t test_rule_table = { "test-rules", test_params, 4,
                                                   sizeof(test_set_t), test_rules };

static void test_param_rules(void **state)
{
    char errpath[] = "/tmp/hlx_test_rules_XXXXXX";
    const hlx_param_table_t *tables[] = { &test_rule_table };
    test_set_t set;
    int saved;
    char *out = NULL;
    size_t outlen = 0;
    FILE *mf;

    (void)state;
    unsetenv("HELIX_TEST_PARSE_C");
    setenv("HELIX_TEST_PARSE_N", "1000", 1);
    setenv("HELIX_TEST_PARSE_T", "2", 1);
    assert_int_equal(hlx_param_load(&test_rule_table, &set, NULL), HLX_OK);
    /* each value valid alone, the pair not: refused, reported once however many loads */
    setenv("HELIX_TEST_PARSE_T", "0.5", 1);
    saved = stderr_begin(errpath);
    assert_int_equal(hlx_param_load(&test_rule_table, &set, NULL), HLX_ERR_INVALID);
    assert_int_equal(hlx_param_load(&test_rule_table, &set, NULL), HLX_ERR_INVALID);
    assert_int_equal(hlx_param_check_env(tables, 1), HLX_ERR_INVALID);
    stderr_end(saved);
    assert_int_equal(count_in(errpath, "HELIX_TEST_PARSE_T=0.5 s shorter than "
                                       "HELIX_TEST_PARSE_N=1000 ms"), 1);
    unlink(errpath);
    mf = open_memstream(&out, &outlen);
    assert_non_null(mf);
    hlx_param_print_env(mf, &test_rule_table);
    fclose(mf);
    assert_non_null(strstr(out, "INVALID together: HELIX_TEST_PARSE_T=0.5 s"));
    free(out);
    /* the table without the rule takes the same values */
    assert_int_equal(hlx_param_load(&test_table, &set, NULL), HLX_OK);
    unsetenv("HELIX_TEST_PARSE_T");
    unsetenv("HELIX_TEST_PARSE_N");
}

typedef struct {
    int64_t     n;
    double      tol;
    const char *file;
    int         json, mode;
} test_opts_t;

static const hlx_flag_t test_flag_list[] = {
    { "context", HLX_FT_INT, "4K", 1, INT64_C(1) << 40, 0, 0, NULL, offsetof(test_opts_t, n),
      "S", "tokens" },
    { "tol", HLX_FT_NUM, "1e-3", 0, 0, 1e-12, 1, NULL, offsetof(test_opts_t, tol), "X", "tol" },
    { "file", HLX_FT_STRING, NULL, 0, 0, 0, 0, NULL, offsetof(test_opts_t, file), "F", "f" },
    { "json", HLX_FT_BOOL, NULL, 0, 0, 0, 0, NULL, offsetof(test_opts_t, json), NULL, "j" },
    { "mode", HLX_FT_CHOICE, "auto", 0, 0, 0, 0, "auto|on|off", offsetof(test_opts_t, mode),
      "M", "m" },
};
static const hlx_flag_table_t test_flags = { "test", test_flag_list, 5, NULL, 0 };

static int parse_args(test_opts_t *o, int *given, char *a1, char *a2, char *a3)
{
    char *argv[] = { "test", a1, a2, a3, NULL };
    int argc = 1 + (a1 != NULL) + (a2 != NULL) + (a3 != NULL);

    memset(o, 0, sizeof(*o));
    return hlx_flags_parse(&test_flags, argc, argv, o, given, NULL, NULL);
}

static void test_flags_table(void **state)
{
    test_opts_t o;
    int given[HLX_FLAGS_MAX];

    (void)state;
    assert_int_equal(parse_args(&o, given, NULL, NULL, NULL), -1);
    assert_true(o.n == 4096 && o.tol == 1e-3 && o.file == NULL && !o.json && o.mode == 0);
    assert_int_equal(given[0], 0);
    assert_int_equal(parse_args(&o, given, "--context=1G", "--json", "--mode=OFF"), -1);
    assert_true(o.n == 1073741824 && o.json == 1 && o.mode == 2);
    assert_int_equal(given[0], 1);
    assert_int_equal(given[1], 0);
    assert_int_equal(parse_args(&o, given, "--context", "0x10", NULL), 2);
    assert_int_equal(parse_args(&o, given, "--tol", "nan", NULL), 2);
    assert_int_equal(parse_args(&o, given, "--mode", "of", NULL), 2);
    assert_int_equal(parse_args(&o, given, "--contxt", "5", NULL), 2);
    assert_int_equal(parse_args(&o, given, "--file", "", NULL), 2);
    assert_int_equal(parse_args(&o, given, "stray", NULL, NULL), 2);
    assert_int_equal(parse_args(&o, given, "--context", NULL, NULL), 2);
    /* found by the settings fuzz target: an unknown option inside a cluster of short
     * options, then a bool flag given a value, then a fresh parse must start clean */
    assert_int_equal(parse_args(&o, given, "-xq", "--context", "5"), 2);
    assert_int_equal(parse_args(&o, given, "--json=3", NULL, NULL), 2);
    assert_int_equal(parse_args(&o, given, "--context", "5", NULL), -1);
    assert_true(o.n == 5);
}

/* One-letter aliases: -c 5, -c5, a cluster -jc7, errors and help naming both forms. */
static const hlx_flag_alias_t test_aliases[] = { { 'c', "context" }, { 'j', "json" } };
static const hlx_flag_table_t test_alias_flags = { "test", test_flag_list, 5, test_aliases, 2 };

static int parse_alias(test_opts_t *o, char *a1, char *a2, char *err, size_t n)
{
    char *argv[] = { "test", a1, a2, NULL };
    int argc = 1 + (a1 != NULL) + (a2 != NULL), fd = dup(2), rc;
    FILE *tmp = tmpfile();
    size_t got;

    assert_non_null(tmp);
    fflush(stderr);
    dup2(fileno(tmp), 2);
    memset(o, 0, sizeof(*o));
    rc = hlx_flags_parse(&test_alias_flags, argc, argv, o, NULL, NULL, NULL);
    fflush(stderr);
    dup2(fd, 2);
    close(fd);
    rewind(tmp);
    got = fread(err, 1, n - 1, tmp);
    err[got] = '\0';
    fclose(tmp);
    return rc;
}

static void test_flags_alias(void **state)
{
    test_opts_t o;
    char err[512], *help = NULL;
    size_t len = 0;
    FILE *mf;

    (void)state;
    unsetenv("OMPI_COMM_WORLD_RANK"); /* not muted as a rank above 0 */
    unsetenv("SLURM_PROCID");
    unsetenv("PMIX_RANK");
    assert_int_equal(parse_alias(&o, "-c", "5", err, sizeof(err)), -1);
    assert_true(o.n == 5 && err[0] == '\0');
    assert_int_equal(parse_alias(&o, "-c1K", NULL, err, sizeof(err)), -1);
    assert_true(o.n == 1024);
    assert_int_equal(parse_alias(&o, "-jc7", "--tol=0.5", err, sizeof(err)), -1);
    assert_true(o.json == 1 && o.n == 7 && o.tol == 0.5);
    assert_int_equal(parse_alias(&o, "-cx", NULL, err, sizeof(err)), 2);
    assert_non_null(strstr(err, "test: -c/--context: 'x' is not an integer"));
    assert_int_equal(parse_alias(&o, "--context", "y", err, sizeof(err)), 2);
    assert_non_null(strstr(err, "test: -c/--context: 'y'"));
    assert_int_equal(parse_alias(&o, "-c", NULL, err, sizeof(err)), 2);
    assert_non_null(strstr(err, "-c needs a value"));
    assert_int_equal(parse_alias(&o, "-t", "1", err, sizeof(err)), 2); /* no alias for tol */
    assert_non_null(strstr(err, "unknown option '-t'"));
    mf = open_memstream(&help, &len);
    assert_non_null(mf);
    hlx_flags_help(mf, &test_alias_flags);
    fclose(mf);
    assert_non_null(strstr(help, "  -c, --context S   tokens (default 4K)\n"));
    assert_non_null(strstr(help, "  -j, --json        j\n"));
    assert_non_null(strstr(help, "  --tol X           tol (default 1e-3)\n"));
    free(help);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int),
        cmocka_unit_test(test_num),
        cmocka_unit_test(test_choice),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_out),
        cmocka_unit_test(test_param),
        cmocka_unit_test(test_param_rules),
        cmocka_unit_test(test_flags_table),
        cmocka_unit_test(test_flags_alias),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
