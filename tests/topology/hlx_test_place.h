/* tests/topology: a placement the test needs to succeed, through hlx_place(); a refusal
 * fails the test with the layout and hlx_place's own message. One copy for the placement
 * tests (include after <cmocka.h> and <helix/topology.h>). */
#ifndef HLX_TEST_PLACE_H
#define HLX_TEST_PLACE_H

static inline hlx_placement_t *hlx_test_place(const hlx_cluster_t *c, int kvp, int tpa, int ep,
                                              const hlx_topo_t *t)
{
    hlx_placement_t *p = NULL;
    char err[512] = "";

    if (hlx_place(c, kvp, tpa, ep, t, &p, err, sizeof(err)) != HLX_OK)
        fail_msg("place kvp %d tpa %d ep %d: %s", kvp, tpa, ep, err);
    return p;
}

#endif
