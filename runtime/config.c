/* The configuration record: every rank's run parameters, model hash, transport settings
 * and memory, all-gathered at start-up and compared field by field, so that ranks that
 * would compute different things are refused before the first step. */
#define _GNU_SOURCE
#include "hlx_engine_int.h"

#include "hlx_config.h"
#include "hlx_log.h"
#include "hlx_memroom.h"
#include "hlx_synth.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- configuration record: compared across ranks at init (reliability fault 6). */

typedef struct hlx_cfg_record {
    char     version[16];
    char     model[64];
    uint64_t model_hash;
    int64_t  context;
    uint64_t seed;
    int32_t  kvp, tpa, batch, steps, kv_block, check, kv_dtype, weight_dtype;
    int32_t  hopb, micro_batch, ep;
    int32_t  pid;
    char     host[64];
    uint64_t mem_need;
    uint64_t mem_weights, mem_kv, mem_check; /* parts of mem_need; the rest: buffers */
    uint64_t mem_need_packed; /* mem_need with the packed weights kept packed (0: none) */
    hlx_memshare_t mem;       /* the bounds on what it may take (hlx_mem_available),
                                 shared out once gathered (hlx_mem_share) */
    char     mem_src[160];    /* where mem.avail comes from */
    uint64_t comm_settings;  /* hlx_comm_settings_hash: every HELIX_COMM_* value this rank
                                runs with, and UCX's tcp segments as UCX reads them (ranks on
                                different paths of one collective, HELIX_COMM_ALLREDUCE_SMALL
                                say, or a rank keeping UCX's 64 KiB receive segment among
                                peers that send HELIX_COMM_TCP_SEG's 256 KiB, are refused) */
    uint64_t inputs;         /* hash of the prompt ids, prefill chunk and sampling */
    uint64_t ckpt;           /* fingerprint of the checkpoint's files (0: none) */
    int32_t  prompt_len;
} hlx_cfg_record_t;

static int hlx_ckpt_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Bytes [off, off + n) of fd into the hash (short files: what there is). */
static uint64_t hlx_ckpt_sample(uint64_t h, int fd, off_t off, size_t n)
{
    unsigned char buf[4096];
    ssize_t got;
    size_t i;

    while (n > 0 && (got = pread(fd, buf, n < sizeof(buf) ? n : sizeof(buf), off)) > 0) {
        for (i = 0; i < (size_t)got; i += 8) {
            uint64_t w = 0;
            memcpy(&w, buf + i, (size_t)got - i < 8 ? (size_t)got - i : 8);
            h = hlx_mix64(h ^ w);
        }
        off += got;
        n -= (size_t)got;
    }
    return h;
}

/* A fingerprint of a checkpoint directory that every rank can take in a few milliseconds
 * whatever its size: for config.json and every *.safetensors / *.json file, sorted by
 * name, the name, the size, the first 64 KiB (the safetensors header and the first
 * tensors) and 4 KiB at the middle and at the end. Two copies of one checkpoint agree;
 * checkpoints of one config and other weights (another seed, another fine-tune) differ
 * in their sampled bytes, which ranks reading different shards of them would otherwise
 * mix silently. 0 when dir is empty or cannot be listed (the loader reports that). */
static uint64_t hlx_ckpt_fingerprint(const char *dir)
{
    char *names[4096], path[4608];
    struct dirent *de;
    uint64_t h = 0xc4e1;
    DIR *d;
    int n = 0, i;

    if (dir == NULL || dir[0] == '\0' || (d = opendir(dir)) == NULL)
        return 0;
    while ((de = readdir(d)) != NULL && n < (int)(sizeof(names) / sizeof(names[0]))) {
        size_t len = strlen(de->d_name);
        if ((len > 12 && !strcmp(de->d_name + len - 12, ".safetensors")) ||
            (len > 5 && !strcmp(de->d_name + len - 5, ".json")))
            if ((names[n] = strdup(de->d_name)) != NULL)
                n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(names[0]), hlx_ckpt_name_cmp);
    for (i = 0; i < n; i++) {
        struct stat sb;
        size_t k;
        int fd;
        for (k = 0; names[i][k]; k++)
            h = hlx_mix64(h ^ (unsigned char)names[i][k]);
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        /* non-blocking: a named pipe in the folder must not hold the open */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
            h = hlx_mix64(h ^ (uint64_t)sb.st_size);
            h = hlx_ckpt_sample(h, fd, 0, 65536);
            h = hlx_ckpt_sample(h, fd, sb.st_size / 2, 4096);
            h = hlx_ckpt_sample(h, fd, sb.st_size > 4096 ? sb.st_size - 4096 : 0, 4096);
        }
        if (fd >= 0)
            close(fd);
        free(names[i]);
    }
    return h;
}

