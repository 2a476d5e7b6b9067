/* Test helper: feeds every truncation and a single-character corruption at every offset
 * of a good input file to a loader, and checks that each is either accepted (and passes
 * the caller's check) or refused as HLX_ERR_PARSE with "path:line:column: ..."; nothing
 * may crash or leak. Include after <cmocka.h>. */
#ifndef HLX_TEST_MUTATE_H
#define HLX_TEST_MUTATE_H

#include <helix/status.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Loads path; returns its status and, on HLX_OK, asserts what an accepted file must hold. */
typedef hlx_status_t (*hlx_mutate_load_fn)(const char *path, char *err, size_t errlen);

static void hlx_mutate_file(const char *src, hlx_mutate_load_fn load)
{
    char tmp[] = "/tmp/hlx_mutXXXXXX", err[1024];
    static char text[16384], mut[16384];
    size_t len, i;
    FILE *f;
    int fd, accepted = 0, refused = 0;

    f = fopen(src, "rb");
    assert_non_null(f);
    len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    fd = mkstemp(tmp);
    assert_true(fd >= 0);
    close(fd);
    for (i = 0; i < 2 * len; i++) {
        hlx_status_t st;
        size_t n = len;
        memcpy(mut, text, len);
        if (i < len)
            n = i;                            /* truncated */
        else
            mut[i - len] = "x}\"0:,-"[i % 7]; /* one character replaced */
        f = fopen(tmp, "wb");
        assert_non_null(f);
        fwrite(mut, 1, n, f);
        fclose(f);
        st = load(tmp, err, sizeof(err));
        if (st == HLX_OK) {
            accepted++;
            continue;
        }
        refused++;
        assert_int_equal(st, HLX_ERR_PARSE);
        if (strncmp(err, tmp, strlen(tmp)) != 0 || err[strlen(tmp)] != ':')
            fail_msg("mutation %zu: %s", i, err);
    }
    unlink(tmp);
    assert_true(refused > (int)len);
    assert_true(accepted > 0);
}

#endif
