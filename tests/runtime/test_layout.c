/* runtime: Helix layout arithmetic. Every query head (or piece of one, when KVP exceeds a
 * shard's heads), FFN column and vocabulary entry is owned by exactly one rank after the
 * all-to-all, also when the splits are uneven (8 heads over 3 ranks); rank
 * order is tpa-major (rank = tpa * KVP + kvp); the KV position owner and the per-rank
 * counts agree with a brute-force count. */
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

static void check_layout_v(int q, int k, int kvp, int tpa, int v_head_dim)
{
    hlx_model_t m = make_model(q, k, 100, 37);
    int n = kvp * tpa, r, h, owners[2048] = { 0 }, ffn_cov[100] = { 0 }, voc_cov[37] = { 0 };
    int split = 0, min_q = 1 << 30, max_q = 0, dv;
    int kv_max = 0, slice_max = 0, slice_min = 1 << 30, shard_heads[64] = { 0 };
    char err[256];

    m.v_head_dim = v_head_dim; /* the values are what the pieces cut, not the keys */

    for (r = 0; r < n; r++) {
        hlx_layout_t L;
        int i;
        assert_int_equal(hlx_layout_init(&m, kvp, tpa, 16, r, &L, err, sizeof(err)), HLX_OK);
        assert_int_equal(L.rank, L.tpa_rank * kvp + L.kvp_rank);
        /* The slice this rank owns after the all-to-all is the block its KVP peers pack
         * for it (hlx_layout_q_slice of its KVP index, computed on any peer of the shard),
         * and it is also the row block of W_o this rank holds at TP = N. */
        for (i = 0; i < kvp; i++) {
            int first, count;
            hlx_layout_t P;
            assert_int_equal(hlx_layout_init(&m, kvp, tpa, 16, L.tpa_rank * kvp + i, &P, err,
                                             sizeof(err)), HLX_OK);
            hlx_layout_q_slice(&P, L.kvp_rank, &first, &count);
            assert_int_equal(first, L.q_slice_first);
            assert_int_equal(count, L.q_slice);
            /* every member of the TPA shard agrees on the shard's heads */
            assert_int_equal(P.q_first, L.q_first);
            assert_int_equal(P.q_local, L.q_local);
        }
        /* pieces of the shard's heads, one split for the whole layout */
        if (split == 0)
            split = L.q_split;
        assert_int_equal(L.q_split, split);
        min_q = L.q_local < min_q ? L.q_local : min_q;
        max_q = L.q_local > max_q ? L.q_local : max_q;
        assert_true(L.q_slice >= 1);
        assert_true(L.q_slice_first >= L.q_first * split);
        assert_true(L.q_slice_first + L.q_slice <= (L.q_first + L.q_local) * split);
        assert_int_equal(hlx_layout_piece_dim(&L, m.v_head_dim) * split, m.v_head_dim);
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
        /* near-equal splits: slices differ by at most one head inside a shard */
        kv_max = L.kv_local > kv_max ? L.kv_local : kv_max;
        slice_max = L.q_slice > slice_max ? L.q_slice : slice_max;
        slice_min = L.q_slice < slice_min ? L.q_slice : slice_min;
        assert_true(L.kv_local <= L.kv_local_max);
        assert_true(L.q_slice <= L.q_slice_max);
        if (L.kvp_rank == 0)
            shard_heads[L.tpa_rank] = L.q_local;
    }
    for (r = 0; r < n; r++) {
        hlx_layout_t L;
        assert_int_equal(hlx_layout_init(&m, kvp, tpa, 16, r, &L, err, sizeof(err)), HLX_OK);
        assert_int_equal(L.kv_local_max, kv_max);
        assert_int_equal(L.q_slice_max, slice_max);
    }
    for (h = 0, r = 0; r < tpa; r++)
        h += shard_heads[r];
    assert_int_equal(h, q);
    /* whole heads when they go round; else the divisor of v_head_dim that gives every KVP
     * rank a piece with the fewest floats on the busiest one (its pieces x (values + an
     * LSE)), ties to the smaller: every other candidate costs more, or as much and is
     * larger */
    dv = m.v_head_dim;
    assert_true((int64_t)min_q * split >= kvp);
    assert_true(min_q < kvp || split == 1);
    for (h = 2; h <= dv && min_q < kvp; h++) {
        int64_t c = ((int64_t)max_q * h + kvp - 1) / kvp * (dv / h + 1);
        int64_t c0 = ((int64_t)max_q * split + kvp - 1) / kvp * (dv / split + 1);
        if (dv % h == 0 && (int64_t)min_q * h >= kvp)
            assert_true(c > c0 || (c == c0 && h >= split));
    }
    for (h = 0; h < q * split; h++)
        assert_int_equal(owners[h], 1);
    for (h = 0; h < 100; h++)
        assert_int_equal(ffn_cov[h], 1);
    for (h = 0; h < 37; h++)
        assert_int_equal(voc_cov[h], 1);
}

