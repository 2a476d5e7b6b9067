/* Hugging Face checkpoints: safetensors shards mapped read-only (each rank reads only its
 * slices), config.json of Llama-style, GLM-4.5-style (GQA with DeepSeek-V3's MoE) and
 * DeepSeek-V3-style models, and the writer. */
#ifndef HLX_CKPT_H
#define HLX_CKPT_H

#include <helix/model.h>
#include <helix/status.h>
#include <helix/types.h>
#include <stddef.h>
#include <stdint.h>

#define HLX_CKPT_MAX_DIMS   8
/* Largest JSON header accepted (the safetensors reference reader's limit). */
#define HLX_ST_HEADER_MAX   100000000ull

/* Element types of the safetensors format. */
typedef enum hlx_st_dtype {
    HLX_ST_F64 = 0,
    HLX_ST_F32,
    HLX_ST_F16,
    HLX_ST_BF16,
    HLX_ST_F8_E4M3,
    HLX_ST_F8_E5M2,
    HLX_ST_I64,
    HLX_ST_I32,
    HLX_ST_I16,
    HLX_ST_I8,
    HLX_ST_U8,
    HLX_ST_BOOL,
    HLX_ST_COUNT
} hlx_st_dtype_t;

const char *hlx_st_dtype_name(hlx_st_dtype_t t);   /* "BF16", "F8_E4M3", ... */
size_t      hlx_st_dtype_size(hlx_st_dtype_t t);   /* bytes per element */
/* Whether fp8 weight scales may be stored as t: F32, or BF16 and F16 (as some releases,
 * Qwen3's FP8 among them, store weight_scale_inv), converted to f32 when read. */
int         hlx_st_is_scale(hlx_st_dtype_t t);
int         hlx_st_dtype_parse(const char *s, hlx_st_dtype_t *t_p); /* -1 when unknown */

typedef struct hlx_ckpt_tensor {
    const char    *name;
    hlx_st_dtype_t dtype;
    int            ndim;
    int64_t        shape[HLX_CKPT_MAX_DIMS];
    uint64_t       numel;
    uint64_t       begin, end;  /* byte range inside the file's data section */
    int            file;        /* shard index (hlx_ckpt_file_name) */
    /* F8_E4M3 weights: the `<name>_scale_inv` tensor (F32, BF16 or F16, one factor per
     * block of block_rows x block_cols elements, DeepSeek's layout), or the `<name>_scale`
     * one (one factor for the tensor, [], [1] or [1, 1], or one per row, [rows, 1];
     * scale_rows then says which: rows, or 1; or, 2-D of any other shape, one per block as
     * `_scale_inv`'s: compressed-tensors' block strategy, scale_rows 0); I8 weights: the
     * `<name>_scale` one; NULL otherwise. */
    const struct hlx_ckpt_tensor *scale;
    int64_t        scale_rows;  /* `<name>_scale`: rows per factor; 0: block_rows */
    /* An integer-packed weight (hlx_ckpt_set_packed): HLX_PACK_* (0: an ordinary tensor).
     * It has no bytes of its own (begin == end); its [out][in] elements are read from
     * packed (the words), scale (above: the groups' scales), zero (the zero points; NULL:
     * symmetric compressed-tensors), gidx (each input column's group; NULL: i / group) and
     * dims (compressed-tensors' weight_shape); dtype is the words', I32. */
    int            pack;
    int            bits;        /* 4 or 8: 32 / bits fields per word; GPTQ also 2 and 3
                                   (32 values in 3 words) */
    int64_t        group;       /* input columns per group (the whole row: one group) */
    int64_t        groups;      /* G: the scales' groups */
    const struct hlx_ckpt_tensor *packed, *zero, *gidx, *dims;
    /* A view (hlx_ckpt_set_views): the stored tensor it reads, NULL otherwise. Its
     * [out][in] element (o, i) is stored at begin + (i * stride + o * cstep) elements: one
     * expert's slab of a fused [experts][in][cols] tensor, input-major as stored; a 1-D view
     * [out] (one expert's row of a fused [experts][cols] bias) its element o at begin +
     * o * cstep (begin == end: no bytes of its own). */
    const struct hlx_ckpt_tensor *fused;
    int64_t        stride;      /* a view: elements between its stored rows (cols) */
    int64_t        cstep;       /* a view: elements between its stored columns (0: 1) */
    /* An output-major view (hlx_ckpt_view_t.omajor): its [out][in] element (o, i) at begin +
     * (o * stride + i) elements, read as a stored [out][in] weight is (stride: in times the
     * view's step) */
    int            omajor;
    /* An MXFP4 view (hlx_ckpt_view_t.mx): fused is the X_blocks tensor, mxs X_scales; its
     * row o is stored row mxrow + o x cstep of them ([rows][in / 32][16] and [rows][in / 32]
     * flattened); NULL otherwise */
    const struct hlx_ckpt_tensor *mxs;
    int64_t        mxrow;
    /* The block of elements each of scale's factors covers, rows by columns, where it is
     * not the checkpoint's block_rows x block_cols (0 0): an fp8 expert view's per-channel
     * scales read across its stored input-major rows (one factor per column) */
    int64_t        sblock[2];
} hlx_ckpt_tensor_t;

/* hlx_ckpt_tensor_t.pack: the layouts of docs/model.md "Integer weights" */
#define HLX_PACK_GPTQ    1 /* X.qweight [in/p, out], X.qzeros stored minus one */
#define HLX_PACK_GPTQ_V2 2 /* the same, zeros as they are (checkpoint_format gptq_v2) */
#define HLX_PACK_AWQ     3 /* X.qweight [in, out/8] in AWQ's field order */
#define HLX_PACK_CT      4 /* compressed-tensors pack-quantized: X.weight_packed [out, in/p] */

/* ---- one safetensors file in memory (no I/O: also the fuzzing entry point) ---------- */

typedef struct hlx_st_file {
    hlx_ckpt_tensor_t *tensors;   /* sorted by name; names owned by the struct */
    size_t             count;
    uint64_t           data_offset; /* 8 + header length */
} hlx_st_file_t;

/* Parses buf[0, len) as a whole safetensors file: the 8-byte little-endian header size,
 * the JSON header (duplicate names, unknown dtypes, shapes whose byte size disagrees with
 * the offsets, overlaps, holes, ranges past the end and trailing bytes all refused) and
 * checks that the data section is exactly covered. name is used in messages. */
hlx_status_t hlx_st_parse(const char *name, const uint8_t *buf, uint64_t len, int file,
                          hlx_st_file_t *out, char *err, size_t errlen);
void         hlx_st_file_free(hlx_st_file_t *f);

/* ---- a checkpoint directory --------------------------------------------------------- */

typedef struct hlx_ckpt hlx_ckpt_t;

/* Refuses, with HLX_ERR_INVALID (exit 2) and "path: is not a regular file (a named pipe);
 * a <what> must be a regular file", a path that exists and is not a regular file: a named
 * pipe would block the reader forever, a device or a directory is no checkpoint file.
 * HLX_OK for a regular file or a missing path (the reader then names what is missing). */
