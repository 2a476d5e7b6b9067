/* Stand-in for libnvidia-ml used by test_topo_probe: the 8 GPUs of hgx8-nomatrix.xml with
 * 4 NVLinks (version 4: 25 GB/s each) to one of two NVSwitches, GPUs 0-3 on the first and
 * 4-7 on the second; GPU 7's last link has a far end NVML cannot name. */
#include <stdio.h>
#include <string.h>

typedef struct fake_dev *nvmlDevice_t;
typedef struct {
    char         busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char         busId[32];
} nvmlPciInfo_t;

static const unsigned fake_bus[8] = { 0x18, 0x1c, 0x3a, 0x3e, 0x9a, 0x9e, 0xba, 0xbe };
static int fake_up;

int nvmlInit_v2(void) { fake_up = 1; return 0; }
int nvmlShutdown(void) { fake_up = 0; return 0; }

int nvmlDeviceGetHandleByPciBusId_v2(const char *busid, nvmlDevice_t *dev)
{
    unsigned d, b, s, f, i;
    if (!fake_up || sscanf(busid, "%x:%x:%x.%x", &d, &b, &s, &f) != 4)
        return 1; /* NVML_ERROR_UNINITIALIZED / INVALID_ARGUMENT */
    for (i = 0; i < 8; i++)
        if (d == 0 && b == fake_bus[i] && s == 0 && f == 0) {
            *dev = (nvmlDevice_t)(unsigned long)(i + 1);
            return 0;
        }
    return 6; /* NVML_ERROR_NOT_FOUND */
}

int nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link, int *active)
{
    (void)dev;
    *active = link < 4;
    return 0;
}

int nvmlDeviceGetNvLinkVersion(nvmlDevice_t dev, unsigned int link, unsigned int *v)
{
    (void)dev;
    (void)link;
    *v = 4;
    return 0;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned int link,
                                        nvmlPciInfo_t *pci)
{
    unsigned g = (unsigned)(unsigned long)dev - 1;
    if (g == 7 && link == 3)
        return 3; /* NVML_ERROR_NOT_SUPPORTED */
    memset(pci, 0, sizeof(*pci));
    snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", g < 4 ? 0xc0 : 0xc1);
    return 0;
}
