// kr_blas.cu -- thin C ABI over cuBLAS / cuBLASLt for the fp16 GEMM baselines.
//
// Loaded from Python with ctypes, so: no torch headers, everything extern "C",
// errors reported as a nonzero return plus a thread-local message
// (kr_blas_last_error) instead of exceptions.
//
// Problem: C[M,N] = A[M,K] @ B[K,N], all fp16 and row-major.  cuBLAS is
// column-major, and a row-major X is a column-major X^T, so we compute
// C^T = B^T A^T as a column-major GEMM with m' = N, n' = M, k' = K: cuBLAS's
// "A" operand is our B (or Bt), its "B" operand is our A, and the output is
// N x M column-major with ld = N -- which is exactly row-major C.
//   layout 0 (NN): B is row-major K x N  == col-major N x K, ld = N, op N.
//   layout 1 (TN): Bt is row-major N x K == col-major K x N, ld = K, op T.
//   A (either layout): row-major M x K   == col-major K x M, ld = K, op N.
// acc 0: fp32 accumulate (COMPUTE_32F, float scalars);
// acc 1: fp16 accumulate (COMPUTE_16F, __half scalars).

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

// The Python side sizes algo buffers as 64 bytes per algo; fail the build if
// a future cuBLASLt changes that.
static_assert(sizeof(cublasLtMatmulAlgo_t) == 64, "cublasLtMatmulAlgo_t is expected to be 64 bytes");

// ---------------------------------------------------------------- errors ---

static thread_local char g_err[1024];

static void set_err(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
}

static bool cuda_ok(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    set_err("%s failed: %s (%d): %s", what, cudaGetErrorName(e), (int)e, cudaGetErrorString(e));
    return false;
}

static bool blas_ok(cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    set_err("%s failed: %s (%d): %s", what, cublasGetStatusName(s), (int)s, cublasGetStatusString(s));
    return false;
}

// The stringified call (with its argument names) goes into the message.
#define CUDA_OK(call) cuda_ok((call), #call)
#define BLAS_OK(call) blas_ok((call), #call)

// --------------------------------------------------------------- helpers ---

// Host-pointer-mode scalars: read at call time (also at capture time, so they
// are baked into a captured graph), hence plain statics are enough.
static const float kOneF = 1.0f, kZeroF = 0.0f;
static const __half kOneH = __half_raw{0x3C00}, kZeroH = __half_raw{0};

struct Ctx {
    cublasHandle_t blas = nullptr;
    cublasLtHandle_t lt = nullptr;
};

struct Plan {
    Ctx* ctx = nullptr;
    int layout = 0, acc = 0, M = 0, N = 0, K = 0;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // Lt operands: a = B/Bt, b = A, c = C = D
    ~Plan() {
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (op) cublasLtMatmulDescDestroy(op);
    }
};

static bool check_problem(int layout, int acc, int M, int N, int K) {
    if (layout != 0 && layout != 1) { set_err("layout must be 0 (NN) or 1 (TN), got %d", layout); return false; }
    if (acc < 0 || acc > 2) {
        set_err("acc must be 0 (fp16, fp32 accumulation), 1 (fp16, fp16 accumulation) or 2 (bf16, fp32 accumulation), "
                "got %d", acc);
        return false;
    }
    if (M <= 0 || N <= 0 || K <= 0) { set_err("M, N, K must be positive, got %d, %d, %d", M, N, K); return false; }
    return true;
}

static cublasStatus_t lt_matmul(Plan* p, const cublasLtMatmulAlgo_t* algo, const void* A, const void* B, void* C,
                                void* ws, size_t ws_bytes, cudaStream_t stream) {
    const void* alpha = p->acc != 1 ? (const void*)&kOneF : (const void*)&kOneH;
    const void* beta = p->acc != 1 ? (const void*)&kZeroF : (const void*)&kZeroH;
    // Column-major trick: Lt's A operand is our B (or Bt), Lt's B operand is our A; D aliases C (beta = 0).
    return cublasLtMatmul(p->ctx->lt, p->op, alpha, B, p->a, A, p->b, beta, C, p->c, C, p->c, algo, ws, ws_bytes,
                          stream);
}

// ------------------------------------------------------------ public API ---

