/* runtime: the execution backend table. The host backend's exchange packing follows the
 * documented wire layout (computed here independently), unpacking inverts it, KV append
 * lands where hlx_kv_index says, argmax takes the first maximum over uneven vocabulary
 * blocks; a table with missing entries answers HLX_ERR_UNSUPPORTED, never NULL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlx_backend.h"

static void test_stubs(void **state)
{
    hlx_backend_ops_t ops;
    hlx_backend_t be;
    hlx_attn_desc_t d;
    float x[4] = { 0 };
    void *p = NULL;

    (void)state;
    memset(&ops, 0, sizeof(ops));
    memset(&be, 0, sizeof(be));
    memset(&d, 0, sizeof(d));
    hlx_backend_fill_stubs(&ops);
    be.ops = &ops;
    assert_int_equal(ops.mem_alloc(&be, 16, 0, &p), HLX_ERR_UNSUPPORTED);
    assert_int_equal(ops.attn(&be, NULL, &d), HLX_ERR_UNSUPPORTED);
    assert_int_equal(ops.gemm(&be, NULL, 1, 1, 1, x, x, HLX_DTYPE_F32, x, 0), HLX_ERR_UNSUPPORTED);
    assert_int_equal(ops.add(&be, NULL, x, x, 4), HLX_ERR_UNSUPPORTED);
    assert_int_equal(ops.argmax(&be, NULL, x, 1, 1, 4, 4, (int *)x), HLX_ERR_UNSUPPORTED);
    assert_int_equal(ops.queue_sync(&be, NULL), HLX_ERR_UNSUPPORTED);
    ops.mem_free(&be, NULL, 0); /* a no-op, not a crash */
    assert_int_equal(hlx_backend_init("no-such-backend", NULL, HLX_DTYPE_BF16, &be), HLX_ERR_INVALID);
}

/* 3 peers with 2, 3, 3 heads of dv 4 (8 heads of one TPA shard over KVP 3), 5 requests. */
static void test_pack_unpack(void **state)
{
    enum { KVP = 3, DV = 4, Q = 8, B = 5 };
    const int first[KVP] = { 0, 2, 5 }, count[KVP] = { 2, 3, 3 };
    size_t displ[KVP], total = 0;
    float opart[B * Q * DV], lse[B * Q], *send, *oparts, *lseparts;
    hlx_backend_t be;
    hlx_xchg_desc_t d;
    int j, b, h, e, half;

    (void)state;
    assert_int_equal(hlx_backend_init("host", "scalar", HLX_DTYPE_BF16, &be), HLX_OK);
    for (j = 0; j < KVP; j++) {
        displ[j] = total;
        total += (size_t)B * count[j] * (DV + 1);
    }
    send = calloc(total, sizeof(float));
    for (b = 0; b < B; b++)
        for (h = 0; h < Q; h++) {
            lse[b * Q + h] = -(float)(1000 * b + h);
            for (e = 0; e < DV; e++)
                opart[(b * Q + h) * DV + e] = (float)(1000 * b + 10 * h + e);
        }
    d = (hlx_xchg_desc_t){ .kvp = KVP, .dv = DV, .q_local = Q, .head_first = first,
                           .head_count = count, .displ = displ };
    /* two calls (micro-batches [0, 2) and [2, 5)) fill the same buffer as one would */
    for (half = 0; half < 2; half++) {
        d.b0 = half ? 2 : 0;
        d.b1 = half ? B : 2;
        assert_int_equal(be.ops->pack(&be, NULL, &d, opart, lse, send), HLX_OK);
    }
    for (j = 0; j < KVP; j++)
        for (b = 0; b < B; b++) {
            const float *blk = send + displ[j] + (size_t)b * count[j] * (DV + 1);
            for (h = 0; h < count[j]; h++) {
                int gh = first[j] + h;
                for (e = 0; e < DV; e++)
                    assert_true(blk[h * DV + e] == (float)(1000 * b + 10 * gh + e));
                assert_true(blk[count[j] * DV + h] == -(float)(1000 * b + gh));
            }
        }
    /* Unpack as peer 1 would if every sender sent it its 3 heads: here the blocks of peer
     * 1 and 2 both hold 3 heads, so unpack the send buffer's peer-1 block as one part. */
    {
        size_t one = displ[1];
        hlx_xchg_desc_t u = d;
        u.kvp = 1;
        u.displ = &one;
        u.b0 = 0;
        u.b1 = B;
        oparts = calloc((size_t)B * 3 * DV, sizeof(float));
        lseparts = calloc((size_t)B * 3, sizeof(float));
        assert_int_equal(be.ops->unpack(&be, NULL, &u, 3, B, send, oparts, lseparts), HLX_OK);
        for (b = 0; b < B; b++)
            for (h = 0; h < 3; h++) {
                assert_true(lseparts[b * 3 + h] == -(float)(1000 * b + 2 + h));
                for (e = 0; e < DV; e++)
                    assert_true(oparts[(b * 3 + h) * DV + e] ==
                                (float)(1000 * b + 10 * (2 + h) + e));
            }
        free(oparts);
        free(lseparts);
    }
    free(send);
    hlx_backend_fini(&be);
}

