/* Internal state of the topology layer, shared by the files of topology/. */
#ifndef HLX_TOPO_INT_H
#define HLX_TOPO_INT_H

#include "hlx_err.h"
#include <helix/topology.h>
#include <hwloc.h>

#include "hlx_param.h"

typedef struct hlx_topo_settings {
    char file[HLX_PARAM_STRLEN];      /* HELIX_TOPO_FILE */
    char dump_file[HLX_PARAM_STRLEN]; /* HELIX_TOPO_DUMP_FILE */
    int  thissystem;                  /* HELIX_TOPO_THISSYSTEM */
    char nvml_lib[HLX_PARAM_STRLEN];  /* HELIX_TOPO_NVML_LIB */
    char cuda_lib[HLX_PARAM_STRLEN];  /* HELIX_TOPO_CUDA_LIB */
    char verbs_lib[HLX_PARAM_STRLEN]; /* HELIX_TOPO_VERBS_LIB */
    char launcher_xml[HLX_PARAM_STRLEN]; /* HELIX_TOPO_LAUNCHER_XML */
} hlx_topo_settings_t;

struct hlx_topo {
    hwloc_topology_t    hw;
    hlx_topo_settings_t settings;
    hlx_topo_info_t     info;
    hlx_topo_gpu_t     *gpus;
    hwloc_obj_t        *gpu_obj;
    hlx_topo_nic_t     *nics;
    hwloc_obj_t        *nic_obj;
    double             *nvlink;       /* ngpus x ngpus, GB/s per direction */
};

/* Formats a message into err (never overflows; err may be NULL): util's hlx_errbuf. */
#define hlx_topo_seterr(_err, _len, ...) ((void)hlx_errbuf((_err), (_len), HLX_OK, __VA_ARGS__))

/* Checks an hwloc XML file's text before hwloc reads it: well-formed nesting (catches
 * truncation), cpuset/nodeset syntax, and distance matrices with nbobjs indexes and
 * nbobjs^2 non-negative values. hwloc itself drops objects with unparsable cpusets and
 * ignores extra matrix values silently, so this is where the line number is known. */
hlx_status_t hlx_topo_xml_check(const char *path, char *err, size_t errlen);
/* The same on text in memory (name is used in messages); the fuzz target's entry point. */
hlx_status_t hlx_topo_xml_check_text(const char *name, const char *text, size_t len, char *err,
                                     size_t errlen);

/* Optional run-time libraries (dlopen). Each returns HLX_ERR_UNSUPPORTED when the library
 * or device is absent, which the caller treats as "no information". */
hlx_status_t hlx_topo_nvml_links(hlx_topo_t *t, const char *lib);
hlx_status_t hlx_topo_cuda_match(hlx_topo_t *t, const char *lib);
hlx_status_t hlx_topo_verbs_names(hlx_topo_t *t, const char *lib);

/* Sets NVLink bandwidths and domains from a graph: nodes are the GPUs (local index order)
 * then nextra switches; mbps[i * n + j] is MB/s from node i to node j. Records the GPU x GPU
 * result in the hwloc topology as "NVLinkBandwidth" so that a dump replays it. */
hlx_status_t hlx_topo_nvlink_from_graph(hlx_topo_t *t, int nextra, const double *mbps);

/* Parses "dddd:bb:dd.f" (4 or 8 hex digits of domain) into a canonical "0000:18:00.0". */
int hlx_topo_busid_norm(const char *in, char *out, size_t outlen);

#endif
