"""The device-side building blocks of the `mma_sync` kernel, as CUDA text (part of the source mma_sync_source.py
assembles).

Everything the GEMM kernel (mma_sync_kernel.py) is made of: the compile-time quantities Derived<Config> computes from
the variant's Config (with the static_asserts that back MmaSyncSpace.source_asserted), the XOR-swizzled shared-memory
layouts of the A and B stages, the PTX wrappers (cp.async, ldmatrix, mma.sync m16n8k16), the accumulator tile types,
and the global->shared tile copy. Plain text (no formatting): the variant enters only through struct Config."""

DEVICE_CODE = r"""
template <class Cfg>
struct Derived : Cfg {
    static constexpr int WARPS_M = Cfg::BM / Cfg::WM, WARPS_N = Cfg::BN / Cfg::WN;
    static constexpr int WARPS = WARPS_M * WARPS_N, THREADS = WARPS * 32;
    static constexpr int MT = Cfg::WM / 16;          // m16 mma tiles per warp (rows)
    static constexpr int NT = Cfg::WN / 8;           // n8 mma tiles per warp (columns)
    static constexpr int KSTEPS = Cfg::BK / 16;      // k16 mma steps per smem tile
    static constexpr int A_CPR = Cfg::BK / 8;        // 16-byte chunks per smem row of A (4 or 8)
    static constexpr int B_CPR = Cfg::BN / 8;        // 16-byte chunks per smem row of B (8, 16 or 32)
    static constexpr int A_STAGE = Cfg::BM * Cfg::BK;   // halves per stage
    static constexpr int B_STAGE = Cfg::BK * Cfg::BN;
    static constexpr int PIPE_BYTES = Cfg::STAGES * (A_STAGE + B_STAGE) * 2;
    static constexpr int C_LD = Cfg::BN + Cfg::C_PAD;   // halves per staged C row
    static constexpr int EPI_BYTES = Cfg::EPI_SMEM ? Cfg::BM * C_LD * 2 : 0;
    static constexpr int P_LD = Cfg::BN + 8;            // floats per row of the cluster reduction's partial tile
    static constexpr int RED_BYTES = Cfg::CLUSTER_K > 1 ? Cfg::BM * P_LD * 4 : 0;
    static constexpr int EPI_MAX = EPI_BYTES > RED_BYTES ? EPI_BYTES : RED_BYTES;
    static constexpr int SMEM_BYTES = PIPE_BYTES > EPI_MAX ? PIPE_BYTES : EPI_MAX;
    static constexpr int SLICES = Cfg::SPLIT_K > Cfg::CLUSTER_K ? Cfg::SPLIT_K : Cfg::CLUSTER_K;
    static constexpr int A_ITERS = Cfg::BM * A_CPR / THREADS;   // cp.async chunks per thread per tile
    static constexpr int B_ITERS = Cfg::BK * B_CPR / THREADS;
    static constexpr int A_RSTEP = THREADS / A_CPR;             // rows between a thread's chunks
    static constexpr int B_RSTEP = THREADS / B_CPR;
    static constexpr int C_ITERS = Cfg::BM * Cfg::BN / 8 / THREADS;

    static_assert(WARPS == 4 || WARPS == 8, "4 or 8 warps");
    static_assert(Cfg::BM % Cfg::WM == 0 && Cfg::BN % Cfg::WN == 0, "warp tile divides block tile");
    static_assert(Cfg::WM % 16 == 0 && Cfg::WN % 16 == 0 && Cfg::BK % 16 == 0, "mma and ldmatrix.x4 granules");
    static_assert(A_CPR == 4 || A_CPR == 8, "A swizzle is defined for 64- and 128-byte rows");
    static_assert(B_CPR % 8 == 0, "B swizzle needs rows of whole 128-byte lines");
    static_assert(A_ITERS >= 1 && A_ITERS * THREADS == Cfg::BM * A_CPR, "A chunks divide over threads");
    static_assert(B_ITERS >= 1 && B_ITERS * THREADS == Cfg::BK * B_CPR, "B chunks divide over threads");
    static_assert(C_ITERS >= 1 && C_ITERS * THREADS * 8 == Cfg::BM * Cfg::BN, "C chunks divide over threads");
    static_assert(A_RSTEP % 8 == 0, "a thread's A chunks share one swizzle phase");
    static_assert(B_RSTEP % 4 == 0, "a thread's B chunks differ in swizzle phase by 0 or 4");
    static_assert(KSTEPS % 2 == 0, "fragment double buffer: k-step 0 of every tile uses buffer 0");
    static_assert(Cfg::SPLIT_K == 1 || !Cfg::ACC_F16, "split-K partials are fp32");
    static_assert(Cfg::SPLIT_K == 1 || Cfg::CLUSTER_K == 1, "one split-K scheme at a time");
    static_assert(Cfg::CLUSTER_K == 1 || (!Cfg::ACC_F16 && !Cfg::EPI_SMEM), "cluster partials are fp32, stored "
                  "by the reduction itself");
    // Up to 8 blocks is the portable cluster limit; 16 is allowed on Hopper with the non-portable attribute
    // (set at launch), where the GPU can place it.
    static_assert(Cfg::CLUSTER_K <= 16 && Cfg::BM % Cfg::CLUSTER_K == 0, "cluster of at most 16; whole rows per CTA");
    static constexpr bool NON_PORTABLE_CLUSTER = Cfg::CLUSTER_K > 8;
    static_assert(SMEM_BYTES <= 227 * 1024, "227 KB of shared memory per block on sm_90");
};
using K = Derived<Config>;

// ---- shared-memory layouts (offsets in halves) ------------------------------------------------------------
// A stage: BM rows of BK halves = A_CPR 16-byte chunks. ldmatrix reads, per 8x8 matrix, one 16-byte chunk from
// each of 8 consecutive rows at the same logical chunk; shared memory serves 128 bytes (8 chunks, 32 banks) per
// wavefront, so those 8 chunks must land in 8 different chunk slots of the 128-byte line:
//   BK = 64 (128-byte rows):  physical chunk = c ^ (row % 8)          -> rows 0..7 hit slots c^0 .. c^7
//   BK = 32 (64-byte rows, two rows per line): physical chunk = c ^ ((row / 2) % 4)
//            -> slot within the line = 4*(row % 2) + (c ^ ((row/2) % 4)): 8 distinct slots for rows 0..7.
// The cp.async writes (consecutive threads -> consecutive chunks of a row) are a permutation of whole lines,
// so they are conflict-free as well.
__device__ __forceinline__ int a_off(int row, int chunk) {
    const int sw = (K::A_CPR == 8) ? (row & 7) : ((row >> 1) & 3);
    return row * Config::BK + ((chunk ^ sw) << 3);
}
// B stage: BK rows (k) of BN halves (n) = B_CPR >= 8 chunks, i.e. whole 128-byte lines. ldmatrix.trans reads
// 8 consecutive k rows at one logical n chunk: physical chunk = c ^ (k % 8) spreads them over 8 slots
// (only the low 3 bits of the chunk index change, so a chunk stays in its own 128-byte segment of the row).
__device__ __forceinline__ int b_off(int krow, int chunk) {
    return krow * Config::BN + ((chunk ^ (krow & 7)) << 3);
}

// ---- PTX wrappers -------------------------------------------------------------------------------------------
__device__ __forceinline__ void cp_async_16(uint32_t smem_addr, const void* gmem, bool valid) {
    // src-size 0 reads nothing and writes 16 zero bytes: rows past M / K and columns past N become zeros that
    // add nothing to the dot products. `gmem` must still be a valid address: callers pass the matrix base.
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(smem_addr), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3,
                                                  uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory");
}
__device__ __forceinline__ void mma_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_f16(uint32_t (&d)[2], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};\n"
        : "+r"(d[0]), "+r"(d[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <bool F16> struct Acc;                      // one m16n8 accumulator tile of a lane
template <> struct Acc<false> { float v[4]; };
template <> struct Acc<true> { uint32_t v[2]; };     // half2 pairs

// ---- global -> shared: one BMxBK tile of A and one BKxBN tile of B, 16 bytes per cp.async ------------------
// N % 8 == 0 and K % 8 == 0 make every chunk 16-byte aligned in global memory and wholly inside or wholly
// outside the matrix, so one predicate per chunk is exact.
// Thread tid copies, per tile, A chunks (row ar + i*A_RSTEP, chunk ac) and B chunks (k row br + i*B_RSTEP,
// chunk bc). Everything that does not depend on the k tile is computed once, in few registers: two pointers,
// a row-validity mask and two smem offsets; the per-chunk addresses are re-derived by adds on every tile (cheaper
// than the 16+ 64-bit addresses the compiler would otherwise keep live next to the accumulators).
struct CopyState {
    const __half* a;     // &A[m0 + ar][ac * 8] (only dereferenced for valid rows)
    const __half* b;     // &B[br][n0 + bc * 8] (only dereferenced for valid columns)
    uint32_t a_rows;     // bit i: A row m0 + ar + i * A_RSTEP < M
    uint32_t sa, sb;     // byte offsets of chunk 0 within an A / B stage (swizzled)
    int ak, br;          // ac * 8, br
    bool b_col_ok;       // n0 + bc * 8 < N
};

__device__ __forceinline__ CopyState make_copy_state(const __half* A, const __half* B, int M, int N, int Kd,
                                                     int m0, int n0, int tid) {
    CopyState cs;
    const int ac = tid % K::A_CPR, ar = tid / K::A_CPR;
    const int bc = tid % K::B_CPR, br = tid / K::B_CPR;
    cs.a = A + (size_t)(m0 + ar) * Kd + ac * 8;
    cs.b = B + (size_t)br * N + n0 + bc * 8;
    cs.a_rows = 0;
#pragma unroll
    for (int i = 0; i < K::A_ITERS; ++i) cs.a_rows |= (m0 + ar + i * K::A_RSTEP < M ? 1u : 0u) << i;
    cs.sa = 2u * a_off(ar, ac);   // A_RSTEP % 8 == 0: chunk i sits A_RSTEP rows lower, same swizzle phase
    cs.sb = 2u * b_off(br, bc);
    cs.ak = ac * 8;
    cs.br = br;
    cs.b_col_ok = n0 + bc * 8 < N;
    return cs;
}

__device__ __forceinline__ void load_tile(uint32_t sA, uint32_t sB, const CopyState& cs,
                                          const __half* __restrict__ A, const __half* __restrict__ B,
                                          int N, int Kd, int k0) {
    const bool k_ok = k0 + cs.ak < Kd;
    const __half* pa = cs.a + k0;
#pragma unroll
    for (int i = 0; i < K::A_ITERS; ++i) {
        const bool ok = k_ok && ((cs.a_rows >> i) & 1u);
        cp_async_16(sA + cs.sa + i * (K::A_RSTEP * Config::BK * 2), ok ? pa : A, ok);
        pa += (size_t)K::A_RSTEP * Kd;
        asm volatile("" : "+l"(pa));   // opaque: keeps the compiler from precomputing every chunk's address
    }
    const __half* pb = cs.b + (size_t)k0 * N;
#pragma unroll
    for (int i = 0; i < K::B_ITERS; ++i) {
        const bool ok = cs.b_col_ok && k0 + cs.br + i * K::B_RSTEP < Kd;
        // Rows i * B_RSTEP lower; when B_RSTEP % 8 != 0 (BN = 256 with 128 threads: B_RSTEP = 4) the swizzle
        // phase of odd i differs by 4, i.e. the physical chunk flips bit 2: byte offset ^ (4 << 4).
        uint32_t off = cs.sb + i * (K::B_RSTEP * Config::BN * 2);
        if ((i * K::B_RSTEP) % 8 != 0) off ^= (uint32_t)(((i * K::B_RSTEP) % 8) << 4);
        cp_async_16(sB + off, ok ? pb : B, ok);
        pb += (size_t)K::B_RSTEP * N;
        asm volatile("" : "+l"(pb));
    }
}
"""
