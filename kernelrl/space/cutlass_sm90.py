"""The `cutlass_sm90` family: CUTLASS 3.x Hopper GEMMs (TMA + wgmma, warp-specialized), one kernel per point.

Each point is instantiated through CUTLASS's own CollectiveBuilders (mainloop: arch Sm90, OpClassTensorOp; epilogue:
the matching Sm90 epilogue builder), kernel `cutlass::gemm::kernel::GemmUniversal`, device `GemmUniversalAdapter`.
The headers come from the PyPI package nvidia-cutlass (`kernelrl.build.toolchain.cutlass_include_dirs()`).

Operands as CUTLASS sees them: A (MxK row-major) is K-major; B (KxN row-major) is N-major ("MN-major",
LayoutB = RowMajor), which the SS wgmma reads straight from shared memory for 16-bit types (no transpose pass);
D (MxN row-major) is written by the epilogue. There is no C operand (ElementC = void, beta = 0): the epilogue never
reads the output buffer, so D = alpha * acc with alpha = 1, rounded once to fp16.

Knobs (the values each may take; `check()` says which combinations CUTLASS accepts):
  tile            BMxBNxBK, one of TILES (BK = 64: four k16 wgmma steps per stage)
  cluster         CMxCN thread-block cluster; CN > 1 multicasts A tiles, CM > 1 multicasts B tiles (TMA multicast)
  schedule        ws        KernelTmaWarpSpecialized (non-persistent: one CTA per output tile) + NoSmemWarpSpecialized
                  pingpong  KernelTmaWarpSpecializedPingpong (persistent; two consumer warpgroups alternate whole
                            tiles so one's epilogue overlaps the other's MMAs) + TmaWarpSpecialized epilogue
                  coop      KernelTmaWarpSpecializedCooperative (persistent; two consumer warpgroups split each tile
                            along M) + TmaWarpSpecializedCooperative epilogue
                  These pairs are the ones CUTLASS's own generator stamps out (cutlass_library/sm90_utils.py,
                  get_valid_schedules): the non-persistent ws kernel only with the default NoSmem epilogue.
  tile_scheduler  persistent (cutlass::gemm::PersistentScheduler) or streamk (StreamKScheduler, decomposition
                  chosen by CUTLASS's heuristic: data-parallel, split-K or stream-K per problem)
  splits          1, or an explicit split-K count for the stream-K scheduler (its SplitK decomposition: each
                  output tile's K range cut into that many units, reduced in-kernel through the workspace; CUTLASS
                  may lower the count to fit the SMs and K). Meant for deep-K shapes with few output tiles, but
                  measured slower than cuBLAS there on the H200, so off the default grid (see pruned())
  stages          "auto" (StageCountAutoCarveout: as many mainloop stages as fit in 227 KB after the epilogue's
                  shared memory) or an explicit count >= 2
  raster, swizzle the persistent scheduler's tile order (along_m / along_n) and swizzle width (1, 2, 4, 8): runtime
                  arguments in CUTLASS, rendered as constants here so one variant is one shared library

The default grid (`points`) is the legal points minus a documented pruning (`pruned()`): raster/swizzle stay at
along_m / 1 there, and `siblings()` lists a structure's raster/swizzle refinements for a second tuning round."""

from __future__ import annotations

import math

from kernelrl.space.base import HOPPER, KernelSpace, Variant, over_shared_memory
from kernelrl.workloads.hgemm import GemmProblem

TILES = ["64x128x64", "128x128x64", "128x256x64", "256x128x64", "128x64x64", "64x256x64"]
CLUSTERS = ["1x1", "2x1", "1x2", "2x2"]
SCHEDULES = ["ws", "coop", "pingpong"]
TILE_SCHEDULERS = ["persistent", "streamk"]
RASTERS = ["along_m", "along_n"]
SWIZZLES = [1, 2, 4, 8]
# An explicit stage count is accepted by check() (2 <= stages, fits in shared memory) but the grid enumerates only
# "auto": CUTLASS's carveout rule already picks the deepest pipeline that fits, and every explicit count would
# multiply the compile bill.
STAGES = ["auto"]
SPLITS = [1, 2, 4, 8, 16]
CANONICAL_RASTER, CANONICAL_SWIZZLE = "along_m", 1

