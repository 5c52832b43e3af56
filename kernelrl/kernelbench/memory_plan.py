"""How the KernelBench worker fits a task's evaluation into the device's memory: the bytes each phase holds for a
given footprint, the reductions that make a large task fit, and the smallest card on which a list of tasks runs.
Pure arithmetic (no torch), tested on the CPU (tests/kernelbench/test_memory_plan.py); the worker
(worker_process.py `_measure_footprint`) measures the numbers after one reference call and applies the plan.

What the worker holds on the device besides the models, per phase (I: one input set, O: the reference output, T:
the reference call's temporaries, D: the extra bytes of drawing one input set, W: the candidate's weights, G: the
memory guard's arena and comparison, J: a chunked comparison's scratch):

- reference: the footprint call, the random-reference and trivial-output probes: I + 2 O + T + D.
- checks (judge.py `_verify`): at most four input copies on the device (the first check's inputs, which the
  candidate keeps until the checks end, the near duplicate's pristine copy, the candidate's clone, the reference's
  clone), the candidate's and the reference's outputs, the previous check's reference output (for `stale result`),
  the held candidate outputs, T, G, J; the stream-order check adds a staged copy and the output read on the
  caller's stream. Baselines kept from an earlier pair of the task (their static copies) stay beside them.
- timing (timing.py): the pool of input sets, each call's fresh inputs, the candidate's pristine copy, the checked
  call's reference clone and output, and every prepared baseline's static copies (a CUDA graph's inputs, output and
  pool; torch.compile's reduce-overhead mode likewise).

Reductions, least costly first; the plan takes the cheapest combination that fits (`plan`), spills before any
check is reduced:
- spills, which weaken nothing (they cost copies between host and device): the previous check's reference output on
  the host (`prev_ref_on_host`, the stale comparison reads it in chunks); the timing pool's input sets on the host
  (`pool_on_host`, each call's fresh inputs copied over); pristine input copies on the host (`pristine_on_host`,
  restored to the device for the reference's clone, compared in chunks); prepared baselines released after each
  pair instead of kept for the task's next pair (`keep_baselines` False: prepared, compiled, captured again);
- reductions of a check, each named in the records' notes: fewer held candidate outputs (`held_outputs`, at least
  the previous one, which `same tensor every call` needs), fewer timing input sets (`input_sets`, at least one; every
  call's inputs still differ by their secret perturbation), and last the baselines that keep static copies
  (`skipped_baselines`: cuda_graph, then compile_reduce_overhead) left untimed.
Host copies are pinned (copies at the link's speed; pageable ones into fresh pages took most of a 12 GiB task's
time on the H100), counted in the power-of-two blocks torch caches them in, at most HOST_SHARE of the host's
available memory. A task that does not fit with every reduction is refused
(`Plan.refusal`: one line with what it needs and what is free).

The smallest card for a list of tasks (`smallest_card`): each task's least need over every combination the host can
take (a combination's need does not depend on what is free), plus its weights and DEVICE_OVERHEAD; the largest of
those. benchmarks/suites/kb_footprints.py computes the footprints from shapes on the CPU and prints it."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

from kernelrl.harness.worker_base import host_available  # noqa: F401  (the host's side of a plan: worker_process, doctor)

GIB = 1 << 30
MIB = 1 << 20
# mirrors of memguard.MIN_ARENA / MAX_CHECKED / CHUNK (kept here so this module imports nothing heavy)
MIN_ARENA = 32 * MIB
MAX_ARENA = 2 * GIB
GUARD_COMPARE = 512 * MIB  # the out-of-bounds comparison's chunks (memguard._count_changed)
COMPARE_SCRATCH = 1 * GIB  # harness.compare's chunks: 32 M elements, a few float64 temporaries
MARGIN_FRACTION = 0.04  # allocator rounding and fragmentation, cuBLAS/cuDNN workspaces: need * this + MARGIN_BYTES
MARGIN_BYTES = 1 * GIB
DEVICE_OVERHEAD = 1 * GIB  # what a card loses before the worker measures `free`: CUDA context, L2 flush buffer
HOST_SHARE = 0.75  # the share of the host's available memory the spills may take
STATIC_BASELINES = ("cuda_graph", "compile_reduce_overhead")  # skipped in this order, last of all reductions
HELD_FOOTPRINTS = 2.0  # the full plan's held candidate outputs: up to this many footprints
CHECKS = 9  # checked calls in `_verify` (3 seeds): no more outputs than this are ever held


@dataclass(frozen=True)
class Footprint:
    """A task's sizes in bytes, measured by one reference call (or estimated from shapes:
    benchmarks/suites/kb_footprints.py). `draw_extra`: the bytes beyond the input set while one is drawn (get_inputs'
    own temporaries, the uniform redraw's float32 buffer); `weights`: the reference model's parameters and buffers (the
    candidate holds about as many)."""

    input_bytes: int
    output_bytes: int
    temporaries: int = 0
    draw_extra: int = 0
    weights: int = 0

    @property
    def total(self) -> int:
        return self.input_bytes + self.output_bytes


@dataclass(frozen=True)
class Plan:
    """What the worker holds for one task, and whether that fits `free` device bytes (and `host_free` host bytes)."""

    footprint: Footprint
    free: int
    host_free: int
    baselines: tuple[str, ...]
    asked_sets: int
    full_held: int
    held_outputs: int
    input_sets: int
    keep_baselines: bool = True
    prev_ref_on_host: bool = False
    pristine_on_host: bool = False
    pool_on_host: bool = False
    # the timed calls' pristine copies on the host too (set by `_made`): only where the checks' are and the timing
    # phase would not fit with one more input copy on the device (every candidate call gets one, checked or not,
    # so a host copy there costs a round trip over the link per call)
    timing_pristine_on_host: bool = False
    skipped_baselines: tuple[str, ...] = ()
    phases: dict = field(default_factory=dict, compare=False)  # phase -> device bytes at its peak
    host_need: int = 0

    # -- what it holds ----------------------------------------------------------------------------------------
    @property
    def need(self) -> int:
        """Device bytes at the plan's peak phase, margin included."""
        peak = max(self.phases.values()) if self.phases else 0
        return margin(peak)

    @property
    def peak_phase(self) -> str:
        return max(self.phases, key=self.phases.__getitem__) if self.phases else ""

    @property
    def fits(self) -> bool:
        return self.need <= self.free and self.host_need <= HOST_SHARE * self.host_free

    @property
    def held_bytes(self) -> int:
        """Held's budget (kernelbench/inputs.py): the full plan's footprints, or as many outputs as the plan holds."""
        fp = self.footprint
        if self.held_outputs >= self.full_held:
            return int(HELD_FOOTPRINTS * fp.total)
        return self.held_outputs * fp.output_bytes

    @property
    def timed_baselines(self) -> tuple[str, ...]:
        return tuple(b for b in self.baselines if b not in self.skipped_baselines)

    # -- what it says -------------------------------------------------------------------------------------------
    def spills(self) -> list[str]:
        out = []
        if not self.keep_baselines:
            out.append("prepared baselines released after each pair (compiled and captured again for the next)")
        if self.prev_ref_on_host:
            out.append("the previous check's reference output kept on the host")
        if self.pristine_on_host:
            out.append("pristine input copies kept on the host (restored for the reference, compared in chunks)"
                       + ("" if self.timing_pristine_on_host else " during the checks; on the device while timing"))
        if self.pool_on_host:
            out.append(f"the timing pool's {self.input_sets} input set(s) kept on the host (each call's inputs "
                       f"copied over)")
        return out

    def reductions(self) -> list[str]:
        """The checks this plan weakens, each with what it keeps."""
        out = []
        if self.held_outputs < self.full_held:
            out.append(f"{self.held_outputs} candidate output(s) held alive after their checks instead of up to "
                       f"{self.full_held}")
        if self.input_sets < self.asked_sets:
            out.append(f"{self.input_sets} timing input set(s) instead of {self.asked_sets} (every call's inputs "
                       f"still differ by their secret perturbation)")
        for b in self.skipped_baselines:
            out.append(f"baseline {b} not timed (its static copies of the inputs and outputs do not fit)")
        return out

    def note(self) -> str | None:
        """The records' note for a task this plan changes (None: the full plan)."""
        changes = self.spills() + self.reductions()
        if not changes:
            return None
        return (f"memory plan ({describe(self.footprint)}; {gib(self.free)} GiB free, needs about {gib(self.need)} "
                f"GiB at its peak, {self.peak_phase}): " + "; ".join(changes))

    def refusal(self) -> str:
        """`task too large`'s line: what the task needs with every reduction, and what is free."""
        where = "device" if margin(max(self.phases.values(), default=0)) > self.free else "host"
        if where == "device":
            return (f"evaluating it needs about {gib(self.need)} GiB of device memory even with every reduction "
                    f"(peak: {self.peak_phase}; {describe(self.footprint)}); {gib(self.free)} GiB are free")
        return (f"evaluating it needs about {gib(self.host_need)} GiB of host memory for its spilled copies; "
                f"{gib(HOST_SHARE * self.host_free)} GiB may be used ({describe(self.footprint)})")

    def summary(self) -> dict:
        return {"fits": self.fits, "need_gib": round(self.need / GIB, 2), "free_gib": round(self.free / GIB, 2),
                "peak": self.peak_phase, "phases_gib": {k: round(v / GIB, 2) for k, v in self.phases.items()},
                "host_gib": round(self.host_need / GIB, 2), "spills": self.spills(),
                "reductions": self.reductions()}


def gib(n: float) -> str:
    return f"{n / GIB:.1f}"


def describe(fp: Footprint) -> str:
    return (f"footprint {gib(fp.total)} GiB: inputs {gib(fp.input_bytes)}, output {gib(fp.output_bytes)}, the "
            f"reference's temporaries {gib(fp.temporaries)}")


def pow2(n: int) -> int:
    """The pinned block torch's host allocator takes for `n` bytes: the next power of two."""
    n = int(n)
    return 1 << (n - 1).bit_length() if n > 0 else 0


def margin(peak: int) -> int:
    return int(peak * (1 + MARGIN_FRACTION)) + MARGIN_BYTES if peak else 0


def guard_bytes(fp: Footprint) -> int:
    """The memory guard's arena (memguard.MemoryGuard.arm: twice the larger of an input set and the previous output,
    clamped) and its comparison's chunks."""
    arena = 2 * max(fp.input_bytes, fp.output_bytes) + 8 * MIB
    return min(MAX_ARENA, max(MIN_ARENA, arena)) + GUARD_COMPARE


def full_held(fp: Footprint, checks: int = CHECKS) -> int:
    """How many candidate outputs the full plan keeps alive: Held's budget of HELD_FOOTPRINTS footprints, and no
    more than the checks make."""
    if fp.output_bytes <= 0:
        return 1
    return max(1, min(checks, int(HELD_FOOTPRINTS * fp.total // fp.output_bytes)))


def phases(p: Plan) -> tuple[dict, int]:
    """(device bytes at each phase's peak, host bytes at the spills' peak) of plan `p`."""
    fp = p.footprint
    i, o, t, d, w = fp.input_bytes, fp.output_bytes, fp.temporaries, fp.draw_extra, fp.weights
    g, j = guard_bytes(fp), COMPARE_SCRATCH
    dp = 0 if p.pristine_on_host else i  # a pristine copy on the device
    rp = 0 if p.prev_ref_on_host else o  # the previous check's reference output on the device
    others = (p.held_outputs - 1) * o  # held candidate outputs beyond the previous one
    static = sum(i + o + t for b in p.timed_baselines if b in STATIC_BASELINES)
    kept = static if p.keep_baselines else 0  # an earlier pair's baselines, beside this pair's checks
    pool = 0 if p.pool_on_host else p.input_sets * i
    out = {
        "reference": i + 2 * o + t + d,
        # check 1: pristine, the candidate's clone, the reference's clone, both outputs
        "first check": w + kept + dp + 2 * i + 2 * o + t + g + j,
        # drawing the next check's inputs beside the first check's (kept by the candidate), the last pristine copy
        # and the previous outputs
        "drawing inputs": w + kept + 3 * i + d + o + rp + others,
        # the near duplicate: its pristine copy is made on the device; four input copies, three outputs
        "checks": w + kept + 4 * i + 3 * o + rp + others + t + g + j,
        # stream order: the first check's inputs, the candidate's, the staged copy, the reference's (+ two pristine)
        "stream order": w + kept + 4 * i + 2 * dp + 5 * o + rp + others + t + j,
        # timing: the pool, the baselines' static copies, a call's fresh inputs and output, the checked call's
        # pristine copy and reference
        "timing": w + static + pool + 2 * i + dp + 2 * o + t + j,
    }
    host = 0  # pinned blocks, cached in power-of-two sizes
    if p.pristine_on_host:  # the last check's pristine and the next one's, or the timing call's
        host += 2 * pow2(i)
    if p.prev_ref_on_host:
        host += pow2(o)
    if p.pool_on_host:
        host += p.input_sets * pow2(i)
    return out, int(host)


def _made(p: Plan) -> Plan:
    dev, host = phases(p)
    timing_on_host = p.pristine_on_host and margin(dev["timing"] + p.footprint.input_bytes) > p.free
    if p.pristine_on_host and not timing_on_host:
        dev["timing"] += p.footprint.input_bytes
    return replace(p, phases=dev, host_need=host, timing_pristine_on_host=timing_on_host)


def _cost(p: Plan) -> tuple:
    """Reductions of checks first (baselines untimed, then input sets, then held outputs), then the spills' cost."""
    spill = (1 if p.prev_ref_on_host else 0) + (2 if p.pool_on_host else 0) + (4 if p.pristine_on_host else 0) + \
        (8 if not p.keep_baselines else 0)
    return (len(p.skipped_baselines), p.asked_sets - p.input_sets, p.full_held - p.held_outputs, spill)


def full(fp: Footprint, free: int = 1 << 62, host_free: int = 1 << 62, input_sets: int = 3,
         baselines: tuple[str, ...] = STATIC_BASELINES, checks: int = CHECKS) -> Plan:
    """The plan with no reduction (what a small task gets)."""
    n = full_held(fp, checks)
    return _made(Plan(fp, int(free), int(host_free), tuple(baselines), max(1, input_sets), n, n, max(1, input_sets)))


def _configs(base: Plan):
    """Every combination of spills and reductions of `base` (the full plan), phases computed."""
    static = [b for b in STATIC_BASELINES if b in base.baselines]
    skips = [tuple(static[:k]) for k in range(len(static) + 1)]
    # held outputs: all, or one to eight (beyond that, each output is too small to matter)
    helds = sorted({base.full_held, *range(1, min(base.full_held, 9))}, reverse=True)
    for keep, prev, pristine, pool in itertools.product((True, False), repeat=4):
        for held in helds:
            for sets in range(base.asked_sets, 0, -1):
                for skipped in skips:
                    yield _made(replace(base, keep_baselines=keep, prev_ref_on_host=prev, pristine_on_host=pristine,
                                        pool_on_host=pool, held_outputs=held, input_sets=sets,
                                        skipped_baselines=skipped))


def plan(fp: Footprint, free: int, host_free: int = 0, input_sets: int = 3,
         baselines: tuple[str, ...] = STATIC_BASELINES, checks: int = CHECKS) -> Plan:
    """The cheapest plan that fits (`_cost`), or, where none does, the one that needs the least device memory
    (`fits` False; its `refusal()` says what it needs and what is free). `free`: device bytes free with the
    reference model loaded; `host_free`: the host's available bytes (0: nothing is spilled)."""
    base = full(fp, free, host_free, input_sets, baselines, checks)
    if base.fits:
        return base
    best = least = None
    for cand in _configs(base):
        if cand.fits and (best is None or _cost(cand) < _cost(best)):
            best = cand
        if cand.host_need <= HOST_SHARE * host_free and (least is None or (cand.need, _cost(cand)) <
                                                          (least.need, _cost(least))):
            least = cand
    return best or least or base


def min_device(fp: Footprint, host_free: int = 1 << 62, input_sets: int = 3,
               baselines: tuple[str, ...] = STATIC_BASELINES, reductions: bool = True,
               checks: int = CHECKS) -> float:
    """The least free device memory on which the task runs: with every reduction allowed (spills and reduced
    checks), or (`reductions` False) with the full plan. Each combination's need does not depend on what is free,
    so this is the least need among those the host can take (math.inf where the host can take none)."""
    base = full(fp, 0, host_free, input_sets, baselines, checks)
    if not reductions:
        return base.need
    return min((c.need for c in _configs(base) if c.host_need <= HOST_SHARE * host_free), default=math.inf)


def smallest_card(footprints, host_free: int = 1 << 62, input_sets: int = 3,
                  baselines: tuple[str, ...] = STATIC_BASELINES, reductions: bool = True) -> tuple[float, int | None]:
    """(the smallest card's usable memory in bytes on which every task runs, the index of the task that sets it):
    the largest of each task's least free memory, plus the reference model's weights (loaded when `free` is
    measured) and DEVICE_OVERHEAD (context, flush buffer)."""
    best: float = 0
    which: int | None = None
    for k, fp in enumerate(footprints):
        card = min_device(fp, host_free, input_sets, baselines, reductions) + fp.weights + DEVICE_OVERHEAD
        if card > best:
            best, which = card, k
    return best, which
