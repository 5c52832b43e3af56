"""The `wgmma` family: a hand-written Hopper HGEMM on the copy engine (TMA) and warpgroup MMA (wgmma), no CUTLASS.

One point = one CTA tile of BM x BN (BM = 64 per consumer warpgroup) marching over K in BK = 64 steps:
- a producer warpgroup (one thread issues) loads A and B tiles with `cp.async.bulk.tensor` into a STAGES-deep ring
  of 128-byte-swizzled shared memory, each stage guarded by a full and an empty mbarrier;
- one or two consumer warpgroups issue `wgmma.mma_async.m64n{BN}k16` straight from shared memory (descriptors, no
  ldmatrix), keep one wgmma group in flight and free a stage as soon as the group that read it retires;
- the CTAs are persistent (one per SM, tiles handed out in a grouped raster for L2 reuse), so a CTA's epilogue
  (registers to global, guarded at the edges) overlaps the producer's loads of its next tile;
- with two consumers the producer gives its registers to them (`setmaxnreg`).

Both layouts of B from the start: `kn` is the paper's (B is K x N row-major: N-major for wgmma, transposed in the
descriptor), `nk` is what nn.Linear holds (B given as N x K, K contiguous: K-major like A). An `nk` point exports
`kernelrl_hgemm_b_layout()` returning "nk", and the evaluator then passes B^T (N x K) as the B pointer.

Shapes: K % 8 == 0 and N % 8 == 0 (TMA global strides are multiples of 16 bytes; C is stored in 4-byte pairs);
any M. Tiles past an edge are zero-filled by the copy engine and their stores guarded."""

from __future__ import annotations

from kernelrl.space.base import HOPPER, KernelSpace, Variant
from kernelrl.workloads.hgemm import B_LAYOUTS, GemmProblem

BK = 64  # halves per smem row: 128 bytes, the 128-byte swizzle's span
INT_MAX = 2**31 - 1
BARRIER_BYTES = 8
ALIGN_SLACK = 1024  # the dynamic smem base is rounded up to the 1024-byte period of the 128-byte swizzle
PRODUCER_REGS, CONSUMER_REGS = 40, 232  # setmaxnreg with two consumers: 128*40 + 256*232 <= 65536
# Registers a consumer thread needs besides its accumulators (descriptors, indices, loop state): a floor for check().
REG_OVERHEAD = 40
# What ptxas may allocate per thread: __launch_bounds__(threads, 1) caps a 384-thread kernel at 168 for every
# warpgroup (setmaxnreg moves registers between warpgroups at run time; the code is compiled within the cap).
MAX_REGS = {256: 255, 384: 168}
MAX_WORKSPACE = 1 << 31  # split-K partials: S * M * N fp32
# split_reduce=fixup: the output tiles one call's arrival counters cover (a warp's counter per tile, in the kernel's
# own device memory, FIXUP_SLOTS sets of them taken in turn by successive calls)
FIXUP_TILES = 4096


