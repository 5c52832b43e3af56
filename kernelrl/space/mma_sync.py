"""The `mma_sync` family: a hand-written tensor-core HGEMM built from the PTX warp-level primitives.

One point = one block tile (BM x BN x BK) split into warp tiles (WM x WN), a cp.async multi-stage global->shared
pipeline (16-byte cp.async.cg, src-size 0 zero-fills rows/columns outside the matrix), XOR-swizzled shared memory
that ldmatrix reads without bank conflicts, ldmatrix.x4 (.trans for B, which is K x N row-major) into register
fragments, and mma.sync.aligned.m16n8k16 with an fp32 or fp16 accumulator. Optional: double-buffered register
fragments, a grouped block raster for L2 reuse, parallel split-K through an fp32 workspace, and an epilogue that
stages the C tile through shared memory for 16-byte coalesced stores.

Shapes: N % 8 == 0 and K % 8 == 0 (every 16-byte cp.async chunk of a row lies wholly inside or wholly outside the
matrix); M is arbitrary. The rendered kernelrl_hgemm_supports() says exactly what supports() says.

This module is the space (knobs, derived resources, constraints, names) and its render(); the CUDA text lives in
mma_sync_source.py (header, Config struct, host side, exports, assembly), mma_sync_device.py (tile quantities,
swizzled layouts, PTX wrappers, tile copy) and mma_sync_kernel.py (the GEMM and split-K reduction kernels)."""

from __future__ import annotations

from kernelrl.space.base import HOPPER, KernelSpace, Variant, over_shared_memory
from kernelrl.space.mma_sync_source import BODY, CONFIG_LINES, EXPORTS, HEADER, cuda_source
from kernelrl.workloads.hgemm import GemmProblem

# The public names; BODY, CONFIG_LINES, EXPORTS and HEADER are mma_sync_source's, re-exported where they always were.
__all__ = ["BODY", "C_PAD", "CONFIG_LINES", "EXPORTS", "HEADER", "HOPPER", "INT_MAX", "MAX_REGS",
           "MmaSyncSpace", "REG_OVERHEAD"]

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
        config = dict(
            BM=p["BM"], BN=p["BN"], BK=p["BK"], WM=p["WM"], WN=p["WN"], STAGES=p["stages"],
            FRAG_DB="true" if p["frag_double_buffer"] else "false", SWIZZLE=p["swizzle"], SPLIT_K=p["split_k"],
            CLUSTER_K=p.get("cluster_k", 1),
            EPI_SMEM="true" if p["epilogue"] == "smem" else "false",
            ACC_F16="true" if variant.acc == "fp16" else "false", C_PAD=C_PAD)
        return cuda_source(name=self.name_of(variant), acc=variant.acc, threads=self.warps(variant) * 32,
                           smem=self.smem_bytes(variant), info_json=self.info_json(variant), config=config)