/* Hash of what else every rank must agree on: the prompt ids and tails (a per-node copy of
 * the file that differs would silently mix requests), the prefill mode (HELIX_PREFILL) and
 * chunk, the stop ids (ranks stopping at different steps would wait on each other) and the
 * sampling. */
static uint64_t hlx_inputs_hash(const hlx_run_config_t *cfg, const char *prefill_mode)
{
    uint64_t h = 0x9a11, u;
    size_t i, n = cfg->prompt ? (size_t)cfg->batch * (size_t)cfg->prompt_len : 0;

    for (i = 0; i < n; i++)
        h = hlx_mix64(h ^ (uint32_t)cfg->prompt[i]);
    for (i = 0; cfg->tail_off != NULL && i <= (size_t)cfg->batch; i++) /* tails, each ended */
        h = hlx_mix64(h ^ (0x20000000ull + (uint32_t)cfg->tail_off[i]));
    for (i = 0; cfg->tail_off != NULL && i < (size_t)cfg->tail_off[cfg->batch]; i++)
        h = hlx_mix64(h ^ (uint32_t)cfg->tail[i]);
    for (i = 0; prefill_mode[i]; i++)
        h = hlx_mix64(h ^ (unsigned char)prefill_mode[i]);
    for (i = 0; cfg->eos != NULL && i < (size_t)(cfg->neos > 0 ? cfg->neos : 0); i++)
        h = hlx_mix64(h ^ (0x10000000ull + (uint32_t)cfg->eos[i]));
    h = hlx_mix64(h ^ (uint64_t)cfg->prefill_chunk);
    memcpy(&u, &cfg->temperature, sizeof(u));
    h = hlx_mix64(h ^ u);
    memcpy(&u, &cfg->top_p, sizeof(u));
    return hlx_mix64(h ^ u);
}

static const char *hlx_cfg_dtype_name(int32_t t)
{
    return hlx_dtype_name((hlx_dtype_t)t);
}

static const char *hlx_cfg_hopb_name(int32_t h)
{
    static const char *const names[] = { "off", "on", "auto" }; /* hlx_hopb_mode_t */
    return h >= 0 && h < 3 ? names[h] : "?";
}

/* Every rank's share of its memory (hlx_mem_share over the gathered bounds) against its
 * need: the first rank that does not fit is refused, with what it needs, what it may take
 * and from where (the cgroup and the ranks its room was shared over, or MemAvailable over
 * the node's ranks, or HELIX_MEM_LIMIT). */
