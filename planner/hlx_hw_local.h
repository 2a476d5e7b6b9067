/* This machine as measured by `helix bench local` (the hw file), and a predictor of the
 * runtime's decode step on it, phase by phase (helix/phase.h). See docs/planner.md. */
#ifndef HLX_HW_LOCAL_H
#define HLX_HW_LOCAL_H

#include <helix/cluster.h>
#include <helix/model.h>
#include <helix/phase.h>
#include <helix/status.h>
#include <helix/types.h>

#include <stdint.h>

#define HLX_HW_FORMAT      "helix-hw-local"
#define HLX_HW_VERSION     1
#define HLX_HW_MAX_ATTN    32
#define HLX_HW_MAX_GEMM    32
#define HLX_HW_MAX_READERS 64
#define HLX_HW_MAX_CURVE   16

/* Attention kernel at one shape: time of one call over len tokens = call_us + len x ns_tok. */
typedef struct hlx_hw_attn {
    hlx_dtype_t kv_dtype;
    int         group, dk, dv;
    int         cached;   /* 1: KV resident in the last-level cache, 0: streamed from DRAM */
    double      call_us;  /* fixed cost of one call */
    double      ns_tok;   /* per token of one KV head */
} hlx_hw_attn_t;

/* GEMM y[M][N] = x[M][K] W[K][N]: time = call_us + weight bytes / gbps (x and y are small). */
typedef struct hlx_hw_gemm {
    hlx_dtype_t w_dtype;
    int         m;
    int         cached;
    double      call_us;
    double      gbps;     /* weight bytes per second, 1e9 */
} hlx_hw_gemm_t;

/* Alpha-beta of the runtime's collectives over `ranks` ranks of one link class. */
typedef struct hlx_hw_coll {
    int    ranks;         /* 0: not measured */
    double a2a_us, a2a_gbps;  /* all-to-all: bytes sent per rank */
    double ar_us, ar_gbps;    /* all-reduce of an fp32 buffer of M bytes */
    double ag_us, ag_gbps;    /* all-gather: M = bytes received per rank */
    /* a small all-reduce right after about 30 us of compute, as a decode step meets its
     * collectives (cold lines, ranks arriving apart, wake-ups); 0: not measured */
    double step_us;
} hlx_hw_coll_t;

typedef struct hlx_hw_local {
    char   host[64];
    char   cpu[128];
    char   kernels[32];       /* kernel variant measured (the runtime's auto choice) */
    char   build[64];         /* the helix build that measured ("": not recorded) */
    char   measured[32];      /* UTC time of the measurement, ISO 8601 */
    int    cores;             /* cores this process may run on */
    double mem_gib;           /* physical memory */
    double llc_mib;           /* last-level cache */
    double read_gbps;         /* single-core STREAM-like read */
    double fma_gflops;        /* single-core fp32 FMA peak */
    double seconds;           /* how long the measurement took */
    /* KV streamed from DRAM per attention kernel (bf16, the tiny preset's shape; thread CPU
     * time) alone and with dram_readers kernels at once, one per core: what ranks sharing
     * the memory get each. 0 readers: not measured. */
    int    dram_readers;
    double dram_gbps_1, dram_gbps_n;
    /* one core's read rate over buffers of growing size (the best pass of each: the
     * buffer found in whatever cache holds it), mib increasing; 0 points: not measured,
     * the step's cache share then comes from llc_mib alone */
    int    ncurve;
    double curve_mib[HLX_HW_MAX_CURVE], curve_gbps[HLX_HW_MAX_CURVE];
    /* rows of x up to which the measured kernels run a GEMM as passes of their 8-row kernel
     * over W, each pass reading W ([0] f32, [1] bf16 weights; hlx_kernels_t.gemm_pass_rows;
     * 0: none, or a file from before the field) */
    int    gemm_pass_rows[2];
    int    nattn, ngemm;
    hlx_hw_attn_t attn[HLX_HW_MAX_ATTN];
    hlx_hw_gemm_t gemm[HLX_HW_MAX_GEMM];
    hlx_hw_coll_t link[HLX_LINK_COUNT]; /* per link class; self is never measured */
    hlx_hw_coll_t shared;     /* more ranks than cores (ranks > cores), link shm */
} hlx_hw_local_t;

