/* helixrun internals: the launch options shared by the command line (helixrun.c), the job
 * (job.c: PMIx server, spawn, supervision) and output forwarding (iof.c). */
#ifndef HLX_LAUNCH_H
#define HLX_LAUNCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
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
    int          collapse;   /* a stderr line repeated by other ranks printed once */
    int          topo_xml;   /* the ranks get this machine as hwloc XML (HELIX_RUN_TOPO_XML) */
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

/* Collapsing of stderr (iof.c): a line that other ranks print too, the same once the log
 * header's host, pid and rank are masked, is printed once; the copies that come within
 * HLX_IOF_DUP_WINDOW_S of the first are held and counted, and one line then names their
 * ranks: "[1-3,5] (the same line as [0] above)". A rank repeating its own line is printed
 * again (after the summary of the copies held so far). */
#define HLX_IOF_DUP_SLOTS    64    /* distinct recent lines remembered; when all are in use a
                                    * new line is printed, not remembered */
#define HLX_IOF_DUP_TEXT     1024  /* longer lines are never collapsed */
#define HLX_IOF_DUP_WINDOW_S 2.0   /* seconds after the first copy that others are held */
#define HLX_IOF_RANK_WORDS   ((HLX_LAUNCH_MAX_NPROCS + 63) / 64)

typedef struct hlx_iof_dup {
    double   until;  /* end of the window; 0: slot free */
    uint64_t seq;    /* order of first printing, to keep summaries in that order */
    uint64_t hash;
    size_t   len;
    int      first;  /* the rank whose copy was printed */
    int      nheld;
    uint64_t held[HLX_IOF_RANK_WORDS]; /* ranks whose copy is held back */
    uint64_t seen[HLX_IOF_RANK_WORDS]; /* ranks whose copy was held (or said) */
    char     text[HLX_IOF_DUP_TEXT];   /* the line, header masked */
} hlx_iof_dup_t;

typedef struct hlx_iof_collapse {
    hlx_iof_dup_t *slot;   /* HLX_IOF_DUP_SLOTS of them */
    uint64_t       seq;
    FILE          *out;
    hlx_prefix_t   prefix;
} hlx_iof_collapse_t;

int    hlx_iof_collapse_init(hlx_iof_collapse_t *c, FILE *out, hlx_prefix_t prefix);
/* One stderr line of rank (without its newline) at time now: 1 if it is held back (a copy
 * of another rank's line), 0 if the caller prints it (a summary it must follow is printed
 * first). */
int    hlx_iof_collapse_line(hlx_iof_collapse_t *c, int rank, const char *line, size_t n,
                             double now);
/* Prints the summary of every window closed by now (HUGE_VAL: all of them) and frees
 * those slots. */
void   hlx_iof_collapse_flush(hlx_iof_collapse_t *c, double now);
/* Prints the summary of every copy held now, ahead of its window's end; the windows stay
 * open, so later copies are still held (helixrun's own lines come after this). */
void   hlx_iof_collapse_say(hlx_iof_collapse_t *c);
/* When the next window closes, 0: none open. */
double hlx_iof_collapse_next(const hlx_iof_collapse_t *c);
/* Flushes everything and frees the table. */
void   hlx_iof_collapse_fini(hlx_iof_collapse_t *c);

/* One child output stream (stdout or stderr of one rank) forwarded line by line. */
typedef struct hlx_iof_stream {
    int    fd;       /* read end of the pipe; -1 once closed */
    int    rank;
    int    is_err;
    char  *buf;      /* bytes read but not yet forwarded (an incomplete line) */
    size_t len;
    hlx_iof_collapse_t *dup; /* where copies of other ranks' lines are held, or NULL */
} hlx_iof_stream_t;

/* Longest line forwarded in one piece; a longer one is split (each piece prefixed). */
#define HLX_IOF_LINE_MAX 65536

/* dup: NULL, or the collapse table (stderr streams only). */
int  hlx_iof_open(hlx_iof_stream_t *s, int fd, int rank, int is_err, hlx_iof_collapse_t *dup);
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
 * are shut down and reported through report (given arg). Returns how many were cut. */
int  hlx_guard_check(hlx_guard_t *g, const int *ranks, int nranks,
                     void (*report)(void *arg, const char *msg), void *arg);
void hlx_guard_fini(hlx_guard_t *g);

#endif