hlx_status_t hlx_ckpt_regular_file(const char *path, const char *what, char *err,
                                   size_t errlen);

/* Opens dir: model.safetensors.index.json and its shards, or one model.safetensors. Every
 * shard is mapped read-only; nothing is read from the data sections until a slice is
 * asked for. Errors name the file and the tensor. */
hlx_status_t hlx_ckpt_open(const char *dir, hlx_ckpt_t **ck_p, char *err, size_t errlen);
void         hlx_ckpt_close(hlx_ckpt_t *ck);
/* Block size of fp8 weight scales (config.json quantization_config weight_block_size;
 * 128 x 128 until set; hlx_hf_check sets it from the config). */
void         hlx_ckpt_set_fp8_block(hlx_ckpt_t *ck, int rows, int cols);
/* The element conversions the reads use: the best this CPU runs (best 1: what
 * hlx_ckpt_open picks; AVX2 where the CPU has it) or the portable C ones (0: what the tests
 * hold the others to, bit for bit). Returns the set's name: "avx2" or "portable". */
const char  *hlx_ckpt_set_cvt(hlx_ckpt_t *ck, int best);

/* How a checkpoint's integer weights are packed (the quantization config's form, bits and
 * group size; group -1: one group per row). */
typedef struct hlx_ckpt_packing {
    int     pack;  /* HLX_PACK_*; 0: none */
    int     bits;  /* 4 or 8 (AWQ: 4; GPTQ also 2 or 3, dequantized at load) */
    int64_t group; /* > 0, or -1 */
    int     sym;   /* compressed-tensors: symmetric (no weight_zero_point) */
    int     act_order; /* groups by g_idx (GPTQ's desc_act, compressed-tensors' actorder group):
                          every packed set must hold its g_idx */
} hlx_ckpt_packing_t;

/* "gptq", "gptq_v2", "awq", "compressed-tensors" (HLX_PACK_*; "none" for 0). */
const char *hlx_ckpt_pack_name(int pack);

/* Turns every packed set of ck (GPTQ's and AWQ's X.qweight with X.qzeros, X.scales and an
 * optional X.g_idx; compressed-tensors' X.weight_packed with X.weight_scale, X.weight_shape
 * and X.weight_zero_point or X.weight_g_idx) into a tensor X.weight of its logical [out][in]
 * shape that hlx_ckpt_find, hlx_ckpt_get and the reads take like any other (the sets whose
 * name skip(name, arg) says to leave, a vision tower's, are left). Checks each part's
 * dtype and shape and every g_idx value; X.weight stored as well is refused. Replaces what
 * an earlier call made (pk->pack 0 removes them): a pointer hlx_ckpt_find gave to a packed
 * weight before the call is not valid after it. Errors (HLX_ERR_MISMATCH) name the tensor,
 * in hlx_ckpt_error(). */
hlx_status_t hlx_ckpt_set_packed(hlx_ckpt_t *ck, const hlx_ckpt_packing_t *pk,
                                 int (*skip)(const char *name, const void *arg),
                                 const void *arg);
/* Whether the packed GEMMs can keep t packed (docs/kernels.md "Packed integer weights"):
 * 1 when t is a 4- or 8-bit packed weight whose input column i is in group i / group (no
 * g_idx, or one that says just that, as GPTQ's desc_act false writes it), with *bits_p and
 * *group_p (the input columns per group; the whole row for one group); 2 when its g_idx
 * puts the columns in other groups (act order: HLX_CKPT_QGROUP reads each one's); 0
 * otherwise (not packed, or of another width: dequantized at load instead). *lut_p (where
 * lut_p is not NULL) is NULL where the codes are the nibbles or bytes themselves. An MXFP4
 * view (gpt-oss's experts) is 1 with 4 bits in groups of 32 and *lut_p the 16 codes its
 * nibbles stand for: its parts are the codes 12 + 2 e of its E2M1 values e (the table's,
 * hlx_mxfp4_codes), zero point 12 and scale 2^(s - 128) of its block's E8M0 byte s. */
int hlx_ckpt_packed_groups(const hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int *bits_p,
                           int64_t *group_p, const uint8_t **lut_p);
/* How many packed weights hlx_ckpt_set_packed made, and MXFP4 views
 * hlx_ckpt_set_views made (both read as packed parts). */
size_t hlx_ckpt_packed_count(const hlx_ckpt_t *ck);

/* One view of hlx_ckpt_set_views: expert index's columns c0, c0 + step, ..., out of them
 * (step 0 or 1: the range [c0, c0 + out)), of the stored 3-D tensor fused, of shape
 * [experts][in][cols] exactly, as the 2-D [out][in] weight name; with vec, of the stored
 * 2-D tensor fused [experts][cols] (in unused) as the 1-D [out] tensor name (a fused
 * bias). Both names under hlx_ckpt_set_prefix's mapping. gpt-oss interleaves gate and up
 * (gate_up_proj[..., ::2] and [..., 1::2]): c0 0 and 1, step 2. */
typedef struct hlx_ckpt_view {
    char    name[160], fused[160];
    int64_t experts, in, cols; /* fused's expected shape */
    int64_t index, c0, out;
    int64_t step;              /* elements between the view's columns (0: 1) */
    int     vec;               /* fused is [experts][cols], the view its row index */
    /* MXFP4 (gpt-oss's released experts): fused names an X_blocks tensor [experts][cols]
     * [in / 32][16] (U8: two E2M1 elements a byte) beside X_scales [experts][cols][in / 32]
     * (U8: E8M0), output-major: the view's [out][in] row o is stored row c0 + step x o of
     * the expert's cols, decoded (model/hlx_mxfp4.h); its dtype BF16, which holds every
     * MXFP4 value exactly */
    int     mx;
    /* Output-major (Granite MoE's GraniteMoeParallelExperts: input_linear [experts][2 x
     * intermediate][hidden], output_linear [experts][hidden][intermediate], nn.Linear's
     * orientation per expert): fused is [experts][cols][in] exactly, the view's row o its
     * expert's row c0 + step x o, read as stored (no transpose); F32, BF16 or F16 */
    int     omajor;
    /* With omajor: fused is a plain 2-D weight [cols][in] (no experts dimension; experts 1,
     * index 0): rows c0 .. of one fused linear (Granite MoE Shared's shared_mlp.input_linear
     * [2 x shared_intermediate][hidden], gate rows then up rows) */
    int     flat;
    /* A weight view's scales (fbgemm_fp8's fused experts: gate_up_proj_scale [experts][1]
     * [cols], down_proj_scale [experts][cols][1], F32, BF16 or F16): the view [out][1] is its
     * expert's c0 .. c0 + out - 1; an F8_E4M3 weight view `X` takes the view `X_scale` as
     * its scale per output row */
    int     sc;
} hlx_ckpt_view_t;

