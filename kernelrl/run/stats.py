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
