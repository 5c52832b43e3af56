"""Statistics over raw timing samples, kept apart from how the samples were measured."""

from __future__ import annotations

import math
import statistics

from kernelrl.harness.verdicts import Rejected, Verdict


def percentile(samples: list[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    if not samples:
        return math.nan
    data = sorted(samples)
    pos = (len(data) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summarize(samples: list[float]) -> dict:
    if not samples:
        return {"median": None, "p10": None, "p90": None, "n": 0}
    return {"median": statistics.median(samples), "p10": percentile(samples, 10), "p90": percentile(samples, 90),
            "n": len(samples)}


def geomean(values: list[float]) -> float:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


HIDDEN_FLOOR_US = 20.0  # per timed region: more than launch jitter and a host-side lock wait ever add
HIDDEN_SHARE = 0.5  # of the method's own time per region


def hidden_work(candidate_overheads: list[float], baseline_overhead_medians: list[float],
                candidate_region_us: float) -> Rejected | None:
    """The one hidden-work rule of every worker and timing mode: the verdict, or None.

    A timed region is one call (host-timed modes) or one graph replay (device mode). Its overhead is the
    synchronized wall time minus the caller's stream's event time, in µs. Work hidden from the stream (another
    stream, a host thread) shows only in wall time, on every region it hides work in, so a method whose smallest
    overhead exceeds the trusted baselines' median overhead by more than max(20 µs, half its own region time) is
    flagged. The smallest, not the median: a KernelBench pair times only a few regions, and a host-side stall of
    a shared machine in two of three would otherwise read as hidden work."""
    if not candidate_overheads:
        return None
    ordered = sorted(baseline_overhead_medians)
    reference = ordered[len(ordered) // 2] if ordered else 0.0
    extra = min(candidate_overheads) - reference
    if extra > max(HIDDEN_FLOOR_US, HIDDEN_SHARE * candidate_region_us):
        return Rejected(Verdict.HIDDEN_WORK,
                        f"synchronized time exceeds the stream's event time by {extra:.1f} us per timed region more "
                        f"than the baselines' launch overhead")
    return None


CONTENT_FLOOR_US = 2.0  # per call: more than the spread of a graph-replay difference on the H200
CONTENT_MARGIN = 0.2  # of the method's own time per call


def content_dependent_speed(plain_us: float, extra_us: float, baseline_extra_us: float | None) -> str | None:
    """The content-probe rule (device mode): the detail line of `content-dependent speed`, or None.

    `plain_us` is the method's time per call on unchanging inputs; `extra_us` how much slower its calls are when a
    few input elements change before each; `baseline_extra_us` the same for a trusted baseline in the same run (the
    cost the probe itself adds to any kernel: a small kernel between the calls breaks their overlap). A method that
    slows by more than max(2 µs, 20 % of its time) beyond what the baseline does caches by input contents."""
    base = max(0.0, baseline_extra_us or 0.0)
    if extra_us - base > max(CONTENT_FLOOR_US, CONTENT_MARGIN * plain_us):
        return (f"{plain_us + extra_us:.2f} us per call when a few input elements change between calls, "
                f"{plain_us:.2f} us when they do not (a result cached by input contents)")
    return None