# cutlass/gemm/collective/builders/sm90_common.inl: sm90_smem_capacity_bytes (227 KB, the opt-in maximum per block).
SMEM_CAPACITY = 232448
assert SMEM_CAPACITY == HOPPER["smem_per_block"]
# sizeof(PipelineTmaAsync<1>::SharedStorage): one full and one empty mbarrier (8 B each) per stage.
BARRIER_PAIR = 16
# Accumulator registers per MMA thread. The persistent kernels give the consumer warpgroups 232 (240 under heavy
# pressure) registers through setmaxnreg; the ws kernel (256 threads, 1 CTA/SM) gets at most 255. Beyond the
# accumulators a consumer thread needs ~60-90 registers (wgmma descriptors, pipeline state, epilogue addressing), so
# 128 accumulator registers is the ceiling CUTLASS's largest stock tiles (e.g. 256x128 cooperative fp32) sit at;
# 256 (a 128x256 fp32 tile on one warpgroup) cannot be held and spills.
MAX_ACC_REGS = 128

SCHEDULE_TYPES = {
    "ws": ("cutlass::gemm::KernelTmaWarpSpecialized", "cutlass::epilogue::NoSmemWarpSpecialized"),
    "pingpong": ("cutlass::gemm::KernelTmaWarpSpecializedPingpong", "cutlass::epilogue::TmaWarpSpecialized"),
    "coop": ("cutlass::gemm::KernelTmaWarpSpecializedCooperative",
             "cutlass::epilogue::TmaWarpSpecializedCooperative"),
}
TILE_SCHEDULER_TYPES = {"persistent": "cutlass::gemm::PersistentScheduler",
                        "streamk": "cutlass::gemm::StreamKScheduler"}
ACC_TYPES = {"fp32": "float", "fp16": "cutlass::half_t"}
ACC_BYTES = {"fp32": 4, "fp16": 2}


def _dims(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("x"))


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