/* The buffer (MiB) the "cached" kernel timings rotate over: a quarter of the LLC, 4 to 8
 * MiB, so that each call finds its operands in the shared cache but not the core's own
 * (up to 64 MiB before: with a measured LLC of 128 MiB the rotation left the cache's flat
 * part and the "cached" GEMM ran at half its rate). */
double hlx_hw_cached_span_mib(double llc_mib);

/* Share of a working set's reads that behave as DRAM reads (0: as the cached timings, 1:
 * as DRAM): from the read curve when measured (time per byte at ws between the rate at the
 * cached span and the DRAM rate), else 0 below half the LLC and 1 above all of it. */
double hlx_hw_dram_frac(const hlx_hw_local_t *hw, double ws_bytes);

/* Default path of the hw file: HELIX_HW_FILE, else $XDG_CACHE_HOME/helix/hw-local.json,
 * else $HOME/.cache/helix/hw-local.json. -1 when none can be formed. */
int hlx_hw_local_path(char *buf, size_t len);

/* Reads a hw file; errors as "file:line:column: key: reason" (HLX_ERR_PARSE / HLX_ERR_IO). */
hlx_status_t hlx_hw_local_load(const char *path, hlx_hw_local_t *hw, char *err, size_t errlen);
/* Whether a hw file can be written at path (its parent folder created): checked before a
 * measurement of seconds, so a bad path costs none (HLX_ERR_IO, the reason in err). */
hlx_status_t hlx_hw_local_writable(const char *path, char *err, size_t errlen);
/* Writes hw as JSON (creating the parent folder), atomically (temporary file + rename). */
hlx_status_t hlx_hw_local_save(const char *path, const hlx_hw_local_t *hw, char *err,
                               size_t errlen);
/* The machine as a planner cluster: one node whose "GPUs" are its cores (bandwidth and
 * peak of one core, memory shared out), the measured link classes. Free with
 * hlx_cluster_free(). */
hlx_status_t hlx_hw_local_cluster(const hlx_hw_local_t *hw, hlx_cluster_t *c);

/* One decode configuration of the runtime on this machine. */
typedef struct hlx_local_cfg {
    int         kvp, tpa, batch, steps, kv_block;
    int         hopb;         /* 1: attention of micro-batch i+1 overlaps the all-to-all
                                 of micro-batch i */
    int         micro_batch;  /* requests per micro-batch with hopb (0: one) */
    int64_t     context;
    hlx_dtype_t w_dtype, kv_dtype;
    int         ep;           /* MoE expert-parallel groups (0 or 1: TPF = N) */
    int         threads;      /* cores per rank (0 or 1: one): each attention call and each
                                 GEMM split over them, as hlx_pool_attn / hlx_pool_gemm do */
} hlx_local_cfg_t;

typedef struct hlx_local_pred {
    double phase_s[HLX_PHASE_COUNT]; /* per step, rank 0; hopb: all-to-all = exposed part */
    double step_s;                   /* sum of the phases */
    double ws_bytes;                 /* bytes every step reads over all ranks (KV + weights) */
    double dram_frac;                /* 0: all of it cache resident, 1: streamed from DRAM */
    double share;                    /* ranks per core (>= 1) */
    double dram_slow;                /* DRAM time x this: readers sharing the memory */
} hlx_local_pred_t;

/* Predicts one step. HLX_ERR_INVALID with a reason when the layout cannot run (the
 * runtime's rules, hlx_helix_split: uneven splits run, heads are cut into pieces where a
 * shard has fewer heads than KVP, the busiest rank sets the time) or a size overflows. */
hlx_status_t hlx_local_predict(const hlx_hw_local_t *hw, const hlx_model_t *m,
                               const hlx_local_cfg_t *cfg, hlx_local_pred_t *p, char *err,
                               size_t errlen);

#endif
