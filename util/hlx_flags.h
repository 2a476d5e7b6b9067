/* Command-line flag tables: each command declares its flags once (name, type, default,
 * bounds, help) and gets getopt_long parsing through the one number parser, a --help
 * options list and, per flag, whether it was given. The flag-side twin of hlx_param.h. */
#ifndef HLX_FLAGS_H
#define HLX_FLAGS_H

#include <helix/status.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    HLX_FT_BOOL,   /* no value; int set to 1 */
    HLX_FT_INT,    /* int64_t, hlx_parse_int (K, M, G, T suffixes) in [imin, imax] */
    HLX_FT_NUM,    /* double, hlx_parse_num in [dmin, dmax] */
    HLX_FT_STRING, /* const char * pointing into argv (or the default) */
    HLX_FT_CHOICE  /* int: index into choices "a|b|c" (any case) */
} hlx_ftype_t;

typedef struct hlx_flag {
    const char *name;     /* long name without the dashes: "kvp" is --kvp */
    hlx_ftype_t type;
    const char *defval;   /* text of the default (NULL: none, the field stays zero) */
    int64_t     imin, imax;
    double      dmin, dmax;
    const char *choices;
    size_t      offset;   /* into the command's options struct */
    const char *metavar;  /* "K", "FILE" in the help */
    const char *help;     /* may hold '\n' for continuation lines */
} hlx_flag_t;

/* A one-letter alias of a flag: { 'b', "minbytes" } makes -b 1K and -b1K --minbytes 1K. */
typedef struct hlx_flag_alias {
    char        c; /* never 'h' */
    const char *name;
} hlx_flag_alias_t;

typedef struct hlx_flag_table {
    const char             *command; /* "topo": messages read "helix topo: --kvp: ..." */
    const hlx_flag_t       *flags;
    size_t                  nflags;
    const hlx_flag_alias_t *aliases; /* NULL: long names only */
    size_t                  naliases;
} hlx_flag_table_t;

#define HLX_FLAGS_MAX 64

/* Sets the defaults, then parses argv[1..] (argv[0] is the command). given (may be NULL,
 * HLX_FLAGS_MAX entries) records which flags were on the command line. -h/--help prints
 * usage_head, the options list and usage_tail on stdout. Returns -1 to go on, 0 after
 * --help, 2 after a message on stderr naming the flag (bad value, unknown flag, missing
 * value, a stray argument). */
int hlx_flags_parse(const hlx_flag_table_t *t, int argc, char **argv, void *out, int *given,
                    const char *usage_head, const char *usage_tail);
/* This process's rank as its launcher set it (OMPI_COMM_WORLD_RANK, then SLURM_PROCID,
 * then PMIX_RANK); -1 without one, and under helixrun, which collapses identical lines. */
int hlx_flags_launcher_rank(void);
/* 1 when hlx_flags_launcher_rank() is above 0: what every rank would say alike about its
 * command line is then left to rank 0. */
int hlx_flags_quiet_rank(void);
/* The exit of a launcher's rank after an error every rank meets: a second's wait first
 * (mpirun ends the job at the first exit, which must come after rank 0 has spoken and the
 * others have come this far), SIGTERM back to its default so that the launcher's end of
 * the job says nothing more. */
void hlx_flags_quiet_exit_wait(void);
/* A bad command line found after the table (two flags that do not go together, a value
 * too long to keep): prints "helix <command>: <message>" on stderr; the caller then exits
 * 2. As for the table's own errors, a launcher rank above 0 (srun, mpirun; never under
 * helixrun) prints nothing and waits a second instead, so that rank 0 says it once. */
void hlx_flags_usage_error(const hlx_flag_table_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The options list: "  --kvp K           help" lines with each default. */
void hlx_flags_help(FILE *f, const hlx_flag_table_t *t);

#endif