/* Makes each of v[0, n) a tensor that hlx_ckpt_find, hlx_ckpt_get and the reads take like
 * a stored [out][in] weight (nn.Linear's orientation: a read with transpose gives the
 * stored [in][out] rows as they are): transformers' fused 3-D experts (Qwen3-VL-MoE's
 * mlp.experts.gate_up_proj [E, hidden, 2 x moe_intermediate] and down_proj
 * [E, moe_intermediate, hidden]; gpt-oss's, gate and up interleaved, and their biases
 * [E, cols]) read as per-expert weights and biases. A view with a step is read element by
 * element (no row copies). Replaces what an earlier call
 * made (n 0 removes them). A missing fused tensor is HLX_ERR_NOT_FOUND, one of another
 * shape HLX_ERR_MISMATCH naming the file, the tensor, its shape and the one expected, one
 * not F32, BF16 or F16 too (exit 2: the checkpoint is not one this reads); a view stored as well, or whose range is
 * outside its tensor, HLX_ERR_INVALID; the message in hlx_ckpt_error(). */
hlx_status_t hlx_ckpt_set_views(hlx_ckpt_t *ck, const hlx_ckpt_view_t *v, size_t n);

/* The last error of a call on ck made by this thread (a complete one-line message): reads
 * (hlx_ckpt_read_block, hlx_ckpt_get) may run on several threads at once, each with its own
 * error; nothing else changes a checkpoint after hlx_ckpt_open and its setters. */
const char *hlx_ckpt_error(const hlx_ckpt_t *ck);
/* Records the error of a check made above this layer; returns st. */
hlx_status_t hlx_ckpt_set_error(hlx_ckpt_t *ck, hlx_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

size_t                   hlx_ckpt_count(const hlx_ckpt_t *ck);
const hlx_ckpt_tensor_t *hlx_ckpt_tensor(const hlx_ckpt_t *ck, size_t i); /* by name order */
const char              *hlx_ckpt_file_name(const hlx_ckpt_t *ck, int file); /* as named */
/* The same with the checkpoint's directory before it: what error messages name. */
const char              *hlx_ckpt_file_path(const hlx_ckpt_t *ck, int file);
const char              *hlx_ckpt_dir(const hlx_ckpt_t *ck);
/* Bytes of tensor data copied out so far (what this process touched of the mapping). */
uint64_t                 hlx_ckpt_bytes_read(const hlx_ckpt_t *ck);

/* NULL when absent (no error recorded). */
const hlx_ckpt_tensor_t *hlx_ckpt_find(const hlx_ckpt_t *ck, const char *name);
/* The same under the name as stored, without hlx_ckpt_set_prefix's mapping. */
const hlx_ckpt_tensor_t *hlx_ckpt_find_exact(const hlx_ckpt_t *ck, const char *name);
/* From now on a name beginning with from (at most 2 pairs; NULL clears them) is looked up
 * as to followed by the rest: a text model's tensors under a multimodal checkpoint's prefix
 * (Gemma 3's "model." as "language_model.model."), read under the text model's names. */
void hlx_ckpt_set_prefix(hlx_ckpt_t *ck, const char *from, const char *to);
/* "[r, c]": t's shape, for messages. */
void hlx_ckpt_shape_str(const hlx_ckpt_tensor_t *t, char *buf, size_t len);
/* Row-major element index flat of t as an index per dimension: idx[t->ndim]. */
void hlx_ckpt_unravel(const hlx_ckpt_tensor_t *t, uint64_t flat, int64_t *idx);
/* Finds name and checks its shape (ndim dims); HLX_ERR_NOT_FOUND or HLX_ERR_MISMATCH with
 * "file: tensor: shape [..], expected [..]" in hlx_ckpt_error(). */
hlx_status_t hlx_ckpt_get(hlx_ckpt_t *ck, const char *name, int ndim, const int64_t *shape,
                          const hlx_ckpt_tensor_t **t_p);
/* The same for a tensor of one value, whatever its shape ([], [1], [1, 1]). */
hlx_status_t hlx_ckpt_get_value(hlx_ckpt_t *ck, const char *name, const hlx_ckpt_tensor_t **t_p);

/* Reads t[first, first + count) along dimension dim (every other dimension whole) into dst
 * as a dense row-major array of dst_dtype (HLX_DTYPE_F32 or HLX_DTYPE_BF16), converting
 * from F32, F16, BF16, F64 or F8_E4M3 (multiplied by its block scale). */
hlx_status_t hlx_ckpt_read_slice(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int dim,
                                 int64_t first, int64_t count, void *dst,
                                 hlx_dtype_t dst_dtype);

/* Reads of an integer-packed weight's parts, as f32, through hlx_ckpt_read_block (its
 * dst_dtype) and what calls it with the caller's dtype (hlx_hf_read, hlx_wsrc_read): each
 * element's code (the field as stored, 0 .. 2^bits - 1), the zero point of its group and
 * its scale, so that the value read plainly is (code - zero) x scale (GPTQ's zero stored
 * minus one has the one added; compressed-tensors' offset 2^(bits - 1) is in the zero).
 * A tensor that is not packed: HLX_ERR_UNSUPPORTED; an MXFP4 view's parts are those
 * hlx_ckpt_packed_groups describes (a scale byte of 255, E8M0's NaN, refused naming its
 * index). The packed-weight GEMMs keep the codes (docs/kernels.md "Packed integer
 * weights"). */
#define HLX_CKPT_QCODE  ((hlx_dtype_t)64)
#define HLX_CKPT_QZERO  ((hlx_dtype_t)65)
#define HLX_CKPT_QSCALE ((hlx_dtype_t)66)
#define HLX_CKPT_QGROUP ((hlx_dtype_t)67) /* the element's group (g_idx's, or i / group) */
static inline int hlx_ckpt_qmode(hlx_dtype_t t)
{
    return t == HLX_CKPT_QCODE || t == HLX_CKPT_QZERO || t == HLX_CKPT_QSCALE ||
           t == HLX_CKPT_QGROUP;
}

/* 2-D block: rows [r0, r0 + nr) x cols [c0, c0 + nc) of t (a 1-D tensor is one row).
 * Element (r0 + i, c0 + j) goes to dst[i * ld + j], or to dst[j * ld + i] when transpose
 * is set (the runtime keeps weights input-major: [in][out]). */
hlx_status_t hlx_ckpt_read_block(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int64_t r0,
                                 int64_t nr, int64_t c0, int64_t nc, int transpose, void *dst,
                                 hlx_dtype_t dst_dtype, int64_t ld);

/* Value i of t, a tensor of n values ([] or [1] for one, [n] or [n, 1] for several; F32,
 * BF16, F16 or F64), as a double: a scale per tensor or per head. HLX_ERR_MISMATCH for
 * another count, shape or dtype, the reason in hlx_ckpt_error(). */
hlx_status_t hlx_ckpt_read_value(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int64_t n,
                                 int64_t i, double *v_p);

/* ---- non-finite values ------------------------------------------------------------- */

typedef struct hlx_ckpt_nonfinite {
    uint64_t count; /* non-finite elements (NaN, +-Inf; e4m3: the NaN codes 0x7f, 0xff) */
    uint64_t first; /* row-major index of the first (count > 0) */
    uint64_t bits;  /* its stored bits */
} hlx_ckpt_nonfinite_t;

/* Counts the non-finite values of t by their stored bits (F64, F32, F16, BF16, F8_E4M3,
 * F8_E5M2; the fp8 weights' F32 block scales are tensors of their own; MXFP4's E8M0 scales,
 * U8 X_scales beside an X_blocks, their byte 255; other integer tensors have none), straight from the mapping in a vectorised pass that reads ahead and releases
 * the pages behind it: a checkpoint larger than memory is scanned once, front to back. */
void hlx_ckpt_scan_tensor(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, hlx_ckpt_nonfinite_t *nf);
/* The stored bits of a non-finite element of type t as a value: "nan", "inf" or "-inf". */
const char *hlx_ckpt_nonfinite_value(hlx_st_dtype_t t, uint64_t bits);
/* "N non-finite values, the first nan (bits 0x7fc0) at [r, c]" (the index in t's shape). */
void hlx_ckpt_nonfinite_str(const hlx_ckpt_tensor_t *t, const hlx_ckpt_nonfinite_t *nf,
                            char *buf, size_t len);

/* ---- config.json --------------------------------------------------------------------- */

typedef enum hlx_hf_family {
    HLX_HF_DENSE   = 0, /* LlamaForCausalLM (and Mistral, Qwen2, Qwen3, Phi-3, GLM,
                           InternLM2; with routed experts: Mixtral, Qwen2/3-MoE, GLM-4.5) */
    HLX_HF_MOE_MLA = 1  /* DeepseekV3ForCausalLM, DeepseekV2ForCausalLM */
} hlx_hf_family_t;

/* hlx_hf_config_t.fused: the dense tensors' layout, bits */
#define HLX_HF_FUSED_QKV  1 /* self_attn.qkv_proj: q, k, v rows (Phi-3) */
#define HLX_HF_FUSED_GU   2 /* mlp.gate_up_proj: gate, up rows (Phi-3, GLM) */
#define HLX_HF_ROPE_PAIRS 4 /* q, k rows rotated in pairs (2i, 2i+1), as the runtime holds
                               them (GLM), not rotate_half's halves (i, i + r/2) */
#define HLX_HF_QKV_GROUPED 8 /* InternLM2: attention.wqkv holds per KV head g its group's
                                query heads, then g's key, then g's value, d rows each; every
                                tensor under InternLM2's names (hlx_hf_weight_source) */
#define HLX_HF_GEMMA 16 /* Gemma 3: every RMSNorm weight stored as w - 1 (its norms scale by
                           1 + w: read back as 1 + w), and its norms' names: the attention's
                           output norm is post_attention_layernorm, the FFN's input
                           pre_feedforward_layernorm, its output post_feedforward_layernorm */
