/* transport (white-box): how an all-to-all block is split into messages. Small blocks keep
 * the peer's limit; a block that would need more than its pair's share of the operation's
 * messages goes in larger ones, so that no rank's count exceeds HLX_COMM_A2A_SLOTS and both
 * ends of a pair, which know its byte count and the group size, split it alike. The tcp
 * peers' limit under HELIX_COMM_CHUNK_TCP=auto fits the send segment in force. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>

#include "comm_internal.h"

static const int sizes[] = { 2, 3, 4, 16, 1000, HLX_COMM_MAX_RANKS };
static const size_t chunks[] = { 4096, 131072, 1u << 20, 1u << 30 };
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Messages of a block as the posting loop of hlx_comm_p2p_ialltoallv makes them, counted
 * one by one, and every byte covered exactly once. */
static size_t post_count(size_t len, size_t msg)
{
    size_t off = 0, n = 0;

    do {
        size_t part = msg && len - off > msg ? msg : len - off;
        assert_true(part > 0 || len == 0);
        off += part;
        n++;
    } while (off < len);
    assert_int_equal(off, len);
    return n;
}

/* Every direction's share times the directions fits the operation's slots, and the share is
 * the largest that does. */
static void test_pair_share(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < NELEM(sizes); i++) {
        const size_t dirs = 2 * (size_t)(sizes[i] - 1), pm = hlx_comm_pair_msgs(sizes[i]);
        assert_true(pm >= 1);
        assert_true(pm * dirs <= HLX_COMM_A2A_SLOTS);
        assert_true((pm + 1) * dirs > HLX_COMM_A2A_SLOTS);
    }
}

/* Blocks within the share go in messages of the peer's limit, ceil(len / chunk) of them;
 * larger ones in no more than the share, each message larger than the limit; either way
 * the messages cover the block, as the posting loop itself counts where that is quick. */
static void test_split(void **state)
{
    size_t i, c, k;

    (void)state;
    for (i = 0; i < NELEM(sizes); i++)
        for (c = 0; c < NELEM(chunks); c++) {
            const size_t ch = chunks[c], pm = hlx_comm_pair_msgs(sizes[i]);
            const size_t lens[] = { 0, 1, ch - 1, ch, ch + 1, 10 * ch + 3, pm * ch,
                                    pm * ch + 1, pm * ch + ch, 3 * pm * ch + 7,
                                    64 * pm * ch + 1, ((size_t)1 << 60) + 12345 };
            for (k = 0; k < NELEM(lens); k++) {
                const size_t len = lens[k], msg = hlx_comm_msg_size(len, ch, pm);
                const size_t m = hlx_comm_nmsgs(len, msg);
                if (len <= pm * ch) {
                    assert_int_equal(msg, ch);
                    assert_int_equal(m, len == 0 ? 1 : (len + ch - 1) / ch);
                } else {
                    assert_true(msg > ch);
                    assert_true(m <= pm);
                }
                assert_true(len == 0 || ((m - 1) * msg < len && len <= m * msg));
                if (m <= 200000)
                    assert_int_equal(post_count(len, msg), m);
            }
            /* no limit: one message whatever the size */
            assert_int_equal(hlx_comm_msg_size(pm * ch * 3, 0, pm), 0);
            assert_int_equal(hlx_comm_nmsgs(pm * ch * 3, 0), 1);
        }
}

/* The case that used to fail on one rank alone: with 4 KiB messages among 3 ranks, rank 0
 * sends 2^23 + 1 messages' worth to each peer. Counted the old way (every message of the
 * peer's limit) rank 0 needs more than HLX_COMM_A2A_SLOTS while its receivers do not, so
 * it refused the operation and they waited for the deadline. Now every rank fits. */
static void test_no_rank_fails_alone(void **state)
{
    const int n = 3;
    const size_t ch = 4096, big = (((size_t)1 << 23) + 1) * ch, small = 64;
    const size_t pm = hlx_comm_pair_msgs(n);
    size_t count[3][3], old[3] = { 0 }, now[3] = { 0 };
    int a, b;

    (void)state;
    for (a = 0; a < n; a++) /* bytes rank a sends rank b */
        for (b = 0; b < n; b++)
            count[a][b] = a == 0 && b != 0 ? big : small;
    for (a = 0; a < n; a++)
        for (b = 0; b < n; b++) {
            if (a == b)
                continue;
            old[a] += hlx_comm_nmsgs(count[a][b], ch) + hlx_comm_nmsgs(count[b][a], ch);
            now[a] += hlx_comm_nmsgs(count[a][b], hlx_comm_msg_size(count[a][b], ch, pm)) +
                      hlx_comm_nmsgs(count[b][a], hlx_comm_msg_size(count[b][a], ch, pm));
        }
    assert_true(old[0] > HLX_COMM_A2A_SLOTS); /* the scenario is the one described */
    assert_true(old[1] <= HLX_COMM_A2A_SLOTS && old[2] <= HLX_COMM_A2A_SLOTS);
    for (a = 0; a < n; a++)
        assert_true(now[a] <= HLX_COMM_A2A_SLOTS);
}

/* auto: the segment in force less the tag header, capped, 0 below a 4096-byte chunk; the
 * segment is HELIX_COMM_TCP_SEG only where neither UCX variable is set. */
static void test_chunk_tcp_auto(void **state)
{
    hlx_ucx_tcp_seg_t none = { { "UCX_TCP_TX_SEG_SIZE", "UCX_TCP_RX_SEG_SIZE" }, { NULL, NULL },
                               { 0, 0 } };
    hlx_ucx_tcp_seg_t tx = none, rx = none;
    size_t seg;

    (void)state;
    tx.text[HLX_UCX_SEG_TX] = "16K";
    tx.bytes[HLX_UCX_SEG_TX] = 16384;
    rx.text[HLX_UCX_SEG_RX] = "1M";
    rx.bytes[HLX_UCX_SEG_RX] = 1 << 20;
    assert_int_equal(hlx_comm_tcp_tx_seg(262144, &none), 262144);
    assert_int_equal(hlx_comm_tcp_tx_seg(0, &none), HLX_UCX_TCP_TX_SEG_DEFAULT);
    assert_int_equal(hlx_comm_tcp_tx_seg(262144, &tx), 16384);
    assert_int_equal(hlx_comm_tcp_tx_seg(262144, &rx), HLX_UCX_TCP_TX_SEG_DEFAULT);
    assert_int_equal(hlx_comm_chunk_tcp_auto(262144), HLX_COMM_CHUNK_TCP_CAP);
    assert_int_equal(hlx_comm_chunk_tcp_auto(65536), 65528);
    assert_int_equal(hlx_comm_chunk_tcp_auto(8192), 8184);
    assert_int_equal(hlx_comm_chunk_tcp_auto(4104), 4096);
    assert_int_equal(hlx_comm_chunk_tcp_auto(4103), 0);
    assert_int_equal(hlx_comm_chunk_tcp_auto(0), 0);
    assert_int_equal(hlx_comm_chunk_tcp_auto(SIZE_MAX), HLX_COMM_CHUNK_TCP_CAP);
    for (seg = 0; seg < (1u << 20); seg += 97) { /* fits one segment whenever not 0 */
        size_t c = hlx_comm_chunk_tcp_auto(seg);
        assert_true(c == 0 || (c >= 4096 && c + HLX_UCX_TAG_HDR <= seg &&
                               c <= HLX_COMM_CHUNK_TCP_CAP));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pair_share),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_no_rank_fails_alone),
        cmocka_unit_test(test_chunk_tcp_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
