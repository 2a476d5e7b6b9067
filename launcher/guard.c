/* Guards helixrun's PMIx port: libpmix 4.2 listens on loopback TCP (its only transport)
 * and reads each new connection's handshake on its progress thread with a blocking read,
 * so one silent local connection would stall every rank. Connections whose client socket
 * no process of the job holds are shut down from the server side. */
#define _GNU_SOURCE
#include "hlx_launch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* One line of /proc/net/tcp{,6}: ports and the socket's inode. */
typedef struct hlx_guard_sock {
    unsigned      lport, rport;
    unsigned      state;
    unsigned long inode;
} hlx_guard_sock_t;

static size_t hlx_guard_read_table(const char *path, hlx_guard_sock_t **tab, size_t *n,
                                   size_t *cap)
{
    FILE *f = fopen(path, "re");
    char  line[512];

    if (f == NULL)
        return *n;
    if (fgets(line, sizeof(line), f) == NULL) { /* header */
        fclose(f);
        return *n;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char             laddr[64], raddr[64];
        hlx_guard_sock_t s;
        char            *lp, *rp;

        if (sscanf(line, " %*d: %63s %63s %x %*s %*s %*s %*u %*u %lu", laddr, raddr, &s.state,
                   &s.inode) != 4)
            continue;
        lp = strrchr(laddr, ':');
        rp = strrchr(raddr, ':');
        if (lp == NULL || rp == NULL)
            continue;
        s.lport = (unsigned)strtoul(lp + 1, NULL, 16);
        s.rport = (unsigned)strtoul(rp + 1, NULL, 16);
        if (*n == *cap) {
            size_t            nc = *cap ? 2 * *cap : 128;
            hlx_guard_sock_t *g  = realloc(*tab, nc * sizeof(*g));
            if (g == NULL)
                break;
            *tab = g;
            *cap = nc;
        }
        (*tab)[(*n)++] = s;
    }
    fclose(f);
    return *n;
}

/* Counts the turns a connection's client could not be seen; returns the new count. */
static int hlx_guard_unseen(hlx_guard_t *g, unsigned long inode)
{
    size_t i;

    for (i = 0; i < HLX_GUARD_UNSEEN_MAX; i++)
        if (g->unseen[i].inode == inode)
            return ++g->unseen[i].turns;
    for (i = 0; i < HLX_GUARD_UNSEEN_MAX; i++)
        if (g->unseen[i].inode == 0) {
            g->unseen[i].inode = inode;
            return g->unseen[i].turns = 1;
        }
    /* Full: recycle the first slot (the count only delays the cut). */
    g->unseen[0].inode = inode;
    return g->unseen[0].turns = 1;
}

static int hlx_guard_known(const hlx_guard_t *g, unsigned long inode)
{
    for (size_t i = 0; i < g->nknown; i++)
        if (g->known[i] == inode)
            return 1;
    return 0;
}

static void hlx_guard_remember(hlx_guard_t *g, unsigned long inode)
{
    if (g->nknown == g->cap) {
        size_t         nc = g->cap ? 2 * g->cap : 64;
        unsigned long *k  = realloc(g->known, nc * sizeof(*k));
        if (k == NULL)
            return;
        g->known = k;
        g->cap   = nc;
    }
    g->known[g->nknown++] = inode;
}

/* Does process pid hold a descriptor on socket inode? */
static int hlx_guard_pid_holds(long pid, unsigned long inode)
{
    char           dir[64], path[384], link[64], want[48];
    DIR           *d;
    struct dirent *de;
    int            found = 0;

    snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
    snprintf(want, sizeof(want), "socket:[%lu]", inode);
    d = opendir(dir);
    if (d == NULL)
        return 0;
    while (!found && (de = readdir(d)) != NULL) {
        ssize_t n;
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0)
            continue;
        link[n] = '\0';
        found   = !strcmp(link, want);
    }
    closedir(d);
    return found;
}

/* The process group and parent of pid, or -1. */
static int hlx_guard_pgrp(long pid, long *ppid_p, long *pgrp_p)
{
    char  path[64], buf[512], *rp;
    FILE *f;
    int   ok;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    f = fopen(path, "re");
    if (f == NULL)
        return -1;
    ok = fgets(buf, sizeof(buf), f) != NULL;
    fclose(f);
    if (!ok || (rp = strrchr(buf, ')')) == NULL)
        return -1;
    return sscanf(rp + 2, "%*c %ld %ld", ppid_p, pgrp_p) == 2 ? 0 : -1;
}

