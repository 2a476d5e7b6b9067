/* helix bench attention --device cuda (cli/cuda): argv from "attention" on. */
#ifndef HLX_BENCH_CUDA_H
#define HLX_BENCH_CUDA_H

int hlx_bench_attention_cuda(int argc, char **argv);

#endif
