"""A cheap cost model that ranks a family's points for a shape before anything is compiled.

It is a pruning device, not a predictor of record: roofline time of the *padded* tile work at a per-family fraction of
the tensor-core peak, multiplied out by wave quantization (a partial last wave costs a full wave), bounded below by
the bytes that must cross HBM (split-K partials included, and for a family that declares its tile order the operand
panels L2 cannot keep between reuses), the operand panels every tile streams through L2, and a fixed
launch/prologue latency. Points the model cannot tell apart are ranked by those HBM bytes, then by pipeline depth,
then by epilogue. Measurement decides."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from kernelrl.space.base import HOPPER, SPACES, Variant
from kernelrl.workloads.hgemm import GemmProblem


@dataclass(frozen=True)
class Machine:
    sms: int = HOPPER["sms"]
    tensor_tflops: float = 990.0     # dense fp16 tensor-core peak (datasheet lead; ~750 measured through cuBLAS)
    hbm_tbps: float = 4.3            # device-to-device copy measured on the H200 (bytes read + written)
    l2_tbps: float = 12.0            # L2 → SM operand bandwidth (lead, not measured here): small tiles re-read more
    l2_bytes: int = 50 << 20         # the H200's L2
    smem_per_sm: int = HOPPER["smem_per_sm"]
    max_threads_per_sm: int = HOPPER["max_threads_per_sm"]
    max_blocks_per_sm: int = HOPPER["max_blocks_per_sm"]


H200 = Machine()
# Fraction of the tensor peak a family can sustain on a full wave: wgmma reaches ~0.8, mma.sync tops out near 0.6 on
# Hopper (it cannot use the wgmma path), the plain WMMA reference near 0.35. `small` is the mma.sync main loop on
# smaller tiles: what small tiles lose is charged by the L2 operand term, not here.
# wgmma: its best points measured 681 TFLOP/s at 8192^3 and 674 at 4096^3 on the H200 (0.69 of the peak below;
# benchmarks/results/h200/wgmma/wgmma_device.csv), where cuBLASLt ran 702.
FAMILY_EFFICIENCY = {"cutlass_sm90": 0.80, "mma_sync": 0.60, "small": 0.60, "wmma_reference": 0.35,
                     "wgmma": 0.69}
LAUNCH_US = 2.0
# Share of L2 that still holds an operand panel when its next reader comes (a lead, not measured: the L2 is two
# partitions, and C tiles and the other operand pass through it too). It puts the wgmma family's raster-1 points
# at 8192x14336x4096 (bf16, nt) on the HBM roof at about 1.3 ms, where they measured 1.61 ms and F.linear 1.21 ms
# (benchmarks/results/h200/llama/wgmma_vs_flinear.csv): B re-read for every row of tiles.
L2_RESIDENT = 0.6
# Among tied points, an epilogue that stores C through shared memory and TMA ranks ahead of direct register stores:
# on the H200 the wgmma family's TMA-store points ran 1.04-1.06x their direct twins on 13 of 14 shapes with K = 4096
# (0.99x on the largest) and 1.00-1.02x with K = 14336 (bf16 nt;
# benchmarks/results/h200/wgmma/epilogue_pairs_llama.csv).
EPILOGUE_RANK = {"tma": 0, "tma_sub": 0, "direct": 1}
# Stages that keep enough loads in flight (4 x 64 of K, CUTLASS's usual depth for these tiles): among tied points a
# deeper pipeline ranks first up to this, the epilogue next, and more stages only after that.
DEEP_ENOUGH = 4
CLUSTER_REDUCE_US = 0.3
# Clusters of 4 or more K slices sustain less than the model's rate: on the H200 the small family's cluster_k 4 and 8
# points measured 1.65x the prediction (geomean, 1,935 measurements), its cluster_k 1 and 2 points 1.15x
# (benchmarks/experiments/model_error.py on benchmarks/results/h200x2/tune_one_measurements.csv). The factor scales
# the compute term only, which brings them to ~1.4x. 16 is assumed to behave like 8 until measured.
CLUSTER_SPLIT_EFFICIENCY = 1.15 / 1.65
# A persistent CTA pays a fixed cost per work unit it takes (the pipeline's ramp and the epilogue's store, which a
# cooperative schedule does not overlap with the next unit's main loop; ping-pong hides about half of it). Fitted on
# the H200's wgmma screening measurements (benchmarks/experiments/model_unit_overhead.py, results in
# benchmarks/results/h200/wgmma/model_unit_overhead/): with it the model's first choice among each shape's measured
# candidates was the fastest on 280 of 696 fp32 shapes, cross-validated by shape (227 without), at 1.020 of the
# fastest (1.076 without); on the fp16 run it was not fitted on, 346 of 963 (180) at 1.026 (1.085).
UNIT_OVERHEAD_US = {"cooperative": 0.5, "pingpong": 0.25}


@functools.lru_cache(maxsize=65536)
def _resources(variant: Variant) -> dict:
    return SPACES[variant.family].resources(variant)


def blocks_per_sm(resources: dict, machine: Machine = H200) -> int:
    smem = max(1, resources.get("smem_bytes", 0))
    threads = max(1, resources.get("threads", 128))
    return max(1, min(machine.smem_per_sm // smem, machine.max_threads_per_sm // threads, machine.max_blocks_per_sm))


def waves(variant: Variant, problem: GemmProblem, machine: Machine = H200) -> tuple[int, int, float]:
    """(CTAs, waves, efficiency of the last wave's quantization: CTAs / (waves × slots)). For a persistent kernel
    (resources `persistent`: one CTA per SM takes the work units in turn) CTAs are its units and the slots its SMs,
    however many of its CTAs shared memory would let an SM hold."""
    r = _resources(variant)
    bm, bn, _ = r["tile"]
    cluster = r.get("cluster", (1, 1))
    ctas = math.ceil(problem.m / bm) * math.ceil(problem.n / bn) * r.get("split_k", 1)
    # A cluster of CM×CN CTAs is scheduled together: round the grid up to whole clusters.
    per_cluster = cluster[0] * cluster[1]
    ctas = math.ceil(ctas / per_cluster) * per_cluster
    slots = machine.sms if r.get("persistent") else machine.sms * blocks_per_sm(r, machine)
    n_waves = math.ceil(ctas / slots)
    return ctas, n_waves, ctas / (n_waves * slots)


def operand_hbm_bytes(variant: Variant, problem: GemmProblem, machine: Machine = H200) -> float:
    """A and B bytes read from HBM. For a family whose resources declare its tile order (`raster`: tile rows per
    group, the group walked column by column; 1 is row-major), B is read once per group of tile rows, and only the
    part of it L2 no longer holds when the next group comes back costs HBM again. Otherwise: each read once."""
    a, b = 2.0 * problem.m * problem.k, 2.0 * problem.k * problem.n
    r = _resources(variant)
    group = r.get("raster")
    if not group:
        return a + b
    bm = r["tile"][0]
    passes = math.ceil(math.ceil(problem.m / bm) / group)
    between_visits = b + group * bm * problem.k * 2.0  # all of B, and the group's A panels
    miss = max(0.0, 1.0 - machine.l2_bytes * L2_RESIDENT / between_visits)
    return a + b * (1.0 + (passes - 1) * miss)


def predict_us(variant: Variant, problem: GemmProblem, machine: Machine = H200) -> float:
    return _predict(variant, problem, machine)[0]


def _predict(variant: Variant, problem: GemmProblem, machine: Machine) -> tuple[float, float]:
    """(predicted µs, operand bytes from HBM): rank breaks ties by the second without computing it again."""
    r = _resources(variant)
    bm, bn, _ = r["tile"]
    split = r.get("split_k", 1)
    padded_flops = 2.0 * math.ceil(problem.m / bm) * bm * math.ceil(problem.n / bn) * bn * problem.k
    ctas, _, quantization = waves(variant, problem, machine)
    rate = machine.tensor_tflops * 1e12 * FAMILY_EFFICIENCY.get(variant.family, 0.5)
    compute_us = padded_flops / rate / quantization * 1e6
    if r.get("split_reduce") == "cluster" and split >= 4:
        compute_us /= CLUSTER_SPLIT_EFFICIENCY
    operands = operand_hbm_bytes(variant, problem, machine)
    hbm_bytes = max(problem.min_bytes, operands + 2.0 * problem.m * problem.n)
    memory_us = hbm_bytes / (machine.hbm_tbps * 1e12) * 1e6
    # Split-K through a workspace writes fp32 partials and a second kernel reads them back: time added after the
    # main kernel. A cluster reduction (DSMEM) stays on chip: a barrier and a few hundred nanoseconds.
    on_chip = r.get("split_reduce") == "cluster"
    fixup = r.get("split_reduce") == "fixup"  # CUTLASS stream-K's split-K: partials reduced in-kernel, in L2
    if split > 1 and on_chip:
        reduce_us = CLUSTER_REDUCE_US
    elif split > 1 and fixup:
        reduce_us = (2 * split * problem.m * problem.n * 4) / (machine.l2_tbps * 1e12) * 1e6
    elif split > 1:
        reduce_us = ((2 * split * problem.m * problem.n * 4 + problem.m * problem.n * 2)
                     / (machine.hbm_tbps * 1e12) * 1e6)
    else:
        reduce_us = 0.0
    # Every CTA streams its A and B panels through L2: (BM + BN) × K halves per output tile. Multicast in a cluster
    # would serve a shared tile once per pair, but it is not credited: the wgmma family's 2-CTA pairs measured a
    # geomean 0.94 of their single-CTA twins (80 pairs on 10 shapes, 5 faster;
    # benchmarks/results/h200/wgmma/v3_clusters/wgmma_device.csv), so L2 bandwidth is not what bounds them.
    operand_bytes = math.ceil(problem.m / bm) * math.ceil(problem.n / bn) * (bm + bn) * problem.k * 2
    l2_us = operand_bytes / (machine.l2_tbps * 1e12) * 1e6
    # A reduce kernel launched programmatically (PDL) is charged as a second launch too: the wgmma family's PDL
    # points measured a geomean 0.98 of their twins (20 pairs, 6 faster; benchmarks/results/h200/wgmma/v3/).
    launches = 2 if split > 1 and not (on_chip or fixup) else 1
    fixed_us = reduce_us + LAUNCH_US * launches + unit_overhead_us(r, ctas, machine)
    return max(compute_us, memory_us, l2_us) + fixed_us, operands


def unit_overhead_us(resources: dict, units: int, machine: Machine = H200) -> float:
    """The per-unit cost of a persistent kernel that declares one (`unit_overhead`: its schedule), times the units
    (its CTAs' worth of work, as `waves` counts them) that its busiest CTA takes (one CTA per SM)."""
    per_unit = UNIT_OVERHEAD_US.get(resources.get("unit_overhead", ""), 0.0)
    return per_unit * busiest_cta_units(units, machine) if per_unit else 0.0


def busiest_cta_units(units: int, machine: Machine = H200) -> int:
    """The work units the busiest CTA of a persistent kernel takes: one CTA per SM (at most one per unit)."""
    return math.ceil(units / min(units, machine.sms))


def rank(variants: list[Variant], problem: GemmProblem, machine: Machine = H200,
         correction=None) -> list[tuple[float, Variant]]:
    """Variants that can run `problem`, fastest predicted first. Ties (the model knows tiles, not schedules) go to
    the point that reads fewer bytes from HBM, then to the deeper pipeline (up to DEEP_ENOUGH stages), then to a
    TMA-store epilogue, then to more stages, then by name, so the order is stable.
    With a `correction` (kernelrl/space/learned.py) each prediction is scaled by what this GPU measured."""
    scored = []
    for v in variants:
        if SPACES[v.family].runs(v, problem) is None:
            us, operands = _predict(v, problem, machine)
            us = us * correction.factor(v, problem, us) if correction is not None else us
            r = _resources(v)
            stages = r.get("stages", 0)
            tie = (operands, -min(stages, DEEP_ENOUGH),
                   EPILOGUE_RANK.get(r.get("epilogue", ""), 1), -stages, v.name)
            scored.append((us, tie, v))
    return [(us, v) for us, _, v in sorted(scored, key=lambda s: (s[0], s[1]))]
