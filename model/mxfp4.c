/* MXFP4 decoding (hlx_mxfp4.h): a table of the 16 E2M1 values and a power of two per block.
 * Written here because no library the project uses reads the format (it is a few lines: the
 * OCP MX specification's E2M1 and E8M0 encodings). */
#include "hlx_mxfp4.h"

#include <math.h>

const float hlx_mxfp4_e2m1[16] = {
    0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
    -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f,
};

const uint8_t hlx_mxfp4_codes[16] = { 12, 13, 14, 15, 16, 18, 20, 24,
                                       12, 11, 10, 9, 8, 6, 4, 0 };

float hlx_mxfp4_scale(uint8_t s)
{
    return s == 255 ? NAN : ldexpf(1.0f, (int)s - 127);
}

void hlx_mxfp4_row(const uint8_t *blocks, const uint8_t *scales, int64_t c0, int64_t n,
                   float *out)
{
    int64_t i = 0;

    while (i < n) {
        const int64_t c = c0 + i, blk = c / HLX_MXFP4_BLOCK;
        const int64_t end = (blk + 1) * HLX_MXFP4_BLOCK - c0; /* this block's last + 1 */
        const float f = hlx_mxfp4_scale(scales[blk]);
        const int64_t stop = n < end ? n : end;
        if (((c0 + i) & 1) && i < stop) { /* an odd element first: a byte's high nibble */
            out[i] = hlx_mxfp4_e2m1[blocks[(c0 + i) >> 1] >> 4] * f;
            i++;
        }
        for (; i + 1 < stop; i += 2) { /* then a byte's two elements at a time */
            const uint8_t b = blocks[(c0 + i) >> 1];
            out[i] = hlx_mxfp4_e2m1[b & 15] * f;
            out[i + 1] = hlx_mxfp4_e2m1[b >> 4] * f;
        }
        if (i < stop) {
            out[i] = hlx_mxfp4_e2m1[blocks[(c0 + i) >> 1] & 15] * f;
            i++;
        }
    }
}