extern "C" {

const char* kr_blas_last_error(void) { return g_err; }

int kr_blas_versions(int* cublas_version, int* cublaslt_version) {
    g_err[0] = '\0';
    if (!cublas_version || !cublaslt_version) { set_err("kr_blas_versions: NULL output pointer"); return 1; }
    // cublasGetVersion needs a handle (i.e. a CUDA context); cublasGetProperty does not and
    // reports the loaded library, so rebuild the same number: major*10000 + minor*100 + patch.
    int major = 0, minor = 0, patch = 0;
    if (!BLAS_OK(cublasGetProperty(MAJOR_VERSION, &major)) || !BLAS_OK(cublasGetProperty(MINOR_VERSION, &minor)) ||
        !BLAS_OK(cublasGetProperty(PATCH_LEVEL, &patch)))
        return 1;
    *cublas_version = major * 10000 + minor * 100 + patch;
    *cublaslt_version = (int)cublasLtGetVersion();
    return 0;
}

void* kr_blas_create(void) {
    g_err[0] = '\0';
    Ctx* ctx = new (std::nothrow) Ctx;
    if (!ctx) { set_err("kr_blas_create: out of host memory"); return nullptr; }
    if (!BLAS_OK(cublasCreate(&ctx->blas))) { delete ctx; return nullptr; }
    if (!BLAS_OK(cublasLtCreate(&ctx->lt))) { cublasDestroy(ctx->blas); delete ctx; return nullptr; }
    return ctx;
}

void kr_blas_destroy(void* ctx_) {
    Ctx* ctx = static_cast<Ctx*>(ctx_);
    if (!ctx) return;
    if (ctx->lt) cublasLtDestroy(ctx->lt);
    if (ctx->blas) cublasDestroy(ctx->blas);
    delete ctx;
}

int kr_cublas_gemm(void* ctx_, int layout, int acc, const void* A, const void* B, void* C, int M, int N, int K,
                   void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    g_err[0] = '\0';
    Ctx* ctx = static_cast<Ctx*>(ctx_);
    if (!ctx) { set_err("kr_cublas_gemm: NULL context"); return 1; }
    if (!check_problem(layout, acc, M, N, K)) return 1;
    // Order matters: cublasSetStream resets the handle to its default workspace pool, so the
    // user workspace must be set after it.  A user workspace also keeps cuBLAS from allocating
    // during CUDA graph capture.
    if (!BLAS_OK(cublasSetStream(ctx->blas, stream))) return 1;
    if (!BLAS_OK(cublasSetWorkspace(ctx->blas, workspace, workspace_bytes))) return 1;
    const cublasOperation_t opB = layout == 0 ? CUBLAS_OP_N : CUBLAS_OP_T;
    const int ldb = layout == 0 ? N : K;
    const void* alpha = acc != 1 ? (const void*)&kOneF : (const void*)&kOneH;
    const void* beta = acc != 1 ? (const void*)&kZeroF : (const void*)&kZeroH;
    const cublasComputeType_t ct = acc != 1 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_16F;
    const cudaDataType_t dt = acc == 2 ? CUDA_R_16BF : CUDA_R_16F;
    if (!BLAS_OK(cublasGemmEx(ctx->blas, opB, CUBLAS_OP_N, N, M, K, alpha, B, dt, ldb, A, dt, K, beta,
                              C, dt, N, ct, CUBLAS_GEMM_DEFAULT)))
        return 1;
    return 0;
}

void* kr_lt_plan_create(void* ctx_, int layout, int acc, int M, int N, int K) {
    g_err[0] = '\0';
    Ctx* ctx = static_cast<Ctx*>(ctx_);
    if (!ctx) { set_err("kr_lt_plan_create: NULL context"); return nullptr; }
    if (!check_problem(layout, acc, M, N, K)) return nullptr;
    Plan* p = new (std::nothrow) Plan;
    if (!p) { set_err("kr_lt_plan_create: out of host memory"); return nullptr; }
    p->ctx = ctx; p->layout = layout; p->acc = acc; p->M = M; p->N = N; p->K = K;

    // Scale type must match the compute type (16F compute => 16F scalars), or the
    // heuristic finds nothing.
    const cublasComputeType_t ct = acc != 1 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_16F;
    const cudaDataType_t st = acc != 1 ? CUDA_R_32F : CUDA_R_16F;
    const cudaDataType_t dt = acc == 2 ? CUDA_R_16BF : CUDA_R_16F;
    // Transpose attributes are int32_t-sized cublasOperation_t values; pass exactly that size.
    const cublasOperation_t opA = layout == 0 ? CUBLAS_OP_N : CUBLAS_OP_T, opB = CUBLAS_OP_N;
    // Layouts take the *stored* (pre-op) shape, column-major (the default order).
    const uint64_t a_rows = layout == 0 ? N : K, a_cols = layout == 0 ? K : N;
    const int64_t a_ld = layout == 0 ? N : K;
    bool ok = BLAS_OK(cublasLtMatmulDescCreate(&p->op, ct, st)) &&
              BLAS_OK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA))) &&
              BLAS_OK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB))) &&
              BLAS_OK(cublasLtMatrixLayoutCreate(&p->a, dt, a_rows, a_cols, a_ld)) &&
              BLAS_OK(cublasLtMatrixLayoutCreate(&p->b, dt, (uint64_t)K, (uint64_t)M, (int64_t)K)) &&
              BLAS_OK(cublasLtMatrixLayoutCreate(&p->c, dt, (uint64_t)N, (uint64_t)M, (int64_t)N));
    if (!ok) { delete p; return nullptr; }
    return p;
}

