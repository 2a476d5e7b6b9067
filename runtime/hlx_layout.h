/* Where everything lives in a KVP x TPA Helix layout: the rank order, the head and FFN
 * slices of each rank, and the owner of every KV position (staggered appends). Pure
 * arithmetic, shared by the engine and the tests. */
#ifndef HLX_LAYOUT_H
#define HLX_LAYOUT_H

#include <helix/model.h>
#include <helix/status.h>
#include <stdint.h>

typedef struct hlx_layout {
    int kvp, tpa, n;        /* n = kvp * tpa */
    int rank;
    int kvp_rank, tpa_rank; /* rank = tpa_rank * kvp + kvp_rank */
    int q_local;            /* query heads of this TPA shard (Q / TPA when it divides) */
    int q_first;            /* first global query head of this TPA shard */
    int kv_local;           /* KV heads this TPA shard holds (K / TPA when it divides) */
    int kv_local_max;       /* largest kv_local over all TPA shards */
    int kv_first;           /* first global KV head of this shard */
    int group;              /* query heads per local KV head (min(Q/K, q_local)) */
    int q_split;            /* pieces each query head is cut into for the all-to-all: 1
                             * unless KVP exceeds a shard's heads (hlx_layout_init) */
    int q_slice;            /* pieces this rank owns after the all-to-all (whole heads when
                             * q_split is 1; Q / N if even) */
    int q_slice_first;      /* first of them (global piece index: head x q_split + piece) */
    int q_slice_max;        /* largest q_slice over all ranks */
    int ffn_first, ffn_count;     /* columns of W_gate/W_up, rows of W_down */
    int vocab_first, vocab_count; /* LM head columns */
    int vocab_pad;                /* ceil(V / N): all-gather block */
    int kv_block;
} hlx_layout_t;

/* Fills the layout of rank; returns HLX_ERR_INVALID with a message in err when the model
 * cannot be split this way. */
hlx_status_t hlx_layout_init(const hlx_model_t *m, int kvp, int tpa, int kv_block, int rank,
                             hlx_layout_t *lay, char *err, size_t errlen);

/* The pieces of query heads KVP rank j of this rank's TPA shard owns after the all-to-all:
 * the shard's q_local x q_split pieces (each head cut into q_split pieces of dv / q_split
 * values) split into KVP near-equal consecutive parts (8 over 3: 2, 3, 3). They are also
 * the row block of W_o that rank holds at TP = N. */
static inline void hlx_layout_q_slice(const hlx_layout_t *lay, int j, int *first_p,
                                      int *count_p)
{
    int64_t np = (int64_t)lay->q_local * lay->q_split;
    int a = (int)(np * j / lay->kvp);
    int b = (int)(np * (j + 1) / lay->kvp);

    *first_p = lay->q_first * lay->q_split + a;
    *count_p = b - a;
}

/* Values of one piece: dv (values per head; MLA: the latent's) / q_split. */
static inline int hlx_layout_piece_dim(const hlx_layout_t *lay, int dv)
{
    return dv / lay->q_split;
}

/* Rows of W_o this rank holds (and its input's width): its pieces of v_head_dim values each
 * cut q_split ways. */
static inline int hlx_layout_wo_rows(const hlx_layout_t *lay, int v_head_dim)
{
    return lay->q_slice * hlx_layout_piece_dim(lay, v_head_dim);
}

/* KVP rank that stores position pos: blocks of kv_block consecutive positions go to
 * KVP ranks round-robin. */
static inline int hlx_layout_kv_owner(const hlx_layout_t *lay, int64_t pos)
{
    return (int)((pos / lay->kv_block) % lay->kvp);
}

/* Number of positions in [0, end) stored by KVP rank j. */
int64_t hlx_layout_kv_count(const hlx_layout_t *lay, int j, int64_t end);

/* The position of KVP rank j's slot-th stored position (the inverse of hlx_layout_kv_count:
 * hlx_layout_kv_count(lay, j, pos) == slot, and rank j stores pos). */
static inline int64_t hlx_layout_kv_pos(const hlx_layout_t *lay, int j, int64_t slot)
{
    return (slot / lay->kv_block * lay->kvp + j) * lay->kv_block + slot % lay->kv_block;
}

#endif
