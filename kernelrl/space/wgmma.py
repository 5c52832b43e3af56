"""The `wgmma` family: a hand-written Hopper HGEMM on the copy engine (TMA) and warpgroup MMA (wgmma), no CUTLASS.

One point = one CTA tile of BM x BN (BM = 64 per consumer warpgroup) marching over K in BK = 64 steps:
- a producer warpgroup (one thread issues) loads A and B tiles with `cp.async.bulk.tensor` into a STAGES-deep ring
  of 128-byte-swizzled shared memory, each stage guarded by a full and an empty mbarrier;
- one, two or three consumer warpgroups issue `wgmma.mma_async.m64n{BN}k16` straight from shared memory (descriptors, no
  ldmatrix), keep one wgmma group in flight and free a stage as soon as the group that read it retires;
- the CTAs are persistent (one per SM, tiles handed out in a grouped raster for L2 reuse), so a CTA's epilogue
  (registers to global, guarded at the edges) overlaps the producer's loads of its next tile;
- with two or three consumers the producer gives its registers to them (`setmaxnreg`; three share a 512-thread
  CTA's 64K registers, compiled within 128 a thread).

Both layouts of B from the start: `kn` is the paper's (B is K x N row-major: N-major for wgmma, transposed in the
descriptor), `nk` is what nn.Linear holds (B given as N x K, K contiguous: K-major like A). An `nk` point exports
`kernelrl_hgemm_b_layout()` returning "nk", and the evaluator then passes B^T (N x K) as the B pointer.

Shapes: K % 8 == 0 and N % 8 == 0 (TMA global strides are multiples of 16 bytes; C is stored in 4-byte pairs);
any M. Tiles past an edge are zero-filled by the copy engine and their stores guarded."""

from __future__ import annotations

from pathlib import Path

from kernelrl.space.base import HOPPER, KernelSpace, Variant, over_shared_memory
from kernelrl.workloads.hgemm import B_LAYOUTS, GemmProblem

BK = 64  # halves per smem row: 128 bytes, the 128-byte swizzle's span
INT_MAX = 2**31 - 1
BARRIER_BYTES = 8
ALIGN_SLACK = 1024  # the dynamic smem base is rounded up to the 1024-byte period of the 128-byte swizzle
PRODUCER_REGS = 40
# setmaxnreg's consumer registers by consumer count: 128 * (40 + 2 * 232) and 128 * (40 + 3 * 152) <= 65536
CONSUMER_REGS = {1: 232, 2: 232, 3: 152}
# Registers a consumer thread needs besides its accumulators (descriptors, indices, loop state): a floor for check().
REG_OVERHEAD = 40
# What ptxas may allocate per thread: __launch_bounds__(threads, 1) caps a 384-thread kernel at 168 for every
# warpgroup and a 512-thread one at 128 (setmaxnreg moves registers between warpgroups at run time; the code is
# compiled within the cap): three consumers of 64 rows hold at most 88 fp32 accumulators a thread (BN <= 176).
MAX_REGS = {256: 255, 384: 168, 512: 128}
MAX_WORKSPACE = 1 << 31  # split-K partials: S * M * N fp32
# split_reduce=fixup: the output tiles one call's arrival counters cover (a warp's counter per tile, in the kernel's
# own device memory, FIXUP_SLOTS sets of them taken in turn by successive calls)
FIXUP_TILES = 4096


