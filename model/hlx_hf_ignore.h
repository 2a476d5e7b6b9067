/* Ignore lists of quantized checkpoints, read once the model is known (model/hf_ignore.c). */
#ifndef HLX_HF_IGNORE_H
#define HLX_HF_IGNORE_H

#include "hlx_ckpt.h"
#include "hlx_json.h"

/* Sets c->unquant from the ignore lists lists[0, nlists) of doc (each at JSON pointer
 * at[i]; a NULL or non-array one skipped) of an fp8 or int8 config c whose model is read:
 * each entry matched against every Linear layer hlx_hf_expect lists, as "re:" Python
 * regular expressions (from the start of the name), module names or, with glob, ModelOpt's
 * fnmatch wildcards. A kind of layer named in some layers (or experts) and not in others,
 * or every kind named, is refused at the entry's line:column; so is an expression POSIX
 * has no form for. Nothing to do (unquant 0) where c holds no fp8 or int8 weights. */
hlx_status_t hlx_hf_ignore_apply(hlx_jdoc_t *doc, hlx_hf_config_t *c, json_t *const *lists,
                                 const char *const *at, int nlists, int glob);

/* Whether the list entry e ("re:" and a Python expression, from the start of the name, or a
 * name) names module as compressed-tensors and the fp8 method match it; 0 for an expression
 * not read (refused at its place by hlx_hf_ignore_apply). */
int hlx_hf_ignore_names(const char *e, const char *module);

#endif
