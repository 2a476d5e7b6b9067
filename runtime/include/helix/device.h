/* The CUDA devices this process sees (helix info, the --device choice): count, names,
 * memory, compute capability and versions, or the reason there is none. */
#ifndef HELIX_DEVICE_H
#define HELIX_DEVICE_H

#include <stdint.h>

#define HLX_DEVICES_MAX 16

typedef struct hlx_device_desc {
    char     name[128];
    uint64_t mem_bytes;          /* total device memory */
    int      cc_major, cc_minor; /* compute capability */
    int      sms;                /* multiprocessors */
    double   hbm_gbps;           /* from the memory clock and bus width (0: unknown) */
} hlx_device_desc_t;

typedef struct hlx_devices {
    int               compiled;        /* the build has the CUDA backend */
    int               count;           /* usable devices (0: see reason) */
    int               driver_version;  /* CUDA version the driver supports, 13000 = 13.0;
                                          0 without a driver */
    int               runtime_version; /* CUDA runtime linked in */
    char              reason[256];     /* why count is 0 */
    hlx_device_desc_t dev[HLX_DEVICES_MAX]; /* the first min(count, HLX_DEVICES_MAX) */
} hlx_devices_t;

/* Never fails: without CUDA, a driver or a device, count is 0 and reason says why. */
void hlx_devices_query(hlx_devices_t *d);

#endif
