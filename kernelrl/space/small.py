"""The `small` family: latency-first HGEMMs for the shapes that fill at most a wave of the GPU.

A third of the paper grid runs for less than 5 µs, where cuBLAS's general kernels pay a long prologue and epilogue
and, on small M x N with deep K, leave most SMs idle. This family is the mma_sync kernel (cp.async ring, ldmatrix,
mma.sync m16n8k16, zero-filled edges: see kernelrl/space/mma_sync.py) cut to what latency needs:

  * small block tiles (32x64 up to 64x128) with 4 warps, so even a 64x64 output spreads over several SMs;
  * cluster split-K: the `cluster_k` blocks of one output tile form a thread-block cluster along z, each sums one
    K slice, and the partial tiles are reduced through distributed shared memory (DSMEM) by the blocks themselves:
    one launch, no workspace, no memset, no second kernel, nothing through HBM but A, B and C;
  * no raster swizzle (one wave has nothing to reorder) and short pipelines (2 to 4 stages).

fp32 accumulation only when cluster_k > 1 (the partials are fp32); cluster_k = 1 points serve fp16 too."""

from __future__ import annotations

from kernelrl.space.base import Variant
from kernelrl.space.mma_sync import MmaSyncSpace
from kernelrl.workloads.hgemm import GemmProblem


# Outputs up to 1024 x 1024 (256 tiles of 64 x 64, about two waves): beyond that, small tiles only re-read operands.
MAX_OUTPUT = 1 << 20


class SmallSpace(MmaSyncSpace):
    family = "small"
    knobs = {
        "BM": [32, 64],
        "BN": [64, 128],
        "BK": [32, 64],
        "WM": [16, 32],
        "WN": [32, 64],
        "stages": [2, 3, 4],
        "frag_double_buffer": [0, 1],
        "swizzle": [1],
        "split_k": [1],
        "cluster_k": [1, 2, 4, 8, 16],  # 16: non-portable, Hopper only; for deep K on small outputs
        "epilogue": ["direct", "smem"],
    }

    def check(self, variant: Variant) -> str | None:
        reason = super().check(variant)
        if reason is not None:
            return reason
        p = variant.p
        if self.warps(variant) != 4:
            return "the small family runs 4 warps per block (latency: more, smaller blocks)"
        ck = p["cluster_k"]
        if ck > 1:
            if variant.acc != "fp32":
                return "cluster split-K sums fp32 partials: fp32 accumulator only"
            if p["epilogue"] != "direct":
                return "with cluster_k > 1 the DSMEM reduction stores C itself: epilogue must be direct"
        return None

    def smem_bytes(self, variant: Variant) -> int:
        p = variant.p
        reduction = p["BM"] * (p["BN"] + 8) * 4 if p["cluster_k"] > 1 else 0
        return max(super().smem_bytes(variant), reduction)

    def supports(self, variant: Variant, problem: GemmProblem) -> str | None:
        reason = super().supports(variant, problem)
        if reason is not None:
            return reason
        if problem.m * problem.n > MAX_OUTPUT:
            return (f"{problem.m}x{problem.n} outputs are more than a few waves of small tiles: "
                    "the throughput families serve it")
        ck = variant.p["cluster_k"]
        if ck > 1 and -(-problem.k // variant.p["BK"]) < ck:
            return f"K={problem.k} has fewer than {ck} k-tiles of {variant.p['BK']}: a cluster slice would be empty"
        return None

    def resources(self, variant: Variant) -> dict:
        r = super().resources(variant)
        ck = variant.p["cluster_k"]
        # The cluster's blocks are extra CTAs (as split-K's are), reduced on chip: the model charges no HBM pass.
        return {**r, "split_k": ck, "split_reduce": "cluster" if ck > 1 else None}

    def name_of(self, variant: Variant) -> str:
        p = variant.p
        acc = {"fp32": "f32", "fp16": "f16"}.get(variant.acc, variant.acc)
        return (f"small_{acc}_{p['BM']}x{p['BN']}x{p['BK']}_w{p['WM']}x{p['WN']}_s{p['stages']}"
                f"_db{p['frag_double_buffer']}_ck{p['cluster_k']}_e{p['epilogue']}")
