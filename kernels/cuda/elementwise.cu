// RMSNorm, RoPE and SwiGLU on CUDA with the CPU reference's semantics, and GEMM via cuBLAS
// (opened at run time, see hlx_cublas_load).
#include "hlx_kernels_cuda.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <mutex>
#include <stdio.h>

// The last failure's words, per host thread (a rank drives its device from one thread).
static thread_local char hlx_cu_why[480];

extern "C" const char *hlx_cuda_error_text(void)
{
    return hlx_cu_why;
}

extern "C" void hlx_cuda_error_clear(void)
{
    hlx_cu_why[0] = '\0';
}

extern "C" hlx_status_t hlx_cuda_note(int err, const char *what, const char *why)
{
    cudaError_t e = (cudaError_t)err;

    if (e == cudaSuccess && why == NULL)
        return HLX_OK;
    if (why != NULL)
        snprintf(hlx_cu_why, sizeof(hlx_cu_why), "%s: %s", what, why);
    else
        snprintf(hlx_cu_why, sizeof(hlx_cu_why), "%s: %s (%s)", what, cudaGetErrorName(e),
                 cudaGetErrorString(e));
    return e == cudaErrorMemoryAllocation ? HLX_ERR_NOMEM :
           e == cudaSuccess ? HLX_ERR_UNSUPPORTED : HLX_ERR_INTERNAL;
}

#define hlx_cu_last() hlx_cuda_note((int)cudaGetLastError(), __func__, NULL)

__global__ void hlx_cu_swiglu(float *y, const float *g, const float *u, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

// One vector or one token's heads: the backend's row kernels (backend_ops.cu) on one row.
extern "C" hlx_status_t hlx_cuda_rmsnorm(float *y, const float *x, const float *w, int n,
                                         float eps, void *stream)
{
    return hlx_cuda_rmsnorm_rows(y, x, w, 1, n, eps, stream);
}

extern "C" hlx_status_t hlx_cuda_rope(float *x, int nheads, int hd, int rot_dim, int64_t pos,
                                      const hlx_rope_tab_t *r, void *stream)
{
    return hlx_cuda_rope_rows(x, 1, (size_t)nheads * hd, nheads, hd, rot_dim, pos, r, stream);
}

extern "C" hlx_status_t hlx_cuda_swiglu(float *y, const float *gate, const float *up, int n,
                                        void *stream)
{
    if (n == 0)
        return HLX_OK;
    hlx_cu_swiglu<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(y, gate, up, n);
    return hlx_cu_last();
}

// bf16-weight GEMM for decode widths: one thread per output column (coalesced weight rows),
// grid.y splits K into partial sums part[batch][split][M][N] (cuBLAS has no fp32 x bf16
// product), grid.z is the batch (x_b = x + b sx with rows ldx apart, W_b = w + b sw); a
// second kernel adds the splits in a fixed order, so results are the same run to run. One
// split (part NULL): the sums go straight to y_b (rows ldy apart, y_b = y + b sy), added
// to it when accumulating, as the second kernel would.
__global__ void hlx_cu_gemm_bf16(int M, int N, int K, const float *__restrict__ x, size_t ldx,
                                 size_t sx, const __nv_bfloat16 *__restrict__ w, size_t sw,
                                 float *part, int kper, float *y, size_t ldy, size_t sy,
                                 int accumulate)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    int k0 = blockIdx.y * kper, k1 = k0 + kper < K ? k0 + kper : K;
    if (n >= N)
        return;
    x += (size_t)blockIdx.z * sx;
    w += (size_t)blockIdx.z * sw;
    if (part != NULL)
        part += ((size_t)blockIdx.z * gridDim.y + blockIdx.y) * M * N;
    else
        y += (size_t)blockIdx.z * sy;
    for (int m0 = 0; m0 < M; m0 += 4) {
        float acc[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
        int mb = M - m0 < 4 ? M - m0 : 4;
        for (int k = k0; k < k1; k++) {
            float wv = __bfloat162float(w[(size_t)k * N + n]);
            for (int i = 0; i < mb; i++)
                acc[i] += x[(size_t)(m0 + i) * ldx + k] * wv;
        }
        for (int i = 0; i < mb; i++) {
            if (part != NULL) {
                part[(size_t)(m0 + i) * N + n] = acc[i];
            } else {
                float *yy = y + (size_t)(m0 + i) * ldy + n;
                *yy = (accumulate ? *yy : 0.0f) + acc[i];
            }
        }
    }
}

// y_b[m][n] (rows ldy apart, y_b = y + b sy) = (y_b if accumulate) + the nsplit partial
// sums of element (b, m, n), in split order.
__global__ void hlx_cu_gemm_sum(int batch, int M, int N, int nsplit, const float *part,
                                float *y, size_t ldy, size_t sy, int accumulate)
{
    size_t mn = (size_t)M * N, total = mn * batch;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t b = i / mn, j = i % mn;
        float *yy = y + b * sy + (j / N) * ldy + j % N;
        float a = accumulate ? *yy : 0.0f;
        for (int s = 0; s < nsplit; s++)
            a += part[(b * nsplit + s) * mn + j];
        *yy = a;
    }
}