static hlx_status_t hlx_config_mem(hlx_engine_t *eng, const hlx_cfg_record_t *all, char *err,
                                   size_t errlen)
{
    const int n = eng->info.size;
    hlx_memshare_t *b = calloc((size_t)(n > 0 ? n : 1), sizeof(*b));
    hlx_status_t st = HLX_OK;
    int r, div, lv;

    if (b == NULL)
        return HLX_ERR_NOMEM;
    for (r = 0; r < n; r++)
        b[r] = all[r].mem;
    for (r = 0; r < n && st == HLX_OK; r++) {
        const uint64_t avail = hlx_mem_share(b, n, r, &div, &lv);
        const double G = 1073741824.0, need = (double)all[r].mem_need;
        const double wt = (double)all[r].mem_weights, kv = (double)all[r].mem_kv,
                     ck = (double)all[r].mem_check;
        char chk[64] = "", wq[256] = "", src[320];
        if (div > 0) {
            const hlx_memlevel_t *c = &b[r].level[lv];
            snprintf(src, sizeof(src), "memory cgroup %s: %s %.2f GiB less its use, / %d "
                     "rank(s) in that cgroup", c->path, c->file, (double)c->limit / G, div);
        } else {
            snprintf(src, sizeof(src), "%s", all[r].mem_src);
        }
        if (r == eng->info.rank)
            hlx_info(HLX_SUB_CORE, "rank %d: %llu bytes available (%s)", r,
                     (unsigned long long)avail, src);
        if (all[r].mem_need <= avail)
            continue;
        /* the checkpoint's packed weights held dequantized (HELIX_W_PACKED off, or auto
         * on a variant whose packed GEMM is the slower: avx2, scalar): named where keeping
         * them packed, every matrix counted as the load would hold it, brings the rank
         * within its memory */
        if (all[r].mem_need_packed > 0 && all[r].mem_need_packed <= avail)
            snprintf(wq, sizeof(wq), ", or HELIX_W_PACKED=on to keep the checkpoint's "
                     "packed weights packed (%.2f GiB in all; about 2x slower on AVX2-only "
                     "CPUs)", (double)all[r].mem_need_packed / G);
        if (ck > 0)
            snprintf(chk, sizeof(chk), ", --check %.2f", ck / G);
        st = hlx_engine_fail(err, errlen, HLX_ERR_NOSPACE,
                             "rank %d (%s) needs %.2f GiB (weights %.2f, KV shard %.2f for "
                             "%lld context tokens%s, buffers %.2f) but %.2f GiB are available "
                             "to it (%s): use a larger --kvp or --tpa, more nodes or a "
                             "shorter --context%s", r, all[r].host, need / G, wt / G, kv / G,
                             (long long)all[r].context, chk, (need - wt - kv - ck) / G,
                             avail / G, src, wq);
    }
    free(b);
    return st;
}

static hlx_status_t hlx_config_compare(hlx_engine_t *eng, const hlx_cfg_record_t *all,
                                       char *err, size_t errlen)
{
    const hlx_cfg_record_t *me = &all[eng->info.rank];
    int r;

#define HLX_CMP_INT(_f, _name) \
    if (all[r]._f != me->_f) \
        return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH, "%s: local %lld, rank %d (%s pid %d) has %lld", \
                        _name, (long long)me->_f, r, all[r].host, all[r].pid, (long long)all[r]._f)

    for (r = 0; r < eng->info.size; r++) {
        if (strcmp(all[r].version, me->version))
            return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH, "version: local %s, rank %d has %s",
                            me->version, r, all[r].version);
        if (strcmp(all[r].model, me->model) || all[r].model_hash != me->model_hash)
            return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH,
                            "model: local %s (hash %016llx), rank %d has %s (hash %016llx)",
                            me->model, (unsigned long long)me->model_hash, r, all[r].model,
                            (unsigned long long)all[r].model_hash);
        HLX_CMP_INT(kvp, "kvp");
        HLX_CMP_INT(tpa, "tpa");
        HLX_CMP_INT(batch, "batch");
        HLX_CMP_INT(context, "context");
        HLX_CMP_INT(steps, "steps (decode --steps, generate --max-new - 1)");
        HLX_CMP_INT(kv_block, "kv-block");
        HLX_CMP_INT(seed, "seed");
        HLX_CMP_INT(check, "check");
#define HLX_CMP_NAME(_f, _name, _str) \
    if (all[r]._f != me->_f) \
        return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH, "%s: local %s, rank %d (%s pid " \
                               "%d) has %s", _name, _str(me->_f), r, all[r].host, all[r].pid, \
                               _str(all[r]._f))
        HLX_CMP_NAME(kv_dtype, "kv-dtype", hlx_cfg_dtype_name);
        HLX_CMP_NAME(weight_dtype, "weight-dtype", hlx_cfg_dtype_name);
        HLX_CMP_NAME(hopb, "hopb", hlx_cfg_hopb_name);
