/* Per-link scheduling check: ranks in the same network namespace share memory, ranks in
 * another one are reached over the network; in one all-to-all the blocks of the fast peers
 * must land before the slow link's, every byte checked. The link classes are given from
 * the namespaces, or (--from-hosts) derived by the transport from host names, which the
 * driver makes differ per namespace. Run by netns_sched.sh. */
#include "hlx_comm.h"
#include "hlx_time.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --partition DIR: after a good barrier rank 0 creates DIR/ready; the driver cuts the
 * link and creates DIR/cut; then a barrier with a 60 s deadline must fail with a lost peer
 * named by the heartbeats. Returns 3 on the expected failure. */
static int partition(hlx_comm_t *world, const char *dir, int me)
{
    char ready[512], cut[512];
    double t0;
    hlx_status_t st;
    struct stat sb;
    FILE *f;

    snprintf(ready, sizeof(ready), "%s/ready", dir);
    snprintf(cut, sizeof(cut), "%s/cut", dir);
    if (hlx_comm_barrier(world) != HLX_OK)
        return 1;
    if (me == 0 && (f = fopen(ready, "w")) != NULL)
        fclose(f);
    for (t0 = hlx_now_s(); stat(cut, &sb) != 0; usleep(10000))
        if (hlx_now_s() - t0 > 30) {
            fprintf(stderr, "link_sched rank %d: no %s after 30 s\n", me, cut);
            return 1;
        }
    t0 = hlx_now_s();
    st = hlx_comm_barrier(world);
    fprintf(stderr, "link_sched rank %d: partition: barrier returned \"%s\" after %.2f s\n",
            me, hlx_status_str(st), hlx_now_s() - t0);
    fflush(stderr);
    return st == HLX_ERR_PEER ? 3 : 1;
}

