/* Stand-in for libcuda used by test_topo_probe: 8 devices whose ordinals run opposite to
 * the PCI order of hgx8-nomatrix.xml (ordinal i is the GPU at bus fake_bus[7 - i]). */
#include <stdio.h>

static const unsigned fake_bus[8] = { 0x18, 0x1c, 0x3a, 0x3e, 0x9a, 0x9e, 0xba, 0xbe };

int cuInit(unsigned int flags) { (void)flags; return 0; }
int cuDeviceGetCount(int *n) { *n = 8; return 0; }
int cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return ordinal < 8 ? 0 : 101; }

int cuDeviceGetPCIBusId(char *buf, int len, int dev)
{
    if (dev < 0 || dev >= 8)
        return 101; /* CUDA_ERROR_INVALID_DEVICE */
    snprintf(buf, (size_t)len, "0000:%02X:00.0", fake_bus[7 - dev]);
    return 0;
}