#define HLX_HF_NESTED 32 /* a multimodal checkpoint's text model (Gemma 3 4B and up): its
                            config under text_config, its tensors under language_model.model.
                            or model.language_model. (hlx_ckpt_set_prefix), the vision tower's
                            and the projector's not read */
#define HLX_HF_LLAMA4 64 /* Llama 4: q and k rows in RoPE pairs (2i, 2i+1) as the runtime holds
                            them (its complex rotation), every FFN tensor under feed_forward.
                            (the dense layers' gate_proj, up_proj, down_proj; the MoE layers'
                            router, shared_expert.* and experts) */

#define HLX_HF_MOE_QWEN3   1
#define HLX_HF_MOE_MIXTRAL 2
#define HLX_HF_MOE_QWEN2   3
#define HLX_HF_MOE_GLM4    4
#define HLX_HF_MOE_DEEPSEEK 5
#define HLX_HF_MOE_GPT_OSS 6
#define HLX_HF_MOE_GRANITE 7
#define HLX_HF_MOE_LLAMA4  8

/* Layers whose kinds of Linear layer may be left unquantized one by one
 * (hlx_hf_config_t.unquant_layer). */
#define HLX_HF_UNQ_LAYERS 256

/* What config.json says beyond hlx_model_t. */
typedef struct hlx_hf_config {
    hlx_model_t     m;
    hlx_hf_family_t family;
    char            arch[64];          /* architectures[0] */
    char            text_type[32];     /* a LLaVA checkpoint's text model: text_config's
                                          model_type (llama, mistral, qwen2 or qwen3); "" else */
    char            torch_dtype[16];   /* "bfloat16", "float32", "float16" */
    hlx_st_dtype_t  st_dtype;          /* dtype of unquantized tensors */
    int             fp8;               /* quantization_config: fp8 e4m3 linear weights,
                                          HLX_HF_FP8_BLOCK or HLX_HF_FP8_SCALE; 0: none */
    int             fp8_form;          /* HLX_HF_FP8_SCALE: whose config says so (HLX_HF_QF_*:
                                          what `model synth` writes and `model info` names) */
    int             fp8_channel;       /* HLX_HF_FP8_SCALE: a scale per output channel (else
                                          one per tensor) */
    int             int8;              /* HLX_HF_FP8_SCALE weights stored as I8, not e4m3
                                          (compressed-tensors int-quantized: W8A8, W8A16) */
    int             mxfp4;             /* quantization_config mxfp4 (gpt-oss's releases): its
                                          experts stored as MXFP4 blocks and scales, read as
                                          views (hlx_ckpt_view_t.mx) */
    int             fp8_input_scale;   /* HLX_HF_FP8_SCALE: static activations, an
                                          X.input_scale per Linear (not used) */
    /* fp8 and int8 weights: the kinds of Linear layer the checkpoint stores unquantized
     * (in torch_dtype) because the quantization config's ignore list names them, bit k for
     * hlx_hf_expect_t.kind k; a kind is one projection of every layer (and every expert):
     * self_attn.q_proj, feed_forward.shared_expert.down_proj, mlp.experts.*.up_proj (set by
     * hlx_hf_config_load, docs/model.md "Ignore lists"). unquant: in every layer;
     * unquant_layer[l]: in layer l only (the Llama 3 paper's FP8 recipe leaves the first
     * and the last layers unquantized), for the first HLX_HF_UNQ_LAYERS layers */
    uint64_t        unquant;
    uint64_t        unquant_layer[HLX_HF_UNQ_LAYERS];
    int             block_rows, block_cols; /* weight_block_size (128 x 128) */
    int             block_scale_plain; /* HLX_HF_FP8_BLOCK scales named X.weight_scale
                                          (compressed-tensors' block strategy), not
                                          X.weight_scale_inv */
    /* quantization_config of integer weights (GPTQ, AWQ, compressed-tensors pack-quantized):
     * how the packed Linear layers are laid out (hlx_ckpt_set_packed); pack 0: none */
    hlx_ckpt_packing_t packing;
    /* the file the integer packing was read from where config.json has no
     * quantization_config (AutoGPTQ's quantize_config.json, AutoAWQ's quant_config.json);
     * "" else */
    char            quant_file[32];
    int             tie_word_embeddings;
    /* quantization_config.kv_cache_scheme: each layer's self_attn.k_scale and v_scale are
     * part of the checkpoint, one value each (HLX_HF_KV_SCALES_TENSOR) or one per KV head
     * (HLX_HF_KV_SCALES_HEAD); the runtime uses them with fp8 KV. 0: none */
    int             kv_scales;
    /* The fp8 and modelopt methods without a declared KV scheme: scales may be there or not;
     * hlx_hf_check sets kv_scales (per tensor) when layer 0's are. */
    int             kv_scales_maybe;
    /* The scales are named self_attn.k_proj.k_scale and self_attn.v_proj.v_scale (AutoFP8's
     * and ModelOpt's names; vLLM reads both) rather than self_attn.k_scale and v_scale; set
     * by hlx_hf_check from layer 0's, or by the synth. */
    int             kv_proj_names;
    /* tie_word_embeddings with a head in the checkpoint all the same (lm_head.weight, or its
     * family's name for it): that tensor's name, not read, the head being the embedding (as
     * transformers ties them and vLLM skips the tensor); "" none. Set by hlx_hf_settle, for
     * the callers to say so. */
    char            lm_head_unused[128];
    /* How the dense family's tensors are laid out (HLX_HF_FUSED_*, HLX_HF_ROPE_PAIRS):
     * Phi3ForCausalLM fuses self_attn.qkv_proj (q, k, v rows) and mlp.gate_up_proj (gate,
     * up rows); GlmForCausalLM fuses gate_up_proj and keeps q and k in RoPE pairs */
    int             fused;
    /* The dense family's attention with routed experts (m.experts) in the layers after
     * m.dense_layers: 0 none, HLX_HF_MOE_QWEN3 (Qwen3MoeForCausalLM: DeepSeek's tensor names,
     * mlp.gate and mlp.experts.J.*_proj), HLX_HF_MOE_MIXTRAL (MixtralForCausalLM:
     * block_sparse_moe.gate and block_sparse_moe.experts.J.w1/w3/w2), HLX_HF_MOE_QWEN2
     * (Qwen2MoeForCausalLM: Qwen3-MoE's names plus mlp.shared_expert.*_proj and its
     * sigmoid mlp.shared_expert_gate), HLX_HF_MOE_GLM4 (Glm4MoeForCausalLM and
     * Dots1ForCausalLM: DeepSeek-V3's MoE, its names, sigmoid gate with
     * mlp.gate.e_score_correction_bias and shared experts mlp.shared_experts.*_proj),
     * HLX_HF_MOE_DEEPSEEK (DeepseekForCausalLM,
     * DeepSeek-MoE: the same names without the correction bias, a softmax gate),
     * HLX_HF_MOE_GPT_OSS (GptOssForCausalLM: mlp.router.weight and .bias, the experts fused
     * in mlp.experts.gate_up_proj, down_proj and their biases, read through views under the
     * DeepSeek names), HLX_HF_MOE_GRANITE (GraniteMoeForCausalLM: the router
     * block_sparse_moe.router.layer.weight, the experts fused output-major in
     * block_sparse_moe.input_linear.weight and output_linear.weight, read through views
     * under the DeepSeek names) */
    int             moe_gqa;
    /* num_nextn_predict_layers (GLM-4.5, DeepSeek-V3): multi-token-prediction layers stored
     * as model.layers.{num_hidden_layers + i}.*, which decode without speculative decoding
     * does not read; mtp_tensors and mtp_bytes: what the checkpoint holds of them (set by
     * hlx_hf_settle) */
    int             mtp_layers;
    size_t          mtp_tensors;
    uint64_t        mtp_bytes;
    char            scoring_func[16];  /* "sigmoid" (V3) or "softmax" */
    int             norm_topk_prob;
    double          routed_scaling_factor;
    int             n_group, topk_group;
    /* `helix model synth` checkpoints: the seed of their values (also the seed of the
     * runtime's synthetic context that goes with them); -1 otherwise. */
    int64_t         synth_seed;
} hlx_hf_config_t;

