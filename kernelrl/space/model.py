"""A cheap cost model that ranks a family's points for a shape before anything is compiled.

It is a pruning device, not a predictor of record: roofline time of the *padded* tile work at a per-family fraction of
the tensor-core peak, multiplied out by wave quantization (a partial last wave costs a full wave), bounded below by
the bytes that must cross HBM (split-K partials included), the operand panels every tile streams through L2, and a
fixed launch/prologue latency. Measurement decides."""

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
CLUSTER_REDUCE_US = 0.3
# Clusters of 4 or more K slices sustain less than the model's rate: on the H200 the small family's cluster_k 4 and 8
# points measured 1.65x the prediction (geomean, 1,935 measurements), its cluster_k 1 and 2 points 1.15x
# (benchmarks/model_error.py on benchmarks/results/h200x2/tune_one_measurements.csv). The factor scales the compute
# term only, which brings them to ~1.4x. 16 is assumed to behave like 8 until measured.
CLUSTER_SPLIT_EFFICIENCY = 1.15 / 1.65


@functools.lru_cache(maxsize=65536)
def _resources(variant: Variant) -> dict:
    return SPACES[variant.family].resources(variant)


def blocks_per_sm(resources: dict, machine: Machine = H200) -> int:
    smem = max(1, resources.get("smem_bytes", 0))
    threads = max(1, resources.get("threads", 128))
    return max(1, min(machine.smem_per_sm // smem, machine.max_threads_per_sm // threads, machine.max_blocks_per_sm))


def waves(variant: Variant, problem: GemmProblem, machine: Machine = H200) -> tuple[int, int, float]:
    """(CTAs, waves, efficiency of the last wave's quantization: CTAs / (waves × slots))."""
    r = _resources(variant)
    bm, bn, _ = r["tile"]
    cluster = r.get("cluster", (1, 1))
    ctas = math.ceil(problem.m / bm) * math.ceil(problem.n / bn) * r.get("split_k", 1)
    # A cluster of CM×CN CTAs is scheduled together: round the grid up to whole clusters.
    per_cluster = cluster[0] * cluster[1]
    ctas = math.ceil(ctas / per_cluster) * per_cluster
    slots = machine.sms * blocks_per_sm(r, machine)
    n_waves = math.ceil(ctas / slots)
    return ctas, n_waves, ctas / (n_waves * slots)


def predict_us(variant: Variant, problem: GemmProblem, machine: Machine = H200) -> float:
    r = _resources(variant)
    bm, bn, _ = r["tile"]
    split = r.get("split_k", 1)
    padded_flops = 2.0 * math.ceil(problem.m / bm) * bm * math.ceil(problem.n / bn) * bn * problem.k
    _, _, quantization = waves(variant, problem, machine)
    rate = machine.tensor_tflops * 1e12 * FAMILY_EFFICIENCY.get(variant.family, 0.5)
    compute_us = padded_flops / rate / quantization * 1e6
    if r.get("split_reduce") == "cluster" and split >= 4:
        compute_us /= CLUSTER_SPLIT_EFFICIENCY
    memory_us = problem.min_bytes / (machine.hbm_tbps * 1e12) * 1e6
    # Split-K through a workspace writes fp32 partials and a second kernel reads them back: time added after the
    # main kernel. A cluster reduction (DSMEM) stays on chip: a barrier and a few hundred nanoseconds.
    on_chip = r.get("split_reduce") == "cluster"
    fixup = r.get("split_reduce") == "fixup"  # CUTLASS stream-K's split-K: partials reduced in-kernel, in L2
    if split > 1 and on_chip:
        reduce_us = CLUSTER_REDUCE_US
    elif split > 1 and fixup:
        reduce_us = (2 * split * problem.m * problem.n * 4) / (machine.l2_tbps * 1e12) * 1e6
    elif split > 1:
        reduce_us = (2 * split * problem.m * problem.n * 4 + problem.m * problem.n * 2) / (machine.hbm_tbps * 1e12) * 1e6
    else:
        reduce_us = 0.0
    # Every CTA streams its A and B panels through L2: (BM + BN) × K halves per output tile.
    operand_bytes = math.ceil(problem.m / bm) * math.ceil(problem.n / bn) * (bm + bn) * problem.k * 2
    l2_us = operand_bytes / (machine.l2_tbps * 1e12) * 1e6
    launches = 2 if split > 1 and not (on_chip or fixup) else 1
    return max(compute_us, memory_us, l2_us) + reduce_us + LAUNCH_US * launches


def rank(variants: list[Variant], problem: GemmProblem, machine: Machine = H200,
         correction=None) -> list[tuple[float, Variant]]:
    """Variants that can run `problem`, fastest predicted first (ties broken by name, so the order is stable). With a
    `correction` (kernelrl/space/learned.py) each prediction is scaled by what this GPU measured."""
    scored = []
    for v in variants:
        if SPACES[v.family].runs(v, problem) is None:
            us = predict_us(v, problem, machine)
            scored.append((us * correction.factor(v, problem, us) if correction is not None else us, v))
    return sorted(scored, key=lambda sv: (sv[0], sv[1].name))