void kr_lt_plan_destroy(void* plan) { delete static_cast<Plan*>(plan); }

int kr_lt_heuristics(void* plan, size_t workspace_bytes, int max_algos, void* algos_out, size_t* workspace_needed_out,
                     int* count_out) {
    g_err[0] = '\0';
    Plan* p = static_cast<Plan*>(plan);
    if (!p || !algos_out || !count_out) { set_err("kr_lt_heuristics: NULL plan or output pointer"); return 1; }
    *count_out = 0;
    if (max_algos < 1 || max_algos > 128) { set_err("kr_lt_heuristics: max_algos must be in [1, 128], got %d", max_algos); return 1; }

    cublasLtMatmulPreference_t pref = nullptr;
    if (!BLAS_OK(cublasLtMatmulPreferenceCreate(&pref))) return 1;
    // The attribute is documented as uint64_t; passing a size_t/int of another size is a
    // classic way to get CUBLAS_STATUS_INVALID_VALUE or zero algos.
    const uint64_t ws = workspace_bytes;
    std::vector<cublasLtMatmulHeuristicResult_t> res(max_algos);
    int returned = 0;
    bool ok = BLAS_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                           sizeof(ws))) &&
              BLAS_OK(cublasLtMatmulAlgoGetHeuristic(p->ctx->lt, p->op, p->a, p->b, p->c, p->c, pref, max_algos,
                                                     res.data(), &returned));
    cublasLtMatmulPreferenceDestroy(pref);
    if (!ok) return 1;

    // Results come ranked by estimated time; keep that order, dropping any not marked usable.
    int n = 0;
    for (int i = 0; i < returned; ++i) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
        memcpy(static_cast<char*>(algos_out) + (size_t)n * sizeof(cublasLtMatmulAlgo_t), &res[i].algo,
               sizeof(cublasLtMatmulAlgo_t));
        if (workspace_needed_out) workspace_needed_out[n] = res[i].workspaceSize;
        ++n;
    }
    *count_out = n;
    if (n == 0) {
        set_err("cublasLtMatmulAlgoGetHeuristic: no algorithm found (layout=%s acc=%s M=%d N=%d K=%d "
                "workspace=%zu bytes, %d raw results)",
                p->layout == 0 ? "NN" : "TN", p->acc == 0 ? "fp32" : p->acc == 1 ? "fp16" : "bf16/fp32", p->M, p->N, p->K, workspace_bytes,
                returned);
        return 1;
    }
    return 0;
}

int kr_lt_run(void* plan, const void* algo64, const void* A, const void* B, void* C, void* workspace,
              size_t workspace_bytes, cudaStream_t stream) {
    g_err[0] = '\0';
    Plan* p = static_cast<Plan*>(plan);
    if (!p) { set_err("kr_lt_run: NULL plan"); return 1; }
    // algo64 == NULL lets cuBLASLt run its own heuristic inside the call.
    const cublasLtMatmulAlgo_t* algo = static_cast<const cublasLtMatmulAlgo_t*>(algo64);
    return BLAS_OK(lt_matmul(p, algo, A, B, C, workspace, workspace_bytes, stream)) ? 0 : 1;
}