/* gpt-oss's layer in c's model, what GptOssForCausalLM fixes whatever its config.json says:
 * every layer MoE without shared experts, a sink per query head, the router's and the
 * experts' biases, the clamped SwiGLU (act_alpha and act_limit are the config's), a softmax
 * over the top k logits (softmax, renormalised). The config reader and `model synth` set it
 * through this one place. */
void hlx_hf_gpt_oss_layer(hlx_hf_config_t *c);
/* Sets a routed-expert gating in the model and in config.json's copy of it alike
 * (scoring_func, norm_topk_prob, routed_scaling_factor, n_group, topk_group): the two
 * must not drift apart, the config writer and the tensor list read the copy. */
void hlx_hf_gating_set(hlx_hf_config_t *c, hlx_moe_scoring_t scoring, int norm_topk_prob,
                       double routed_scaling, int n_group, int topk_group);

/* The checkpoint's name of the tensor the runtime reads as key (its routed-expert keys are
 * DeepSeek's: model.layers.L.mlp.gate.weight, model.layers.L.mlp.experts.J.gate_proj.weight,
 * ...): Mixtral's block_sparse_moe names for a MixtralForCausalLM config, gpt-oss's
 * mlp.router.weight and mlp.router.bias for mlp.gate.weight and mlp.gate.bias (its experts'
 * keys are views of the fused tensors, under the keys' own names), key itself otherwise. */
void hlx_hf_ckpt_name(const hlx_hf_config_t *c, const char *key, char *name, size_t len);

#define HLX_HF_FP8_BLOCK 1 /* DeepSeek: X.weight_scale_inv per block (weight_block_size) */
#define HLX_HF_FP8_SCALE 2 /* X.weight_scale per tensor or per output channel */
/* Whose quantization_config gave HLX_HF_FP8_SCALE weights: llm-compressor's compressed-tensors
 * (per tensor or channel), quant_method "fp8" without weight_block_size (AutoFP8 and vLLM's
 * Fp8Config: per tensor), NVIDIA ModelOpt's "modelopt" with quant_algo FP8 (per tensor, static
 * input scales; also its hf_quant_config.json) */
#define HLX_HF_QF_CT       0
#define HLX_HF_QF_FP8      1
#define HLX_HF_QF_MODELOPT 2
#define HLX_HF_QF_FBGEMM   3 /* Meta's FP8 releases (quant_method fbgemm_fp8): per channel */
#define HLX_HF_KV_SCALES_TENSOR 1 /* kv_cache_scheme strategy "tensor" */
#define HLX_HF_KV_SCALES_HEAD   2 /* strategy "attn_head": [num_key_value_heads] */

/* Values in each KV-cache scale tensor of c: one per KV head (HLX_HF_KV_SCALES_HEAD; MLA's
 * one latent head), else one. */
int hlx_hf_kv_scale_count(const hlx_hf_config_t *c);
/* "model.layers.L.self_attn.k_scale" (value 0) or "...v_scale" (1) into buf, or with
 * c->kv_proj_names "...self_attn.k_proj.k_scale" and "...v_proj.v_scale"; returns buf. */
