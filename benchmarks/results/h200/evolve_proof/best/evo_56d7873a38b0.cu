// kernelrl evolve: evo_56d7873a38b0, best of HGEMM (fp32 accumulator) on 3 shapes
// geomean speedup 0.289x over torch (0.287x over cublas_tn)
// origin: repair, generation 5, model scripted-model
// Honest reference candidate (repaired): a plain WMMA (16x16x16) tensor-core HGEMM, C = A @ B.
//
// A (MxK), B (KxN), C (MxN): fp16, row-major, unpadded. Correct for every M, N, K >= 1:
// out-of-range tile elements are zero-filled in shared memory (so they add nothing to the
// dot products) and every store to C is bounds-checked. Chosen for clarity over speed.
//
// Tiling: 128x128 block tile, BK = 32, 8 warps in a 2 (M) x 4 (N) grid, each warp owning a
// 64x32 tile = 4x2 accumulator fragments. Two shared-memory stages: tile k+1 is fetched
// with cp.async while tile k is multiplied.
//
// KR_ACC_FP16 = 0: fp32 accumulators, rounded to fp16 once at the store.
// KR_ACC_FP16 = 1: fp16 accumulators (faster on some parts, less accurate for large K).

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stddef.h>
#include <stdint.h>

#ifndef KR_ACC_FP16
#define KR_ACC_FP16 0
#endif

