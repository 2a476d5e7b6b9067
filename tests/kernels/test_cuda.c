/* The CUDA kernels against the CPU reference on the same random inputs (suite 'gpu'):
 * split-KV attention (GQA and MLA shapes, f32/bf16/fp8 KV, lengths 0, 1 and odd), merge,
 * RMSNorm, RoPE, SwiGLU, GEMM. Exit 77 (skipped) when no GPU is present. */
#include "hlx_kernels_cuda.h"
#include "kt_common.h"

#include <cuda_runtime.h>

static int kt_fail;

#define KT_CU(call) \
    do { \
        if ((call) != cudaSuccess) { \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #call); \
            exit(1); \
        } \
    } while (0)

static void *kt_dev(const void *host, size_t bytes)
{
    void *p = NULL;
    KT_CU(cudaMalloc(&p, bytes ? bytes : 1));
    if (host)
        KT_CU(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice));
    return p;
}

/* cap > 0: the scores soft-capped (Gemma 2), q of amplitude 10 so that they reach it */
static void kt_attn_case_cap(const hlx_kernels_t *ref, kt_rng_t *r, int group, int dk, int dv,
                             size_t len, hlx_dtype_t t, int nsplit, float cap)
{
    kt_attn_t a;
    hlx_attn_desc_t dd;
    size_t es, ko, vo;
    float *o_gpu, *l_gpu, *work;
    int g, e;

    kt_attn_make(r, &a, group, dk, dv, len, t, 1, cap > 0.0f ? 10.0 : 2.0);
    a.d.softcap = cap;
    es = kt_esize(t);
    ref->attn(&a.d);
    ko = a.d.k_stride * len * es + 1;
    vo = a.d.v_stride * len * es + 1;
    dd = a.d;
    dd.q = kt_dev(a.q, sizeof(float) * group * dk);
    dd.k = kt_dev(a.k, ko);
    dd.v = kt_dev(a.v, vo);
    dd.o = kt_dev(NULL, sizeof(float) * group * dv);
    dd.lse = kt_dev(NULL, sizeof(float) * group);
    work = kt_dev(NULL, sizeof(float) * hlx_cuda_attn_work_floats(group, dv, nsplit));
    if (hlx_cuda_attn(&dd, nsplit, work, NULL) != HLX_OK) {
        fprintf(stderr, "FAIL hlx_cuda_attn group %d dk %d dv %d len %zu\n", group, dk, dv, len);
        kt_fail++;
    }
    o_gpu = malloc(sizeof(float) * group * dv);
    l_gpu = malloc(sizeof(float) * group);
    KT_CU(cudaMemcpy(o_gpu, dd.o, sizeof(float) * group * dv, cudaMemcpyDeviceToHost));
    KT_CU(cudaMemcpy(l_gpu, dd.lse, sizeof(float) * group, cudaMemcpyDeviceToHost));
    for (g = 0; g < group; g++) {
        double o64[1024], l64, S = len ? kt_attn_f64(&a.d, g, o64, &l64) : 0.0, err = 0.0;
        for (e = 0; e < dv; e++) {
            double diff = fabs((double)a.o[g * dv + e] - o_gpu[g * dv + e]);
            err = diff > err || diff != diff ? diff : err;
        }
        /* __expf and a different summation order: 1e-4 of the head's error scale */
        if (len == 0 ? !(err == 0.0 && isinf(l_gpu[g]))
                     : !(err <= 1e-4 * S && fabs(a.lse[g] - l_gpu[g]) <= 1e-4 * fmax(1.0, fabs(a.lse[g])))) {
            fprintf(stderr, "FAIL cuda attn group %d dk %d dv %d len %zu %s splits %d cap %g "
                    "head %d: err %.3g (S %.3g) lse %g vs %g\n", group, dk, dv, len,
                    hlx_dtype_name(t), nsplit, (double)cap, g, err, S, (double)l_gpu[g],
                    (double)a.lse[g]);
            kt_fail++;
            break;
        }
    }
    cudaFree((void *)dd.q); cudaFree((void *)dd.k); cudaFree((void *)dd.v);
    cudaFree(dd.o); cudaFree(dd.lse); cudaFree(work);
    free(o_gpu); free(l_gpu);
    kt_attn_free(&a);
}

static void kt_attn_case(const hlx_kernels_t *ref, kt_rng_t *r, int group, int dk, int dv,
                         size_t len, hlx_dtype_t t, int nsplit)
{
    kt_attn_case_cap(ref, r, group, dk, dv, len, t, nsplit, 0.0f);
}

