/* runtime: Helix layout arithmetic. Every query head, FFN column and vocabulary entry is
 * owned by exactly one rank; rank order is tpa-major (rank = tpa * KVP + kvp); the KV
 * position owner and the per-rank counts agree with a brute-force count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "hlx_layout.h"

static hlx_model_t make_model(int q, int k, int ffn, int vocab)
{
    hlx_model_t m;

    memset(&m, 0, sizeof(m));
    strcpy(m.name, "t");
    m.attn = HLX_ATTN_GQA;
    m.layers = 1;
    m.hidden = 64;
    m.q_heads = q;
    m.kv_heads = k;
    m.head_dim = 16;
    m.v_head_dim = 16;
    m.ffn = ffn;
    m.vocab = vocab;
    return m;
}

static void check_layout(int q, int k, int kvp, int tpa)
{
    hlx_model_t m = make_model(q, k, 100, 37);
    int n = kvp * tpa, r, h, owners[256] = { 0 }, ffn_cov[100] = { 0 }, voc_cov[37] = { 0 };
    char err[256];

    for (r = 0; r < n; r++) {
        hlx_layout_t L;
        int i;
        assert_int_equal(hlx_layout_init(&m, kvp, tpa, 16, r, &L, err, sizeof(err)), HLX_OK);
        assert_int_equal(L.rank, L.tpa_rank * kvp + L.kvp_rank);
        /* The head slice after the all-to-all lies inside the TPA shard's heads. */
        /* The slice this rank owns after the all-to-all is the block its KVP peers pack
         * for it: KVP peer j of a TPA shard receives heads [j*q_slice, (j+1)*q_slice) of
         * the shard, and it is also the row block of W_o this rank holds at TP = N. */
        assert_int_equal(L.q_slice_first, L.q_first + L.kvp_rank * L.q_slice);
        assert_true(L.q_slice_first >= L.q_first);
        assert_true(L.q_slice_first + L.q_slice <= L.q_first + L.q_local);
        for (h = L.q_slice_first; h < L.q_slice_first + L.q_slice; h++)
            owners[h]++;
        /* Every query head of the shard finds its KV head among the local ones, at the
         * position the engine assumes (local head index / group). */
        for (h = L.q_first; h < L.q_first + L.q_local; h++) {
            int kvh = h / (q / k);
            assert_true(kvh >= L.kv_first && kvh < L.kv_first + L.kv_local);
            assert_int_equal(kvh - L.kv_first, (h - L.q_first) / L.group);
        }
        for (i = L.ffn_first; i < L.ffn_first + L.ffn_count; i++)
            ffn_cov[i]++;
        for (i = L.vocab_first; i < L.vocab_first + L.vocab_count; i++)
            voc_cov[i]++;
        assert_true(L.vocab_count <= L.vocab_pad);
    }
    for (h = 0; h < q; h++)
        assert_int_equal(owners[h], 1);
    for (h = 0; h < 100; h++)
        assert_int_equal(ffn_cov[h], 1);
    for (h = 0; h < 37; h++)
        assert_int_equal(voc_cov[h], 1);
}

static void test_partitions(void **state)
{
    (void)state;
    check_layout(8, 2, 1, 1);
    check_layout(8, 2, 2, 1);
    check_layout(8, 2, 1, 2);
    check_layout(8, 2, 2, 2);
    check_layout(8, 2, 4, 1);
    check_layout(8, 2, 1, 4); /* TPA > K: KV heads duplicated across TPA shards */
    check_layout(8, 8, 2, 4);
    check_layout(32, 8, 4, 8);
    check_layout(16, 1, 4, 4); /* MQA */
}

static void test_kv_owner_counts(void **state)
{
    hlx_model_t m = make_model(12, 2, 64, 64);
    int kvp, block, j;
    int64_t end;
    char err[256];

    (void)state;
    for (kvp = 1; kvp <= 4; kvp++)
        for (block = 1; block <= 17; block += 8) {
            hlx_layout_t L;
            assert_int_equal(hlx_layout_init(&m, kvp, 1, block, 0, &L, err, sizeof(err)), HLX_OK);
            for (end = 0; end < 200; end += 7) {
                int64_t total = 0;
                for (j = 0; j < kvp; j++) {
                    int64_t brute = 0, p;
                    for (p = 0; p < end; p++)
                        brute += hlx_layout_kv_owner(&L, p) == j;
                    assert_int_equal(hlx_layout_kv_count(&L, j, end), brute);
                    total += brute;
                }
                assert_int_equal(total, end);
            }
            /* Staggered: block consecutive positions stay on one rank, then move on. */
            if (kvp > 1) {
                assert_int_equal(hlx_layout_kv_owner(&L, block - 1), 0);
                assert_int_equal(hlx_layout_kv_owner(&L, block), 1);
            }
        }
}

static void test_rejects(void **state)
{
    hlx_model_t m = make_model(8, 2, 64, 64);
    hlx_layout_t L;
    char err[256];

    (void)state;
    assert_int_equal(hlx_layout_init(&m, 1, 3, 16, 0, &L, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "--tpa 3"));
    assert_int_equal(hlx_layout_init(&m, 3, 1, 16, 0, &L, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "N = KVP x TPA"));
    m.kv_heads = 4;
    m.q_heads = 12;
    assert_int_equal(hlx_layout_init(&m, 1, 3, 16, 0, &L, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "kv_heads 4"));
    assert_int_equal(hlx_layout_init(&m, 0, 1, 16, 0, &L, err, sizeof(err)), HLX_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partitions),
        cmocka_unit_test(test_kv_owner_counts),
        cmocka_unit_test(test_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