static uint8_t expect(int src, int dst, size_t off)
{
    uint64_t x = ((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^ (off * 0x9e3779b97f4a7c15ull);

    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    return (uint8_t)x;
}

int main(int argc, char **argv)
{
    int from_hosts = argc > 2 && !strcmp(argv[2], "--from-hosts");
    const char *part_dir = argc > 3 && !strcmp(argv[2], "--partition") ? argv[3] : NULL;
    size_t bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : (size_t)4 << 20;
    hlx_comm_params_t cp;
    hlx_boot_info_t info;
    hlx_boot_t *boot;
    hlx_comm_t *world;
    hlx_comm_req_t *req;
    hlx_link_t *links;
    uint64_t myns, *ns;
    size_t *cnt, k;
    uint8_t *sbuf, *rbuf;
    double t0, *arrived, slow_first = -1, fast_last = 0;
    int n, me, j, left, rc = 0, nslow = 0;
    long long wrong = 0;
    struct stat sb;
    hlx_status_t st;

    hlx_comm_params_default(&cp);
    if (hlx_boot_init(cp.timeout_s, &boot) != HLX_OK)
        return 1;
    hlx_boot_get_info(boot, &info);
    n = info.size;
    me = info.rank;
    if (stat("/proc/self/ns/net", &sb) != 0) {
        perror("link_sched: /proc/self/ns/net");
        return 1;
    }
    myns = (uint64_t)sb.st_ino;
    ns = calloc((size_t)n, sizeof(*ns));
    links = calloc((size_t)n, sizeof(*links));
    cnt = calloc((size_t)n * 2, sizeof(*cnt));
    arrived = calloc((size_t)n, sizeof(*arrived));
    sbuf = malloc(bytes * (size_t)n);
    rbuf = malloc(bytes * (size_t)n);
    if (!ns || !links || !cnt || !arrived || !sbuf || !rbuf)
        return 1;
    if (hlx_boot_allgather(boot, "sched.netns", &myns, sizeof(myns), ns) != HLX_OK)
        return 1;
    /* the caller's link classes: same namespace -> shm, else tcp (host names are equal) */
    for (j = 0; j < n; j++)
        links[j] = j == me ? HLX_LINK_SELF : ns[j] == myns ? HLX_LINK_SHM : HLX_LINK_TCP;
    cp.links = from_hosts ? NULL : links;
    st = hlx_comm_world(boot, &cp, &world);
    if (st != HLX_OK)
        return hlx_status_exit_code(st);
    for (j = 0; j < n; j++) {
        const char *want = j == me ? "self" : links[j] == HLX_LINK_SHM ? "ucx-shm" : "ucx-net";
        if (hlx_comm_peer_link(world, j) != links[j]) {
            fprintf(stderr, "link_sched rank %d: peer %d has link class %d, expected %d "
                    "(%s)\n", me, j, (int)hlx_comm_peer_link(world, j), (int)links[j],
                    from_hosts ? "from host names" : "given");
            rc = 1;
        }
        if (strcmp(hlx_comm_peer_backend(world, j), want)) {
            fprintf(stderr, "link_sched rank %d: peer %d uses %s, expected %s\n", me, j,
                    hlx_comm_peer_backend(world, j), want);
            rc = 1;
        }
        nslow += links[j] == HLX_LINK_TCP;
    }
    if (part_dir != NULL) {
        fflush(stdout);
        _exit(partition(world, part_dir, me)); /* the job is broken on purpose */
    }
    for (j = 0; j < n; j++) {
        cnt[j] = bytes;
        cnt[n + j] = (size_t)j * bytes;
        for (k = 0; k < bytes; k++)
            sbuf[(size_t)j * bytes + k] = expect(me, j, k);
    }
    memset(rbuf, 0xa5, bytes * (size_t)n);
    st = hlx_comm_barrier(world);
    t0 = hlx_now_s();
    if (st == HLX_OK)
        st = hlx_comm_ialltoallv(world, sbuf, cnt, cnt + n, rbuf, cnt, cnt + n, &req);
    for (left = n; st == HLX_OK && left > 0;) {
        for (j = 0; j < n; j++)
            if (arrived[j] == 0 && hlx_comm_arrived(req, j)) {
                arrived[j] = hlx_now_s() - t0;
                left--;
            }
        if (hlx_now_s() - t0 > 60) {
            fprintf(stderr, "link_sched rank %d: blocks missing after 60 s\n", me);
            break;
        }
    }
    if (st == HLX_OK)
        st = hlx_comm_wait(req);
    if (st != HLX_OK) {
        fprintf(stderr, "link_sched rank %d: all-to-all failed: %s\n", me, hlx_status_str(st));
        return 1;
    }
    for (j = 0; j < n; j++)
        for (k = 0; k < bytes; k++)
            wrong += rbuf[(size_t)j * bytes + k] != expect(j, me, k);
    for (j = 0; j < n; j++) {
        if (j == me)
            continue;
        if (links[j] == HLX_LINK_TCP && (slow_first < 0 || arrived[j] < slow_first))
            slow_first = arrived[j];
        if (links[j] != HLX_LINK_TCP && arrived[j] > fast_last)
            fast_last = arrived[j];
        printf("link_sched rank %d: block from rank %d (%s) landed after %.4f s\n", me, j,
               links[j] == HLX_LINK_TCP ? "tcp" : "shm", arrived[j]);
    }
    if (wrong) {
        fprintf(stderr, "link_sched rank %d: %lld wrong bytes\n", me, wrong);
        rc = 1;
    }
    /* a rank with both kinds of peers: its shared-memory blocks may not wait for the
     * slow link (the slow link carries megabytes at a few MB/s) */
    if (nslow > 0 && nslow < n - 1) {
        if (!(fast_last < slow_first)) {
            fprintf(stderr, "link_sched rank %d: shm blocks landed after %.4f s, not before "
                    "the first tcp block (%.4f s)\n", me, fast_last, slow_first);
            rc = 1;
        } else {
            printf("link_sched rank %d: ok: shm blocks by %.4f s, tcp from %.4f s\n", me,
                   fast_last, slow_first);
        }
    }
    hlx_comm_destroy(world);
    hlx_boot_fini(boot);
    return rc;
}