const char *hlx_hf_kv_scale_name(const hlx_hf_config_t *c, int layer, int value, char *buf,
                                 size_t len);

/* Layer layer's KV-cache scale of KV head `head` for its keys (value 0) or values (1),
 * under hlx_hf_kv_scale_name's name, from a checkpoint whose config c has kv_scales (per
 * tensor: every head the one value): a positive finite value whose fp32 inverse is finite;
 * the error in hlx_ckpt_error(). */
hlx_status_t hlx_hf_kv_scale(hlx_ckpt_t *ck, const hlx_hf_config_t *c, int layer, int value,
                             int head, double *v_p);

/* The classes hlx_hf_config_load reads (architectures[0]), hlx_hf_arch_count of them: the
 * i-th's name, its model_type (*model_type_p, what names it where config.json gives no
 * class) and whether it is a multimodal class whose text model alone is read (*nested_p);
 * NULL past the last. */
size_t      hlx_hf_arch_count(void);
const char *hlx_hf_arch(size_t i, const char **model_type_p, int *nested_p);
/* The i-th class's base, the layer family its text model is built as ("llama", "mistral",
 * "qwen3_moe", "gemma3", "deepseek_v3", ...), or "text_config" where text_config's
 * model_type chooses it; NULL past the last. hlx_hf_arch_text_base: for such a class, the
 * k-th base its text_config may name (NULL past the last, and for any other class). */
const char *hlx_hf_arch_base(size_t i);
const char *hlx_hf_arch_text_base(size_t i, size_t k);

/* Reads dir/config.json; errors are "config.json:line:column: key: reason". */
hlx_status_t hlx_hf_config_load(const char *dir, hlx_hf_config_t *c, char *err,
                                size_t errlen);
/* Writes dir/config.json (through hlx_ckpt_write_file: never a partial file). */
hlx_status_t hlx_hf_config_write(const char *dir, const hlx_hf_config_t *c, char *err,
                                 size_t errlen);
/* config.json of c as text (free() it; NULL when out of memory). */
char        *hlx_hf_config_text(const hlx_hf_config_t *c);
/* 1 for Gemma2ForCausalLM: Gemma 3's layer (HLX_HF_GEMMA) without q/k norms and local RoPE
 * base, with the soft-cappings. */
int          hlx_hf_gemma2(const hlx_hf_config_t *c);
/* 1 for GraniteForCausalLM: Llama's layer with Granite's four multipliers. */
int          hlx_hf_granite(const hlx_hf_config_t *c);
/* 1 for GraniteMoeSharedForCausalLM: Granite MoE with a shared MLP stored fused
 * (shared_mlp.input_linear, output_linear), read as the runtime's shared experts. */
int          hlx_hf_granite_shared(const hlx_hf_config_t *c);
/* 1 for Olmo2ForCausalLM and Olmo3ForCausalLM: Llama's projections with only output norms (post_norms_only)
 * and q/k norms over the whole projections (qk_norm_proj). */
int          hlx_hf_olmo2(const hlx_hf_config_t *c);
/* 1 for Olmo3ForCausalLM (OLMo 2's layer, hlx_hf_olmo2 holds too) with windows on the
 * sliding_attention layers, which turn unscaled. */
int          hlx_hf_olmo3(const hlx_hf_config_t *c);
/* 1 for Starcoder2ForCausalLM: LayerNorms (norm_layer), biases by use_bias and the plain
 * MLP mlp.c_fc -> act -> mlp.c_proj (ffn_plain). */
int          hlx_hf_starcoder2(const hlx_hf_config_t *c);
/* The RoPE scaling parameters of m (factor, original context and the kind's own: llama3's
 * bands, yarn's betas and mscales, longrope's factor sets and attention_factor) added to
 * the jansson object o under config.json's key names; nothing for no scaling. */
struct json_t;
void         hlx_hf_rope_params_json(const hlx_model_t *m, struct json_t *o);
/* dual_chunk_attention_config's object of a model with dual chunk attention (config.json's
 * key, model info's) */
struct json_t *hlx_hf_dca_json(const hlx_model_t *m);
/* 1 where config.json's dual_chunk_attention_config is applied (Qwen2, Qwen2-MoE, Qwen3,
 * Qwen3-MoE, and a LLaVA-style class's text_config of qwen2 or qwen3: those vLLM reads it
 * for); c's text_config class read (a LLaVA-style class's text_type) */
int          hlx_hf_reads_dca(const hlx_hf_config_t *c);
/* 1 where config.json's no_rope_layers (NoPE layers: hlx_model_t.nope_pattern) is read
 * (SmolLM3ForCausalLM) */
int          hlx_hf_reads_nope(const hlx_hf_config_t *c);
/* 1 for GptOssForCausalLM: its fused experts (gate and up interleaved), biases and sinks */
int          hlx_hf_gpt_oss(const hlx_hf_config_t *c);

/* ---- the tensors a model must have ------------------------------------------------- */

/* Tensor classes, for sizes per class and per rank. */
typedef enum hlx_hf_class {
    HLX_HFC_EMBED = 0, HLX_HFC_ATTN, HLX_HFC_NORM, HLX_HFC_FFN, HLX_HFC_EXPERT,
    HLX_HFC_SHARED, HLX_HFC_ROUTER, HLX_HFC_LMHEAD, HLX_HFC_SCALE, HLX_HFC_COUNT
} hlx_hf_class_t;
const char *hlx_hf_class_name(hlx_hf_class_t c);

/* How a tensor is split over the ranks of a Helix layout. */
typedef enum hlx_hf_split {
    HLX_HFS_REPLICATED = 0, /* every rank: norms, router, MLA down projections */
    HLX_HFS_TPA_HEADS,      /* query heads (and KV heads, ceil(K / TPA)) over TPA */
    HLX_HFS_N,              /* over all N = KVP x TPA ranks: W_o heads, FFN columns, vocab
                             * (the LM head's columns and the embedding's rows) */
    HLX_HFS_EXPERT          /* one expert: on one EP group, split over N / EP inside it */
} hlx_hf_split_t;

typedef struct hlx_hf_expect {
    char           name[96];
    int            ndim;      /* 0 (one value) to 2; 3 only in a writer's list (gpt-oss's
                                 fused experts: rows shape[0] x shape[1] of shape[2]) */
    int64_t        shape[3];
    hlx_st_dtype_t dtype;
    hlx_hf_class_t cls;
    hlx_hf_split_t split;
    int            kv;        /* GQA K/V projection: split by KV heads; 2: fused q, k, v
                               * (qkv_proj: the first Q*d rows by query heads) */
    int            kind;      /* a Linear layer's weight: its kind (hlx_hf_kind_name), by
                               * first appearance in the list; -1 for every other tensor */
} hlx_hf_expect_t;

/* Most kinds of Linear layer a model's list tells apart (hlx_hf_config_t.unquant's bits). */
#define HLX_HF_MAX_KINDS 64
/* Whether c reads the Linear weight of kind `kind` in layer `layer` (-1: none) unquantized. */
int          hlx_hf_unquantized(const hlx_hf_config_t *c, int kind, long layer);
/* The kind of the Linear weight `name`: its module name without "model.layers.L." and
 * ".weight", an expert's index as "*" (model.layers.3.mlp.experts.7.up_proj.weight:
 * mlp.experts.*.up_proj), into buf; returns buf. */