static void test_append_argmax(void **state)
{
    hlx_backend_t be;
    hlx_kv_append_desc_t d;
    size_t cap = 7, ke, ve;
    float kc[2 * 2 * 8 * 3], vc[2 * 2 * 8 * 2], kn[2 * 3], vn[2 * 2];
    /* 2 ranks' blocks of a vocabulary of 5 (2 and 3 entries), padded to 3, batch 2 */
    const float lg[2 * 2 * 3] = { 1, 7, -INFINITY,  2, 0, -INFINITY,
                                  7, 3, 3,          5, 9, 9 };
    int tok[2], i, e;

    (void)state;
    assert_int_equal(hlx_backend_init(NULL, "scalar", HLX_DTYPE_BF16, &be), HLX_OK);
    memset(kc, 0, sizeof(kc));
    memset(vc, 0, sizeof(vc));
    for (i = 0; i < 6; i++)
        kn[i] = (float)(i + 1);
    for (i = 0; i < 4; i++)
        vn[i] = (float)(-i - 1);
    d = (hlx_kv_append_desc_t){ .kc = kc, .vc = vc, .kv_dtype = HLX_DTYPE_F32,
                                .layout = be.k.kv_layout, .dk = 3, .dv = 2, .cap = cap,
                                .shard0 = 2, .t = 5, .nheads = 2, .k_new = kn, .v_new = vn };
    assert_int_equal(be.ops->kv_append(&be, NULL, &d), HLX_OK);
    ke = hlx_kv_elems(d.layout.k_block, 3, cap);
    ve = hlx_kv_elems(d.layout.v_block, 2, cap);
    assert_true(4 * ke <= sizeof(kc) / sizeof(kc[0]) && 4 * ve <= sizeof(vc) / sizeof(vc[0]));
    for (i = 0; i < 2; i++) {
        for (e = 0; e < 3; e++)
            assert_true(kc[(2 + i) * ke + hlx_kv_index(d.layout.k_block, 3, 5, e)] == kn[i * 3 + e]);
        for (e = 0; e < 2; e++)
            assert_true(vc[(2 + i) * ve + hlx_kv_index(d.layout.v_block, 2, 5, e)] == vn[i * 2 + e]);
    }
    assert_int_equal(be.ops->argmax(&be, NULL, lg, 2, 2, 5, 3, tok), HLX_OK);
    assert_int_equal(tok[0], 1); /* 7 at entry 1 comes before the 7 at entry 2 */
    assert_int_equal(tok[1], 3); /* 9 at entry 3 (rank 1's second), first of two 9s */
    hlx_backend_fini(&be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stubs),
        cmocka_unit_test(test_pack_unpack),
        cmocka_unit_test(test_append_argmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