class CutlassSm90Space(KernelSpace):
    family = "cutlass_sm90"
    knobs = {
        "tile": TILES,
        "cluster": CLUSTERS,
        "schedule": SCHEDULES,
        "tile_scheduler": TILE_SCHEDULERS,
        "splits": SPLITS,
        "stages": STAGES,
        "raster": RASTERS,
        "swizzle": SWIZZLES,
    }
    later_knobs = {"splits": 1}

    # -- derived quantities ----------------------------------------------------------------------------------
    @staticmethod
    def tile(variant: Variant) -> tuple[int, int, int]:
        return _dims(variant.p["tile"])  # type: ignore[return-value]  # the knob's values are MxNxK

    @staticmethod
    def cluster(variant: Variant) -> tuple[int, int]:
        return _dims(variant.p["cluster"])  # type: ignore[return-value]  # the knob's values are MxN

    @staticmethod
    def mma_warpgroups(variant: Variant) -> int:
        """Consumer warpgroups that hold one tile's accumulators: 2 for cooperative (split along M), else 1 (the
        ping-pong kernel has two consumer warpgroups too, but each owns a whole tile)."""
        return 2 if variant.p["schedule"] == "coop" else 1

    @staticmethod
    def threads(variant: Variant) -> int:
        # One producer warpgroup (TMA loads) + the consumers: ws 1, pingpong 2, coop 2 warpgroups of 128 threads.
        return 256 if variant.p["schedule"] == "ws" else 384

    def acc_regs(self, variant: Variant) -> int:
        bm, bn, _ = self.tile(variant)
        return bm * bn * ACC_BYTES.get(variant.acc, 4) // 4 // (128 * self.mma_warpgroups(variant))

    def epilogue_smem(self, variant: Variant) -> tuple[int, int]:
        """(tensor bytes, carveout bytes) of the epilogue, mirroring the Sm90 epilogue builder: the TMA epilogue
        stages D through min(EpiTiles, 2) subtiles of (min(BM, 128) x 32) for cooperative or (min(BM, 64) x 32)
        otherwise (sm90_compute_tile_shape_or_override), and keeps min(EpiTiles, 4) C-load barriers even with a void
        C (sm90_get_tma_dispatch_policy). The NoSmem epilogue writes from registers (an empty struct: one 128-byte
        granule of carveout)."""
        if variant.p["schedule"] == "ws":
            return 0, 128
        bm, bn, _ = self.tile(variant)
        epi_m = min(bm, 128 if variant.p["schedule"] == "coop" else 64)
        epi_n = math.gcd(min(32, bn), bn)
        epi_tiles = (bm // epi_m) * (bn // epi_n)
        stages_d, stages_c = min(epi_tiles, 2), min(epi_tiles, 4)
        tensor = _round_up(epi_m * epi_n * 2 * stages_d, 128)
        carveout = _round_up(tensor + BARRIER_PAIR * stages_c, 128)
        return tensor, carveout

    def stage_bytes(self, variant: Variant) -> int:
        bm, bn, bk = self.tile(variant)
        return _round_up((bm * bk + bn * bk) * 2, 128)

    def stage_count(self, variant: Variant) -> int:
        """CUTLASS's compute_stage_count_or_override (sm90_gmma_builder.inl) for "auto", else the explicit count."""
        stages = variant.p["stages"]
        if stages != "auto":
            return int(stages)
        _, carveout = self.epilogue_smem(variant)
        return (SMEM_CAPACITY - carveout) // (self.stage_bytes(variant) + BARRIER_PAIR)

    def smem_bytes(self, variant: Variant) -> int:
        """GemmKernel::SharedStorageSize (dynamic shared memory per CTA); matched exactly on the compiled variants
        (kernelrl_cutlass_smem_bytes). ws: the mainloop ring and the (empty) epilogue share a union, followed by the
        mainloop barriers. Persistent kernels: barriers and scheduler state first, padded to the 1024-byte alignment
        of the 128-byte-swizzled tiles that follow (the epilogue's D staging, then the mainloop ring)."""
        stages = self.stage_count(variant)
        ring = stages * self.stage_bytes(variant)
        if variant.p["schedule"] == "ws":
            return _round_up(ring + BARRIER_PAIR * stages, 128)
        tensor, _ = self.epilogue_smem(variant)
        return _round_up(BARRIER_PAIR * stages + 256, 1024) + tensor + ring

    # -- the KernelSpace API ---------------------------------------------------------------------------------
    def check(self, variant: Variant) -> str | None:
        """Why CUTLASS cannot build (or would duplicate) this point; None when it is legal. Each rule names its
        source in CUTLASS 4.x."""
        reason = self.grid_reason(variant, free=("stages",))  # any integer stage count, not only the listed ones
        if reason is not None:
            return reason
        p = variant.p
        if not (p["stages"] == "auto" or (isinstance(p["stages"], int) and not isinstance(p["stages"], bool))):
            return f"stages={p['stages']!r}: 'auto' or an integer count"
        bm, bn, bk = self.tile(variant)
        schedule, scheduler = p["schedule"], p["tile_scheduler"]
        # 1. sm90_gemm_tma_warpspecialized_cooperative.hpp static_asserts size<0>(TileShape) >= 128, and the
        #    builder tiles the 64-row wgmma atom over 2x1x1 warpgroups, so BM must be a multiple of 128
        #    (cutlass_library/sm90_utils.py: is_tile_desc_compatible_with_cooperative).
        if schedule == "coop" and bm % 128:
            return f"cooperative splits the tile's {bm} rows over two 64-row warpgroups: needs BM % 128 == 0"
        # 2. Stream-K needs the cooperative kernel: the ping-pong kernel static_asserts "does not currently support
        #    stream-K scheduler"; the ws kernel static_asserts its scheduler is void or PersistentScheduler.
        if scheduler == "streamk" and schedule != "coop":
            return f"stream-K runs only on the cooperative kernel ({schedule} static_asserts against it)"
        # 2b. An explicit split count is a stream-K scheduler argument (PersistentScheduler has no `splits`).
        if p["splits"] > 1 and scheduler != "streamk":
            return f"splits={p['splits']}: explicit split-K runs on the stream-K scheduler only"
        # 3. Registers: the accumulator tile must fit in the consumer threads' register budget (ptxas, not a
        #    static_assert: 256 accumulator registers per thread cannot be held under setmaxnreg 232/240).
        regs = self.acc_regs(variant)
        if regs > MAX_ACC_REGS:
            return (f"{regs} accumulator registers per MMA thread ({bm}x{bn} {variant.acc} over "
                    f"{self.mma_warpgroups(variant)} warpgroup(s)) exceeds {MAX_ACC_REGS}: it would spill")
        # 4. The non-persistent ws kernel takes its tile from blockIdx (sm90_gemm_tma_warpspecialized.hpp,
        #    get_grid_shape -> get_tiled_cta_shape_mnl): raster and swizzle are ignored, so any other value is the
        #    same kernel under a second name.
        if schedule == "ws" and (p["raster"], p["swizzle"]) != (CANONICAL_RASTER, CANONICAL_SWIZZLE):
            return (f"ws is non-persistent and ignores raster/swizzle: only {CANONICAL_RASTER}/sw{CANONICAL_SWIZZLE} "
                    "(other values would duplicate it)")
        # 5. Shared memory: sm90_mma_tma_gmma_ss_warpspecialized.hpp static_asserts Stages >= 2; the whole
        #    SharedStorage must fit the 227 KB opt-in limit (cudaFuncSetAttribute fails beyond it).
        stages = self.stage_count(variant)
        if stages < 2:
            return f"{stages} mainloop stage(s): the TMA mainloop needs at least 2"
        smem = self.smem_bytes(variant)
        if smem > SMEM_CAPACITY:
            return over_shared_memory(f"shared memory ~{smem} B for {stages} stages exceeds {SMEM_CAPACITY} B "
                                      f"(227 KB) per block")
        # 6. Clusters: at most 8 CTAs is the portable Hopper limit, and the cluster must tile the grid; the
        #    schedulers round the grid up to whole clusters, so every (CM, CN) here is legal for every shape.
        cm, cn = self.cluster(variant)
        if cm * cn > 8:
            return f"cluster {cm}x{cn} has more than 8 CTAs (the portable limit)"
        return None

    def pruned(self, variant: Variant) -> str | None:
        """Why a legal point is left out of the default grid (None when it is in). Not correctness: compile budget.
        Each kept structure costs a ~1 minute compile; these cuts keep the grid to a few dozen per accumulator."""
        p = variant.p
        schedule, scheduler, cluster = p["schedule"], p["tile_scheduler"], p["cluster"]
        if (p["raster"], p["swizzle"]) != (CANONICAL_RASTER, CANONICAL_SWIZZLE):
            return "raster/swizzle refinements are a second round: see siblings()"
        if p["stages"] != "auto":
            return "explicit stage counts are off the default grid ('auto' fits the deepest pipeline)"
        bm, bn, _ = self.tile(variant)
        if schedule == "ws" and bm * bn > 128 * 128:
            return "ws with tiles over 128x128 elements: one consumer warpgroup per big tile is pingpong's job"
        if schedule == "ws" and cluster not in ("1x1", "2x1"):
            return "ws (the non-persistent baseline) only with clusters 1x1 and 2x1"
        if scheduler == "streamk" and cluster not in ("1x1", "2x1"):
            return "stream-K only with clusters 1x1 and 2x1 (its fix-up unit is a whole cluster)"
        if p["splits"] > 1:
            # Measured on the H200 (benchmarks/results/h200/deepk_splits/): on the 62 deep-K medium shapes the best
            # explicit split ran at 0.58 of the faster library (CUTLASS's own decomposition: 0.47), slower than the
            # small family's cluster split-K. Legal, measurable by name, kept off the default grid.
            return ("explicit split-K is off the default grid: 0.58 of cuBLAS on deep-K shapes "
                    "(benchmarks/results/h200/deepk_splits/)")
        if schedule == "pingpong" and cluster == "2x2":
            return "4-CTA clusters only with the cooperative schedule"
        return None

    def siblings(self, variant: Variant) -> list[Variant]:
        """The legal raster/swizzle refinements of a point (itself included): same kernel structure, other tile
        order. One for ws (it ignores them), eight for the persistent schedules."""
        out = []
        for raster in RASTERS:
            for swizzle in SWIZZLES:
                other = Variant.of(variant.family, variant.acc, **{**variant.p, "raster": raster, "swizzle": swizzle})
                if self.check(other) is None:
                    out.append(other)
        return out

    def neighbours(self, variant: Variant) -> list[Variant]:
        """One-knob moves (tile, cluster, schedule, scheduler) plus every raster/swizzle sibling: the refinements the
        default grid prunes (see pruned())."""
        seen = {variant}
        out = []
        for other in super().neighbours(variant) + self.siblings(variant):
            if other not in seen:
                seen.add(other)
                out.append(other)
        return out

    def supports(self, variant: Variant, problem: GemmProblem) -> str | None:
        # TMA needs 16-byte-aligned global strides: K halves per row of A, N halves per row of B and D
        # (CollectiveMma::can_implement, check_alignment<8>). M % 8 is not a CUTLASS requirement; the family asks
        # for it so that every dimension is a multiple of the 16-byte vector. The rendered kernelrl_hgemm_supports
        # applies the same arithmetic and then Gemm::can_implement: it can only be stricter, never looser.
        for name, value in (("M", problem.m), ("N", problem.n), ("K", problem.k)):
            if value % 8:
                return f"{name}={value}: needs {name} % 8 == 0 (16-byte TMA alignment)"
        return None

    def resources(self, variant: Variant) -> dict:
        return {"threads": self.threads(variant), "smem_bytes": self.smem_bytes(variant),
                "tile": self.tile(variant), "cluster": self.cluster(variant), "split_k": variant.p["splits"],
                "split_reduce": "fixup",
                "stages": self.stage_count(variant), "acc_regs": self.acc_regs(variant),
                "persistent": variant.p["schedule"] != "ws",
                "schedule": (variant.p["schedule"], variant.p["tile_scheduler"])}

    def name_of(self, variant: Variant) -> str:
        p = variant.p
        acc = {"fp32": "f32", "fp16": "f16"}.get(variant.acc, variant.acc)
        stages = "" if p["stages"] == "auto" else f"_s{p['stages']}"
        head = f"cutlass_sm90_{acc}_{p['tile']}_c{p['cluster']}{stages}_{p['schedule']}"
        if p["schedule"] == "ws":  # non-persistent: no scheduler, no tile order
            return head
        raster = {"along_m": "m", "along_n": "n"}.get(p["raster"], p["raster"])
        splits = f"_sk{p['splits']}" if p["splits"] > 1 else ""
        return f"{head}_{p['tile_scheduler']}{splits}_ras_{raster}_sw{p['swizzle']}"

    def info_params(self, variant: Variant) -> dict:
        """Every knob but `splits` when it is 1: the sources of the points that existed before the knob stay
        byte-identical, so their builds and measurements (keyed by source) stay valid."""
        if variant.p.get("splits") != 1:
            return variant.p
        return {k: v for k, v in variant.p.items() if k != "splits"}

    def render(self, variant: Variant) -> str:
        reason = self.check(variant)
        if reason is not None:
            raise ValueError(f"{self.name_of(variant)} is not a valid point: {reason}")
        p = variant.p
        bm, bn, bk = self.tile(variant)
        cm, cn = self.cluster(variant)
        kernel_schedule, epilogue_schedule = SCHEDULE_TYPES[p["schedule"]]
        header = HEADER.format(
            name=self.name_of(variant), acc=variant.acc, schedule=p["schedule"], tile_scheduler=p["tile_scheduler"],
            threads=self.threads(variant), stages=self.stage_count(variant), smem=self.smem_bytes(variant),
            acc_regs=self.acc_regs(variant))
        config = CONFIG.format(
            acc_type=ACC_TYPES[variant.acc], bm=bm, bn=bn, bk=bk, cm=cm, cn=cn,
            kernel_schedule=kernel_schedule, epilogue_schedule=epilogue_schedule,
            tile_scheduler=TILE_SCHEDULER_TYPES[p["tile_scheduler"]],
            stages=0 if p["stages"] == "auto" else int(p["stages"]),
            stages_comment="auto: StageCountAutoCarveout" if p["stages"] == "auto" else "explicit",
            raster_along_n="true" if p["raster"] == "along_n" else "false", swizzle=p["swizzle"])
        info = f'const char* kernelrl_hgemm_info(void) {{ return "{self.info_json(variant)}"; }}\n'
        body = BODY
        if p["splits"] > 1:
            body = body.replace(SPLITS_ANCHOR, SPLITS_LINE.format(splits=p["splits"]) + SPLITS_ANCHOR)
        return header + config + body + EXPORTS + info + "\n}  // extern \"C\"\n"


# ---------------------------------------------------------------------------------------------------------------
# The CUDA source. HEADER and CONFIG are formatted (braces doubled); BODY and EXPORTS are plain text.
# ---------------------------------------------------------------------------------------------------------------

HEADER = """\
// kernelrl cutlass_sm90 family: {name}
// Generated by kernelrl/space/cutlass_sm90.py: edit the generator, not this file.
//
// C = A @ B with CUTLASS 3.x on Hopper (sm_90a): TMA loads into a multi-stage shared-memory ring, wgmma (SS) on
// warp-specialized consumer warpgroups, accumulator {acc}, fp16 output. A (MxK), B (KxN), C (MxN): fp16,
// row-major, unpadded. Supported shapes: M, N, K multiples of 8 (see kernelrl_hgemm_supports).
// Schedule {schedule}, tile scheduler {tile_scheduler}; {threads} threads per CTA, {stages} mainloop stages,
// {smem} bytes of dynamic shared memory (GemmKernel::SharedStorageSize, as kernelrl_cutlass_smem_bytes() reports),
// {acc_regs} accumulator registers per MMA thread.
//
// Host side of every call: build the CUTLASS arguments (cheap), let GemmUniversalAdapter::run() initialise the
// workspace on `stream` (stream-K: a cudaMemsetAsync of its barrier flags; nothing otherwise), encode the TMA
// descriptors for this call's pointers and launch (a cluster launch when the cluster has more than one CTA).
// No allocation, no synchronisation: the call can be captured in a CUDA graph.

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <type_traits>
#include <utility>

#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/numeric_types.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/util/packed_stride.hpp"

// wgmma, setmaxnreg and TMA multicast exist only on the arch-specific target: refuse a plain sm_90 build rather
// than ship a kernel whose body is CUTLASS's "arch conditional MMA" error printf.
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "the cutlass_sm90 family must be compiled for sm_90a (-gencode arch=compute_90a,code=sm_90a)"
#endif

namespace kr_cutlass {{

"""

CONFIG = """\
// ---- the variant ------------------------------------------------------------------------------------------
using ElementAccumulator = {acc_type};
// The epilogue computes in the accumulator type: alpha = 1 and there is no C term, so D = round_fp16(acc)
// either way (fp32 path: one rounding at the store; fp16 path: the accumulator already is fp16).
using ElementCompute = ElementAccumulator;
using TileShape = cute::Shape<cute::Int<{bm}>, cute::Int<{bn}>, cute::Int<{bk}>>;  // BM x BN x BK per CTA
using ClusterShape = cute::Shape<cute::Int<{cm}>, cute::Int<{cn}>, cute::_1>;  // CM x CN CTAs per cluster
using KernelSchedule = {kernel_schedule};
using EpilogueSchedule = {epilogue_schedule};
using TileSchedulerTag = {tile_scheduler};
constexpr int kStages = {stages};  // {stages_comment}
constexpr bool kRasterAlongN = {raster_along_n};  // persistent schedulers: walk tiles along N (else along M)
constexpr int kSwizzle = {swizzle};  // persistent schedulers: swizzle width (1, 2, 4, 8) of the tile walk
"""

BODY = """\

// ---- the CUTLASS types -------------------------------------------------------------------------------------
using ElementA = cutlass::half_t;
using LayoutA = cutlass::layout::RowMajor;      // M x K, K contiguous: "K-major" A
using ElementB = cutlass::half_t;
using LayoutB = cutlass::layout::RowMajor;      // K x N, N contiguous: "MN-major" B, read by wgmma as is
using ElementC = void;                          // no source operand: beta is never applied, C is never read
using LayoutC = cutlass::layout::RowMajor;
using ElementD = cutlass::half_t;
using LayoutD = cutlass::layout::RowMajor;      // M x N, N contiguous
// 8 halves = 16 bytes: the TMA alignment of a row stride (hence the M/N/K % 8 rule of kernelrl_hgemm_supports).
constexpr int kAlignment = 16 / sizeof(cutlass::half_t);

using FusionOp = cutlass::epilogue::fusion::LinearCombination<ElementD, ElementCompute, ElementC, ElementCompute>;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto,
    ElementAccumulator, ElementCompute,
    ElementC, LayoutC, kAlignment,
    ElementD, LayoutD, kAlignment,
    EpilogueSchedule,
    FusionOp>::CollectiveOp;

// "auto": as many stages as fit in 227 KB once the epilogue's own shared memory is carved out.
using StageCountType = std::conditional_t<
    kStages == 0,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    cutlass::gemm::collective::StageCount<(kStages > 0 ? kStages : 2)>>;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    ElementA, LayoutA, kAlignment,
    ElementB, LayoutB, kAlignment,
    ElementAccumulator,
    TileShape, ClusterShape,
    StageCountType,
    KernelSchedule>::CollectiveOp;

using GemmKernel = cutlass::gemm::kernel::GemmUniversal<
    cute::Shape<int, int, int, int>,            // M, N, K, L (L = 1: no batch)
    CollectiveMainloop,
    CollectiveEpilogue,
    TileSchedulerTag>;

using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
using Arguments = typename Gemm::Arguments;

// ---- host helpers ------------------------------------------------------------------------------------------

// SM count of the current device, cached per device (the persistent and stream-K schedulers size their grid,
// and stream-K its workspace, from it). kernelrl_hgemm_workspace and kernelrl_hgemm must see the same value.
static int sm_count(int device) {
    constexpr int kMaxDevices = 64;
    static std::atomic<int> cache[kMaxDevices];
    if (device >= 0 && device < kMaxDevices) {
        int cached = cache[device].load(std::memory_order_relaxed);
        if (cached > 0) return cached;
    }
    int count = 0;
    if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;  // CUTLASS then queries it itself
    }
    if (device >= 0 && device < kMaxDevices) cache[device].store(count, std::memory_order_relaxed);
    return count;
}

static bool shape_ok(int M, int N, int K) {
    return M > 0 && N > 0 && K > 0 && M % kAlignment == 0 && N % kAlignment == 0 && K % kAlignment == 0;
}

// The arguments of one call. Pointers may be null for the size and can_implement queries, which read only the
// shape, the strides and the scheduler settings.
static Arguments make_arguments(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    using StrideA = typename Gemm::GemmKernel::StrideA;
    using StrideB = typename Gemm::GemmKernel::StrideB;
    using StrideC = typename Gemm::GemmKernel::StrideC;
    using StrideD = typename Gemm::GemmKernel::StrideD;
    // CUTLASS 3 views A as (M, K), B as (N, K) and D as (M, N); the packed strides of those views with the
    // layouts above are A (K, 1), B (1, N), D (N, 1): exactly the row-major buffers we are given.
    StrideA stride_a = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(M, K, 1));
    StrideB stride_b = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(N, K, 1));
    StrideC stride_c = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(M, N, 1));
    StrideD stride_d = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(M, N, 1));

    cutlass::KernelHardwareInfo hw_info;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
        (void)cudaGetLastError();
        device = 0;
    }
    hw_info.device_id = device;
    hw_info.sm_count = sm_count(device);

    Arguments args{
        cutlass::gemm::GemmUniversalMode::kGemm,
        {M, N, K, 1},
        {reinterpret_cast<const ElementA*>(A), stride_a, reinterpret_cast<const ElementB*>(B), stride_b},
        {{}, nullptr, stride_c, reinterpret_cast<ElementD*>(C), stride_d},
        hw_info};
    args.epilogue.thread.alpha = ElementCompute(1);
    args.epilogue.thread.beta = ElementCompute(0);

    // Tile order of the persistent schedulers (the non-persistent ws kernel ignores both).
    using RasterOrder = decltype(std::declval<Arguments>().scheduler.raster_order);
    args.scheduler.raster_order = kRasterAlongN ? RasterOrder::AlongN : RasterOrder::AlongM;
    args.scheduler.max_swizzle_size = kSwizzle;
    return args;
}

// A CUTLASS status as the contract's nonzero error code.
static int status_to_error(cutlass::Status status) {
    switch (status) {
        case cutlass::Status::kSuccess:
            return 0;
        case cutlass::Status::kErrorMisalignedOperand:
        case cutlass::Status::kErrorInvalidProblem:
        case cutlass::Status::kErrorNotSupported:
        case cutlass::Status::kErrorWorkspaceNull:
        case cutlass::Status::kInvalid:
            return (int)cudaErrorInvalidValue;
        default: {
            // kErrorInternal: a failed cudaFuncSetAttribute, TMA descriptor encoding or launch. The adapter has
            // already consumed the CUDA error; report a generic one if nothing is left to report.
            cudaError_t err = cudaGetLastError();
            return (int)(err != cudaSuccess ? err : cudaErrorUnknown);
        }
    }
}

}  // namespace kr_cutlass

"""

# Explicit split-K: one line in make_arguments, only in the sources of points with splits > 1.
SPLITS_ANCHOR = "    return args;\n}\n\n// A CUTLASS status"
SPLITS_LINE = ("    // Explicit split-K: the stream-K scheduler's SplitK decomposition, K cut into {splits} units per "
               "tile.\n"
               "    args.scheduler.splits = {splits};\n")
assert SPLITS_ANCHOR in BODY

EXPORTS = """\
extern "C" {

// M, N, K multiples of 8 (TMA's 16-byte stride alignment), and whatever else CUTLASS's can_implement demands
// (for these layouts nothing more: the same alignment rule), so this is never looser than the Python supports().
int kernelrl_hgemm_supports(int M, int N, int K) {
    if (!kr_cutlass::shape_ok(M, N, K)) return 0;
    kr_cutlass::Arguments args = kr_cutlass::make_arguments(nullptr, nullptr, nullptr, M, N, K);
    return kr_cutlass::Gemm::can_implement(args) == cutlass::Status::kSuccess ? 1 : 0;
}

// Stream-K: partial-tile accumulators plus barrier flags (depends on the SM count and the tile order);
// persistent and ws schedules: 0.
size_t kernelrl_hgemm_workspace(int M, int N, int K) {
    if (!kr_cutlass::shape_ok(M, N, K)) return 0;
    kr_cutlass::Arguments args = kr_cutlass::make_arguments(nullptr, nullptr, nullptr, M, N, K);
    // Without a device (SM count 0) CUTLASS's stream-K sizing divides by zero: there is nothing to size then.
    if (args.hw_info.sm_count <= 0) return 0;
    return kr_cutlass::Gemm::get_workspace_size(args);
}

// The operator is built per call: its Params hold TMA descriptors that encode this call's A, B and C pointers
// (and stream-K's workspace pointer), so a cache keyed by shape would have to re-encode them on every call
// anyway; what is left to save (constructing an empty GemmUniversalAdapter) costs nothing.
int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                   void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    if (!kr_cutlass::shape_ok(M, N, K)) return (int)cudaErrorInvalidValue;
    kr_cutlass::Arguments args = kr_cutlass::make_arguments(A, B, C, M, N, K);
    if (args.hw_info.sm_count <= 0) return (int)cudaErrorNoDevice;
    const size_t needed = kr_cutlass::Gemm::get_workspace_size(args);
    if (needed > 0 && (workspace == nullptr || workspace_bytes < needed)) return (int)cudaErrorInvalidValue;
    kr_cutlass::Gemm gemm;
    // run() = initialize() (workspace initialisation on `stream`, Params, the >48 KB shared-memory attribute)
    // followed by the launch on `stream`.
    return kr_cutlass::status_to_error(gemm.run(args, needed > 0 ? workspace : nullptr, stream));
}

// Not part of the evaluator's contract: the compiled configuration, for checking the Python estimates.
int kernelrl_cutlass_smem_bytes(void) { return (int)kr_cutlass::GemmKernel::SharedStorageSize; }
int kernelrl_cutlass_stages(void) { return (int)kr_cutlass::Gemm::kStages; }
int kernelrl_cutlass_threads(void) { return (int)kr_cutlass::GemmKernel::MaxThreadsPerBlock; }

"""