const char  *hlx_hf_kind_name(const char *name, char *buf, size_t len);
/* fn(item, arg) for each kind c reads unquantized (hlx_hf_config_t.unquant, unquant_layer),
 * in the order of its list: "self_attn.q_proj", or "mlp.down_proj (layers 0 125)". */
void         hlx_hf_unquant_each(const hlx_hf_config_t *c,
                                 void (*fn)(const char *item, void *arg), void *arg);
/* Those items, ", "-separated, into buf ("" for none); returns buf. */
const char  *hlx_hf_unquant_str(const hlx_hf_config_t *c, char *buf, size_t len);

/* Every tensor the model of c must hold, in a fixed order (fp8 scales included). Errors
 * ("config.json: ...") for a config describing more than 2^20 tensors and out of memory. */
hlx_status_t hlx_hf_expect(const hlx_hf_config_t *c, hlx_hf_expect_t **list_p, size_t *n_p,
                           char *err, size_t errlen);
/* Settles in c what the config leaves to the tensors, before hlx_hf_check: under which
 * names the KV-cache scales are (kv_proj_names: layer 0's k or v scale under either name;
 * else the form's own names), where the config leaves them undeclared (kv_scales_maybe)
 * whether there are any, whether a tied model's checkpoint holds an unused head
 * (lm_head_unused), and what it holds of the multi-token-prediction layers, not read
 * (mtp_tensors, mtp_bytes). Also sets ck's name prefixes for a multimodal checkpoint's text model
 * (as hlx_hf_check does), before it looks for any of these. */
void         hlx_hf_settle(hlx_ckpt_t *ck, hlx_hf_config_t *c);
/* Whether c's linear weights are stored quantized (fp8, int8, packed integers, MXFP4),
 * which the runtime holds dequantized in bf16 (integer and MXFP4 ones in f32 where
 * torch_dtype is float32). */
int          hlx_hf_quantized(const hlx_hf_config_t *c);
/* The dtype the runtime holds c's weights in when not told otherwise (`--weight-dtype`):
 * torch_dtype's for float32 and bfloat16 (integer and MXFP4 weights dequantized into it),
 * bf16 for float16 and for fp8 weights. */
hlx_dtype_t  hlx_hf_held_default(const hlx_hf_config_t *c);
/* Whether weights of c held in `held` are the bf16 rounding of what the checkpoint stores
 * (held bf16, stored F16, F32 or quantized), so that every f32 read must round as the
 * runtime holds them: the fp64 reference then reads the values the ranks hold. */
int          hlx_hf_held_rounded(const hlx_hf_config_t *c, hlx_dtype_t held);
/* Checks that ck holds exactly what c needs: every tensor present with its shape and
 * dtype, nothing unknown, one-value scales finite and >= 0. The first problem goes to
 * hlx_ckpt_error(ck). Also records in ck what hlx_hf_read needs of c beyond the model (fp8
 * blocks, fused projections). */
hlx_status_t hlx_hf_check(hlx_ckpt_t *ck, const hlx_hf_config_t *c);
/* ck's dense tensor layout (hlx_hf_config_t.fused: fused projections, RoPE pairs); set by
 * hlx_hf_check from the config. */
void         hlx_ckpt_set_fused(hlx_ckpt_t *ck, int fused);
int          hlx_ckpt_fused(const hlx_ckpt_t *ck);

/* ---- runtime tensors <-> checkpoint tensors (dense family) ------------------------ */

/* The runtime's weights of a dense GQA model, numbered as its synthetic generator numbers
 * them (runtime/hlx_synth.h hlx_tensor_t), in the runtime's orientation. */
typedef enum hlx_hf_weight {
    HLX_HFW_ATTN_NORM  = 0,  /* [1][H] */
    HLX_HFW_WQ         = 1,  /* [H][Q*dk] */
    HLX_HFW_WK         = 2,  /* [H][K*dk] */
    HLX_HFW_WV         = 3,  /* [H][K*dv] */
    HLX_HFW_WO         = 4,  /* [Q*dv][H] */
    HLX_HFW_FFN_NORM   = 5,  /* [1][H] */
    HLX_HFW_WGATE      = 6,  /* [H][F] */
    HLX_HFW_WUP        = 7,  /* [H][F] */
    HLX_HFW_WDOWN      = 8,  /* [F][H] */
    HLX_HFW_EMBED      = 11, /* [V][H] */
    HLX_HFW_FINAL_NORM = 12, /* [1][H] */
    HLX_HFW_LMHEAD     = 13, /* [H][V] */
    HLX_HFW_BQ         = 15, /* [1][Q*dk]  q_proj.bias (Qwen2) */
    HLX_HFW_BK         = 16, /* [1][K*dk]  k_proj.bias */
    HLX_HFW_BV         = 17, /* [1][K*dv]  v_proj.bias */
    HLX_HFW_QNORM      = 18, /* [1][dk]    q_norm.weight (Qwen3), every query head */
    HLX_HFW_KNORM      = 19, /* [1][dk]    k_norm.weight, every key head */
    HLX_HFW_POST_ATTN_NORM = 20, /* [1][H] post_self_attn_layernorm.weight (post_norms) */
    HLX_HFW_POST_FFN_NORM  = 21, /* [1][H] post_mlp_layernorm.weight */
    HLX_HFW_SINKS      = 22, /* [1][Q]     self_attn.sinks (attn_sinks: gpt-oss) */
    HLX_HFW_BO         = 23, /* [1][H]     self_attn.o_proj.bias (o_bias) */
    /* StarCoder2's (norm_layer, ffn_plain with ffn_bias): the LayerNorms' biases and the
     * plain MLP's (its weights are WUP and WDOWN: mlp.c_fc, mlp.c_proj) */
    HLX_HFW_ATTN_NORM_B  = 24, /* [1][H] input_layernorm.bias */
    HLX_HFW_FFN_NORM_B   = 25, /* [1][H] post_attention_layernorm.bias */
    HLX_HFW_FINAL_NORM_B = 26, /* [1][H] model.norm.bias */
    HLX_HFW_BUP          = 27, /* [1][F] mlp.c_fc.bias */
    HLX_HFW_BDOWN        = 28  /* [1][H] mlp.c_proj.bias */
} hlx_hf_weight_t;

/* Checkpoint name of runtime weight w of layer (layer ignored for global ones), in Llama's
 * layout: also the runtime's key for the weight (hlx_wsrc_read, hlx_hf_weight_parse). */
void hlx_hf_weight_name(hlx_hf_weight_t w, int layer, char *name, size_t len);
/* Where w is stored under layout fused (HLX_HF_FUSED_*, HLX_HF_QKV_GROUPED): the tensor's
 * name (qkv_proj, gate_up_proj, InternLM2's, or hlx_hf_weight_name's), its HF rows (out
 * features; 0 for a 1-D tensor), and the first of them that is w's: q 0, k Q*d, v Q*d +
 * K*d; gate 0, up F; 0 for the grouped wqkv, whose rows hlx_hf_fused_row places. */