static void check_layout(int q, int k, int kvp, int tpa)
{
    check_layout_v(q, k, kvp, tpa, 16);
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
    /* uneven: 8 heads over 3 KVP ranks (2, 3, 3), over 3 x 2 (1, 1, 2 per shard) */
    check_layout(8, 2, 3, 1);
    check_layout(8, 2, 3, 2);
    check_layout(8, 8, 1, 3); /* TPA not dividing Q: KV heads split 3, 3, 2 */
    check_layout(8, 8, 2, 3);
    check_layout(12, 4, 1, 3);
    check_layout(6, 2, 1, 4); /* TPA > K: a group of 3 split 1, 2 over two shards */
    check_layout(6, 2, 2, 2);
    check_layout(6, 2, 4, 1);
    check_layout(40, 8, 3, 5);
    /* KVP past a shard's heads: heads cut into pieces of v_head_dim / q_split (16 here) */
    check_layout(8, 2, 5, 2);  /* 4 heads x 2 pieces over 5: 1, 2, 1, 2, 2 */
    check_layout(8, 2, 16, 1); /* 8 x 2 over 16 */
    check_layout(8, 2, 24, 1); /* eighths: 64 pieces of 2, 3 a rank (quarters: 2 x 5) */
    check_layout(40, 8, 6, 5); /* 40 heads over TPA 5: shards of 5 and 10, 4 pieces a head */
    check_layout(6, 2, 4, 4);  /* TPA > K: shards of 1 and 2 heads, 4 pieces a head */
    check_layout(2, 1, 32, 1); /* one piece of one value each */
    /* values of 12 where keys have 16: thirds (3 divides 12, not 16; KVP 6 over 4 heads) */
    check_layout_v(8, 2, 6, 2, 12);
    check_layout_v(8, 2, 5, 2, 5); /* a prime: 5 pieces of 1 value */
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
    /* TPA > K must be a multiple of K: the message says which layouts work */
    assert_int_equal(hlx_layout_init(&m, 1, 3, 16, 0, &L, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "--tpa 3"));
    assert_non_null(strstr(err, "layouts that work"));
    /* more KVP ranks than heads in a shard: heads in pieces (KVP 3 x TPA 4: shards of 2
     * heads in quarters, 3 of 4 values a rank at most, where halves would leave one rank 2
     * of 8); more than a shard's values: some rank would own nothing */
    assert_int_equal(hlx_layout_init(&m, 3, 4, 16, 0, &L, err, sizeof(err)), HLX_OK);
    assert_int_equal(L.q_split, 4);
    assert_int_equal(L.q_slice_max, 3);
    assert_int_equal(hlx_layout_init(&m, 9, 1, 16, 0, &L, err, sizeof(err)), HLX_OK);
    assert_int_equal(L.q_split, 2);
    assert_int_equal(L.q_slice_max, 2);
    m.hidden = 1024;
    assert_int_equal(hlx_layout_init(&m, 64, 1, 16, 0, &L, err, sizeof(err)), HLX_OK);
    assert_int_equal(L.q_split, 8);
    assert_int_equal(hlx_layout_init(&m, 24, 1, 16, 0, &L, err, sizeof(err)), HLX_OK);
    assert_int_equal(L.q_split, 8); /* 3 pieces of 2 + 3 LSEs = 9 floats; quarters 2 x 5 */
    assert_int_equal(hlx_layout_init(&m, 129, 1, 16, 0, &L, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "use --kvp <= 128"));
    assert_int_equal(hlx_layout_init(&m, 33, 4, 16, 0, &L, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "N = KVP x TPA"));
    assert_non_null(strstr(err, "use --kvp <= 32"));
    /* MLA merges whole heads: no pieces */
    m.attn = HLX_ATTN_MLA;
    m.kv_lora_rank = 16;
    assert_int_equal(hlx_layout_init(&m, 9, 1, 16, 0, &L, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "use --kvp <= 8"));
    /* even past every value of the heads: MLA's own reason and bound */
    assert_int_equal(hlx_layout_init(&m, 200, 1, 16, 0, &L, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "use --kvp <= 8"));
    m.attn = HLX_ATTN_GQA;
    m.hidden = 64;
    m.kv_heads = 4;
    m.q_heads = 12;
    assert_int_equal(hlx_layout_init(&m, 1, 6, 16, 0, &L, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "kv_heads 4"));
    assert_int_equal(hlx_layout_init(&m, 1, 3, 16, 0, &L, err, sizeof(err)), HLX_OK);
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
