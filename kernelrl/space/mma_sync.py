"""The `mma_sync` family: a hand-written tensor-core HGEMM built from the PTX warp-level primitives.

One point = one block tile (BM x BN x BK) split into warp tiles (WM x WN), a cp.async multi-stage global->shared
pipeline (16-byte cp.async.cg, src-size 0 zero-fills rows/columns outside the matrix), XOR-swizzled shared memory
that ldmatrix reads without bank conflicts, ldmatrix.x4 (.trans for B, which is K x N row-major) into register
fragments, and mma.sync.aligned.m16n8k16 with an fp32 or fp16 accumulator. Optional: double-buffered register
fragments, a grouped block raster for L2 reuse, parallel split-K through an fp32 workspace, and an epilogue that
stages the C tile through shared memory for 16-byte coalesced stores.

Shapes: N % 8 == 0 and K % 8 == 0 (every 16-byte cp.async chunk of a row lies wholly inside or wholly outside the
matrix); M is arbitrary. The rendered kernelrl_hgemm_supports() says exactly what supports() says."""

from __future__ import annotations

from kernelrl.space.base import HOPPER, KernelSpace, Variant, over_shared_memory
from kernelrl.workloads.hgemm import GemmProblem

INT_MAX = 2**31 - 1
# Registers a thread needs besides accumulators and fragments: lane/tile indices, smem and global addresses, loop
# state. A floor, not a prediction: ptxas spends whatever __launch_bounds__(threads, 1) allows. On CUDA 13.0 the
# 64x64 fp32 warp tile with double-buffered fragments (estimate 232) compiles to 236-255 registers with no spills, so
# check() only rejects what obviously cannot fit; the compile sweep is what proves the rest.
REG_OVERHEAD = 40
MAX_REGS = 255
C_PAD = 8  # halves of padding per row of the epilogue's C staging tile (see the CUDA comments)


def _p(variant: Variant) -> dict:
    return variant.p


