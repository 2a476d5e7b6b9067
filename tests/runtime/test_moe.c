/* runtime: MoE layout and routing. Every (routed expert, column) and every shared column
 * has exactly one owner for EP x TPF splits (even and uneven columns); a rank holds only
 * E / EP experts and its bytes count only those; bad EP widths are refused naming --ep;
 * routing breaks ties to the lowest index, adds the correction bias to the choice only,
 * limits the choice to the best groups, renormalises and scales the weights. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hlx_moe.h"

static hlx_model_t make_moe(int experts, int top_k, int shared, int expert_ffn)
{
    hlx_model_t m;

    memset(&m, 0, sizeof(m));
    strcpy(m.name, "t");
    m.attn = HLX_ATTN_GQA;
    m.layers = 3;
    m.dense_layers = 1;
    m.hidden = 64;
    m.q_heads = 8;
    m.kv_heads = 2;
    m.head_dim = m.v_head_dim = 16;
    m.ffn = 128;
    m.vocab = 64;
    m.experts = experts;
    m.top_k = top_k;
    m.shared_experts = shared;
    m.expert_ffn = expert_ffn;
    m.routed_scaling = 1.0;
    m.n_group = m.topk_group = 1;
    return m;
}

static void check_split(int E, int Fe, int S, int n, int ep)
{
    hlx_model_t m = make_moe(E, 2, S, Fe);
    static int own[64][512], shared_own[1024];
    hlx_moe_layout_t ml;
    int r, e, c, Fs = S * Fe;
    uint64_t esize = 2;

    memset(own, 0, sizeof(own));
    memset(shared_own, 0, sizeof(shared_own));
    for (r = 0; r < n; r++) {
        uint64_t per_layer;
        hlx_moe_layout_init(&m, n, ep, r, &ml);
        assert_int_equal(ml.tpf, n / ep);
        assert_int_equal(ml.ep_rank * ml.tpf + ml.tpf_rank, r);
        /* only E / EP experts, those of this rank's EP group */
        assert_int_equal(ml.expert_count, E / ep);
        assert_int_equal(ml.expert_first, (r / (n / ep)) * (E / ep));
        for (e = ml.expert_first; e < ml.expert_first + ml.expert_count; e++)
            for (c = ml.col_first; c < ml.col_first + ml.col_count; c++)
                own[e][c]++;
        for (c = ml.shared_first; c < ml.shared_first + ml.shared_count; c++)
            shared_own[c]++;
        /* bytes: the router in f32 plus this rank's slices only, per MoE layer */
        per_layer = (uint64_t)m.hidden * E * 4 +
                    3ull * m.hidden * ((uint64_t)ml.expert_count * ml.col_count +
                                       ml.shared_count) * esize;
        assert_true(hlx_moe_rank_bytes(&m, &ml, esize) == per_layer * 2);
    }
    for (e = 0; e < E; e++)
        for (c = 0; c < Fe; c++)
            if (own[e][c] != 1)
                fail_msg("E %d Fe %d N %d EP %d: expert %d column %d has %d owners", E, Fe, n,
                         ep, e, c, own[e][c]);
    for (c = 0; c < Fs; c++)
        if (shared_own[c] != 1)
            fail_msg("N %d: shared column %d has %d owners", n, c, shared_own[c]);
}

static void test_split(void **state)
{
    static const int ns[] = { 1, 2, 3, 4, 6, 8 };
    int i, ep;

    (void)state;
    for (i = 0; i < (int)(sizeof(ns) / sizeof(ns[0])); i++)
        for (ep = 1; ep <= ns[i]; ep++) {
            if (ns[i] % ep)
                continue;
            if (8 % ep == 0) {
                check_split(8, 64, 1, ns[i], ep);
                check_split(8, 5, 2, ns[i], ep); /* uneven columns, some ranks none */
            }
            if (6 % ep == 0)
                check_split(6, 7, 0, ns[i], ep);
        }
}