static void kt_elem(const hlx_kernels_t *ref, kt_rng_t *r)
{
    int n = 5000, M = 3, N = 333, K = 517, i;
    float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * n);
    float *y = malloc(sizeof(float) * n), *yg = malloc(sizeof(float) * n);
    float *dx, *dw, *dy;
    double err = 0.0;

    kt_fill(r, x, HLX_DTYPE_F32, n, 4.0);
    kt_fill(r, w, HLX_DTYPE_F32, n, 2.0);
    dx = kt_dev(x, sizeof(float) * n);
    dw = kt_dev(w, sizeof(float) * n);
    dy = kt_dev(NULL, sizeof(float) * n);
    ref->rmsnorm(y, x, w, n, 1e-5f);
    hlx_cuda_rmsnorm(dy, dx, dw, n, 1e-5f, NULL);
    KT_CU(cudaMemcpy(yg, dy, sizeof(float) * n, cudaMemcpyDeviceToHost));
    for (i = 0; i < n; i++)
        err = fmax(err, fabs((double)y[i] - yg[i]) / (fabs(y[i]) + 1e-30));
    if (err > 1e-6) { fprintf(stderr, "FAIL cuda rmsnorm err %.3g\n", err); kt_fail++; }
    ref->swiglu(y, x, w, n);
    hlx_cuda_swiglu(dy, dx, dw, n, NULL);
    KT_CU(cudaMemcpy(yg, dy, sizeof(float) * n, cudaMemcpyDeviceToHost));
    err = 0.0;
    for (i = 0; i < n; i++)
        err = fmax(err, fabs((double)y[i] - yg[i]) / (fabs(x[i] * w[i]) + 1e-30));
    if (err > 1e-6) { fprintf(stderr, "FAIL cuda swiglu err %.3g\n", err); kt_fail++; }
    memcpy(y, x, sizeof(float) * 8 * 128);
    {
        double inv[32], *dinv = NULL;
        hlx_rope_tab_t rt = { inv, 1.1f, NULL, 0 }, drt;
        hlx_rope_plain_freqs(10000.0, 64, inv);
        KT_CU(cudaMalloc((void **)&dinv, sizeof(inv)));
        KT_CU(cudaMemcpy(dinv, inv, sizeof(inv), cudaMemcpyHostToDevice));
        drt.inv_freq = dinv;
        drt.mscale = rt.mscale;
        ref->rope(y, 8, 128, 64, 123457, &rt);
        hlx_cuda_rope(dx, 8, 128, 64, 123457, &drt, NULL);
        cudaDeviceSynchronize();
        cudaFree(dinv);
    }
    KT_CU(cudaMemcpy(yg, dx, sizeof(float) * 8 * 128, cudaMemcpyDeviceToHost));
    err = 0.0;
    for (i = 0; i < 8 * 128; i++)
        err = fmax(err, fabs((double)y[i] - yg[i]));
    if (err > 1e-5) { fprintf(stderr, "FAIL cuda rope err %.3g\n", err); kt_fail++; }
    {
        int ti;
        for (ti = 0; ti < 2; ti++) {
            hlx_dtype_t t = ti ? HLX_DTYPE_BF16 : HLX_DTYPE_F32;
            float *xm = malloc(sizeof(float) * M * K), *ym = malloc(sizeof(float) * M * N);
            float *yh = malloc(sizeof(float) * M * N);
            void *wm = malloc(kt_esize(t) * (size_t)K * N), *dwm;
            float *dxm, *dym;
            kt_fill(r, xm, HLX_DTYPE_F32, (size_t)M * K, 1.0);
            kt_fill(r, wm, t, (size_t)K * N, 1.0);
            ref->gemm(M, N, K, xm, wm, t, ym, 0);
            dxm = kt_dev(xm, sizeof(float) * M * K);
            dwm = kt_dev(wm, kt_esize(t) * (size_t)K * N);
            dym = kt_dev(NULL, sizeof(float) * M * N);
            if (hlx_cuda_gemm(M, N, K, dxm, dwm, t, dym, 0, NULL) != HLX_OK) {
                fprintf(stderr, "FAIL cuda gemm %s\n", hlx_dtype_name(t));
                kt_fail++;
            }
            KT_CU(cudaMemcpy(yh, dym, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
            err = 0.0;
            for (i = 0; i < M * N; i++)
                err = fmax(err, fabs((double)ym[i] - yh[i]));
            /* cuBLAS may use TF32 only when asked; the default fp32 path is exact-order-free */
            if (err > 1e-6 * K) { fprintf(stderr, "FAIL cuda gemm %s err %.3g\n", hlx_dtype_name(t), err); kt_fail++; }
            cudaFree(dxm); cudaFree(dwm); cudaFree(dym);
            free(xm); free(ym); free(yh); free(wm);
        }
    }
    cudaFree(dx); cudaFree(dw); cudaFree(dy);
    free(x); free(w); free(y); free(yg);
}

int main(void)
{
    static const hlx_dtype_t types[] = { HLX_DTYPE_BF16, HLX_DTYPE_F32, HLX_DTYPE_FP8 };
    static const size_t lens[] = { 0, 1, 2, 31, 33, 1000, 4097 };
    hlx_kernels_t ref;
    kt_rng_t r = { 99 };
    char name[256];
    double hbm;
    size_t i;
    int ti;

    if (hlx_cuda_device_count() < 1) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    hlx_cuda_device_info(name, sizeof(name), &hbm);
    printf("device %s, HBM %.0f GB/s\n", name, hbm);
    hlx_kernels_reference(&ref);
    for (ti = 0; ti < 3; ti++)
        for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            kt_attn_case(&ref, &r, 8, 128, 128, lens[i], types[ti], 1);
            kt_attn_case(&ref, &r, 8, 128, 128, lens[i], types[ti], 7);
        }
    kt_attn_case(&ref, &r, 128, 576, 512, 300, HLX_DTYPE_BF16, 3);
    kt_attn_case(&ref, &r, 5, 40, 72, 999, HLX_DTYPE_F32, 16);
    /* soft-capped scores on both kernels: "tokens" (GQA heads up to 256) and "split" */
    for (ti = 0; ti < 3; ti++) {
        kt_attn_case_cap(&ref, &r, 2, 256, 256, 1000, types[ti], 3, 1.0f);
        kt_attn_case_cap(&ref, &r, 8, 128, 128, 77, types[ti], 1, 5.0f);
        kt_attn_case_cap(&ref, &r, 9, 576, 512, 300, types[ti], 2, 1.0f);
    }
    kt_elem(&ref, &r);
    if (kt_fail) {
        fprintf(stderr, "%d failure(s)\n", kt_fail);
        return 1;
    }
    printf("cuda kernels match the reference\n");
    return 0;
}