class MmaSyncSpace(KernelSpace):
    family = "mma_sync"
    knobs = {
        "BM": [64, 128, 256],
        "BN": [64, 128, 256],
        "BK": [32, 64],
        "WM": [32, 64],
        "WN": [32, 64],
        "stages": [2, 3, 4],
        "frag_double_buffer": [0, 1],
        "swizzle": [1, 8],
        "split_k": [1, 2, 4],
        "epilogue": ["direct", "smem"],
    }

    # -- derived quantities ----------------------------------------------------------------------------------
    @staticmethod
    def warps(variant: Variant) -> int:
        p = _p(variant)
        return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])

    @staticmethod
    def pipeline_bytes(variant: Variant) -> int:
        p = _p(variant)
        return p["stages"] * (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 2  # XOR swizzle: no padding

    @staticmethod
    def epilogue_bytes(variant: Variant) -> int:
        """The smem epilogue stages the whole BM x BN tile as fp16 (rows padded by C_PAD) over the pipeline buffers."""
        p = _p(variant)
        return p["BM"] * (p["BN"] + C_PAD) * 2 if p["epilogue"] == "smem" else 0

    def smem_bytes(self, variant: Variant) -> int:
        return max(self.pipeline_bytes(variant), self.epilogue_bytes(variant))

    @staticmethod
    def register_estimate(variant: Variant) -> int:
        """Accumulators + one or two sets of A/B fragments + fixed overhead, per thread."""
        p = _p(variant)
        wm, wn = p["WM"], p["WN"]
        acc = wm * wn // 32 if variant.acc == "fp32" else wm * wn // 64
        frags = (wm // 16) * 4 + (wn // 8) * 2  # A: 4 regs per m16 tile, B: 2 regs per n8 tile, per k16 step
        return acc + frags * (2 if p["frag_double_buffer"] else 1) + REG_OVERHEAD

    # -- the KernelSpace API ---------------------------------------------------------------------------------
    def check(self, variant: Variant) -> str | None:
        return self.grid_reason(variant) or self.source_asserted(variant) or self.resource_reason(variant)

    def check_before_compile(self, variant: Variant) -> str | None:
        return self.grid_reason(variant) or self.resource_reason(variant)

    def source_asserted(self, variant: Variant) -> str | None:
        """The rules the kernel's static_asserts also hold (warp tiling, warp count, chunks over threads)."""
        p = _p(variant)
        bm, bn, bk, wm, wn = p["BM"], p["BN"], p["BK"], p["WM"], p["WN"]
        if bm % wm or bn % wn:
            return f"warp tile {wm}x{wn} does not divide the block tile {bm}x{bn}"
        warps = self.warps(variant)
        if warps not in (4, 8):
            return f"{warps} warps ({bm}/{wm} x {bn}/{wn}): only 4 or 8 warps (128 or 256 threads)"
        threads = warps * 32
        if (bm * bk // 8) % threads or (bk * bn // 8) % threads or (bm * bn // 8) % threads:
            return "the 16-byte chunks of a tile do not divide evenly over the threads"
        return None

    def resource_reason(self, variant: Variant) -> str | None:
        """The rules no static_assert holds: accumulators, epilogue, shared memory and registers."""
        p = _p(variant)
        if p["split_k"] > 1 and variant.acc != "fp32":
            return "split-K sums fp32 partials: fp32 accumulator only"
        if p["split_k"] > 1 and p["epilogue"] != "direct":
            return ("split-K writes fp32 partials fragment by fragment and its reduction kernel already stores C "
                    "with 16-byte writes: the smem epilogue would be a duplicate point")
        smem = self.smem_bytes(variant)
        if smem > HOPPER["smem_per_block"]:
            return over_shared_memory(f"shared memory {smem} B exceeds {HOPPER['smem_per_block']} B per block")
        regs = self.register_estimate(variant)
        if regs > MAX_REGS:
            return f"about {regs} registers per thread (accumulators + fragments) exceeds {MAX_REGS}"
        return None

    def supports(self, variant: Variant, problem: GemmProblem) -> str | None:
        p = _p(variant)
        if problem.k % 8:
            return f"K={problem.k}: needs K % 8 == 0 (16-byte cp.async rows of A)"
        if problem.n % 8:
            return f"N={problem.n}: needs N % 8 == 0 (16-byte cp.async rows of B)"
        if max(problem.m, problem.n, problem.k) > INT_MAX - 256:
            return f"a dimension above {INT_MAX - 256}: tile-local row/column indices must stay in int range"
        tiles = -(-problem.m // p["BM"]) * -(-problem.n // p["BN"])
        if tiles > INT_MAX:
            return f"{tiles} block tiles exceed the grid's x limit {INT_MAX}"
        return None

    def resources(self, variant: Variant) -> dict:
        p = _p(variant)
        return {"threads": self.warps(variant) * 32, "smem_bytes": self.smem_bytes(variant),
                "tile": (p["BM"], p["BN"], p["BK"]), "split_k": p["split_k"], "stages": p["stages"]}

    def name_of(self, variant: Variant) -> str:
        p = _p(variant)
        acc = {"fp32": "f32", "fp16": "f16"}.get(variant.acc, variant.acc)
        return (f"mma_sync_{acc}_{p['BM']}x{p['BN']}x{p['BK']}_w{p['WM']}x{p['WN']}_s{p['stages']}"
                f"_db{p['frag_double_buffer']}_sw{p['swizzle']}_sk{p['split_k']}_e{p['epilogue']}")

    def render(self, variant: Variant) -> str:
        reason = self.check_before_compile(variant)  # the source's static_asserts hold the rest
        if reason is not None:
            raise ValueError(f"mma_sync {variant.acc} {variant.p} is not a valid point: {reason}")
        p = _p(variant)
        config = _config(
            BM=p["BM"], BN=p["BN"], BK=p["BK"], WM=p["WM"], WN=p["WN"], STAGES=p["stages"],
            FRAG_DB="true" if p["frag_double_buffer"] else "false", SWIZZLE=p["swizzle"], SPLIT_K=p["split_k"],
            CLUSTER_K=p.get("cluster_k", 1),
            EPI_SMEM="true" if p["epilogue"] == "smem" else "false",
            ACC_F16="true" if variant.acc == "fp16" else "false", C_PAD=C_PAD)
        header = HEADER.format(name=self.name_of(variant), acc=variant.acc, threads=self.warps(variant) * 32,
                               smem=self.smem_bytes(variant))
        info = f'const char* kernelrl_hgemm_info(void) {{ return "{self.info_json(variant)}"; }}\n'
        return header + config + BODY + EXPORTS + info + "\n}  // extern \"C\"\n"


# ---------------------------------------------------------------------------------------------------------------
# The CUDA source. HEADER and CONFIG are formatted (so their braces are doubled); BODY and EXPORTS are plain text.
# ---------------------------------------------------------------------------------------------------------------

HEADER = """\
// kernelrl mma_sync family: {name}
// Generated by kernelrl/space/mma_sync.py: edit the generator, not this file.
//
// C = A @ B, A (MxK), B (KxN), C (MxN): fp16, row-major, unpadded; accumulator {acc}.
// Supported shapes: N % 8 == 0, K % 8 == 0, any M >= 1 (see kernelrl_hgemm_supports).
// {threads} threads per block, {smem} bytes of dynamic shared memory.
//
// Data path, per block tile (BM x BN, marching over K in BK steps):
//   global --cp.async.cg 16 B (zero-fill outside the matrix)--> STAGES-deep ring of XOR-swizzled smem tiles
//   smem --ldmatrix.x4 (A) / ldmatrix.x4.trans (B)--> register fragments --mma.sync m16n8k16--> accumulators
//   accumulators --(half2 stores | smem-staged 16-B stores | fp32 split-K partials + reduction kernel)--> C
//
// Fragment layouts of mma.sync.aligned.m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16"), for lane
// l of the warp with g = l / 4 (group) and t = l % 4 (thread in group); every register holds two fp16
// values, the lower-addressed / lower-index one in the low 16 bits:
//   A (16x16, row-major): a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]
//                         a[2] = A[g][2t+8..2t+9]  a[3] = A[g+8][2t+8..2t+9]
//   B (16x8, "col"):      b[0] = B[2t..2t+1][g]    b[1] = B[2t+8..2t+9][g]       (k rows, n column g)
//   C/D (16x8):           fp32: d[0..1] = C[g][2t..2t+1], d[2..3] = C[g+8][2t..2t+1]
//                         fp16: d[0] = C[g][2t..2t+1] (half2), d[1] = C[g+8][2t..2t+1]
// ldmatrix.x4 loads four 8x8 b16 matrices; lane l supplies the row address of row (l % 8) of matrix (l / 8)
// and receives, in register j, row g / columns 2t..2t+1 of matrix j (with .trans: row 2t..2t+1, column g,
// i.e. the transposed element pair). So:
//   A: matrix j covers rows 8*(j%2).., k columns 8*(j/2)..   -> registers a[0..3] exactly as above.
//   B: smem holds B as [k][n] (K x N row-major, copied as is). The mma wants each lane's two values of one
//      n column at consecutive k: that is a column of the stored 8x8 block, which .trans delivers.
//      Matrix j covers k rows 8*(j%2).., n columns 8*(j/2)..  -> b[0], b[1] of n-tile 2p, then of n-tile 2p+1.

#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

namespace kr_mma {{

"""

CONFIG_LINES = [
    ("static constexpr int BM = {BM}, BN = {BN}, BK = {BK};", "block tile"),
    ("static constexpr int WM = {WM}, WN = {WN};", "warp tile"),
    ("static constexpr int STAGES = {STAGES};", "smem ring depth: STAGES-1 tiles in flight"),
    ("static constexpr bool FRAG_DB = {FRAG_DB};", "double-buffered register fragments"),
    ("static constexpr int SWIZZLE = {SWIZZLE};", "block raster: groups of SWIZZLE tile rows"),
    ("static constexpr int SPLIT_K = {SPLIT_K};", "K slices (fp32 partials + reduction when > 1)"),
    ("static constexpr int CLUSTER_K = {CLUSTER_K};", "K slices reduced in a cluster over DSMEM (no workspace)"),
    ("static constexpr bool EPI_SMEM = {EPI_SMEM};", "stage C through smem for 16-byte stores"),
    ("static constexpr bool ACC_F16 = {ACC_F16};", "fp16 accumulator (else fp32)"),
    ("static constexpr int C_PAD = {C_PAD};", "halves of padding per staged C row"),
]


def _config(**values) -> str:
    lines = "".join("    " + decl.format(**values).ljust(52) + "// " + why + "\n" for decl, why in CONFIG_LINES)
    return ("// ---- the variant: every knob is a compile-time constant of one Config, instantiated once "
            "-------------------\nstruct Config {\n" + lines + "};\n\n")


BODY = r"""
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

// ---- the GEMM kernel -------------------------------------------------------------------------------------------
// __launch_bounds__(THREADS, 1): min 1 block/SM lets ptxas use up to 255 registers per thread, which the 64x64
// fp32 warp tile needs (128 accumulator + up to 64 fragment registers). Smaller tiles use fewer registers on
// their own, and more blocks then fit per SM as registers and shared memory allow.
template <class Cfg>
__global__ void __launch_bounds__(Derived<Cfg>::THREADS, 1)
hgemm_mma_kernel(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                 float* __restrict__ ws, int M, int N, int Kd, int tiles_m, int tiles_n, int ktiles_per_split) {
    using D = Derived<Cfg>;
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t s_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const uint32_t sA0 = s_base, sB0 = s_base + D::STAGES * D::A_STAGE * 2;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int warp_m = warp / D::WARPS_N, warp_n = warp % D::WARPS_N;

    // Block raster with L2 grouping: consecutive block ids walk down a column of SWIZZLE tile rows before moving
    // to the next column, so blocks resident together share A row panels and B column panels in L2.
    //   group = pid / (SWIZZLE * tiles_n); first row = group * SWIZZLE; rows in group = min(SWIZZLE, rest)
    //   tm = first + (pid % group_size) % rows;  tn = (pid % group_size) / rows
    // SWIZZLE = 1 is the plain row-major raster (tm = pid / tiles_n, tn = pid % tiles_n).
    int tm, tn;
    {
        const int pid = blockIdx.x;
        const int group_size = D::SWIZZLE * tiles_n;
        const int first = (pid / group_size) * D::SWIZZLE;
        const int rows = min(tiles_m - first, D::SWIZZLE);
        const int in_group = pid - (pid / group_size) * group_size;
        tm = first + in_group % rows;
        tn = in_group / rows;
    }
    const int m0 = tm * D::BM, n0 = tn * D::BN;

    // This block's K range: whole BK tiles [kt_begin, kt_begin + ntiles). A slice may be empty (small K, large
    // SPLIT_K): it then writes zero partials, which the reduction needs since the workspace arrives poisoned.
    const int ktiles = (Kd + D::BK - 1) / D::BK;
    const int kt_begin = blockIdx.z * ktiles_per_split;
    const int ntiles = max(0, min(ktiles, kt_begin + ktiles_per_split) - kt_begin);

    Acc<D::ACC_F16> acc[D::MT][D::NT];
#pragma unroll
    for (int i = 0; i < D::MT; ++i)
#pragma unroll
        for (int j = 0; j < D::NT; ++j)
#pragma unroll
            for (int e = 0; e < (int)(sizeof(acc[i][j].v) / sizeof(acc[i][j].v[0])); ++e) acc[i][j].v[e] = 0;

    const CopyState cs = make_copy_state(A, B, M, N, Kd, m0, n0, tid);

    // Prologue: STAGES-1 tiles in flight. One commit per tile (empty past the end) keeps the group count exact:
    // before k-tile kt is consumed, STAGES-1+kt groups (or one more) have been committed, and
    // cp.async.wait_group STAGES-2 leaves at most STAGES-2 of them pending, i.e. tile kt has landed.
#pragma unroll
    for (int s = 0; s < D::STAGES - 1; ++s) {
        if (s < ntiles)
            load_tile(sA0 + s * D::A_STAGE * 2, sB0 + s * D::B_STAGE * 2, cs, A, B, N, Kd, (kt_begin + s) * D::BK);
        cp_async_commit();
    }

    // ldmatrix lane addressing. A (x4): lane l points at row (l % 16) of the warp's m16 tile and k chunk l / 16
    // (matrices 0..3 = rows 0-7/k 0-7, rows 8-15/k 0-7, rows 0-7/k 8-15, rows 8-15/k 8-15 -> a[0..3]).
    // B (x4.trans): lane l points at k row (l % 16) and n chunk l / 16 of a pair of n8 tiles
    // (matrices 0..3 = k 0-7/n 0-7, k 8-15/n 0-7, k 0-7/n 8-15, k 8-15/n 8-15 -> b[0..1] of two n-tiles).
    // In byte offsets within a stage: rows of a thread's m16 tiles differ by multiples of 16, so they share one
    // swizzle phase; the logical chunk of k-step ks is 2*ks + (lane >> 4), and since 2*ks has bit 0 clear,
    // (2*ks + hi) ^ sw == (hi ^ sw) ^ 2*ks: one XOR with a compile-time constant per k-step.
    const int a_row = warp_m * D::WM + (lane & 15);
    const uint32_t a_lds = 2u * a_row * D::BK;
    const int a_x = (lane >> 4) ^ ((D::A_CPR == 8) ? (a_row & 7) : ((a_row >> 1) & 3));
    // B: k row (lane & 15) (+16 per k-step, same phase lane & 7), n chunk warp_n*WN/8 + 2*np + (lane >> 4).
    const uint32_t b_lds = 2u * (lane & 15) * D::BN;
    const int b_chunk = warp_n * (D::WN / 8) + (lane >> 4);
    const int b_sw = lane & 7;

    constexpr int NBUF = D::FRAG_DB ? 2 : 1;
    uint32_t af[NBUF][D::MT][4];
    uint32_t bf[NBUF][D::NT][2];

    // Loads the fragments of k-step ks of the tile in stage `stage` into buffer `buf` (ks and buf are
    // compile-time after unrolling, so the fragment arrays stay in registers).
    auto load_frags = [&](int buf, int stage, int ks) {
        const uint32_t sA = sA0 + stage * D::A_STAGE * 2, sB = sB0 + stage * D::B_STAGE * 2;
#pragma unroll
        for (int mt = 0; mt < D::MT; ++mt)
            ldmatrix_x4(af[buf][mt], sA + a_lds + mt * 16 * D::BK * 2 + ((a_x ^ (2 * ks)) << 4));
#pragma unroll
        for (int np = 0; np < D::NT / 2; ++np)
            ldmatrix_x4_trans(bf[buf][2 * np][0], bf[buf][2 * np][1], bf[buf][2 * np + 1][0],
                              bf[buf][2 * np + 1][1],
                              sB + b_lds + ks * 16 * D::BN * 2 + (((b_chunk + 2 * np) ^ b_sw) << 4));
    };
    auto mma_all = [&](int buf) {
#pragma unroll
        for (int mt = 0; mt < D::MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < D::NT; ++nt) {
                if constexpr (D::ACC_F16) mma_f16(acc[mt][nt].v, af[buf][mt], bf[buf][nt]);
                else mma_f32(acc[mt][nt].v, af[buf][mt], bf[buf][nt]);
            }
    };

    int read_stage = 0, write_stage = D::STAGES - 1;
    if constexpr (D::FRAG_DB) {
        // Fragments for k-step s+1 are loaded before the mma of step s, including across tiles: the last
        // k-step of a tile first waits for the next tile and syncs, then loads its k-step 0. That barrier also
        // proves every warp has finished its ldmatrix reads of the current stage's predecessor, which the next
        // iteration's k-step 0 overwrites with a new prefetch.
        if (ntiles > 0) {
            cp_async_wait<D::STAGES - 2>();
            __syncthreads();
            load_frags(0, 0, 0);
        }
        for (int kt = 0; kt < ntiles; ++kt) {
            const int next_stage = read_stage + 1 == D::STAGES ? 0 : read_stage + 1;
#pragma unroll
            for (int ks = 0; ks < D::KSTEPS; ++ks) {
                if (ks == D::KSTEPS - 1) {
                    cp_async_wait<D::STAGES - 2>();   // tile kt+1 landed (this thread's copies) ...
                    __syncthreads();                  // ... and everyone's; all reads of tile kt-1's stage done
                }
                if (ks == 0) {
                    // Refill the stage tile kt-1 used (its reads ended before the last barrier). Issued before
                    // the next fragments are loaded, while only one fragment buffer is live: the copy's address
                    // arithmetic then fits next to the accumulators.
                    const int pf = kt + D::STAGES - 1;
                    if (pf < ntiles)
                        load_tile(sA0 + write_stage * D::A_STAGE * 2, sB0 + write_stage * D::B_STAGE * 2, cs, A, B,
                                  N, Kd, (kt_begin + pf) * D::BK);
                    cp_async_commit();
                }
                // (After the last tile this reads a stage holding no new tile: harmless, the values are never
                // used, no cp.async is in flight any more, and dropping the branch keeps the loop body straight.)
                if (ks + 1 < D::KSTEPS) load_frags((ks + 1) & 1, read_stage, ks + 1);
                else load_frags(0, next_stage, 0);
                mma_all(ks & 1);
            }
            read_stage = next_stage;
            write_stage = write_stage + 1 == D::STAGES ? 0 : write_stage + 1;
        }
    } else {
        for (int kt = 0; kt < ntiles; ++kt) {
            cp_async_wait<D::STAGES - 2>();   // tile kt landed (this thread's copies) ...
            __syncthreads();                  // ... and everyone's; every warp is done reading tile kt-1
            const int pf = kt + D::STAGES - 1;
            if (pf < ntiles)                  // refill tile kt-1's stage while tile kt is multiplied
                load_tile(sA0 + write_stage * D::A_STAGE * 2, sB0 + write_stage * D::B_STAGE * 2, cs, A, B, N, Kd,
                          (kt_begin + pf) * D::BK);
            cp_async_commit();
#pragma unroll
            for (int ks = 0; ks < D::KSTEPS; ++ks) {
                load_frags(0, read_stage, ks);
                mma_all(0);
            }
            read_stage = read_stage + 1 == D::STAGES ? 0 : read_stage + 1;
            write_stage = write_stage + 1 == D::STAGES ? 0 : write_stage + 1;
        }
    }

    // ---- epilogue ----------------------------------------------------------------------------------------------
    // Lane (g, t) owns, per m16n8 tile, rows g and g+8 and columns 2t, 2t+1 (see the layout at the top).
    const int g = lane >> 2, t = lane & 3;
    const int wrow = warp_m * D::WM + g, wcol = warp_n * D::WN + 2 * t;   // within the block tile

    if constexpr (D::CLUSTER_K > 1) {
        // Cluster split-K: the CLUSTER_K blocks of one output tile (a cluster along z) each summed one K slice.
        // Each parks its fp32 partial tile in its own shared memory; after a cluster barrier, block q sums rows
        // [q*BM/CLUSTER_K, (q+1)*BM/CLUSTER_K) over every block's tile through distributed shared memory and stores
        // them as fp16. One launch, no workspace, no second pass over HBM: the point for small, deep GEMMs that
        // would otherwise leave most SMs idle. Slices are summed in rank order (deterministic results).
        namespace cg = cooperative_groups;
        cg::cluster_group cluster = cg::this_cluster();
        cp_async_wait<0>();
        __syncthreads();   // every warp is done reading the pipeline buffers the partial tile reuses
        float* part = reinterpret_cast<float*>(smem);
#pragma unroll
        for (int mt = 0; mt < D::MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < D::NT; ++nt) {
                const int r = wrow + mt * 16, c = wcol + nt * 8;
                *reinterpret_cast<float2*>(part + r * D::P_LD + c) = make_float2(acc[mt][nt].v[0], acc[mt][nt].v[1]);
                *reinterpret_cast<float2*>(part + (r + 8) * D::P_LD + c) =
                    make_float2(acc[mt][nt].v[2], acc[mt][nt].v[3]);
            }
        cluster.sync();    // every partial tile of the cluster is written and visible
        constexpr int ROWS = D::BM / D::CLUSTER_K, QUADS = ROWS * D::BN / 4;
        const int rank = (int)cluster.block_rank();
#pragma unroll
        for (int i = 0; i < (QUADS + D::THREADS - 1) / D::THREADS; ++i) {
            const int q = tid + i * D::THREADS;
            if (QUADS % D::THREADS != 0 && q >= QUADS) break;   // a share smaller than the block (large clusters)
            const int r = rank * ROWS + q / (D::BN / 4), c = (q % (D::BN / 4)) * 4;
            float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
            for (int s = 0; s < D::CLUSTER_K; ++s) {
                const float4 v = *reinterpret_cast<const float4*>(cluster.map_shared_rank(part, s) + r * D::P_LD + c);
                sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
            }
            const int gr = m0 + r, gc = n0 + c;
            if (gr < M && gc < N) {   // N % 8 == 0: a quad is wholly inside or outside, 8-byte aligned
                __half2 h[2] = {__floats2half2_rn(sum.x, sum.y), __floats2half2_rn(sum.z, sum.w)};
                *reinterpret_cast<uint2*>(C + (size_t)gr * N + gc) = *reinterpret_cast<const uint2*>(h);
            }
        }
        cluster.sync();    // no block leaves (freeing its shared memory) while another still reads it
    } else if constexpr (D::SPLIT_K > 1) {
        // fp32 partials of slice z at ws[z][M][N]; every in-range element of every slice is written here, so the
        // workspace needs no zeroing. 8-byte float2 stores: (row * N + col) is even.
        float* P = ws + (size_t)blockIdx.z * M * N;
#pragma unroll
        for (int mt = 0; mt < D::MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < D::NT; ++nt) {
                const int r = m0 + wrow + mt * 16, c = n0 + wcol + nt * 8;
                if (c < N) {   // N even: c < N implies c + 1 < N
                    if (r < M)
                        *reinterpret_cast<float2*>(P + (size_t)r * N + c) =
                            make_float2(acc[mt][nt].v[0], acc[mt][nt].v[1]);
                    if (r + 8 < M)
                        *reinterpret_cast<float2*>(P + (size_t)(r + 8) * N + c) =
                            make_float2(acc[mt][nt].v[2], acc[mt][nt].v[3]);
                }
            }
    } else {
        // The two fp16 pairs of each m16n8 tile (rows g and g+8), rounded once from fp32 when needed.
        auto pair = [&](int mt, int nt, int hi) -> __half2 {
            if constexpr (D::ACC_F16) {
                const uint32_t bits = acc[mt][nt].v[hi];
                return *reinterpret_cast<const __half2*>(&bits);
            } else {
                return __floats2half2_rn(acc[mt][nt].v[2 * hi], acc[mt][nt].v[2 * hi + 1]);
            }
        };
        if constexpr (!D::EPI_SMEM) {
            // Direct: 4-byte half2 stores straight from the fragments (a quad of lanes covers 16 contiguous bytes).
#pragma unroll
            for (int mt = 0; mt < D::MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < D::NT; ++nt) {
                    const int r = m0 + wrow + mt * 16, c = n0 + wcol + nt * 8;
                    if (c < N) {
                        if (r < M) *reinterpret_cast<__half2*>(C + (size_t)r * N + c) = pair(mt, nt, 0);
                        if (r + 8 < M) *reinterpret_cast<__half2*>(C + (size_t)(r + 8) * N + c) = pair(mt, nt, 1);
                    }
                }
        } else {
            // Staged: fragments -> smem C tile [BM][BN + C_PAD] (reusing the pipeline buffers), then every thread
            // writes whole 16-byte row chunks to global memory, fully coalesced. The pad of 8 halves shifts each
            // row by 16 bytes, so a warp's half2 writes (8 rows x 4 lanes) hit 32 different banks and a quarter
            // warp's 16-byte reads of one row are one contiguous 128-byte span.
            cp_async_wait<0>();   // only empty groups can be pending; be explicit before reusing the buffers
            __syncthreads();      // every warp is done with its last ldmatrix of the pipeline buffers
            __half* cs = reinterpret_cast<__half*>(smem);
#pragma unroll
            for (int mt = 0; mt < D::MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < D::NT; ++nt) {
                    const int r = wrow + mt * 16, c = wcol + nt * 8;
                    *reinterpret_cast<__half2*>(cs + r * D::C_LD + c) = pair(mt, nt, 0);
                    *reinterpret_cast<__half2*>(cs + (r + 8) * D::C_LD + c) = pair(mt, nt, 1);
                }
            __syncthreads();
#pragma unroll
            for (int i = 0; i < D::C_ITERS; ++i) {
                const int chunk = tid + i * D::THREADS;
                const int r = chunk / (D::BN / 8), c = (chunk % (D::BN / 8)) * 8;
                const int gr = m0 + r, gc = n0 + c;
                if (gr < M && gc < N)   // N % 8 == 0: a chunk is wholly inside or outside, 16-byte aligned
                    *reinterpret_cast<uint4*>(C + (size_t)gr * N + gc) =
                        *reinterpret_cast<const uint4*>(cs + r * D::C_LD + c);
            }
        }
    }
}

// ---- split-K reduction: C = fp16(sum over slices of the fp32 partials), 8 elements per thread ----------------
// C is M*N contiguous halves and M*N % 8 == 0 (N % 8 == 0), so the flat index covers C exactly once with
// 16-byte stores; the slices are summed in a fixed order (deterministic results).
template <int SPLITS>
__global__ void __launch_bounds__(256)
splitk_reduce_kernel(const float* __restrict__ ws, __half* __restrict__ C, size_t mn) {
    const size_t groups = mn / 8;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < groups; i += (size_t)gridDim.x * blockDim.x) {
        const float4* p = reinterpret_cast<const float4*>(ws) + 2 * i;
        float4 lo = p[0], hi = p[1];
#pragma unroll
        for (int z = 1; z < SPLITS; ++z) {
            const float4* q = reinterpret_cast<const float4*>(ws + (size_t)z * mn) + 2 * i;
            const float4 a = q[0], b = q[1];
            lo.x += a.x; lo.y += a.y; lo.z += a.z; lo.w += a.w;
            hi.x += b.x; hi.y += b.y; hi.z += b.z; hi.w += b.w;
        }
        __half2 h[4] = {__floats2half2_rn(lo.x, lo.y), __floats2half2_rn(lo.z, lo.w),
                        __floats2half2_rn(hi.x, hi.y), __floats2half2_rn(hi.z, hi.w)};
        reinterpret_cast<uint4*>(C)[i] = *reinterpret_cast<const uint4*>(h);
    }
}

// ---- host side -------------------------------------------------------------------------------------------------
static bool shape_ok(int M, int N, int Kd) {
    if (M < 1 || N < 1 || Kd < 1) return false;
    if (Kd % 8 != 0 || N % 8 != 0) return false;   // 16-byte cp.async rows of A and B, 16-byte C chunks
    const int lim = 2147483647 - 256;              // m0 + tile row, k0 + chunk column etc. stay in int range
    if (M > lim || N > lim || Kd > lim) return false;
    const long long tiles = ((long long)M + K::BM - 1) / K::BM * (((long long)N + K::BN - 1) / K::BN);
    return tiles <= 2147483647LL;                  // gridDim.x
}

static size_t workspace_bytes_for(int M, int N, int Kd) {
    if (K::SPLIT_K == 1 || !shape_ok(M, N, Kd)) return 0;   // fp32 partials, one M x N slab per K slice
    return (size_t)K::SPLIT_K * (size_t)M * (size_t)N * sizeof(float);
}

// cudaFuncSetAttribute(MaxDynamicSharedMemorySize) is needed once per device when the tile uses more than the
// default 48 KB; remember it per device (a benign race: concurrent callers set the same value).
static cudaError_t configure_smem() {
    if (K::SMEM_BYTES <= 48 * 1024 && !K::NON_PORTABLE_CLUSTER) return cudaSuccess;
    static volatile unsigned long long configured = 0;   // bit d: device d done
    int dev = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err != cudaSuccess) return err;
    const unsigned long long bit = dev < 64 ? (1ull << dev) : 0ull;
    if (bit && (configured & bit)) return cudaSuccess;
    err = cudaFuncSetAttribute(hgemm_mma_kernel<Config>, cudaFuncAttributeMaxDynamicSharedMemorySize, K::SMEM_BYTES);
    if (err == cudaSuccess && K::NON_PORTABLE_CLUSTER)
        err = cudaFuncSetAttribute(hgemm_mma_kernel<Config>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (err == cudaSuccess && bit) configured = configured | bit;
    return err;
}

}  // namespace kr_mma

extern "C" {
"""

EXPORTS = r"""
int kernelrl_hgemm_supports(int M, int N, int K) { return kr_mma::shape_ok(M, N, K) ? 1 : 0; }

size_t kernelrl_hgemm_workspace(int M, int N, int K) {
    return kr_mma::workspace_bytes_for(M, N, K);
}

int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K, void* workspace,
                   size_t workspace_bytes, cudaStream_t stream) {
    using D = kr_mma::K;
    if (!kr_mma::shape_ok(M, N, K)) return (int)cudaErrorInvalidValue;
    const size_t need = kr_mma::workspace_bytes_for(M, N, K);
    if (need && (workspace == nullptr || workspace_bytes < need)) return (int)cudaErrorInvalidValue;
    // 16-byte vector accesses (cp.async sources, uint4 C stores, float4 partials) need 16-byte aligned bases;
    // the contract promises 256-byte alignment, so this only turns a broken caller into an error code.
    if (((uintptr_t)A | (uintptr_t)B | (uintptr_t)C | (need ? (uintptr_t)workspace : 0)) & 15)
        return (int)cudaErrorMisalignedAddress;
    cudaError_t err = kr_mma::configure_smem();
    if (err != cudaSuccess) return (int)err;

    const int tiles_m = (M + D::BM - 1) / D::BM, tiles_n = (N + D::BN - 1) / D::BN;
    const int ktiles = (K + D::BK - 1) / D::BK;
    const int per_split = (ktiles + D::SLICES - 1) / D::SLICES;
    dim3 grid((unsigned)(tiles_m * tiles_n), 1, D::SLICES);    // tile count checked against INT_MAX in supports
    if constexpr (D::CLUSTER_K > 1) {
        cudaLaunchConfig_t launch = {};
        launch.gridDim = grid;
        launch.blockDim = dim3(D::THREADS);
        launch.dynamicSmemBytes = D::SMEM_BYTES;
        launch.stream = stream;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = 1;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = D::CLUSTER_K;
        launch.attrs = attr;
        launch.numAttrs = 1;
        err = cudaLaunchKernelEx(&launch, kr_mma::hgemm_mma_kernel<kr_mma::Config>, A, B, C,
                                 static_cast<float*>(nullptr), M, N, K, tiles_m, tiles_n, per_split);
        if (err != cudaSuccess) return (int)err;
    } else {
        kr_mma::hgemm_mma_kernel<kr_mma::Config><<<grid, D::THREADS, D::SMEM_BYTES, stream>>>(
            A, B, C, static_cast<float*>(workspace), M, N, K, tiles_m, tiles_n, per_split);
    }
    err = cudaGetLastError();
    if (err != cudaSuccess) return (int)err;
    if constexpr (D::SPLIT_K > 1) {
        const size_t mn = (size_t)M * N;
        const size_t groups = mn / 8;
        const unsigned blocks = (unsigned)(groups / 256 + 1 < 132 * 16 ? groups / 256 + 1 : 132 * 16);
        kr_mma::splitk_reduce_kernel<D::SPLIT_K><<<blocks, 256, 0, stream>>>(
            static_cast<const float*>(workspace), C, mn);
        err = cudaGetLastError();
    }
    return (int)err;
}

"""