class WgmmaSpace(KernelSpace):
    family = "wgmma"
    knobs = {
        "BM": [64, 128],
        "BN": list(range(64, 257, 16)),  # any multiple of 16 (see pruned: the odd ones wait for a GPU)
        "stages": [2, 3, 4, 5, 6, 7, 8, 10, 12],  # 10 and 12 fit small tiles only (cuBLAS runs 64x64 with 13)
        "raster": [1, 8],
        "b_layout": list(B_LAYOUTS),
        "split_k": [1, 2, 4, 8, 16],
        "schedule": ["cooperative", "pingpong"],
        "dtype": ["fp16", "bf16"],
        "epilogue": ["direct", "tma"],
        "pdl": [False, True],
        # CMxCN CTAs per thread-block cluster: 2x1 pairs two tile rows, which share their B tile (each CTA loads
        # half of it and the copy engine multicasts it to both); 1x2 pairs two tile columns sharing A.
        "cluster": ["1x1", "2x1", "1x2"],
        # How split-K partial sums meet: fp32 partials in a workspace summed by a second kernel; a cluster of
        # split_k CTAs (one per K slice of a tile) adding them up through distributed shared memory: one kernel,
        # no workspace; or fixup: every slice leaves its fp32 partials in the workspace and counts itself in, and
        # the last of a tile's slices to arrive adds the others' to its own accumulators and stores C: one kernel,
        # no memset (the counters reset themselves).
        "split_reduce": ["workspace", "dsmem", "fixup"],
    }
    later_knobs = {"split_k": 1, "schedule": "cooperative", "dtype": "fp16", "epilogue": "direct", "pdl": False,
                   "cluster": "1x1", "split_reduce": "workspace"}

    # -- derived quantities ----------------------------------------------------------------------------------
    @staticmethod
    def consumers(variant: Variant) -> int:
        """Consumer warpgroups: cooperative ones split a tile's rows 64 each; ping-pong ones take turns on whole
        tiles, one's epilogue overlapping the other's main loop."""
        return 2 if variant.p["schedule"] == "pingpong" else variant.p["BM"] // 64

    @staticmethod
    def m_blocks(variant: Variant) -> int:
        """m64 wgmma blocks per consumer per k-step (and accumulator sets per consumer thread)."""
        return variant.p["BM"] // 64 if variant.p["schedule"] == "pingpong" else 1

    @staticmethod
    def cluster(variant: Variant) -> tuple[int, int]:
        cm, cn = variant.p["cluster"].split("x")
        return int(cm), int(cn)

    def threads(self, variant: Variant) -> int:
        return (self.consumers(variant) + 1) * 128

    @staticmethod
    def stage_bytes(variant: Variant) -> int:
        p = variant.p
        return (p["BM"] + p["BN"]) * BK * 2

    @staticmethod
    def dsmem(variant: Variant) -> bool:
        return variant.p["split_reduce"] == "dsmem"

    @staticmethod
    def fixup(variant: Variant) -> bool:
        return variant.p["split_reduce"] == "fixup"

    @classmethod
    def reduce_bytes(cls, variant: Variant) -> int:
        """The DSMEM split-K's fp32 copy of a CTA's accumulators, which the cluster's CTAs read from each other."""
        return variant.p["BM"] * variant.p["BN"] * 4 if cls.dsmem(variant) else 0

    def staging_bytes(self, variant: Variant) -> int:
        """The TMA-store epilogue's C tiles: each consumer stages its own rows (16-bit), so one consumer's store
        overlaps the other's main loop."""
        p = variant.p
        return self.consumers(variant) * self.m_blocks(variant) * 64 * p["BN"] * 2 if p["epilogue"] == "tma" else 0

    def smem_bytes(self, variant: Variant) -> int:
        # the ring, the C staging tiles, the DSMEM split-K's accumulator copy and its two barriers, a full and an
        # empty barrier per stage, two turn barriers (ping-pong) and the alignment slack
        reduce = self.reduce_bytes(variant) + (2 * BARRIER_BYTES if self.dsmem(variant) else 0)
        return (variant.p["stages"] * (self.stage_bytes(variant) + 2 * BARRIER_BYTES) + self.staging_bytes(variant)
                + reduce + 2 * BARRIER_BYTES + ALIGN_SLACK)

    def accumulator_regs(self, variant: Variant) -> int:
        bn = variant.p["BN"]
        return self.m_blocks(variant) * (bn // 2 if variant.acc == "fp32" else bn // 4)

    # -- the KernelSpace API ---------------------------------------------------------------------------------
    def check(self, variant: Variant) -> str | None:
        reason = self.grid_reason(variant)
        if reason is not None:
            return reason
        p = variant.p
        if p["stages"] < 2:
            return "at least 2 stages: the copy engine fills one while the tensor cores read another"
        smem = self.smem_bytes(variant)
        if smem > HOPPER["smem_per_block"]:
            return f"shared memory {smem} B ({p['stages']} stages of {self.stage_bytes(variant)} B) exceeds " \
                   f"{HOPPER['smem_per_block']} B per block"
        if self.fixup(variant):
            if p["split_k"] == 1:
                return "split_reduce=fixup sums a tile's K slices: split_k > 1"
            if p["pdl"]:
                return "split_reduce=fixup has no reduce kernel for pdl to launch: pdl off"
        if self.dsmem(variant) and variant.acc != "fp32":
            return "split_reduce=dsmem sums the slices' fp32 accumulators in place: fp32 accumulator only"
        if p["dtype"] == "bf16" and variant.acc != "fp32":
            return "bf16 wgmma accumulates in fp32 only"
        if p["pdl"] and p["split_k"] == 1:
            return "pdl overlaps the split-K reduce kernel's launch with the main kernel: split_k > 1 only"
        if p["epilogue"] == "tma" and (p["split_k"] > 1 or p["BN"] % 64):
            return ("the TMA-store epilogue stores 16-bit C in 64-column boxes: split_k 1 and BN % 64 == 0 (split-K "
                    "partials are fp32, stored directly)")
        if p["split_reduce"] == "dsmem":
            if p["split_k"] not in (2, 4, 8):
                return (f"split_reduce=dsmem puts a tile's split_k={p['split_k']} slices in one cluster: 2, 4 or 8 "
                        f"CTAs (8 is Hopper's portable cluster size)")
            if p["schedule"] != "cooperative" or p["cluster"] != "1x1" or p["pdl"] or p["epilogue"] != "direct":
                return ("split_reduce=dsmem: cooperative consumers, cluster 1x1, no pdl, direct epilogue (the "
                        "cluster's CTAs store their shares of the summed tile themselves)")
            if (p["BN"] // 8) % p["split_k"]:
                return (f"split_reduce=dsmem: each of the {p['split_k']} CTAs stores an equal share of the "
                        f"{p['BN'] // 8} n8 columns blocks: BN / 8 must divide by split_k")
        if p["cluster"] != "1x1" and p["split_k"] > 1:
            return ("clusters with split_k 1 only: a split-K point already spreads each tile over several CTAs "
                    "(kept off the grid until measured)")
        regs = self.accumulator_regs(variant) + REG_OVERHEAD
        limit = MAX_REGS[self.threads(variant)]
        if regs > limit:
            return f"about {regs} registers per consumer thread exceeds the {limit} a {self.threads(variant)}-thread " \
                   f"kernel compiles within"
        return None

    def pruned(self, variant: Variant) -> str | None:
        if variant.p["b_layout"] == "nk" and variant.p["BN"] % 32:
            # Verified on the H200 (tests/gpu/test_wgmma.py: 64x80 nk, fp32 and fp16), not benched yet: nk loads B in
            # the 128-byte-swizzled boxes of every width, so the kn result below need not hold for it.
            return "nk widths of an odd multiple of 16 are off the default grid until benched beside their neighbours"
        if variant.p["b_layout"] == "kn" and variant.p["BN"] % 64:
            # Verified on the H200 (tests/gpu/test_wgmma.py) and measured (benchmarks/results/h200/wgmma/v4_verified/
            # widths/): 10 kn widths off the 64-column box on 10 shapes ran a geomean 0.63 of the faster of the same
            # point at the multiples of 64 around them, never faster (16-column boxes 0.46-0.66, 32-column 0.72-0.85):
            # the wave-quantization gain does not pay for B loaded in narrower, less swizzled boxes.
            return ("kn tile widths off the 64-column box are off the default grid: slower than the multiples of 64 "
                    "around them on the H200")
        if self.fixup(variant):
            # Verified on the H200 (tests/gpu/test_wgmma.py: C equals the reduce kernel's bit for bit) and measured
            # (benchmarks/results/h200/wgmma/v4_verified/fixup/): 70 pairs on 10 deep-K shapes ran a geomean 0.69 of
            # their workspace twins, never faster (12.7 against 8.2 us at 64x64x16384, split 16): one warp per tile
            # reading every slice back costs more than a second kernel that spreads the sum over every SM.
            return "the in-kernel split-K fixup is off the default grid: slower than the reduce kernel on the H200"
        if variant.p["cluster"] != "1x1":
            # Measured on the H200 (benchmarks/results/h200/wgmma/v3_clusters/): 80 pairs on 10 shapes ran a
            # geomean 0.94 of their single-CTA twins; 5 were faster (1.01-1.08x, large grids), the slowest 0.77.
            return "2-CTA clusters are off the default grid: no faster than single CTAs on the H200 so far"
        if self.dsmem(variant):
            # Verified on the H200 (tests/gpu/test_wgmma.py) and measured (benchmarks/results/h200/wgmma/v3_dsmem/):
            # 50 pairs on 10 shapes ran a geomean 0.73 of their workspace twins, 7 faster (up to 1.17x at 1024^3);
            # at the deep-K shape it was built for, par (18.8 vs 19.0 us) at best. The model's on-chip reduce
            # would otherwise short-list it first for deep K.
            return "the DSMEM split-K is off the default grid: slower than the workspace split-K on the H200"
        if variant.p["pdl"]:
            # benchmarks/results/h200/wgmma/v3/: 20 PDL points ran a geomean 0.98 of their twins, 6 faster.
            return "the PDL-launched reduce is off the default grid: no faster than two plain launches on the H200"
        return None

    def b_layout(self, variant: Variant) -> str:
        return variant.p["b_layout"]

    def dtype(self, variant: Variant) -> str:
        return variant.p["dtype"]

    def supports(self, variant: Variant, problem: GemmProblem) -> str | None:
        if problem.k % 8:
            return f"K={problem.k}: needs K % 8 == 0 (TMA row strides are multiples of 16 bytes)"
        if problem.n % 8:
            return f"N={problem.n}: needs N % 8 == 0 (TMA row strides of B, C stored in pairs)"
        if max(problem.m, problem.n, problem.k) > INT_MAX - 256:
            return f"a dimension above {INT_MAX - 256}: TMA coordinates are 32-bit"
        split = variant.p["split_k"]
        if split > 1:
            ktiles = -(-problem.k // BK)
            if ktiles < split:
                return f"split_k={split} needs at least {split} k-steps of {BK}; K={problem.k} has {ktiles}"
            if not self.dsmem(variant) and self.workspace_bytes(variant, problem) > MAX_WORKSPACE:
                return f"split_k={split} partials of {problem.m}x{problem.n} exceed {MAX_WORKSPACE} bytes"
            tiles = -(-problem.m // variant.p["BM"]) * -(-problem.n // variant.p["BN"])
            if self.fixup(variant) and tiles > FIXUP_TILES:
                return f"split_reduce=fixup counts the slices of at most {FIXUP_TILES} output tiles; this has {tiles}"
        return None

    @staticmethod
    def workspace_bytes(variant: Variant, problem: GemmProblem) -> int:
        split = variant.p["split_k"]
        return split * problem.m * problem.n * 4 if split > 1 and variant.p["split_reduce"] != "dsmem" else 0

    def resources(self, variant: Variant) -> dict:
        p = variant.p
        return {"threads": self.threads(variant), "smem_bytes": self.smem_bytes(variant),
                "tile": (p["BM"], p["BN"], BK), "split_k": p["split_k"], "stages": p["stages"],
                "raster": p["raster"],  # tile_coords: groups of `raster` tile rows, column-major inside a group
                "schedule": p["schedule"], "epilogue": p["epilogue"],
                "unit_overhead": p["schedule"],  # the model's per-unit cost of a persistent CTA (model.py)
                "persistent": True,  # one CTA per SM (at most one per unit) takes the units in turn
                # programmatic dependent launch: the reduce kernel is launched while the main kernel runs
                # DSMEM: the slices meet on chip, in one kernel; fixup: in L2, in one kernel; pdl: the reduce kernel
                # launched programmatically
                "split_reduce": "cluster" if self.dsmem(variant) else "fixup" if self.fixup(variant) else
                                ("pdl" if p["pdl"] else None),
                "cluster": self.cluster(variant)}  # CM > 1 multicasts B tiles, CN > 1 A tiles

    def name_of(self, variant: Variant) -> str:
        p = variant.p
        acc = {"fp32": "f32", "fp16": "f16"}.get(variant.acc, variant.acc)
        if p["dtype"] == "bf16":
            acc = "bf16f32"  # bf16 inputs and output, fp32 accumulation (fp16 points keep their first names)
        schedule = {"cooperative": "co", "pingpong": "pp"}[p["schedule"]]
        epilogue = "_et" if p["epilogue"] == "tma" else ""  # direct-store points keep their first names
        pdl = "_pdl" if p["pdl"] else ""
        cluster = f"_c{p['cluster']}" if p["cluster"] != "1x1" else ""
        dsmem = "_dsm" if self.dsmem(variant) else "_fx" if self.fixup(variant) else ""
        return (f"wgmma_{acc}_{p['b_layout']}_{p['BM']}x{p['BN']}x{BK}_s{p['stages']}_r{p['raster']}"
                f"_k{p['split_k']}_{schedule}{epilogue}{pdl}{cluster}{dsmem}")

    def render(self, variant: Variant) -> str:
        reason = self.check(variant)
        if reason is not None:
            raise ValueError(f"wgmma {variant.acc} {variant.p} is not a valid point: {reason}")
        p = variant.p
        fp32 = variant.acc == "fp32"
        cm, cn = self.cluster(variant)
        subs = {
            "@NAME@": self.name_of(variant), "@ACC@": variant.acc, "@LAYOUT@": p["b_layout"],
            "@BM@": str(p["BM"]), "@BN@": str(p["BN"]), "@BK@": str(BK), "@STAGES@": str(p["stages"]),
            "@RASTER@": str(p["raster"]), "@B_KMAJOR@": "true" if p["b_layout"] == "nk" else "false",
            "@ACC_F16@": "false" if fp32 else "true", "@THREADS@": str(self.threads(variant)),
            "@SMEM@": str(self.smem_bytes(variant)), "@PRODUCER_REGS@": str(PRODUCER_REGS),
            "@CONSUMER_REGS@": str(CONSUMER_REGS), "@SPLIT_K@": str(p["split_k"]),
            "@PINGPONG@": "true" if p["schedule"] == "pingpong" else "false",
            "@ELEM@": "__nv_bfloat16" if p["dtype"] == "bf16" else "__half",
            "@ELEM2@": "__nv_bfloat162" if p["dtype"] == "bf16" else "__half2",
            "@PACK2@": "__floats2bfloat162_rn" if p["dtype"] == "bf16" else "__floats2half2_rn",
            "@TMA_TYPE@": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16" if p["dtype"] == "bf16" else "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
            "@DTYPE@": p["dtype"], "@TMA_STORE@": "true" if p["epilogue"] == "tma" else "false",
            "@PDL@": "true" if p["pdl"] else "false",
            "@CLUSTER_M@": str(cm), "@CLUSTER_N@": str(cn),
            "@DSMEM@": "true" if self.dsmem(variant) else "false",
            "@FIXUP@": "true" if self.fixup(variant) else "false", "@FIXUP_TILES@": str(FIXUP_TILES),
            "@CLUSTER_DIMS@": (f"__cluster_dims__({p['split_k']}, 1, 1) " if self.dsmem(variant) else
                               f"__cluster_dims__({cm * cn}, 1, 1) " if cm * cn > 1 else ""),
        }
        source = SOURCE
        for key, value in subs.items():
            source = source.replace(key, value)
        source = source.replace("@WGMMA@", _wgmma_function(p["BN"], fp32, trans_b=p["b_layout"] == "kn",
                                                           bf16=p["dtype"] == "bf16"))
        info = f'const char* kernelrl_hgemm_info(void) {{ return "{self.info_json(variant)}"; }}\n'
        return source + info + "\n}  // extern \"C\"\n"


def _wgmma_function(n: int, fp32: bool, trans_b: bool, bf16: bool = False) -> str:
    """`wgmma_step(d, desc_a, desc_b)`: one m64n{n}k16 wgmma accumulating into d (scale-d 1: d starts at zero).
    Generated because the instruction names every accumulator register: n/2 floats or n/4 packed half pairs."""
    regs = n // 2 if fp32 else n // 4
    dtype, constraint, ctype = ("f32", "+f", "float") if fp32 else ("f16", "+r", "uint32_t")
    d_list = ", ".join(f"%{i}" for i in range(regs))
    outputs = ", ".join(f'"{constraint}"(d[{i}])' for i in range(regs))
    inputs = "bf16.bf16" if bf16 else "f16.f16"
    asm = (f'"wgmma.mma_async.sync.aligned.m64n{n}k16.{dtype}.{inputs} "\n'
           f'        "{{{d_list}}}, %{regs}, %{regs + 1}, 1, 1, 1, 0, {1 if trans_b else 0};\\n"')
    return (f"static constexpr int ACC_REGS = {regs};\n"
            f"using AccT = {ctype};\n\n"
            f"__device__ __forceinline__ void wgmma_step(AccT (&d)[ACC_REGS], uint64_t desc_a, uint64_t desc_b) {{\n"
            f"    asm volatile(\n        {asm}\n"
            f"        : {outputs}\n"
            f'        : "l"(desc_a), "l"(desc_b));\n}}\n')


# ---------------------------------------------------------------------------------------------------------------
# The CUDA source. @KEY@ markers are replaced by render(); the rest is plain CUDA.
# ---------------------------------------------------------------------------------------------------------------

SOURCE = r"""// kernelrl wgmma family: @NAME@
// Generated by kernelrl/space/wgmma.py: edit the generator, not this file.
//
// C = A @ B: A (M x K) row-major, B @LAYOUT@ (kn: K x N row-major; nk: N x K row-major, i.e. B^T), C (M x N)
// row-major, all fp16; accumulator @ACC@. Supported: K % 8 == 0, N % 8 == 0, any M (kernelrl_hgemm_supports).
// @THREADS@ threads per CTA (warpgroup 0 produces, the others consume), @SMEM@ bytes of dynamic shared memory.
//
//   global --TMA, 128-byte swizzle, zero fill past the edges--> STAGES-deep smem ring (full/empty mbarriers)
//   smem --wgmma descriptors--> m64nBNk16 wgmma, fp32 or fp16 accumulators in registers --> C (guarded pairs)
//
// Shared-memory layouts (the copy engine writes them, wgmma reads them through descriptors; 1024-byte aligned):
//   A stage: BM rows of 64 halves (128 B, K-major), 8-row groups 1024 B apart. A k16 slice starts 32 B further.
//   B stage, nk: BN rows (n) of 64 halves (k): K-major, like A.
//   B stage, kn: BN/W boxes of 64 k-rows x W n (N-major), W * 128 B each, swizzled over their W * 2-byte rows:
//   W = 64 (128-byte swizzle) where BN % 64 == 0, else 32 (64-byte) or 16 (32-byte), so any BN % 16 == 0 loads
//   exactly its tile. In the descriptor the leading byte offset is the box stride (next W columns of n), the
//   stride byte offset 8 k-rows (W * 16 B); a k16 slice is 16 k-rows, W * 32 B further.
// Work units: (output tile, K slice) pairs, SPLIT_K slices per tile; a persistent CTA takes units blockIdx.x,
// blockIdx.x + gridDim.x, ... and its producer loads their k-steps in that order. Cooperative consumers both work on
// every unit (64 rows each); ping-pong consumers take alternate units whole (skipping the other's k-steps in the
// ring), so one stores its tile while the other multiplies. With SPLIT_K > 1 each unit stores fp32 partials to the
// workspace (every element of its slice, so no zeroing is needed) and a second kernel sums them into C.
// Clusters (CLUSTER_M x CLUSTER_N = 2): the two CTAs of a cluster take the two tiles of one cluster tile (adjacent
// rows with 2x1, columns with 1x2) in lockstep. The operand they share is loaded half by each and multicast into
// both CTAs' stage, so L2 serves it once; a stage is refilled only when the consumers of both CTAs have freed it
// (they arrive on both CTAs' empty barriers). A CTA whose tile lies past the matrix edge still loads its half.
// DSMEM split-K (DSMEM): a cluster of SPLIT_K CTAs takes one tile at a time, CTA r its K slice r. Each copies its fp32
// accumulators into its own shared memory, the cluster waits on a barrier every CTA arrives on, and CTA r adds up
// every CTA's copy of its share of the n8 column blocks (BN / 8 / SPLIT_K of them) through distributed shared memory
// and stores them to C. One kernel and no workspace; a second barrier frees the copies for the next tile.
// Split-K fixup (FIXUP): every unit stores its fp32 partials as above, then each warp counts itself in on its own
// counter for the tile (its fragment covers the same elements in every slice); the warp whose arrival is the tile's
// SPLIT_K-th reads every slice's partials back (from L2), adds them in slice order as the reduce kernel does (so C is
// the workspace twin's, bit for bit), stores C and resets the counter, so the counters are zero again between calls
// and need no memset. They live in this library's own device memory, in
// FIXUP_SLOTS sets that successive calls take in turn (calls in flight at once on several streams get different
// sets unless FIXUP_SLOTS of them overlap).
// Accumulator fragment of m64nNk16 (warp w of the warpgroup, lane l, g = l / 4, t = l % 4), per n8 block j:
//   fp32: d[4j], d[4j+1] = C[16w+g][8j+2t, +1]; d[4j+2], d[4j+3] = C[16w+g+8][8j+2t, +1]
//   fp16: d[2j] = the first pair (half2), d[2j+1] = the second.

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include <atomic>

namespace kr_wg {

static constexpr int BM = @BM@, BN = @BN@, BK = @BK@;   // CTA tile
static constexpr int STAGES = @STAGES@;                  // smem ring depth
static constexpr int RASTER = @RASTER@;                  // tile rows per raster group (L2 reuse of B panels)
static constexpr bool B_KMAJOR = @B_KMAJOR@;             // nk layout: B given as N x K
static constexpr bool ACC_F16 = @ACC_F16@;               // fp16 accumulator (else fp32)
static constexpr int SPLIT_K = @SPLIT_K@;                // K slices per output tile (fp32 partials when > 1)
// With fp16 accumulators each slice accumulates in fp16 and the slices' sums add up in fp32, rounded once to C.
static constexpr bool PINGPONG = @PINGPONG@;             // consumers alternate whole units (else split rows)
static constexpr bool PDL = @PDL@;                       // the reduce kernel: programmatic dependent launch
static constexpr int CLUSTER_M = @CLUSTER_M@, CLUSTER_N = @CLUSTER_N@;  // 2x1: B tiles multicast; 1x2: A tiles
static constexpr int CLUSTER = CLUSTER_M * CLUSTER_N;
static constexpr bool DSMEM = @DSMEM@;                   // split-K slices summed in the cluster's shared memory
static constexpr bool FIXUP = @FIXUP@;                   // split-K slices summed by the last to arrive, in-kernel
static constexpr int CLUSTER_CTAS = DSMEM ? SPLIT_K : CLUSTER;  // the launch's cluster size
static constexpr int UNIT_SPLITS = DSMEM ? 1 : SPLIT_K;         // work units per tile (DSMEM: one per cluster)
static constexpr int CONSUMERS = PINGPONG ? 2 : BM / 64;
using Elem = @ELEM@;                                      // A, B and C elements (@DTYPE@)
using Elem2 = @ELEM2@;
__device__ __forceinline__ Elem2 pack2(float lo, float hi) { return @PACK2@(lo, hi); }
static constexpr int MB = PINGPONG ? BM / 64 : 1;        // m64 blocks per consumer and k-step
// The warps that read a stage, in every CTA whose copies write it
static constexpr int EMPTY_ARRIVALS = (PINGPONG ? 1 : CONSUMERS) * 4 * CLUSTER;
// Rows of one TMA box: a shared operand is loaded in halves, one per CTA of the pair
static constexpr int A_BOX_ROWS = BM / CLUSTER_N, B_BOX_ROWS = B_KMAJOR ? BN / CLUSTER_M : BK / CLUSTER_M;
static constexpr int THREADS = (CONSUMERS + 1) * 128;
static constexpr int A_STAGE_BYTES = BM * BK * 2, B_STAGE_BYTES = BN * BK * 2;
// kn: columns per N-major B box and the bytes of its rows, which its swizzle spans (128, 64 or 32; wgmma's mode 1, 2
// or 3). nk and A: 64 halves of k per row, the 128-byte swizzle.
static constexpr int B_BOX_COLS = B_KMAJOR || BN % 64 == 0 ? 64 : BN % 32 == 0 ? 32 : 16;
static constexpr int B_ROW_BYTES = B_BOX_COLS * 2;
static constexpr uint32_t B_SWIZZLE_MODE = B_ROW_BYTES == 128 ? 1 : B_ROW_BYTES == 64 ? 2 : 3;
static constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
static constexpr bool TMA_STORE = @TMA_STORE@;           // C through swizzled smem boxes and TMA stores
static constexpr int STAGING_BYTES = TMA_STORE ? CONSUMERS * MB * 64 * BN * 2 : 0;
static constexpr int RED_BYTES = DSMEM ? BM * BN * 4 : 0;  // a CTA's accumulators, for the cluster to sum
static constexpr int RED_ARRIVALS = CONSUMERS * 4 * SPLIT_K;    // every consumer warp of the cluster
static constexpr int NB_SHARE = BN / 8 / SPLIT_K;               // n8 column blocks each CTA sums and stores
static constexpr int SMEM_BYTES = STAGES * (STAGE_BYTES + 16) + STAGING_BYTES + RED_BYTES + (DSMEM ? 16 : 0) + 16
                                  + 1024;
static_assert(!TMA_STORE || (SPLIT_K == 1 && BN % 64 == 0), "TMA stores of 16-bit C in 64-column boxes");
static constexpr int PRODUCER_REGS = @PRODUCER_REGS@, CONSUMER_REGS = @CONSUMER_REGS@;
static_assert(SMEM_BYTES == @SMEM@, "the generator and the kernel agree on shared memory");
static_assert(SMEM_BYTES <= 227 * 1024, "227 KB of shared memory per CTA on sm_90");
static_assert(A_STAGE_BYTES % 1024 == 0 && B_STAGE_BYTES % 1024 == 0, "stages keep the swizzle period");
static_assert(BN % 16 == 0, "N-major B comes in boxes of 64, 32 or 16 columns");
static_assert(BN % 8 == 0 && BN <= 256 && (CONSUMERS == 1 || CONSUMERS == 2), "wgmma n and warpgroup count");
static_assert(!DSMEM || !ACC_F16, "the DSMEM split-K sums fp32 accumulators");
static_assert(!FIXUP || (SPLIT_K > 1 && !DSMEM && !PDL && !TMA_STORE && CLUSTER == 1), "the fixup: plain split-K");
// FIXUP: a counter per consumer warp of a unit and output tile, FIXUP_SLOTS sets of them (zero at load, and after
// every call)
static constexpr int UNIT_WARPS = (PINGPONG ? 1 : CONSUMERS) * 4;
static constexpr int FIXUP_TILES = @FIXUP_TILES@, FIXUP_SLOTS = 4;
__device__ unsigned int fixup_arrivals[FIXUP ? FIXUP_SLOTS * FIXUP_TILES * UNIT_WARPS : 1];
static_assert(CLUSTER <= 2 && (CLUSTER == 1 || SPLIT_K == 1), "pairs of CTAs, without split-K");
static_assert(!DSMEM || (SPLIT_K >= 2 && SPLIT_K <= 8 && !PINGPONG && CLUSTER == 1 && !PDL && !TMA_STORE &&
                         (BN / 8) % SPLIT_K == 0), "DSMEM split-K: 2 to 8 cooperative CTAs, equal column shares");
static_assert(A_BOX_ROWS % 8 == 0 && B_BOX_ROWS % 8 == 0, "half tiles keep whole 1024-byte swizzle periods");

@WGMMA@
// The two C pairs of n8 block j of an accumulator set, as 16-bit elements: rows g and g + 8 of the fragment (above).
__device__ __forceinline__ void c_pairs(const AccT (&d)[ACC_REGS], int j, Elem2& top, Elem2& bottom) {
    if constexpr (ACC_F16) {  // fp16 only (check() keeps bf16 on fp32 accumulators)
        top = *reinterpret_cast<const Elem2*>(&d[2 * j]);
        bottom = *reinterpret_cast<const Elem2*>(&d[2 * j + 1]);
    } else {
        top = pack2(d[4 * j], d[4 * j + 1]);
        bottom = pack2(d[4 * j + 2], d[4 * j + 3]);
    }
}

// The same pairs as fp32, what split-K partials hold (fp16 accumulators widened exactly; the reinterpretation
// because this branch is compiled for bf16 points too, never taken there).
__device__ __forceinline__ void c_pairs_f32(const AccT (&d)[ACC_REGS], int j, float2& top, float2& bottom) {
    if constexpr (ACC_F16) {
        Elem2 top16, bottom16;
        c_pairs(d, j, top16, bottom16);
        top = __half22float2(*reinterpret_cast<const __half2*>(&top16));
        bottom = __half22float2(*reinterpret_cast<const __half2*>(&bottom16));
    } else {
        top = make_float2(d[4 * j], d[4 * j + 1]);
        bottom = make_float2(d[4 * j + 2], d[4 * j + 3]);
    }
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Shared-memory matrix descriptor, 128-byte swizzle (PTX ISA: "Matrix Descriptor Format").
// swizzle: 1 = 128-byte, 2 = 64-byte, 3 = 32-byte (bits 62-63)
__device__ __forceinline__ uint64_t descriptor(uint32_t addr, uint32_t leading_bytes, uint32_t stride_bytes,
                                               uint32_t swizzle = 1) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((leading_bytes & 0x3FFFF) >> 4) << 16) |
           ((uint64_t)((stride_bytes & 0x3FFFF) >> 4) << 32) | ((uint64_t)swizzle << 62);
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}

// Wait until the phase of the given parity has completed (a fresh barrier counts its parity-1 phase as done).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n"
        "}\n" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}

__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, uint64_t* bar, int inner, int outer) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        :: "r"(smem_addr(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(inner), "r"(outer)
        : "memory");
}

// The same barrier in CTA `rank` of this cluster (mapa), arrived on from here: frees a stage the peer's copy writes.
// The default (CTA-scope) release: what it orders are this warp's wgmma reads of the stage, complete once their
// group has retired. A cluster-scope release would wait for every earlier store of the thread on every k-step (on
// the H200 the first cluster run, with a cluster-scope release here, measured the pairs 1.6-3.8x slower than single
// CTAs).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t rank) {
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n" :: "r"(smem_addr(bar)), "r"(rank) : "memory");
}

// Cluster-scope handoff of data in shared memory (the DSMEM split-K, once per tile): the arrive releases this thread's
// earlier shared-memory writes to the cluster, the wait acquires what the arrivals released.
__device__ __forceinline__ void mbar_arrive_release_cluster(uint64_t* bar, uint32_t rank) {
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n"
        "}\n" :: "r"(smem_addr(bar)), "r"(rank) : "memory");
}

__device__ __forceinline__ void mbar_wait_acquire_cluster(uint64_t* bar, uint32_t parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n"
        "}\n" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}

// Four floats of CTA `rank`'s shared memory at this CTA's offset `p`.
__device__ __forceinline__ float4 ld_cluster_f4(const void* p, uint32_t rank) {
    float4 v;
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %4, %5;\n"
        "ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [remote];\n"
        "}\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(smem_addr(p)), "r"(rank) : "memory");
    return v;
}

// A warp's release of a stage: to its own CTA's empty barrier, and with a cluster to the peer's too (the peer's
// producer multicasts into this CTA's copy of the stage).
__device__ __forceinline__ void release_stage(uint64_t* bar, int rank) {
    mbar_arrive(bar);
    if constexpr (CLUSTER > 1) mbar_arrive_cluster(bar, (uint32_t)(rank ^ 1));
}

// One box into the same shared-memory offset of every CTA of the cluster, each CTA's barrier there getting the bytes.
__device__ __forceinline__ void tma_load_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int inner,
                                                   int outer) {
    const uint16_t all = (uint16_t)((1u << CLUSTER) - 1);
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;"
        :: "r"(smem_addr(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(inner), "r"(outer),
           "h"(all) : "memory");
}

__device__ __forceinline__ uint32_t cluster_reg(int which) {
    uint32_t v = 0;
    if (which == 0) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(v));
    else if (which == 1) asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(v));
    else asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(v));
    return v;
}

// Every thread of every CTA of the cluster: barriers initialised before a peer's copy signals them, and no CTA
// leaves while a peer may still write its shared memory or arrive on its barriers.
__device__ __forceinline__ void cluster_sync() {
    __syncwarp();
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }

__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void named_sync(int id) { asm volatile("bar.sync %0, 128;" :: "r"(id) : "memory"); }

__device__ __forceinline__ void tma_store(const void* src, const CUtensorMap* map, int inner, int outer) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 :: "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(src)), "r"(inner), "r"(outer) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory"); }

template <int REGS>
__device__ __forceinline__ void regs_down() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(REGS)); }
template <int REGS>
__device__ __forceinline__ void regs_up() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(REGS)); }

__device__ __forceinline__ void ring_advance(int& stage, uint32_t& phase, int steps) {
    const int s = stage + steps;
    phase ^= (uint32_t)((s / STAGES) & 1);
    stage = s % STAGES;
}

// Tile t of the persistent sequence: groups of RASTER tile rows, column-major inside a group, so the CTAs of one
// wave share B panels (and A panels within a group) in L2.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
    const int per_group = RASTER * tiles_n;
    const int first = (t / per_group) * RASTER;
    const int rows = min(tiles_m - first, RASTER);
    const int in_group = t % per_group;
    tm = first + in_group % rows;
    tn = in_group / rows;
}

// The tile of work unit u for the CTA of cluster rank `rank`: units walk cluster tiles (CLUSTER_M x CLUSTER_N
// tiles) in the raster order, SPLIT_K units per tile (DSMEM: one, whose K slices the cluster's CTAs share).
__device__ __forceinline__ void unit_tile(int u, int tiles_m, int tiles_n, int rank, int& tm, int& tn) {
    int cm, cn;
    tile_coords(u / UNIT_SPLITS, (tiles_m + CLUSTER_M - 1) / CLUSTER_M, (tiles_n + CLUSTER_N - 1) / CLUSTER_N, cm,
                cn);
    tm = cm * CLUSTER_M + (CLUSTER_M > 1 ? rank : 0);
    tn = cn * CLUSTER_N + (CLUSTER_N > 1 ? rank : 0);
}

__global__ void @CLUSTER_DIMS@__launch_bounds__(THREADS, 1)
hgemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                   const __grid_constant__ CUtensorMap map_c, Elem* __restrict__ C, float* __restrict__ partials, int M, int N, int K, int tiles_m,
                   int tiles_n, int per_split, unsigned int* __restrict__ arrivals) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint8_t* smem_a = smem;
    uint8_t* smem_b = smem + STAGES * A_STAGE_BYTES;
    uint8_t* staging = smem + STAGES * STAGE_BYTES;  // 1024-aligned: stages are multiples of 1024 bytes
    float4* red = reinterpret_cast<float4*>(staging + STAGING_BYTES);  // DSMEM: this CTA's accumulators
    uint64_t* full = reinterpret_cast<uint64_t*>(staging + STAGING_BYTES + RED_BYTES);
    uint64_t* empty = full + STAGES;
    uint64_t* turn = empty + STAGES;  // ping-pong: turn[c] completes each time consumer c has taken a unit's k-steps
    uint64_t* dumped = turn + 2;      // DSMEM: every CTA of the cluster has copied this tile's accumulators
    uint64_t* red_free = dumped + 1;  // DSMEM: every CTA has read this tile's copies

    const int units = ((tiles_m + CLUSTER_M - 1) / CLUSTER_M) * ((tiles_n + CLUSTER_N - 1) / CLUSTER_N) * UNIT_SPLITS;
    const int ktiles = (K + BK - 1) / BK;
    const int warpgroup = threadIdx.x / 128;
    // A persistent cluster takes units first, first + step, ...: both CTAs of a cluster the same ones.
    const int rank = CLUSTER_CTAS > 1 ? (int)cluster_reg(0) : 0;
    const int first = CLUSTER_CTAS > 1 ? (int)cluster_reg(1) : (int)blockIdx.x;
    const int step = CLUSTER_CTAS > 1 ? (int)cluster_reg(2) : (int)gridDim.x;
    // PDL: the reduce kernel may be launched now (its CTAs wait in griddepcontrol.wait until this grid has finished
    // and its writes are visible), so its launch latency hides behind this kernel's tail.
    if constexpr (PDL) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);                  // the producer's arrive.expect_tx (plus the copy's bytes)
            mbar_init(&empty[s], EMPTY_ARRIVALS);    // one arrival per warp that read the stage
        }
        mbar_init(&turn[0], 1);
        mbar_init(&turn[1], 1);
        if constexpr (DSMEM) {
            mbar_init(dumped, RED_ARRIVALS);
            mbar_init(red_free, RED_ARRIVALS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if constexpr (CLUSTER_CTAS > 1) cluster_sync();
    else __syncthreads();

    if (warpgroup == 0) {
        // ---- producer: one thread drives the copy engine --------------------------------------------------
        if constexpr (CONSUMERS == 2) regs_down<PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(&map_a)) : "memory");
            asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(&map_b)) : "memory");
            int stage = 0;
            uint32_t phase = 0;
            for (int u = first; u < units; u += step) {
                int tm, tn;
                unit_tile(u, tiles_m, tiles_n, rank, tm, tn);
                const int kt0 = (DSMEM ? rank : u % SPLIT_K) * per_split, kt1 = min(ktiles, kt0 + per_split);
                for (int kt = kt0; kt < kt1; ++kt) {
                    mbar_wait(&empty[stage], phase ^ 1);
                    // The whole stage, whoever copies it (a peer's multicast half may land before this arrival:
                    // the barrier's transaction count runs below zero until then). Out-of-bounds elements count.
                    mbar_expect_tx(&full[stage], STAGE_BYTES);
                    uint8_t* a = smem_a + stage * A_STAGE_BYTES;
                    if constexpr (CLUSTER_N > 1)  // both CTAs' tiles share these A rows: this CTA's half, to both
                        tma_load_multicast(a + rank * A_BOX_ROWS * 128, &map_a, &full[stage], kt * BK,
                                           tm * BM + rank * A_BOX_ROWS);
                    else
                        tma_load(a, &map_a, &full[stage], kt * BK, tm * BM);
                    uint8_t* b = smem_b + stage * B_STAGE_BYTES;
                    if constexpr (B_KMAJOR && CLUSTER_M > 1) {  // half the tile's n rows, to both CTAs
                        tma_load_multicast(b + rank * B_BOX_ROWS * 128, &map_b, &full[stage], kt * BK,
                                           tn * BN + rank * B_BOX_ROWS);
                    } else if constexpr (B_KMAJOR) {
                        tma_load(b, &map_b, &full[stage], kt * BK, tn * BN);
                    } else {
#pragma unroll
                        for (int j = 0; j < BN / B_BOX_COLS; ++j) {
                            uint8_t* box = b + j * B_BOX_COLS * BK * 2;
                            if constexpr (CLUSTER_M > 1)  // half of each box's k rows, to both CTAs
                                tma_load_multicast(box + rank * B_BOX_ROWS * B_ROW_BYTES, &map_b, &full[stage],
                                                   tn * BN + B_BOX_COLS * j, kt * BK + rank * B_BOX_ROWS);
                            else
                                tma_load(box, &map_b, &full[stage], tn * BN + B_BOX_COLS * j, kt * BK);
                        }
                    }
                    ring_advance(stage, phase, 1);
                }
            }
        }
    } else {
        // ---- consumers ------------------------------------------------------------------------------------
        if constexpr (CONSUMERS == 2) regs_up<CONSUMER_REGS>();
        const int c = warpgroup - 1;
        const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
        int stage = 0;
        uint32_t phase = 0;
        AccT d[MB][ACC_REGS];
        int seq = 0;   // the unit's place in this CTA's sequence (ping-pong: consumer seq % 2 takes it)
        int taken = 0; // units this consumer has taken
        for (int u = first; u < units; u += step, ++seq) {
            int tm, tn;
            unit_tile(u, tiles_m, tiles_n, rank, tm, tn);
            const int slice = DSMEM ? rank : u % SPLIT_K;
            const int kt0 = slice * per_split, kcount = max(0, min(ktiles, kt0 + per_split) - kt0);
            if (PINGPONG && (seq & 1) != c) {
                ring_advance(stage, phase, kcount);  // the other consumer's unit
                continue;
            }
            // Ping-pong: start only once the other consumer has taken the unit before this one (waited for all its
            // k-steps). A skip can jump many ring laps ahead, and a barrier's parity tells apart only its current
            // phase and the one before: from here on this consumer is never more than one phase ahead.
            if (PINGPONG && seq > 0) mbar_wait(&turn[1 - c], (uint32_t)((c == 0 ? taken - 1 : taken) & 1));
#pragma unroll
            for (int mb = 0; mb < MB; ++mb)
#pragma unroll
                for (int i = 0; i < ACC_REGS; ++i) d[mb][i] = 0;
            int held = -1;  // the stage the in-flight wgmma group reads
            for (int i = 0; i < kcount; ++i) {
                mbar_wait(&full[stage], phase);
                const uint32_t a = smem_addr(smem_a + stage * A_STAGE_BYTES) + (PINGPONG ? 0 : c * 64 * BK * 2);
                const uint32_t b = smem_addr(smem_b + stage * B_STAGE_BYTES);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    const uint64_t db = B_KMAJOR ? descriptor(b + kk * 32, 16, 1024)
                                                 : descriptor(b + kk * 16 * B_ROW_BYTES, B_BOX_COLS * BK * 2,
                                                              8 * B_ROW_BYTES, B_SWIZZLE_MODE);
#pragma unroll
                    for (int mb = 0; mb < MB; ++mb)
                        wgmma_step(d[mb], descriptor(a + mb * 64 * BK * 2 + kk * 32, 16, 1024), db);
                }
                wgmma_commit();
                wgmma_wait<1>();   // the previous group is done: its stage can be refilled
                if (held >= 0 && lane == 0) release_stage(&empty[held], rank);
                held = stage;
                ring_advance(stage, phase, 1);
            }
            if (PINGPONG && threadIdx.x % 128 == 0) mbar_arrive(&turn[c]);
            ++taken;
            wgmma_wait<0>();
            if (held >= 0 && lane == 0) release_stage(&empty[held], rank);

            if constexpr (TMA_STORE) {
                // Epilogue through shared memory: this consumer's rows go into its own staging boxes (64 x 64,
                // 128-byte swizzled, as the copy engine reads them), then one thread stores them with TMA, which
                // clips the matrix edges. The store runs on while this consumer waits for its next tile.
                uint8_t* mine = staging + c * MB * 64 * BN * 2;
                const bool elected = threadIdx.x % 128 == 0;
                if (elected) bulk_wait_read<0>();  // the previous tile's stores have read these boxes
                named_sync(1 + c);
#pragma unroll
                for (int mb = 0; mb < MB; ++mb) {
                    const int r = warp * 16 + lane / 4;
#pragma unroll
                    for (int j = 0; j < BN / 8; ++j) {
                        Elem2 top, bottom;
                        c_pairs(d[mb], j, top, bottom);
                        uint8_t* box = mine + (mb * (BN / 64) + j / 8) * 64 * 128;
                        const int at = (((j % 8) ^ (r % 8)) * 16) + (lane % 4) * 4;  // rows r and r + 8 share r % 8
                        *reinterpret_cast<Elem2*>(box + r * 128 + at) = top;
                        *reinterpret_cast<Elem2*>(box + (r + 8) * 128 + at) = bottom;
                    }
                }
                fence_proxy_async();  // the generic-proxy writes become visible to the copy engine
                named_sync(1 + c);
                if (elected) {
#pragma unroll
                    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
                        for (int jb = 0; jb < BN / 64; ++jb) {
                            const int x = tn * BN + 64 * jb, y = tm * BM + (PINGPONG ? mb * 64 : c * 64);
                            if (x < N && y < M) tma_store(mine + (mb * (BN / 64) + jb) * 64 * 128, &map_c, x, y);
                        }
                    bulk_commit();
                }
            } else if constexpr (DSMEM) {
                // The cluster sums its K slices. This CTA's copy may be overwritten once every CTA has read the
                // previous tile's (red_free), and read once every CTA has written this tile's (dumped).
                const int idx = c * 128 + threadIdx.x % 128;  // this thread's fragment slot, the same in every CTA
                if (taken > 1) mbar_wait_acquire_cluster(red_free, (uint32_t)((taken - 2) & 1));
#pragma unroll
                for (int j = 0; j < BN / 8; ++j)  // [block][slot]: a warp's 32 lanes touch 512 contiguous bytes
                    red[j * CONSUMERS * 128 + idx] = make_float4(d[0][4 * j], d[0][4 * j + 1], d[0][4 * j + 2],
                                                                 d[0][4 * j + 3]);
                __syncwarp();
                if (lane == 0)
                    for (uint32_t r = 0; r < SPLIT_K; ++r) mbar_arrive_release_cluster(dumped, r);
                mbar_wait_acquire_cluster(dumped, (uint32_t)((taken - 1) & 1));
                const int row = tm * BM + c * 64 + warp * 16 + lane / 4;
#pragma unroll
                for (int jj = 0; jj < NB_SHARE; ++jj) {
                    const int j = rank * NB_SHARE + jj;
                    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
                    for (int r = 0; r < SPLIT_K; ++r) {  // every slice, this CTA's own included, in slice order
                        const float4 x = ld_cluster_f4(&red[j * CONSUMERS * 128 + idx], (uint32_t)r);
                        sum.x += x.x; sum.y += x.y; sum.z += x.z; sum.w += x.w;
                    }
                    const int n = tn * BN + 8 * j + (lane % 4) * 2;
                    if (n >= N) continue;
                    if (row < M) *reinterpret_cast<Elem2*>(C + (size_t)row * N + n) = pack2(sum.x, sum.y);
                    if (row + 8 < M) *reinterpret_cast<Elem2*>(C + (size_t)(row + 8) * N + n) = pack2(sum.z, sum.w);
                }
                __syncwarp();
                if (lane == 0)
                    for (uint32_t r = 0; r < SPLIT_K; ++r) mbar_arrive_release_cluster(red_free, r);
            } else {
                // Epilogue: registers to C (two halves per store) or to this slice's fp32 partials, guarded at the edges.
#pragma unroll
                for (int mb = 0; mb < MB; ++mb) {
                    const int row = tm * BM + (PINGPONG ? mb * 64 : c * 64) + warp * 16 + lane / 4;
                    const int col = tn * BN + (lane % 4) * 2;
                    float* part = partials + (size_t)slice * M * N;
#pragma unroll
                    for (int j = 0; j < BN / 8; ++j) {
                        const int n = col + 8 * j;
                        if (n >= N) continue;
                        if constexpr (SPLIT_K > 1) {  // fp16 accumulators: each slice's sum, widened exactly
                            float2 top, bottom;
                            c_pairs_f32(d[mb], j, top, bottom);
                            if (row < M) *reinterpret_cast<float2*>(part + (size_t)row * N + n) = top;
                            if (row + 8 < M) *reinterpret_cast<float2*>(part + (size_t)(row + 8) * N + n) = bottom;
                            continue;
                        }
                        Elem2 top, bottom;
                        c_pairs(d[mb], j, top, bottom);
                        if (row < M) *reinterpret_cast<Elem2*>(C + (size_t)row * N + n) = top;
                        if (row + 8 < M) *reinterpret_cast<Elem2*>(C + (size_t)(row + 8) * N + n) = bottom;
                    }
                }
                if constexpr (FIXUP) {
                    // This warp counts itself in for the tile (its lanes' partials released first); the tile's
                    // SPLIT_K-th arrival sums every slice's partials and stores C.
                    __threadfence();
                    __syncwarp();
                    unsigned int* counter = arrivals + ((size_t)(tm * tiles_n + tn) * UNIT_WARPS +
                                                        (PINGPONG ? 0 : c * 4) + warp);
                    unsigned int before = 0;
                    if (lane == 0) before = atomicAdd(counter, 1u);
                    before = __shfl_sync(0xffffffffu, before, 0);
                    if (before == SPLIT_K - 1) {
                        if (lane == 0) *counter = 0u;  // every slice has arrived: zero again for a later call
                        __threadfence();  // lane 0's fence acquires what the other slices' warps released, and
                        __syncwarp();     // the warp barrier orders it before every lane's reads
                        // Every slice's partials, this warp's own included (its lanes wrote them), added in slice
                        // order from zero as the reduce kernel adds them: C does not depend on which slice came
                        // last, and matches the workspace twin bit for bit. All loads of an n8 block are issued
                        // before its adds: a chain of dependent L2 round trips (one per slice and block) cost
                        // about 30 us a tile at 16 slices on the H200.
                        const float* __restrict__ parts = partials;  // never C: the loads may pass C's stores
                        Elem* __restrict__ c_out = C;
#pragma unroll
                        for (int mb = 0; mb < MB; ++mb) {
                            const int row = tm * BM + (PINGPONG ? mb * 64 : c * 64) + warp * 16 + lane / 4;
                            const int col = tn * BN + (lane % 4) * 2;
                            const bool top_in = row < M, bottom_in = row + 8 < M;
#pragma unroll
                            for (int j = 0; j < BN / 8; ++j) {
                                const int n = col + 8 * j;
                                if (n >= N) continue;
                                float2 t[SPLIT_K], b[SPLIT_K];
#pragma unroll
                                for (int s = 0; s < SPLIT_K; ++s) {  // L2 reads (__ldcg): written by other SMs
                                    const float2* x = reinterpret_cast<const float2*>(
                                        parts + (size_t)s * M * N + (size_t)row * N + n);
                                    t[s] = top_in ? __ldcg(x) : make_float2(0.f, 0.f);
                                    b[s] = bottom_in ? __ldcg(x + (size_t)4 * N) : make_float2(0.f, 0.f);  // 8 rows on
                                }
                                float2 top = make_float2(0.f, 0.f), bottom = top;
#pragma unroll
                                for (int s = 0; s < SPLIT_K; ++s) {
                                    top.x += t[s].x, top.y += t[s].y;
                                    bottom.x += b[s].x, bottom.y += b[s].y;
                                }
                                Elem2* out = reinterpret_cast<Elem2*>(c_out + (size_t)row * N + n);
                                if (top_in) *out = pack2(top.x, top.y);
                                if (bottom_in) out[(size_t)4 * N] = pack2(bottom.x, bottom.y);  // 8 rows on
                            }
                        }
                    }
                }
            }
        }
        if constexpr (TMA_STORE) {
            if (threadIdx.x % 128 == 0) bulk_wait<0>();  // every store done before the CTA's shared memory goes
        }
    }
    if constexpr (CLUSTER_CTAS > 1) cluster_sync();
}

// C = the sum of the SPLIT_K fp32 partial products, eight elements (two float4 per slice, one 16-byte store) per step.
__global__ void __launch_bounds__(256)
splitk_reduce_kernel(const float* __restrict__ partials, Elem* __restrict__ C, size_t mn) {
    if constexpr (PDL) asm volatile("griddepcontrol.wait;" ::: "memory");  // every partial written and visible
    const size_t step = (size_t)gridDim.x * blockDim.x * 8;
    for (size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 8; i < mn; i += step) {
        float4 lo = make_float4(0.f, 0.f, 0.f, 0.f), hi = lo;
#pragma unroll
        for (int s = 0; s < SPLIT_K; ++s) {
            const float4 x = *reinterpret_cast<const float4*>(partials + s * mn + i);
            const float4 y = *reinterpret_cast<const float4*>(partials + s * mn + i + 4);
            lo.x += x.x; lo.y += x.y; lo.z += x.z; lo.w += x.w;
            hi.x += y.x; hi.y += y.y; hi.z += y.z; hi.w += y.w;
        }
        Elem2 h[4] = {pack2(lo.x, lo.y), pack2(lo.z, lo.w), pack2(hi.x, hi.y), pack2(hi.z, hi.w)};
        *reinterpret_cast<uint4*>(C + i) = *reinterpret_cast<const uint4*>(h);
    }
}

// ---- host side ---------------------------------------------------------------------------------------------

using EncodeTiled = PFN_cuTensorMapEncodeTiled_v12000;

static EncodeTiled encoder() {
    static EncodeTiled fn = nullptr;
    if (fn == nullptr) {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult found;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) ==
                cudaSuccess && found == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<EncodeTiled>(p);
    }
    return fn;
}

// A 2-D fp16 row-major matrix (rows x cols, cols contiguous) read in boxes of box_rows x box_cols, swizzled over
// the box's rows (box_cols 64, 32 or 16: 128-, 64- or 32-byte swizzle).
struct MapKey { const void* ptr; int rows, cols, box_rows, box_cols; };

static bool same(const MapKey& a, const MapKey& b) {
    return a.ptr == b.ptr && a.rows == b.rows && a.cols == b.cols && a.box_rows == b.box_rows &&
           a.box_cols == b.box_cols;
}

// Tensor maps are pure descriptors of (pointer, shape): encoding one costs host time on every call, so the last
// few are kept. Nothing about the data is cached.
static int tensor_map(CUtensorMap* out, const MapKey& key) {
    static MapKey keys[8];
    static CUtensorMap maps[8];
    static bool valid[8] = {};
    static int next = 0;
    for (int i = 0; i < 8; ++i)
        if (valid[i] && same(keys[i], key)) { *out = maps[i]; return 0; }
    EncodeTiled encode = encoder();
    if (encode == nullptr) return (int)cudaErrorNotSupported;
    cuuint64_t dims[2] = {(cuuint64_t)key.cols, (cuuint64_t)key.rows};
    cuuint64_t strides[1] = {(cuuint64_t)key.cols * 2};
    cuuint32_t box[2] = {(cuuint32_t)key.box_cols, (cuuint32_t)key.box_rows};
    const CUtensorMapSwizzle swizzle = key.box_cols == 64 ? CU_TENSOR_MAP_SWIZZLE_128B
                                       : key.box_cols == 32 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B;
    cuuint32_t element_strides[2] = {1, 1};
    CUresult r = encode(out, @TMA_TYPE@, 2, const_cast<void*>(key.ptr), dims, strides, box,
                        element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return (int)cudaErrorInvalidValue;
    keys[next] = key;
    maps[next] = *out;
    valid[next] = true;
    next = (next + 1) % 8;
    return 0;
}

static bool shape_ok(int M, int N, int K) {
    const int limit = 0x7FFFFEFF;  // INT_MAX - 256: tile-local coordinates stay in int range
    if (!(M >= 1 && N >= 8 && K >= 8 && N % 8 == 0 && K % 8 == 0 && M <= limit && N <= limit && K <= limit))
        return false;
    // split-K: every slice has a k-step, and the partials stay within 2 GiB
    if (FIXUP && (long long)((M + BM - 1) / BM) * ((N + BN - 1) / BN) > FIXUP_TILES) return false;  // counted tiles
    return SPLIT_K == 1 ||
           ((K + BK - 1) / BK >= SPLIT_K && (DSMEM || (size_t)SPLIT_K * M * N * 4 <= (size_t(1) << 31)));
}

static size_t workspace_bytes_for(int M, int N, int K) {
    return SPLIT_K > 1 && !DSMEM && shape_ok(M, N, K) ? (size_t)SPLIT_K * M * N * 4 : 0;
}

// Per device: the smem limit raised once, and how many CTAs are resident at once (the persistent grid's size): one
// per SM, or with clusters as many whole clusters as the GPCs hold.
static cudaError_t device_setup(int* slots) {
    static int known[64] = {};
    int dev = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err != cudaSuccess) return err;
    if (dev < 64 && known[dev]) { *slots = known[dev]; return cudaSuccess; }
    err = cudaFuncSetAttribute(hgemm_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (err != cudaSuccess) return err;
    int sms = 0;
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (err != cudaSuccess) return err;
    *slots = sms;
    if constexpr (CLUSTER_CTAS > 1) {
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(sms / CLUSTER_CTAS * CLUSTER_CTAS);
        config.blockDim = dim3(THREADS);
        config.dynamicSmemBytes = SMEM_BYTES;
        cudaLaunchAttribute attribute[1];
        attribute[0].id = cudaLaunchAttributeClusterDimension;
        attribute[0].val.clusterDim.x = CLUSTER_CTAS;
        attribute[0].val.clusterDim.y = 1;
        attribute[0].val.clusterDim.z = 1;
        config.attrs = attribute;
        config.numAttrs = 1;
        int clusters = 0;
        // More clusters than are resident would only queue (no cluster waits on another): the SM count's share
        // is the fallback when the query is not answered.
        if (cudaOccupancyMaxActiveClusters(&clusters, hgemm_wgmma_kernel, &config) == cudaSuccess && clusters > 0)
            *slots = clusters * CLUSTER_CTAS;
        else
            (void)cudaGetLastError();
    }
    if (dev < 64) known[dev] = *slots;
    return cudaSuccess;
}

}  // namespace kr_wg

extern "C" {

int kernelrl_hgemm_supports(int M, int N, int K) { return kr_wg::shape_ok(M, N, K) ? 1 : 0; }

size_t kernelrl_hgemm_workspace(int M, int N, int K) { return kr_wg::workspace_bytes_for(M, N, K); }

const char* kernelrl_hgemm_b_layout(void) { return kr_wg::B_KMAJOR ? "nk" : "kn"; }

int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K, void* workspace,
                   size_t workspace_bytes, cudaStream_t stream) {
    using namespace kr_wg;
    if (!shape_ok(M, N, K)) return (int)cudaErrorInvalidValue;
    const size_t need = workspace_bytes_for(M, N, K);
    if (need && (workspace == nullptr || workspace_bytes < need)) return (int)cudaErrorInvalidValue;
    if (((uintptr_t)A | (uintptr_t)B | (uintptr_t)C | (need ? (uintptr_t)workspace : 0)) & 15)
        return (int)cudaErrorMisalignedAddress;
    int slots = 0;
    cudaError_t err = device_setup(&slots);
    if (err != cudaSuccess) return (int)err;
    CUtensorMap map_a, map_b;
    int rc = tensor_map(&map_a, MapKey{A, M, K, A_BOX_ROWS, 64});
    if (rc) return rc;
    rc = B_KMAJOR ? tensor_map(&map_b, MapKey{B, N, K, B_BOX_ROWS, 64})
                  : tensor_map(&map_b, MapKey{B, K, N, B_BOX_ROWS, B_BOX_COLS});
    if (rc) return rc;
    CUtensorMap map_c = map_a;  // unused without the TMA-store epilogue
    if (TMA_STORE && (rc = tensor_map(&map_c, MapKey{C, M, N, 64, 64}))) return rc;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int ktiles = (K + BK - 1) / BK, per_split = (ktiles + SPLIT_K - 1) / SPLIT_K;
    const long long units = (long long)((tiles_m + CLUSTER_M - 1) / CLUSTER_M) * ((tiles_n + CLUSTER_N - 1) / CLUSTER_N)
                            * UNIT_SPLITS;
    if (units > 0x7FFFFFFF) return (int)cudaErrorInvalidValue;
    const int clusters = slots / CLUSTER_CTAS;  // persistent CTAs, whole clusters of them
    const int grid = (int)(units < clusters ? units : clusters) * CLUSTER_CTAS;
    float* partials = static_cast<float*>(workspace);
    Elem* out = reinterpret_cast<Elem*>(C);  // the contract's pointers are __half*; a bf16 point reads them as bf16
    unsigned int* arrivals = nullptr;
    if constexpr (FIXUP) {  // this call's set of counters: the symbol's address, looked up once per device
        static std::atomic<unsigned int> calls{0};
        static unsigned int* bases[64] = {};
        int dev = 0;
        if ((err = cudaGetDevice(&dev)) != cudaSuccess) return (int)err;
        if (dev >= 64) return (int)cudaErrorInvalidDevice;
        if (bases[dev] == nullptr &&
            (err = cudaGetSymbolAddress(reinterpret_cast<void**>(&bases[dev]), fixup_arrivals)) != cudaSuccess)
            return (int)err;
        arrivals = bases[dev] + (size_t)(calls.fetch_add(1) % FIXUP_SLOTS) * FIXUP_TILES * UNIT_WARPS;
    }
    hgemm_wgmma_kernel<<<grid, THREADS, SMEM_BYTES, stream>>>(map_a, map_b, map_c, out, partials, M, N, K, tiles_m,
                                                              tiles_n, per_split, arrivals);
    err = cudaGetLastError();
    if (err != cudaSuccess || SPLIT_K == 1 || DSMEM || FIXUP) return (int)err;
    const size_t mn = (size_t)M * N, groups = mn / 8;
    const unsigned blocks = (unsigned)(groups / 256 + 1 < (size_t)slots * 8 ? groups / 256 + 1 : (size_t)slots * 8);
    if constexpr (PDL) {
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(blocks);
        config.blockDim = dim3(256);
        config.stream = stream;
        cudaLaunchAttribute attribute[1];
        attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute[0].val.programmaticStreamSerializationAllowed = 1;
        config.attrs = attribute;
        config.numAttrs = 1;
        return (int)cudaLaunchKernelEx(&config, splitk_reduce_kernel, (const float*)partials, out, mn);
    }
    splitk_reduce_kernel<<<blocks, 256, 0, stream>>>(partials, out, mn);
    return (int)cudaGetLastError();
}

"""
