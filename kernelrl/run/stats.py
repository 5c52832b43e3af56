"""Statistics over raw timing samples, kept apart from how the samples were measured."""

from __future__ import annotations

import math
import statistics


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


def hidden_work(candidate_overheads: list[float], baseline_overhead_medians: list[float],
                candidate_median_us: float) -> str | None:
    """The hidden-work verdict of the host-timed modes, or None.

    Overheads are synchronized wall time minus the stream's event time, per call, in µs. Work hidden from the
    stream (another stream, a host thread) shows only in wall time, so a candidate whose overhead exceeds the
    baselines' median launch overhead by more than max(20 µs, half its own time) is flagged."""
    if not candidate_overheads:
        return None
    ordered = sorted(baseline_overhead_medians)
    reference = ordered[len(ordered) // 2] if ordered else 0.0
    extra = summarize(candidate_overheads)["median"] - reference
    if extra > max(20.0, 0.5 * candidate_median_us):
        return (f"hidden work: synchronized time exceeds the stream's event time by {extra:.1f} us more than "
                f"the baselines' launch overhead")
    return None
