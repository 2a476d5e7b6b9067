/* MXFP4 (the OCP Microscaling format: FP4 E2M1 elements, one E8M0 scale per block of 32), the
 * form gpt-oss's released checkpoints store their experts in (`*_blocks`, `*_scales`):
 * decoding to f32, which is exact (every value is an E2M1 number times a power of two). */
#ifndef HLX_MXFP4_H
#define HLX_MXFP4_H

#include <stdint.h>

/* Elements per scale block, and bytes of elements per block (two a byte). */
#define HLX_MXFP4_BLOCK       32
#define HLX_MXFP4_BLOCK_BYTES 16

/* The 16 E2M1 values by code: sign bit 3, exponent bits 2..1 (bias 1), mantissa bit 0;
 * exponent 0 is subnormal (0 and 0.5). */
extern const float hlx_mxfp4_e2m1[16];
/* The same as the codes 12 + 2 e the packed GEMMs' table gives their nibbles (zero point
 * 12; 0 .. 24, -0 as 0): integers, so (code - 12) x 2^(s - 128) is the element exactly. */
extern const uint8_t hlx_mxfp4_codes[16];

/* The factor of E8M0 scale byte s: 2^(s - 127); 255 is E8M0's NaN. */
float hlx_mxfp4_scale(uint8_t s);

/* Elements [c0, c0 + n) of one row of an MXFP4 matrix into out as f32: blocks holds the row's
 * elements two a byte, the even element in the low nibble (cols / 2 bytes), scales one byte
 * per block of 32 elements (cols / 32 bytes); the caller checks c0 + n <= cols. */
void hlx_mxfp4_row(const uint8_t *blocks, const uint8_t *scales, int64_t c0, int64_t n,
                   float *out);

#endif
