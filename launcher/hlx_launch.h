/* helixrun internals: the launch options shared by the command line (helixrun.c), the job
 * (job.c: PMIx server, spawn, supervision) and output forwarding (iof.c). */
#ifndef HLX_LAUNCH_H
#define HLX_LAUNCH_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

/* Largest -n: each rank costs two pipes and one PMIx socket, and the default open-file
 * limit is 1024. */
#define HLX_LAUNCH_MAX_NPROCS 256

/* Exit codes helixrun itself chooses (rank failures pass the rank's own code through). */
enum {
    HLX_LAUNCH_EXIT_FAIL     = 1,   /* launcher error, or a rank broke the PMIx contract */
    HLX_LAUNCH_EXIT_USAGE    = 2,   /* bad flag or value */
    HLX_LAUNCH_EXIT_TIMEOUT  = 124, /* --timeout fired (the value timeout(1) uses) */
    HLX_LAUNCH_EXIT_NOTFOUND = 127, /* PROGRAM not found or not executable (as shells do) */
    HLX_LAUNCH_EXIT_SIGBASE  = 128  /* 128 + signal number, as shells report it */
};

typedef enum {
    HLX_PREFIX_RANK, /* "[R] line" */
    HLX_PREFIX_TAG,  /* "[R]<stdout>: line", the mpirun --tag-output look */
    HLX_PREFIX_NONE  /* lines passed through whole but unmarked */
} hlx_prefix_t;

typedef struct hlx_launch_opts {
    int          nprocs;
    double       timeout_s;  /* 0: no job-wide deadline */
    double       grace_s;    /* SIGTERM -> SIGKILL delay when the job is killed */
    double       settle_s;   /* window to collect near-simultaneous rank failures */
    hlx_prefix_t prefix;
    const char  *tmproot;    /* where the private PMIx directory is made */
    const char  *tmproot_from; /* what chose it, for messages: "--tmpdir", "TMPDIR", ... */
    int          tmproot_given; /* a flag or variable chose it: unusable is a usage error */
    char       **envset;     /* "VAR=VALUE" entries set in every rank */
    size_t       nenvset;
    const char  *path;       /* PROGRAM resolved against PATH */
    char       **argv;       /* PROGRAM ARGS..., NULL-terminated */
} hlx_launch_opts_t;

/* Runs the job to completion; returns helixrun's exit code. Expects the signals of
 * hlx_launch_signal_set blocked (hlx_launch_block_signals). */
int hlx_launch_run(const hlx_launch_opts_t *opts);

/* The signals helixrun handles through its signalfd: SIGCHLD, SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT. */
void hlx_launch_signal_set(sigset_t *set);
/* main's first action: blocks those signals, so one that arrives while helixrun still
 * parses its flags stays pending for the job loop, and gives SIGINT, SIGTERM, SIGHUP and
 * SIGQUIT their default action in place of an inherited SIG_IGN (a shell's "&" job, nohup),
 * which the ranks would otherwise inherit. */
void hlx_launch_block_signals(void);

/* Variables helixrun sets in every rank itself, which -x may not set: HELIXRUN,
 * HELIX_RANK, HELIX_SIZE and the PMIx client's PMIX_* (PMIX_MCA_* is the user's PMIx
 * tuning and passes). name need not be terminated; len is its length. */
int hlx_launch_reserved(const char *name, size_t len);
#define HLX_LAUNCH_RESERVED_TEXT \
    "HELIXRUN, HELIX_RANK, HELIX_SIZE and PMIX_* (except PMIX_MCA_*)"

/* One child output stream (stdout or stderr of one rank) forwarded line by line. */
typedef struct hlx_iof_stream {
    int    fd;       /* read end of the pipe; -1 once closed */
    int    rank;
    int    is_err;
    char  *buf;      /* bytes read but not yet forwarded (an incomplete line) */
    size_t len;
} hlx_iof_stream_t;

/* Longest line forwarded in one piece; a longer one is split (each piece prefixed). */
#define HLX_IOF_LINE_MAX 65536

int  hlx_iof_open(hlx_iof_stream_t *s, int fd, int rank, int is_err);
/* Reads what is available and forwards complete lines to out. Returns 0 while the stream
 * is open, 1 at end of file (the last partial line is then forwarded and fd closed). */
int  hlx_iof_read(hlx_iof_stream_t *s, FILE *out, hlx_prefix_t prefix);
void hlx_iof_close(hlx_iof_stream_t *s, FILE *out, hlx_prefix_t prefix);

/* Guard of the PMIx port (guard.c): shuts down connections from outside the job. */
#define HLX_GUARD_UNSEEN_MAX   16
/* Checks in a row a connection's client must stay invisible before it is cut. */
#define HLX_GUARD_UNSEEN_TURNS 10
typedef struct hlx_guard {
    int            port;    /* the server's loopback TCP port, 0: unknown (no guard) */
    unsigned long *known;   /* accepted sockets already judged */
    size_t         nknown, cap;
    struct {
        unsigned long inode;
        int           turns;
    } unseen[HLX_GUARD_UNSEEN_MAX];
} hlx_guard_t;

void hlx_guard_init(hlx_guard_t *g, int port);
/* Judges every new connection to the port; those whose client socket no process of the
 * job holds (ranks: the rank pids, also their process groups and helixrun's children)
 * are shut down and reported through report. Returns how many were cut. */
int  hlx_guard_check(hlx_guard_t *g, const int *ranks, int nranks,
                     void (*report)(const char *msg));
void hlx_guard_fini(hlx_guard_t *g);

#endif
