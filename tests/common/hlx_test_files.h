/* Test helpers shared by several suites: a whole file read into memory, and topology or
 * cluster files loaded or the test failed with the loader's message. Include after
 * <cmocka.h>; the loaders need <helix/topology.h> (define HLX_TEST_TOPO first). */
#ifndef HLX_TEST_FILES_H
#define HLX_TEST_FILES_H

#include <stdio.h>
#include <stdlib.h>

/* The file's bytes plus a terminating NUL; *len_p (may be NULL) gets the size. */
static inline char *hlx_test_slurp(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *buf;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len_p)
        *len_p = (size_t)n;
    return buf;
}

#ifdef HLX_TEST_TOPO
static inline hlx_topo_t *hlx_test_topo(const char *file)
{
    hlx_topo_t *t = NULL;
    char err[512] = "";
    if (hlx_topo_load(file, &t, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    return t;
}

static inline void hlx_test_cluster(const char *file, hlx_cluster_t *c)
{
    char err[512] = "";
    if (hlx_cluster_load(file, c, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
}
#endif

#endif