/* Which process holds the client socket: 1 a process of the job (a rank, anything in a
 * rank's process group, a child of helixrun), 0 another one (pid in *who), -1 none seen
 * (a process that is exiting no longer shows its descriptors). */
static int hlx_guard_client_is_job(unsigned long inode, const int *ranks, int nranks,
                                   long *who)
{
    DIR           *d = opendir("/proc");
    struct dirent *de;
    long           self = (long)getpid();
    int            job  = 0;

    *who = 0;
    if (d == NULL)
        return -1;
    while ((de = readdir(d)) != NULL) {
        char *end;
        long  pid = strtol(de->d_name, &end, 10), ppid, pgrp;
        int   in_job = 0;

        if (*end || pid <= 0 || pid == self || hlx_guard_pgrp(pid, &ppid, &pgrp) != 0)
            continue;
        in_job = ppid == self;
        for (int i = 0; i < nranks && !in_job; i++)
            in_job = ranks[i] > 0 && (pgrp == ranks[i] || pid == ranks[i]);
        if (!hlx_guard_pid_holds(pid, inode))
            continue;
        if (in_job) {
            job = 1;
            break;
        }
        *who = pid;
    }
    closedir(d);
    return job ? 1 : *who > 0 ? 0 : -1;
}

/* helixrun's own descriptor on the accepted socket inode, or -1. */
static int hlx_guard_own_fd(unsigned long inode)
{
    DIR           *d = opendir("/proc/self/fd");
    struct dirent *de;
    int            fd = -1;

    if (d == NULL)
        return -1;
    while (fd < 0 && (de = readdir(d)) != NULL) {
        struct stat st;
        char       *end;
        long        n = strtol(de->d_name, &end, 10);
        if (*end || n < 0 || n == dirfd(d))
            continue;
        if (fstat((int)n, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == inode)
            fd = (int)n;
    }
    closedir(d);
    return fd;
}

void hlx_guard_init(hlx_guard_t *g, int port)
{
    memset(g, 0, sizeof(*g));
    g->port = port;
}

void hlx_guard_fini(hlx_guard_t *g)
{
    free(g->known);
    memset(g, 0, sizeof(*g));
}

int hlx_guard_check(hlx_guard_t *g, const int *ranks, int nranks,
                    void (*report)(void *arg, const char *msg), void *arg)
{
    hlx_guard_sock_t *tab = NULL;
    size_t            n = 0, cap = 0;
    int               cut = 0;

    if (g->port <= 0)
        return 0;
    hlx_guard_read_table("/proc/net/tcp", &tab, &n, &cap);
    hlx_guard_read_table("/proc/net/tcp6", &tab, &n, &cap);
    for (size_t i = 0; i < n; i++) {
        hlx_guard_sock_t *srv = &tab[i];
        unsigned long     client = 0;
        long              who;
        int               fd;
        char              msg[256];

        /* An accepted connection on our port (state 01: established; a half-closed one
         * is left to the library). */
        if (srv->lport != (unsigned)g->port || srv->state != 0x01 || srv->inode == 0 ||
            hlx_guard_known(g, srv->inode))
            continue;
        for (size_t k = 0; k < n; k++)
            if (tab[k].lport == srv->rport && tab[k].rport == (unsigned)g->port &&
                tab[k].inode != 0)
                client = tab[k].inode;
        if (client == 0)
            continue; /* the client end is not visible (yet, or any more): next turn */
        switch (hlx_guard_client_is_job(client, ranks, nranks, &who)) {
        case 1:
            hlx_guard_remember(g, srv->inode);
            continue;
        case -1:
            /* Nobody visible holds it: a rank that is exiting, or a process helixrun
             * cannot see. Only a connection that stays so is cut. */
            if (hlx_guard_unseen(g, srv->inode) < HLX_GUARD_UNSEEN_TURNS)
                continue;
            break;
        default:
            break;
        }
        fd = hlx_guard_own_fd(srv->inode);
        if (fd < 0)
            continue;
        shutdown(fd, SHUT_RDWR);
        hlx_guard_remember(g, srv->inode);
        cut++;
        if (who > 0)
            snprintf(msg, sizeof(msg), "closed a connection to the job's PMIx port %d from "
                     "pid %ld, which is not part of the job (local port %u)", g->port, who,
                     srv->rport);
        else
            snprintf(msg, sizeof(msg), "closed a connection to the job's PMIx port %d whose "
                     "client no process of the job holds (local port %u)", g->port,
                     srv->rport);
        if (report)
            report(arg, msg);
    }
    free(tab);
    return cut;
}