static void test_check_ep(void **state)
{
    hlx_model_t m = make_moe(8, 2, 1, 64), d = make_moe(8, 2, 1, 64);
    char err[256];

    (void)state;
    assert_int_equal(hlx_moe_check_ep(&m, "--ep", 2, 2, 2, err, sizeof(err)), HLX_OK);
    assert_int_equal(hlx_moe_check_ep(&m, "--ep", 4, 2, 2, err, sizeof(err)), HLX_OK);
    assert_int_equal(hlx_moe_check_ep(&m, "--ep", 3, 3, 1, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "--ep 3 does not divide the 8 routed experts"));
    assert_int_equal(hlx_moe_check_ep(&m, "--ep", 4, 2, 1, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "--ep 4 does not divide N = --kvp 2 x --tpa 1 = 2 ranks"));
    d.experts = 0;
    d.dense_layers = d.layers;
    assert_int_equal(hlx_moe_check_ep(&d, "--ep", 1, 2, 1, err, sizeof(err)), HLX_OK);
    assert_int_equal(hlx_moe_check_ep(&d, "--ep", 2, 2, 1, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "--ep 2: model t has no MoE layer"));
}

static void route(const hlx_model_t *m, const double *logits, const float *bias, int *idx,
                  float *w)
{
    double scratch[3 * 16];

    hlx_moe_route(m, logits, bias, scratch, idx, w);
}

static void test_route(void **state)
{
    hlx_model_t m = make_moe(4, 2, 0, 8);
    double lg[8] = { 1, 3, 3, 0 }, z[8] = { 0 };
    float bias[8] = { 0, 0.5f, 0, 0.25f }, w[4];
    double p1 = exp(3.0) / (exp(1.0) + 2 * exp(3.0) + 1.0);
    int idx[4];

    (void)state;
    /* softmax; the tie between experts 1 and 2 keeps both in index order */
    route(&m, lg, NULL, idx, w);
    assert_int_equal(idx[0], 1);
    assert_int_equal(idx[1], 2);
    assert_true(fabs(w[0] - p1) < 1e-6 && fabs(w[1] - p1) < 1e-6);
    /* renormalised and scaled */
    m.norm_topk_prob = 1;
    m.routed_scaling = 2.0;
    route(&m, lg, NULL, idx, w);
    assert_true(fabs(w[0] - 1.0) < 1e-6 && fabs(w[1] - 1.0) < 1e-6);
    /* all equal: the lowest indices */
    route(&m, z, NULL, idx, w);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 1);
    /* sigmoid: the bias picks experts 1 and 3, the weights stay sigmoid(0) = 0.5 */
    m.moe_scoring = HLX_MOE_SIGMOID;
    m.norm_topk_prob = 0;
    m.routed_scaling = 3.0;
    route(&m, z, bias, idx, w);
    assert_int_equal(idx[0], 1);
    assert_int_equal(idx[1], 3);
    assert_true(fabs(w[0] - 1.5) < 1e-6 && fabs(w[1] - 1.5) < 1e-6);
    /* without a bias (Llama 4): chosen on the logits, as transformers' top-k; 40, 50 and 45
     * all have a sigmoid of 1.0 in double, where the lowest indices would win */
    {
        double big[8] = { 40, 10, 50, 45 };
        route(&m, big, NULL, idx, w);
        assert_int_equal(idx[0], 2);
        assert_int_equal(idx[1], 3);
        assert_true(fabs(w[0] - 3.0) < 1e-6 && fabs(w[1] - 3.0) < 1e-6);
    }
}

static void test_route_groups(void **state)
{
    hlx_model_t m = make_moe(8, 2, 0, 8);
    double z[8] = { 0 };
    float bias[8] = { 0.9f, 0.0f, 0.6f, 0.5f, 0.1f, 0.1f, 0.0f, 0.0f }, w[2];
    int idx[2];

    (void)state;
    m.moe_scoring = HLX_MOE_SIGMOID;
    /* no group limit: the two best single experts, 0 and 2 */
    route(&m, z, bias, idx, w);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 2);
    /* 4 groups of 2, best 1 group by the sum of its two best: group 1 (1.1 + 1.0 > 1.4 + 0.5) */
    m.n_group = 4;
    m.topk_group = 1;
    route(&m, z, bias, idx, w);
    assert_int_equal(idx[0], 2);
    assert_int_equal(idx[1], 3);
    /* best 2 groups: 1 and 0, then experts 0 (1.4) and 2 (1.1) */
    m.topk_group = 2;
    route(&m, z, bias, idx, w);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 2);
    /* scored by its best (DeepSeek-V2): group 0 (1.4) beats group 1 (1.1), then experts 0
     * (1.4) and 1 (0.5) */
    m.moe_group_score = HLX_MOE_GROUP_MAX;
    m.topk_group = 1;
    route(&m, z, bias, idx, w);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_check_ep),
        cmocka_unit_test(test_route),
        cmocka_unit_test(test_route_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