#undef HLX_CMP_NAME
        HLX_CMP_INT(micro_batch, "micro-batch");
        HLX_CMP_INT(ep, "ep");
        HLX_CMP_INT(prompt_len, "prompt length");
        if (all[r].inputs != me->inputs)
            return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH,
                                   "inputs: rank %d (%s pid %d) has other prompt ids, "
                                   "--prefill-chunk, HELIX_PREFILL, --eos, --temperature or "
                                   "--top-p than this rank",
                                   r, all[r].host, all[r].pid);
        if (all[r].ckpt != me->ckpt)
            return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH,
                                   "checkpoint: rank %d (%s pid %d) reads other files than "
                                   "this rank from --model %s (names, sizes or sampled "
                                   "bytes differ): every host must hold the same checkpoint",
                                   r, all[r].host, all[r].pid, eng->cfg.ckpt);
        if (all[r].comm_settings != me->comm_settings)
            return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH,
                                   "transport settings: rank %d (%s pid %d) runs with other "
                                   "HELIX_COMM_* (or UCX_TCP_*_SEG_SIZE) values than this "
                                   "rank: compare `helix info` and those variables in both "
                                   "environments", r, all[r].host, all[r].pid);
    }
#undef HLX_CMP_INT
    return hlx_config_mem(eng, all, err, errlen);
}

uint64_t hlx_runtime_mem_room(const char **src_p)
{
    hlx_runtime_settings_t set;
    hlx_memroom_t cg;
    uint64_t room;

    memset(&set, 0, sizeof(set));
    if (hlx_param_load(hlx_runtime_param_table(), &set, NULL) == HLX_OK && set.mem_limit > 0) {
        *src_p = "HELIX_MEM_LIMIT";
        return (uint64_t)(set.mem_limit * 1073741824.0); /* GiB: times 2^30, exact */
    }
    *src_p = "MemAvailable";
    room = hlx_mem_node_available();
    hlx_mem_cgroup_room(NULL, &cg);
    if (cg.bytes < room) {
        room = cg.bytes;
        *src_p = "the memory cgroup's room";
    }
    return room;
}

/* The bounds on the bytes this rank may take, into *m, the first source's words into src:
 * HELIX_MEM_LIMIT (GiB per rank, overriding the rest: fixed), else the node's MemAvailable
 * over the node's local ranks and, apart, every limited memory cgroup it sits in with the
 * room each leaves (hlx_mem_cgroup_room: a Slurm job's --mem, a container's limit, v2's
 * memory.max or memory.high, whichever is smaller). The rooms are left whole: once
 * gathered each is shared over the ranks inside that cgroup (hlx_mem_share), one for a
 * rank in a container of its own, every rank of the node for a Slurm job's ranks in one
 * job cgroup. UINT64_MAX where a bound cannot be read: not checked. */
static void hlx_mem_available(const hlx_engine_t *eng, hlx_memshare_t *m, char *src,
                              size_t srclen)
{
    const uint64_t lr = (uint64_t)(eng->info.local_size > 0 ? eng->info.local_size : 1);
    uint64_t node;
    hlx_memroom_t room;
    int i;

    memset(m, 0, sizeof(*m));
    m->avail = UINT64_MAX;
    if (eng->set.mem_limit > 0) { /* GiB: times 2^30, exact */
        snprintf(src, srclen, "HELIX_MEM_LIMIT");
        m->avail = (uint64_t)(eng->set.mem_limit * 1073741824.0);
        m->fixed = 1;
    } else {
        if ((node = hlx_mem_node_available()) != UINT64_MAX)
            m->avail = node / lr;
        snprintf(src, srclen, "MemAvailable / %d local rank(s)", (int)lr);
    }
    /* read under HELIX_MEM_LIMIT too: the rank counts in its cgroup's share of the others */
    hlx_mem_cgroup_room(NULL, &room);
    for (i = 0; i < room.nlevels && i < HLX_MEMROOM_LEVELS; i++)
        m->level[i] = room.level[i];
    m->nlevels = i;
}

