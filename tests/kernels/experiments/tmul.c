/* Stand-alone experiment (not built by meson): the AMX tile multiply's throughput on this
 * core, four independent tdpbf16ps (16 x 32 bf16 pairs into 16 x 16 fp32) in a loop, against
 * which the amx attention's in-cache rate can be read.
 * Build and run pinned: gcc -O2 -mamx-tile -mamx-bf16 -o /tmp/tmul tmul.c
 *                       taskset -c 1 /tmp/tmul
 * Intel Emerald Rapids VM (docs/kernels.md "Every variant, Intel Xeon Emerald Rapids"),
 * 2026-12-05: 7.84-7.91 ns a tile op (2.07-2.09 TFLOP/s), about 30 cycles of the 3.9 GHz
 * that the FMA probe's 250 GFLOP/s implies (64 flops a cycle), where one op is documented
 * at 16 cycles: the tiles run at about half that clock on this host. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>
typedef struct { uint8_t palette, start; uint8_t r[14]; uint16_t colsb[16]; uint8_t rows[16]; } cfg_t;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(void){
  if (syscall(SYS_arch_prctl, 0x1023, 18)) { perror("prctl"); return 1; }
  cfg_t c; memset(&c,0,sizeof c); c.palette=1; for(int i=0;i<8;i++){c.colsb[i]=64;c.rows[i]=16;}
  _tile_loadconfig(&c);
  static uint16_t a[16*32] __attribute__((aligned(64))); static float z[16*16] __attribute__((aligned(64)));
  for(int i=0;i<16*32;i++) a[i]=0x3f80;
  _tile_loadd(4,a,64); _tile_loadd(5,a,64); _tile_loadd(6,a,64); _tile_loadd(7,a,64);
  _tile_loadd(0,z,64);_tile_loadd(1,z,64);_tile_loadd(2,z,64);_tile_loadd(3,z,64);
  long n=20000000; double t=now();
  for(long i=0;i<n;i++){ _tile_dpbf16ps(0,4,5); _tile_dpbf16ps(1,4,6); _tile_dpbf16ps(2,7,5); _tile_dpbf16ps(3,7,6); }
  t=now()-t;
  _tile_stored(0,z,64); _tile_release();
  double ops=4.0*n, flop=ops*16*16*32*2;
  printf("tdpbf16ps: %.2f ns each, %.0f GFLOP/s (%g)\n", t/ops*1e9, flop/t/1e9, z[0]);
  return 0;
}
