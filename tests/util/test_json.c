/* util: JSON field tables report file:line:column for every kind of bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "hlx_json.h"

typedef struct {
    int    layers;
    double eps;
    char   name[16];
    int    flag;
    int    any;
} cfg_t;

static const hlx_jfield_t cfg_fields[] = {
    { "layers", HLX_JT_INT, offsetof(cfg_t, layers), 1, 1, 1000, 0, "layer count" },
    { "eps", HLX_JT_DOUBLE, offsetof(cfg_t, eps), 0, 0, 1, 0, "norm epsilon" },
    { "name", HLX_JT_STRING, offsetof(cfg_t, name), 0, 1, 0, 16, "model name" },
    { "flag", HLX_JT_BOOL, offsetof(cfg_t, flag), 0, 1, 0, 0, "a flag" },
    { "any", HLX_JT_INT, offsetof(cfg_t, any), 0, 1, 0, 0, "an unbounded int" },
};

static hlx_status_t read_text(const char *text, cfg_t *c, hlx_jdoc_t **doc_p)
{
    hlx_status_t st = hlx_jdoc_load_string("m.json", text, doc_p);
    if (st != HLX_OK)
        return st;
    return hlx_jdoc_read_object(*doc_p, hlx_jdoc_root(*doc_p), "", cfg_fields, 5, c);
}

static void expect_error(const char *text, const char *msg)
{
    cfg_t c;
    hlx_jdoc_t *doc = NULL;
    hlx_status_t st = read_text(text, &c, &doc);

    assert_int_equal(st, HLX_ERR_PARSE);
    if (strstr(hlx_jdoc_error(doc), msg) == NULL)
        fail_msg("expected \"%s\" in \"%s\"", msg, hlx_jdoc_error(doc));
    hlx_jdoc_free(doc);
}

static void test_good(void **state)
{
    cfg_t c = { 0 };
    hlx_jdoc_t *doc = NULL;

    (void)state;
    assert_int_equal(read_text("{\"layers\": 3, \"eps\": 1e-5, \"name\": \"x\", \"flag\": true}",
                               &c, &doc), HLX_OK);
    assert_int_equal(c.layers, 3);
    assert_true(c.eps > 0.9e-5 && c.eps < 1.1e-5);
    assert_string_equal(c.name, "x");
    assert_int_equal(c.flag, 1);
    hlx_jdoc_free(doc);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("{\"layers\": 3,\n  \"layrs\": 4}", "m.json:2:3: layrs: unknown key (did you mean \"layers\"?)");
    expect_error("{\"layers\": 3,\n \"layers\": 4}", "m.json:2:");
    expect_error("{\"layers\": \"3\"}", "m.json:1:2: layers: expected an integer");
    expect_error("{\"layers\": 3.5}", "layers: expected an integer");
    expect_error("{\"layers\": 0}", "layers: 0 is outside [1, 1000]");
    expect_error("{\"eps\": 0.1}", "layers: required key is missing");
    expect_error("{\"layers\": 2, \"name\": \"abcdefghijklmnopqrstuvwxyz\"}", "name: longer than");
    expect_error("{\"layers\": 2,, }", "m.json:1:");
    expect_error("[1, 2]", "expected an object");
    expect_error("", "m.json:1:1: empty file");
    expect_error(" \n\t", "m.json:1:1: empty file");
    /* a byte-order mark is named, not quoted as an invisible character */
    expect_error("\xef\xbb\xbf{\"layers\": 2}", "m.json:1:1: the file starts with a UTF-8 byte-order mark");
    /* truncated after a newline: the end of the file is line 3, column 1 (not 0) */
    expect_error("{\"layers\": [1,\n 2,\n", "m.json:3:1: ");
    /* an unbounded int field still refuses what an int cannot hold (it used to wrap) */
    expect_error("{\"layers\": 2, \"any\": 4294967297}", "any: 4294967297 is outside");
    expect_error("{\"layers\": 2, \"name\": \"\"}", "name: must not be empty");
    expect_error("{\"layers\": 2, \"name\": \"a\\tb\"}", "name: control character 0x09");
}

static void test_locate_nested(void **state)
{
    hlx_jdoc_t *doc = NULL;
    int line = 0, col = 0;

    (void)state;
    assert_int_equal(hlx_jdoc_load_string("n.json", "{\"a\": [1,\n {\"b\": {\"c\": 2}}]}", &doc),
                     HLX_OK);
    assert_int_equal(hlx_jdoc_locate(doc, "/a/1/b/c", &line, &col), 0);
    assert_int_equal(line, 2);
    assert_int_equal(col, 9);
    assert_int_not_equal(hlx_jdoc_locate(doc, "/a/2", &line, &col), 0);
    hlx_jdoc_free(doc);
}