hlx_status_t hlx_engine_config_agree(hlx_engine_t *eng, uint64_t need, char *err,
                                     size_t errlen)
{
    const hlx_run_config_t *cfg = &eng->cfg;
    hlx_cfg_record_t rec, *all;
    const uint64_t lr = (uint64_t)(eng->info.local_size > 0 ? eng->info.local_size : 1);
    char pk[80] = "", cgs[sizeof(rec.mem.level[0].path) + 96] = "";
    uint64_t least;
    hlx_status_t st;
    int i;

    memset(&rec, 0, sizeof(rec));
    hlx_mem_available(eng, &rec.mem, rec.mem_src, sizeof(rec.mem_src));
    /* the least this rank's share can be once gathered: each cgroup's room over the node's
     * ranks (or more ranks, in containers of one machine under different host names: the
     * hint below is then not offered) */
    least = rec.mem.avail;
    for (i = 0; !rec.mem.fixed && i < rec.mem.nlevels; i++)
        if (rec.mem.level[i].room / lr < least)
            least = rec.mem.level[i].room / lr;
    snprintf(rec.version, sizeof(rec.version), "%s", HLX_VERSION);
    snprintf(rec.model, sizeof(rec.model), "%s", eng->m.name);
    snprintf(rec.host, sizeof(rec.host), "%s", eng->info.host ? eng->info.host : "?");
    rec.model_hash    = hlx_model_hash(&eng->m); /* every field of the model */
    rec.context       = cfg->context;
    rec.seed          = cfg->seed;
    rec.kvp           = cfg->kvp;
    rec.tpa           = cfg->tpa;
    rec.batch         = cfg->batch;
    rec.steps         = cfg->steps;
    rec.kv_block      = cfg->kv_block;
    rec.check         = cfg->check;
    rec.kv_dtype      = eng->kv_dtype;
    rec.weight_dtype  = eng->w_dtype;
    rec.hopb          = cfg->hopb;
    rec.micro_batch   = cfg->micro_batch;
    rec.ep            = cfg->ep;
    rec.pid           = (int32_t)getpid();
    rec.mem_need      = need;
    rec.mem_weights   = eng->mem_weights;
    rec.mem_kv        = eng->kv_bytes;
    rec.mem_check     = eng->mem_check;
    rec.comm_settings = hlx_comm_settings_hash();
    rec.inputs        = hlx_inputs_hash(cfg, eng->set.prefill);
    rec.prompt_len    = cfg->prompt_len;
    rec.ckpt          = hlx_ckpt_fingerprint(cfg->ckpt);
    /* only where this rank may be refused: the packed count reads every packed matrix's
     * act-order groups, a cost a run that fits need not pay */
    if (need > least)
        rec.mem_need_packed = hlx_engine_need_packed(eng, need);
    if (rec.mem_need_packed > 0)
        snprintf(pk, sizeof(pk), "; %llu with the packed weights kept packed",
                 (unsigned long long)rec.mem_need_packed);
    if (rec.mem.nlevels > 0) /* the innermost; the others in the refusal where they bind */
        snprintf(cgs, sizeof(cgs), " and %llu (memory cgroup %s, %d limited level(s)) shared "
                 "over the ranks in it", (unsigned long long)rec.mem.level[0].room,
                 rec.mem.level[0].path, rec.mem.nlevels);
    hlx_info(HLX_SUB_CORE, "rank %d: the start-up memory check counts %llu bytes (weights "
             "%llu, KV %llu, --check %llu) against %llu (%s)%s%s", eng->info.rank,
             (unsigned long long)need, (unsigned long long)rec.mem_weights,
             (unsigned long long)rec.mem_kv, (unsigned long long)rec.mem_check,
             (unsigned long long)rec.mem.avail, rec.mem_src, cgs, pk);
    all = calloc((size_t)eng->info.size, sizeof(*all));
    if (all == NULL)
        return HLX_ERR_NOMEM;
    st = hlx_boot_allgather(eng->boot, "hlx.cfg", &rec, sizeof(rec), all);
    if (st != HLX_OK)
        hlx_engine_fail(err, errlen, st, "exchanging the run configuration failed: %s",
                        hlx_status_str(st));
    else
        st = hlx_config_compare(eng, all, err, errlen);
    free(all);
    return st;
}