void hlx_hf_weight_source(const hlx_model_t *m, int fused, hlx_hf_weight_t w, int layer,
                          char *name, size_t len, int64_t *hrows_p, int64_t *row0_p);
/* Row of the fused tensor that holds row r of w in its own HF order (r < Q*d for W_q, K*d
 * for W_k and W_v): row0 + r, or InternLM2's grouped place. */
int64_t hlx_hf_fused_row(const hlx_model_t *m, int fused, hlx_hf_weight_t w, int64_t r);
/* Runtime weight and layer of row hrow of checkpoint tensor name, and that row's number
 * within the weight's own HF rows (a fused tensor holds several); -1 when none. */
int hlx_hf_weight_at(const hlx_model_t *m, int fused, const char *name, int64_t hrow,
                     hlx_hf_weight_t *w_p, int *layer_p, int64_t *wrow_p);
/* Runtime shape [rows][cols] of w. */
void hlx_hf_weight_shape(const hlx_model_t *m, hlx_hf_weight_t w, int64_t *rows,
                         int64_t *cols);
/* Element (hrow, hcol) of the checkpoint tensor that holds runtime element (row, col):
 * matrices are transposed (HF stores [out][in]) and, for W_q and W_k, the rotated part of
 * every head goes from HF's half-split order (i, i + r/2) to interleaved pairs (2i, 2i+1),
 * the order the runtime's RoPE rotates, unless layout has HLX_HF_ROPE_PAIRS (GLM: already
 * in pairs). */
void hlx_hf_weight_map(const hlx_model_t *m, int layout, hlx_hf_weight_t w, int64_t row,
                       int64_t col, int64_t *hrow, int64_t *hcol);

/* The inverse: runtime element (row, col) held by checkpoint element (hrow, hcol). */
void hlx_hf_weight_unmap(const hlx_model_t *m, int layout, hlx_hf_weight_t w, int64_t hrow,
                         int64_t hcol, int64_t *row, int64_t *col);
/* Runtime weight and layer of a checkpoint tensor name (Llama's names); -1 when it is not
 * one. */
int hlx_hf_weight_parse(const char *name, hlx_hf_weight_t *w_p, int *layer_p);

/* The checkpoint tensor hlx_hf_read reads w of layer from: hlx_hf_weight_source's (its
 * HF rows and first row in *hrows_p, *row0_p), or, for the output head of a tied model or
 * of one without lm_head.weight, the embedding. */
void hlx_hf_read_source(const hlx_ckpt_t *ck, const hlx_model_t *m, hlx_hf_weight_t w,
                        int layer, char *name, size_t len, int64_t *hrows_p, int64_t *row0_p);
/* Reads runtime rows [r0, r0 + nr) x cols [c0, c0 + nc) of weight w of layer into
 * dst[i * ld + j] as dst_dtype: one call per rank slice (its heads, FFN columns, vocab
 * share). The tensor's shape is checked against m first. Without lm_head.weight (tied
 * embeddings) the output head is read from model.embed_tokens.weight. A checkpoint with
 * fused projections (hlx_ckpt_fused) is read at w's rows of the fused tensor. */
hlx_status_t hlx_hf_read(hlx_ckpt_t *ck, const hlx_model_t *m, hlx_hf_weight_t w, int layer,
                         int64_t r0, int64_t nr, int64_t c0, int64_t nc, void *dst,
                         hlx_dtype_t dst_dtype, int64_t ld);
/* x[r][c] (r < nr, c < nc, row r at x + r ld) rounded to bf16, kept as floats: weights
 * read as f32 where the runtime holds them in bf16. */
void         hlx_hf_round_bf16(float *x, int64_t nr, int64_t nc, int64_t ld);
/* hlx_hf_read; with round (an f32 read of weights held in bf16, hlx_hf_held_rounded) every
 * value the bf16 rounding of the stored one, a Gemma norm's before its 1 is added (stored
 * w - 1, as transformers and vLLM add 1 in f32 to the bf16 parameter): rounding 1 + w
 * instead would lose its small part's bits. */
hlx_status_t hlx_hf_read_held(hlx_ckpt_t *ck, const hlx_model_t *m, hlx_hf_weight_t w,
                              int layer, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                              void *dst, hlx_dtype_t dst_dtype, int64_t ld, int round);

/* ---- writing ----------------------------------------------------------------------- */

/* Fills one row (cols elements, of tensor number idx of the list) as floats. */
typedef hlx_status_t (*hlx_ckpt_fill_fn)(void *ctx, const hlx_hf_expect_t *t, size_t idx,
                                         int64_t row, float *dst);

/* Writes the tensors of list (F32/BF16/F16 rounded to nearest even, F8_E4M3 as the
 * saturating nearest e4m3 value) into nshards files model-0000i-of-0000n.safetensors
 * (tensors dealt out in list order; one model.safetensors for nshards 1) and
 * model.safetensors.index.json, and cfg's config.json unless cfg is NULL. dir is created
 * when missing. Before a byte is written the whole size is worked out (overflow-checked)
 * and refused with HLX_ERR_NOSPACE when the file system has less free; every file is
 * written unnamed (or under a hidden temporary name) and all are put in place by rename()
 * only once all are complete, so a failed or interrupted write leaves no partial file under
 * a final name and the files already there as they were. */
hlx_status_t hlx_ckpt_write(const char *dir, const hlx_hf_expect_t *list, size_t n,
                            int nshards, const hlx_hf_config_t *cfg, hlx_ckpt_fill_fn fill,
                            void *ctx, char *err, size_t errlen);
/* Bytes hlx_ckpt_write would write (shards with their headers, index, config.json). */
hlx_status_t hlx_ckpt_write_size(const hlx_hf_expect_t *list, size_t n, int nshards,
                                 const hlx_hf_config_t *cfg, uint64_t *bytes_p, char *err,
                                 size_t errlen);
/* HLX_ERR_NOSPACE, with both numbers, when the file system of dir (or of the nearest folder
 * above it that exists) has fewer than bytes free. */
hlx_status_t hlx_ckpt_space_check(const char *dir, uint64_t bytes, char *err, size_t errlen);
/* One small file dir/name holding text, put in place the same way. */
hlx_status_t hlx_ckpt_write_file(const char *dir, const char *name, const char *text,
                                 char *err, size_t errlen);

/* Synthetic value of element (row, col) of t for a seed (hash of seed, name and index):
 * norms 1 + u/8, F8_E4M3 weights u (-1..1, rounded to e4m3 when stored), their block scales
 * 2^-k with k in 4..7, other matrices u * sqrt(3 / in). Used by `helix model synth` for
 * tensors the runtime's generator does not cover (MLA, experts). */
float hlx_ckpt_synth_value(uint64_t seed, const hlx_hf_expect_t *t, int64_t row, int64_t col);

#endif