/* What an error names: an array element as its key and index, a key of digits in an object
 * as the key, once when the message already begins with it. */
static void fail_label(const char *text, const char *path, const char *msg, const char *want)
{
    hlx_jdoc_t *doc = NULL;

    assert_int_equal(hlx_jdoc_load_string("l.json", text, &doc), HLX_OK);
    assert_int_equal(hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%s", msg), HLX_ERR_PARSE);
    if (strstr(hlx_jdoc_error(doc), want) == NULL)
        fail_msg("%s: expected \"%s\" in \"%s\"", path, want, hlx_jdoc_error(doc));
    hlx_jdoc_free(doc);
}

static void test_fail_labels(void **state)
{
    static const char doc[] = "{\"a\": [1, [2, 3]], \"o\": {\"7\": 1}, \"k\": 2}";

    (void)state;
    fail_label(doc, "/k", "bad", "l.json:1:");
    fail_label(doc, "/k", "bad", ": k: bad");
    fail_label(doc, "/a/0", "bad", ": a[0]: bad");
    fail_label(doc, "/a/1/1", "bad", ": a[1][1]: bad");
    fail_label(doc, "/o/7", "bad", ": 7: bad"); /* an object's key, not an index */
    fail_label(doc, "/a/0", "a[0] is 1", ":1:8: a[0] is 1"); /* named once */
    fail_label(doc, "/a/0", "a[0]: too small", ":1:8: a[0]: too small");
    fail_label("[5, 6]", "/1", "bad", ": [1]: bad");
    fail_label(doc, "", "bad", ": (top level): bad");
}

/* A reason longer than the 768 bytes once kept whole is kept whole up to the 1024 bytes
 * every caller's buffer holds; past that its end says it was cut and how long it was. */
static void fail_with(const char *msg, char *out, size_t outlen)
{
    hlx_jdoc_t *doc = NULL;

    assert_int_equal(hlx_jdoc_load_string("m.json", "{\"layers\": 3}", &doc), HLX_OK);
    assert_int_equal(hlx_jdoc_fail(doc, "/layers", HLX_ERR_UNSUPPORTED, "%s", msg),
                     HLX_ERR_UNSUPPORTED);
    snprintf(out, outlen, "%s", hlx_jdoc_error(doc));
    hlx_jdoc_free(doc);
}

static void test_fail_long(void **state)
{
    static const char head[] = "m.json:1:2: layers: ";
    char msg[4096], err[2048], want[64];
    size_t i, at, n;
    const char *mark;

    (void)state;
    /* 900 bytes, the list kind of message: all of it, its last item included */
    for (n = 0, i = 0; n < 900 - 9; i++)
        n += (size_t)snprintf(msg + n, sizeof(msg) - n, "item%03zu, ", i);
    snprintf(msg + n, sizeof(msg) - n, "%-*s", (int)(900 - n), "last");
    assert_int_equal(strlen(msg), 900);
    fail_with(msg, err, sizeof(err));
    assert_int_equal(strlen(err), strlen(head) + 900);
    assert_memory_equal(err, head, strlen(head));
    assert_string_equal(err + strlen(head), msg);
    assert_null(strstr(err, "(cut:"));

    /* 3000 bytes: cut within 1023 bytes, the mark at the end with the whole length */
    memset(msg, 'x', 3000);
    msg[3000] = '\0';
    fail_with(msg, err, sizeof(err));
    snprintf(want, sizeof(want), "... (cut: %zu bytes in all)", strlen(head) + 3000);
    assert_true(strlen(err) <= 1023);
    assert_true(strlen(err) > 1023 - strlen(want) - 4);
    assert_memory_equal(err, head, strlen(head));
    mark = strstr(err, "...");
    assert_non_null(mark);
    assert_string_equal(mark, want);

    /* two-byte characters: the cut falls between two, never inside one */
    for (i = 0; i < 1500; i++)
        memcpy(msg + 2 * i, "\xc3\xa9", 2);
    msg[3000] = '\0';
    fail_with(msg, err, sizeof(err));
    mark = strstr(err, "...");
    assert_non_null(mark);
    at = (size_t)(mark - err) - strlen(head);
    assert_int_equal(at % 2, 0);
    assert_memory_equal(err + strlen(head), msg, at);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_locate_nested),
        cmocka_unit_test(test_fail_long),
        cmocka_unit_test(test_fail_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