// cuBLAS is opened on first use rather than linked: loading libcublasLt runs its static
// constructors (0.4 s and 210 MB resident on the Zen 5 VM) in every process that links it,
// CPU runs included, and only the f32 GEMM of the CUDA backend needs it. The three entry
// points it calls, from the library of the toolkit's major version (the build's header).
typedef cublasStatus_t (*hlx_cublas_create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*hlx_cublas_stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*hlx_cublas_sgemm_fn)(cublasHandle_t, cublasOperation_t,
                                              cublasOperation_t, int, int, int, const float *,
                                              const float *, int, const float *, int,
                                              const float *, float *, int);
typedef cublasStatus_t (*hlx_cublas_sgemm_sb_fn)(cublasHandle_t, cublasOperation_t,
                                                 cublasOperation_t, int, int, int,
                                                 const float *, const float *, int, long long,
                                                 const float *, int, long long, const float *,
                                                 float *, int, long long, int);
static struct {
    hlx_cublas_create_fn   create;
    hlx_cublas_stream_fn   set_stream;
    hlx_cublas_sgemm_fn    sgemm;
    hlx_cublas_sgemm_sb_fn sgemm_sb; // strided batched
    char                 why[200]; // dlerror() when the library did not load
} hlx_cublas;

#define HLX_STR_(x) #x
#define HLX_STR(x)  HLX_STR_(x)

static bool hlx_cublas_load(void)
{
    static std::once_flag once;
    std::call_once(once, [] {
        void *lib = dlopen("libcublas.so." HLX_STR(CUBLAS_VER_MAJOR), RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL)
            lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            snprintf(hlx_cublas.why, sizeof(hlx_cublas.why), "%s", dlerror());
            return;
        }
        hlx_cublas.create = (hlx_cublas_create_fn)dlsym(lib, "cublasCreate_v2");
        hlx_cublas.set_stream = (hlx_cublas_stream_fn)dlsym(lib, "cublasSetStream_v2");
        hlx_cublas.sgemm = (hlx_cublas_sgemm_fn)dlsym(lib, "cublasSgemm_v2");
        hlx_cublas.sgemm_sb = (hlx_cublas_sgemm_sb_fn)dlsym(lib, "cublasSgemmStridedBatched");
    });
    return hlx_cublas.create && hlx_cublas.set_stream && hlx_cublas.sgemm &&
           hlx_cublas.sgemm_sb;
}

extern "C" hlx_status_t hlx_cuda_blas_open(void)
{
    return hlx_cublas_load() ? HLX_OK : HLX_ERR_UNSUPPORTED;
}