namespace kr_wmma {

using namespace nvcuda;

constexpr int BM = 128, BN = 128, BK = 32;
constexpr int WARPS_M = 2, WARPS_N = 4;
constexpr int WARPS = WARPS_M * WARPS_N;         // 8
constexpr int THREADS = WARPS * 32;              // 256
constexpr int WM = BM / WARPS_M;                 // 64 rows per warp
constexpr int WN = BN / WARPS_N;                 // 32 cols per warp
constexpr int FM = WM / 16, FN = WN / 16;        // 4 x 2 fragments per warp
constexpr int STAGES = 2;
// 8 halves (16 B) of row padding: keeps ldm a multiple of 8 (WMMA rule for half), keeps
// every 16-B cp.async destination aligned, and staggers rows across shared-memory banks.
constexpr int PAD = 8;
constexpr int LDA = BK + PAD;                    // 40 halves = 80 B per A row
constexpr int LDB = BN + PAD;                    // 136 halves = 272 B per B row

#if KR_ACC_FP16
typedef __half acc_t;
#else
typedef float acc_t;
#endif

// Byte offsets of every fragment base are multiples of 32 (WMMA needs 256-bit alignment):
//   A: stage 128*40*2 = 10240 B, fragment row step 16*80 = 1280 B, k step 16*2 = 32 B.
//   B: starts at 2*10240 B, stage 32*136*2 = 8704 B, k row step 16*272 = 4352 B,
//      column step 16*2 = 32 B, warp column step 32*2 = 64 B.
//   Epilogue staging: 16*16*sizeof(acc_t) = 1024 or 512 B per warp.
struct Pipe {
    __half a[STAGES][BM][LDA];
    __half b[STAGES][BK][LDB];
};
union Smem {
    Pipe pipe;
    acc_t stage[WARPS][16 * 16];   // reused after the main loop to stage one fragment per warp
};
static_assert(sizeof(Pipe) % 32 == 0 && (sizeof(__half) * STAGES * BM * LDA) % 32 == 0,
              "fragment bases must stay 32-byte aligned");
static_assert(sizeof(Smem) <= 48 * 1024, "static shared memory limit");

__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, bool valid) {
    // src-size 0 makes cp.async write 16 zero bytes and read nothing; gmem_src must still be
    // a legal address, so callers pass the matrix base pointer for invalid chunks.
    unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
    int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(gmem_src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }

// Loads the BMxBK tile of A at (m0, k0) into s[BM][LDA]. 8-half chunks: BM*BK/8 = 512, 2 per thread.
// VEC (K % 8 == 0): every chunk is 16-B aligned in global memory and lies wholly inside or
// wholly outside [0, K), so one predicated cp.async per chunk is exact.
// Otherwise: element-wise guarded loads, packed into one 16-B shared store.
template <bool VEC>
__device__ __forceinline__ void load_a(__half (*s)[LDA], const __half* __restrict__ A,
                                       int M, int K, int m0, int k0, int tid) {
#pragma unroll
    for (int i = 0; i < (BM * BK / 8) / THREADS; ++i) {
        int chunk = tid + i * THREADS;
        int r = chunk / (BK / 8);              // 0..127
        int c = (chunk % (BK / 8)) * 8;        // 0, 8, 16, 24
        int gr = m0 + r, gc = k0 + c;
        if (VEC) {
            bool ok = gr < M && gc < K;
            const __half* src = ok ? A + (size_t)gr * K + gc : A;
            cp_async_16(&s[r][c], src, ok);
        } else {
            __align__(16) __half v[8];
#pragma unroll
            for (int e = 0; e < 8; ++e)
                v[e] = (gr < M && gc + e < K) ? A[(size_t)gr * K + gc + e] : __float2half(0.0f);
            *reinterpret_cast<uint4*>(&s[r][c]) = *reinterpret_cast<const uint4*>(v);
        }
    }
}

// Loads the BKxBN tile of B at (k0, n0) into s[BK][LDB]; same scheme, VEC means N % 8 == 0.
template <bool VEC>
__device__ __forceinline__ void load_b(__half (*s)[LDB], const __half* __restrict__ B,
                                       int N, int K, int k0, int n0, int tid) {
#pragma unroll
    for (int i = 0; i < (BK * BN / 8) / THREADS; ++i) {
        int chunk = tid + i * THREADS;
        int r = chunk / (BN / 8);              // 0..31
        int c = (chunk % (BN / 8)) * 8;        // 0..120
        int gr = k0 + r, gc = n0 + c;
        if (VEC) {
            bool ok = gr < K && gc < N;
            const __half* src = ok ? B + (size_t)gr * N + gc : B;
            cp_async_16(&s[r][c], src, ok);
        } else {
            __align__(16) __half v[8];
#pragma unroll
            for (int e = 0; e < 8; ++e)
                v[e] = (gr < K && gc + e < N) ? B[(size_t)gr * N + gc + e] : __float2half(0.0f);
            *reinterpret_cast<uint4*>(&s[r][c]) = *reinterpret_cast<const uint4*>(v);
        }
    }
}

// A_VEC: K % 8 == 0 (16-B A loads). N_VEC: N % 8 == 0 (16-B B loads and 16-B C stores).
template <bool A_VEC, bool N_VEC>
__global__ void __launch_bounds__(THREADS)
hgemm_wmma_kernel(const __half* __restrict__ A, const __half* __restrict__ B,
                  __half* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(128) Smem smem;

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;   // warp position in the 2x4 grid
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, acc_t> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], static_cast<acc_t>(0.0f));

    const int ktiles = (K + BK - 1) / BK;

    load_a<A_VEC>(smem.pipe.a[0], A, M, K, m0, 0, tid);
    load_b<N_VEC>(smem.pipe.b[0], B, N, K, 0, n0, tid);
    cp_async_commit();

    for (int kt = 0; kt < ktiles; ++kt) {
        const int cur = kt & 1;
        // Prefetch the next tile into the other stage; the barrier at the end of the previous
        // iteration guarantees no warp still reads it.
        if (kt + 1 < ktiles) {
            load_a<A_VEC>(smem.pipe.a[cur ^ 1], A, M, K, m0, (kt + 1) * BK, tid);
            load_b<N_VEC>(smem.pipe.b[cur ^ 1], B, N, K, (kt + 1) * BK, n0, tid);
        }
        cp_async_commit();        // always commit (possibly empty) so wait_group<1> means "tile kt landed"
        cp_async_wait<1>();
        __syncthreads();          // tile kt (cp.async and plain stores alike) visible to every warp

#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i)
                wmma::load_matrix_sync(fa[i], &smem.pipe.a[cur][wm * WM + i * 16][kk], LDA);
#pragma unroll
            for (int j = 0; j < FN; ++j)
                wmma::load_matrix_sync(fb[j], &smem.pipe.b[cur][kk][wn * WN + j * 16], LDB);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();          // stage cur may be overwritten by the next iteration's prefetch
    }
    cp_async_wait<0>();           // nothing real is pending (last groups are empty); be explicit
    __syncthreads();              // the staging area aliases the pipeline buffers

    // Epilogue: each warp spills one fragment at a time to its own 16x16 staging tile, then
    // every lane writes 8 consecutive elements of one row (row lane/2, columns (lane%2)*8..+7).
    acc_t* st = smem.stage[warp];
    const int r = lane >> 1, c = (lane & 1) * 8;