int kr_lt_autotune(void* plan, const void* algos, int count, const void* A, const void* B, void* C, void* workspace,
                   size_t workspace_bytes, cudaStream_t stream, int reps, float* times_ms_out, int* best_out) {
    g_err[0] = '\0';
    Plan* p = static_cast<Plan*>(plan);
    if (!p || !algos || !times_ms_out || !best_out) { set_err("kr_lt_autotune: NULL plan or pointer argument"); return 1; }
    *best_out = -1;
    if (count < 1 || reps < 1) { set_err("kr_lt_autotune: count and reps must be >= 1, got %d, %d", count, reps); return 1; }
    for (int i = 0; i < count; ++i) times_ms_out[i] = INFINITY;

    // Timing synchronizes on events, which is illegal while the stream is being captured.
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (!CUDA_OK(cudaStreamIsCapturing(stream, &cap))) return 1;
    if (cap != cudaStreamCaptureStatusNone) { set_err("kr_lt_autotune: stream is capturing; autotune before capture"); return 1; }

    cudaEvent_t ev0 = nullptr, ev1 = nullptr;
    if (!CUDA_OK(cudaEventCreate(&ev0))) return 1;
    if (!CUDA_OK(cudaEventCreate(&ev1))) { cudaEventDestroy(ev0); return 1; }

    int rc = 0, skipped = 0;
    float best = INFINITY;
    for (int i = 0; i < count && rc == 0; ++i) {
        const cublasLtMatmulAlgo_t* algo = static_cast<const cublasLtMatmulAlgo_t*>(algos) + i;
        cublasLtMatmulHeuristicResult_t chk;
        memset(&chk, 0, sizeof chk);
        bool ok = cublasLtMatmulAlgoCheck(p->ctx->lt, p->op, p->a, p->b, p->c, p->c, algo, &chk) ==
                      CUBLAS_STATUS_SUCCESS &&
                  chk.workspaceSize <= workspace_bytes &&
                  lt_matmul(p, algo, A, B, C, workspace, workspace_bytes, stream) == CUBLAS_STATUS_SUCCESS;  // warm-up
        if (ok) {
            if (!CUDA_OK(cudaEventRecord(ev0, stream))) { rc = 1; break; }
            for (int r = 0; r < reps && ok; ++r)
                ok = lt_matmul(p, algo, A, B, C, workspace, workspace_bytes, stream) == CUBLAS_STATUS_SUCCESS;
            if (!CUDA_OK(cudaEventRecord(ev1, stream)) || !CUDA_OK(cudaEventSynchronize(ev1))) { rc = 1; break; }
        }
        if (!ok) {
            // A rejected launch leaves a (non-sticky) error in the runtime's last-error slot;
            // clear it so it does not surface later in an unrelated caller-side check.
            (void)cudaGetLastError();
            ++skipped;
            continue;
        }
        float ms = 0.f;
        if (!CUDA_OK(cudaEventElapsedTime(&ms, ev0, ev1))) { rc = 1; break; }
        times_ms_out[i] = ms / (float)reps;
        if (times_ms_out[i] < best) { best = times_ms_out[i]; *best_out = i; }
    }
    cudaEventDestroy(ev0);
    cudaEventDestroy(ev1);
    if (rc != 0) return rc;  // a CUDA error (message already set); the context may be unusable
    if (!CUDA_OK(cudaStreamSynchronize(stream))) return 1;
    if (*best_out < 0) {
        set_err("kr_lt_autotune: none of the %d algos ran (all failed check, needed more than %zu bytes of "
                "workspace, or failed to launch)", count, workspace_bytes);
        return 1;
    }
    if (skipped) set_err("kr_lt_autotune: %d of %d algos skipped (time = inf)", skipped, count);  // informational
    return 0;
}

}  // extern "C"

// Names a cudaError_t that a candidate returned, for its verdict line.
extern "C" const char* kr_cuda_error_name(int code) {
    return cudaGetErrorName(static_cast<cudaError_t>(code));
}