// Row-major y = x W is column-major y^T = W^T x^T: cuBLAS gets (N x K) W and (K x M) x, a
// batch of them at strides (in elements). One cuBLAS handle and one split-K area per host
// thread (a rank drives one device).
extern "C" hlx_status_t hlx_cuda_gemm_batched(int batch, int M, int N, int K, const float *x,
                                              size_t ldx, size_t sx, const void *w, size_t sw,
                                              hlx_dtype_t w_dtype, float *y, size_t ldy,
                                              size_t sy, int accumulate, void *stream)
{
    static thread_local cublasHandle_t h = NULL;
    static thread_local float *part = NULL;
    static thread_local size_t part_n = 0;
    const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    cudaStream_t cs = (cudaStream_t)stream;

    if (batch < 0 || M < 1 || N < 1 || K < 1 || ldx < (size_t)K || ldy < (size_t)N ||
        batch > 65535 || ldx > INT32_MAX || ldy > INT32_MAX)
        return HLX_ERR_INVALID;
    if (batch == 0)
        return HLX_OK;
    if (w_dtype == HLX_DTYPE_BF16) {
        int ksplit = K / 256 < 1 ? 1 : K / 256 > 64 ? 64 : K / 256;
        int kper = (K + ksplit - 1) / ksplit;
        size_t need = ksplit > 1 ? (size_t)batch * ksplit * M * N : 0;
        size_t blocks = ((size_t)batch * M * N + 255) / 256;
        if (need > part_n) {
            // the old area may still be read by queued work on this stream
            cudaError_t e = cudaStreamSynchronize(cs);
            if (e != cudaSuccess)
                return hlx_cuda_note((int)e, __func__, NULL);
            cudaFree(part);
            part = NULL, part_n = 0;
            if ((e = cudaMalloc((void **)&part, need * sizeof(float))) != cudaSuccess) {
                (void)cudaGetLastError();
                return hlx_cuda_note((int)e, __func__, NULL);
            }
            part_n = need;
        }
        hlx_cu_gemm_bf16<<<dim3((unsigned)((N + 255) / 256), (unsigned)ksplit, (unsigned)batch),
                           256, 0, cs>>>(M, N, K, x, ldx, sx, (const __nv_bfloat16 *)w, sw,
                                         ksplit > 1 ? part : NULL, kper, y, ldy, sy,
                                         accumulate);
        hlx_status_t st = hlx_cu_last();
        if (st != HLX_OK || ksplit == 1) // one split: the kernel wrote y
            return st;
        hlx_cu_gemm_sum<<<(unsigned)(blocks > 65535 ? 65535 : blocks), 256, 0, cs>>>(
            batch, M, N, ksplit, part, y, ldy, sy, accumulate);
        return hlx_cu_last();
    }
    if (w_dtype != HLX_DTYPE_F32)
        return hlx_cuda_note(0, __func__, "weights neither f32 nor bf16");
    if (h == NULL) { // the handle exists only once cuBLAS is open
        char why[400];
        cublasStatus_t cst;
        if (!hlx_cublas_load()) { // no libcublas.so.N on the library path
            snprintf(why, sizeof(why), "f32 weights need cuBLAS, which did not load (%s); "
                     "put its folder on LD_LIBRARY_PATH", hlx_cublas.why[0] ? hlx_cublas.why
                                                                         : "symbols missing");
            return hlx_cuda_note(0, __func__, why);
        }
        if ((cst = hlx_cublas.create(&h)) != CUBLAS_STATUS_SUCCESS) {
            h = NULL;
            snprintf(why, sizeof(why), "cublasCreate failed (status %d)", (int)cst);
            return hlx_cuda_note(0, __func__, why);
        }
    }
    {
        char why[64];
        cublasStatus_t cst = hlx_cublas.set_stream(h, cs);
        if (cst == CUBLAS_STATUS_SUCCESS && batch == 1)
            cst = hlx_cublas.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, (const float *)w,
                                   N, x, (int)ldx, &beta, y, (int)ldy);
        else if (cst == CUBLAS_STATUS_SUCCESS)
            cst = hlx_cublas.sgemm_sb(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one,
                                      (const float *)w, N, (long long)sw, x, (int)ldx,
                                      (long long)sx, &beta, y, (int)ldy, (long long)sy, batch);
        if (cst == CUBLAS_STATUS_SUCCESS)
            return HLX_OK;
        snprintf(why, sizeof(why), "cuBLAS sgemm failed (status %d)", (int)cst);
        hlx_cuda_note(0, __func__, why);
        return HLX_ERR_INTERNAL;
    }
}

extern "C" hlx_status_t hlx_cuda_gemm(int M, int N, int K, const float *x, const void *w,
                                      hlx_dtype_t w_dtype, float *y, int accumulate,
                                      void *stream)
{
    return hlx_cuda_gemm_batched(1, M, N, K, x, (size_t)(K > 0 ? K : 0), 0, w, 0, w_dtype, y,
                                 (size_t)(N > 0 ? N : 0), 0, accumulate, stream);
}