#pragma unroll
    for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            wmma::store_matrix_sync(st, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            const int gr = m0 + wm * WM + i * 16 + r;
            const int gc = n0 + wn * WN + j * 16 + c;
            if (gr < M) {
                __align__(16) __half v[8];
#pragma unroll
                for (int e = 0; e < 8; ++e) v[e] = static_cast<__half>(st[r * 16 + c + e]);
                __half* dst = C + (size_t)gr * N + gc;
                if (N_VEC && gc < N) {
                    // N % 8 == 0 and gc % 8 == 0: the 8 elements are all in range and 16-B aligned.
                    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(v);
                } else if (!N_VEC) {
#pragma unroll
                    for (int e = 0; e < 8; ++e)
                        if (gc + e < N) dst[e] = v[e];
                }
            }
            __syncwarp();         // all lanes done reading st before the next fragment overwrites it
        }
    }
}

template <bool A_VEC, bool N_VEC>
static cudaError_t launch(const __half* A, const __half* B, __half* C, int M, int N, int K,
                          cudaStream_t stream) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);   // N tiles on x (2^31-1 limit), M on y (65535)
    hgemm_wmma_kernel<A_VEC, N_VEC><<<grid, THREADS, 0, stream>>>(A, B, C, M, N, K);
    return cudaGetLastError();
}

}  // namespace kr_wmma

extern "C" {

// Every shape with M, N, K >= 1, as long as the M tiles fit gridDim.y (M <= 65535 * 128).
int kernelrl_hgemm_supports(int M, int N, int K) {
    return M >= 1 && N >= 1 && K >= 1 && (M + kr_wmma::BM - 1) / kr_wmma::BM <= 65535;
}

size_t kernelrl_hgemm_workspace(int M, int N, int K) {
    (void)M; (void)N; (void)K;
    return 0;
}

const char* kernelrl_hgemm_info(void) {
#if KR_ACC_FP16
    return "{\"acc\":\"fp16\",\"family\":\"wmma_reference\",\"params\":{\"BM\":128,\"BN\":128,\"BK\":32,"
           "\"WM\":64,\"WN\":32,\"warps\":8,\"stages\":2}}";
#else
    return "{\"acc\":\"fp32\",\"family\":\"wmma_reference\",\"params\":{\"BM\":128,\"BN\":128,\"BK\":32,"
           "\"WM\":64,\"WN\":32,\"warps\":8,\"stages\":2}}";
#endif
}

int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                   void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)workspace; (void)workspace_bytes;
    if (!kernelrl_hgemm_supports(M, N, K)) return (int)cudaErrorInvalidValue;
    const bool a_vec = (K % 8) == 0, n_vec = (N % 8) == 0;
    cudaError_t err;
    if (a_vec && n_vec)  err = kr_wmma::launch<true, true>(A, B, C, M, N, K, stream);
    else if (a_vec)      err = kr_wmma::launch<true, false>(A, B, C, M, N, K, stream);
    else if (n_vec)      err = kr_wmma::launch<false, true>(A, B, C, M, N, K, stream);
    else                 err = kr_wmma::launch<false, false>(A, B, C, M, N, K, stream);
    return (int)err;
}

}  // extern "C"
