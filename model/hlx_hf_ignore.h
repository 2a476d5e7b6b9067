/* Ignore lists of quantized checkpoints, read once the model is known (model/hf_ignore.c). */
#ifndef HLX_HF_IGNORE_H
#define HLX_HF_IGNORE_H

#include "hlx_ckpt.h"
#include "hlx_json.h"

/* How a list's entries name modules: compressed-tensors' ignore and vLLM's fp8
 * ignored_layers ("re:" a Python expression from the start of the name, else the name or a
 * class), ModelOpt's exclude_modules (fnmatch wildcards), transformers'
 * modules_to_not_convert (every entry a Python expression from the start, or the name's end:
 * should_convert_module's rule) */
typedef enum {
    HLX_IGN_MODE_CT = 0,
    HLX_IGN_MODE_GLOB,
    HLX_IGN_MODE_HF
} hlx_ign_mode_t;

/* Sets c->unquant from the ignore lists lists[0, nlists) of doc (each at JSON pointer
 * at[i]; a NULL or non-array one skipped) of an fp8 or int8 config c whose model is read:
 * each entry matched against every Linear layer hlx_hf_expect lists as mode says. A kind
 * of layer named in every layer is read unquantized (unquant), one named in some of the
 * first HLX_HF_UNQ_LAYERS layers there (unquant_layer); some of a layer's experts, a kind
 * named in some layers past those, or every kind named, are refused at the entry's
 * line:column; so is an expression POSIX has no form for. Nothing to do (unquant 0) where
 * c holds no fp8 or int8 weights. */
hlx_status_t hlx_hf_ignore_apply(hlx_jdoc_t *doc, hlx_hf_config_t *c, json_t *const *lists,
                                 const char *const *at, int nlists, hlx_ign_mode_t mode);

/* Whether the list entry e ("re:" and a Python expression, from the start of the name, or a
 * name) names module as compressed-tensors and the fp8 method match it; 0 for an expression
 * not read (refused at its place by hlx_hf_ignore_apply). */
int hlx_hf_ignore_names(const char *e, const char *module);

/* The layer of a name "model.layers.L." + more, L in plain decimal digits (no sign, no
 * leading zero); -1 for any other name. */
long hlx_hf_layer_of(const char *name);

#endif