class WgmmaSpace(KernelSpace):
    family = "wgmma"
    knobs = {
        # 256: two cooperative consumers of 128 rows (two m64 blocks each, 128 fp32 accumulators a thread at BN 128);
        # 192: three cooperative consumers of 64 rows (a 512-thread CTA; BN up to 176 within its register cap)
        "BM": [64, 128, 192, 256],
        "BN": list(range(64, 257, 16)),  # any multiple of 16 (see pruned: those off the B box stay off the grid)
        "stages": [2, 3, 4, 5, 6, 7, 8, 10, 12],  # 10 and 12 fit small tiles only (cuBLAS runs 64x64 with 13)
        "raster": [1, 8],
        "b_layout": list(B_LAYOUTS),
        "split_k": [1, 2, 4, 8, 16],
        "schedule": ["cooperative", "pingpong"],
        "dtype": ["fp16", "bf16"],
        # tma: the tile staged whole in shared memory, then stored; tma_sub: two 64 x 64 boxes a consumer, each stored
        # while the next is written (an eighth of a 256x128 tile's staging: room for one more stage). Verified on the
        # H100 (tests/gpu/test_wgmma.py, test_fused_mlp.py) and measured there (benchmarks/results/h100/
        # wgmma_subtile/): 50 pairs on 10 shapes ran a geomean 1.06x their whole-tile twins at 3 stages (47
        # faster) and 1.17x their direct-store twins at the same stages (all 50).
        "epilogue": ["direct", "tma", "tma_sub"],
        "pdl": [False, True],
        # The main kernel launched programmatically (PDL): its CTAs may start, set up their barriers and fetch their
        # tensor-map descriptors while the previous kernel on the stream finishes, and wait (griddepcontrol.wait)
        # only before their first global access. Short calls pay a fixed ~0.9 us over cuBLAS that this may hide
        # (benchmarks/results/h200/tuned_wgmma/gap_regimes.md).
        "main_pdl": [False, True],
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
                   "cluster": "1x1", "split_reduce": "workspace", "main_pdl": False}

    # -- derived quantities ----------------------------------------------------------------------------------
    @staticmethod
    def consumers(variant: Variant) -> int:
        """Consumer warpgroups: cooperative ones split a tile's rows (one for 64, two for 128 or 256, three for
        192); ping-pong ones take turns on whole tiles, one's epilogue overlapping the other's main loop."""
        if variant.p["schedule"] == "pingpong":
            return 2
        return 3 if variant.p["BM"] == 192 else 2 if variant.p["BM"] >= 128 else 1

    @staticmethod
    def m_blocks(variant: Variant) -> int:
        """m64 wgmma blocks per consumer per k-step (and accumulator sets per consumer thread)."""
        bm = variant.p["BM"]
        return bm // 64 if variant.p["schedule"] == "pingpong" else bm // (64 * WgmmaSpace.consumers(variant))

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
        """The TMA-store epilogue's 64 x 64 C boxes (16-bit): each consumer stages its own rows, so one consumer's
        store overlaps the other's main loop; all of them (tma) or two that its boxes take in turn (tma_sub)."""
        p = variant.p
        boxes = {"tma": self.m_blocks(variant) * p["BN"] // 64, "tma_sub": 2}.get(p["epilogue"], 0)
        return self.consumers(variant) * boxes * 64 * 64 * 2

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
        reason = self.grid_reason(variant, free=("BM",))
        if reason is not None:
            return reason
        p = variant.p
        if p["BM"] not in self.knobs["BM"]:
            return f"BM={p['BM']!r} is not one of {self.knobs['BM']}"
        if p["stages"] < 2:
            return "at least 2 stages: the copy engine fills one while the tensor cores read another"
        smem = self.smem_bytes(variant)
        if smem > HOPPER["smem_per_block"]:
            return over_shared_memory(f"shared memory {smem} B ({p['stages']} stages of {self.stage_bytes(variant)} B) "
                                      f"exceeds {HOPPER['smem_per_block']} B per block")
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
        if p["main_pdl"] and (p["cluster"] != "1x1" or self.dsmem(variant)):
            return "main_pdl launches single CTAs (no thread-block clusters: cluster 1x1, no DSMEM split-K)"
        if p["epilogue"] != "direct" and (p["split_k"] > 1 or p["BN"] % 64):
            return ("the TMA-store epilogue stores 16-bit C in 64-column boxes: split_k 1 and BN % 64 == 0 (split-K "
                    "partials are fp32, stored directly)")
        if p["split_reduce"] == "dsmem":
            if p["split_k"] not in (2, 4, 8):
                return (f"split_reduce=dsmem puts a tile's split_k={p['split_k']} slices in one cluster: 2, 4 or 8 "
                        f"CTAs (8 is Hopper's portable cluster size)")
            if p["schedule"] != "cooperative" or p["cluster"] != "1x1" or p["pdl"] or p["epilogue"] != "direct":
                return ("split_reduce=dsmem: cooperative consumers, cluster 1x1, no pdl, direct epilogue (the "
                        "cluster's CTAs store their shares of the summed tile themselves)")
            if self.m_blocks(variant) > 1:
                return "split_reduce=dsmem sums one m64 block per consumer: BM 64 or 128"
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
        if variant.p["main_pdl"]:
            # Compile-tested only. GPU test points: tests/gpu/test_wgmma.py; bench: ONLY=mainpdl
            # benchmarks/device/wgmma.sh.
            return "the main kernel's programmatic launch is off the default grid until verified on a GPU"
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
            # The subtiled 256x128 and 128x256 tiles on the H100 (benchmarks/results/h100/wgmma_subclusters/): 60
            # pairs 0.96; faster only at 8192^3 with the pair sharing the tile's long side (up to 1.014x).
            return "2-CTA clusters are off the default grid: no faster than single CTAs on the H200 or the H100"
        if self.dsmem(variant):
            # Verified on the H200 (tests/gpu/test_wgmma.py) and measured (benchmarks/results/h200/wgmma/v3_dsmem/):
            # 50 pairs on 10 shapes ran a geomean 0.73 of their workspace twins, 7 faster (up to 1.17x at 1024^3);
            # at the deep-K shape it was built for, par (18.8 vs 19.0 us) at best. The model's on-chip reduce
            # would otherwise short-list it first for deep K.
            return "the DSMEM split-K is off the default grid: slower than the workspace split-K on the H200"
        if variant.p["BM"] == 256 and (variant.p["BN"] < 128 or variant.p["split_k"] > 1 or variant.acc != "fp32"
                                       or variant.p["cluster"] != "1x1"):
            # Verified on the H100 (tests/gpu/test_wgmma.py: both layouts, split-K, the TMA epilogue, fp16
            # accumulation) and measured there (benchmarks/results/h100/wgmma_bm256/): 256x128 ran 1.05-1.19x its
            # 128-row twin on outputs of 2048x2048 and up; 256x64 lost to 128x64 on all 10 shapes. Split-K, CTA
            # pairs and fp16 accumulation at 256 rows are verified or compiled, not benched.
            return ("256-row tiles narrower than 128 columns, split, in CTA pairs or with fp16 accumulators are off "
                    "the default grid: 256x64 lost to its 128-row twin on the H100, the rest is not benched yet")
        if variant.p["BM"] == 192:
            # Verified on the H100 (tests/gpu/test_wgmma.py) and measured there (benchmarks/results/h100/wgmma_bm192/):
            # 40 pairs on 10 shapes ran a geomean 0.81 of their 128-row twins (6 faster: 192x176 nk at 2048^3 and
            # 4096^3, and 8192^3) and 1.02 of their 256-row twins (faster on the small outputs 256 rows leave idle).
            return ("192-row tiles (three consumer warpgroups) are off the default grid: slower than 128-row tiles on "
                    "the H100")
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
        # direct-store points keep their first names
        epilogue = {"tma": "_et", "tma_sub": "_es"}.get(p["epilogue"], "")
        pdl = ("_pdl" if p["pdl"] else "") + ("_pdlmain" if p["main_pdl"] else "")
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
            "@CONSUMER_REGS@": str(CONSUMER_REGS[self.consumers(variant)]), "@SPLIT_K@": str(p["split_k"]),
            "@PINGPONG@": "true" if p["schedule"] == "pingpong" else "false",
            "@ELEM@": "__nv_bfloat16" if p["dtype"] == "bf16" else "__half",
            "@ELEM2@": "__nv_bfloat162" if p["dtype"] == "bf16" else "__half2",
            "@PACK2@": "__floats2bfloat162_rn" if p["dtype"] == "bf16" else "__floats2half2_rn",
            "@TMA_TYPE@": ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16" if p["dtype"] == "bf16"
                           else "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"),
            "@DTYPE@": p["dtype"], "@TMA_STORE@": "true" if p["epilogue"] != "direct" else "false",
            "@SUBTILE@": "true" if p["epilogue"] == "tma_sub" else "false",
            "@PDL@": "true" if p["pdl"] else "false", "@MAIN_PDL@": "true" if p["main_pdl"] else "false",
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


# The CUDA source (wgmma.cu.in beside this file, CUDA kept in a CUDA file): @KEY@ markers are replaced by render();
# the rest is plain CUDA.
SOURCE = Path(__file__).with_name("wgmma.cu.in").read_text()
