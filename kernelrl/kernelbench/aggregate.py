"""Result tables in the style of CUDA-L1: per baseline, over tasks, the mean, max and 75th/50th/25th percentile
speedup (baseline time / candidate time), how many candidates succeeded, and how many beat the baseline by more
than 1 % (speedup > 1.01).

Baselines: `eager` (the task's Model), `compile_default` (torch.compile), `compile_reduce_overhead`
(torch.compile mode="reduce-overhead") and `cuda_graph` (Model captured in a CUDA graph).

A failed candidate (bad file, flagged, wrong output, crash) counts in `tasks` and not in `success`. Its speedup is
left out of the statistics by default; with `failed_as_zero=True` it enters them as 0 (CUDA-L1 reports both ways).
A task whose baseline itself was not measured (e.g. torch.compile failed) is left out of that baseline's row."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kernelrl.harness.stats import percentile

BASELINES = ("eager", "compile_default", "compile_reduce_overhead", "cuda_graph")
FASTER = 1.01


@dataclass
class TaskResult:
    """One task's measurement: the candidate's time (None when it failed) and each baseline's."""

    task: str
    candidate_us: float | None
    baseline_us: dict[str, float] = field(default_factory=dict)
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.candidate_us is not None and self.candidate_us > 0 and math.isfinite(self.candidate_us)

    def speedup(self, baseline: str) -> float | None:
        base = self.baseline_us.get(baseline)
        if not self.ok or not base or not math.isfinite(base):
            return None
        return base / self.candidate_us


def aggregate(results: list[TaskResult], baselines: tuple[str, ...] = BASELINES,
              failed_as_zero: bool = False) -> list[dict]:
    """One row per baseline: tasks, success, faster, mean, max, p75, p50, p25 (NaN where nothing counts)."""
    rows = []
    for b in baselines:
        measured = [r for r in results if r.baseline_us.get(b)]
        speeds = [r.speedup(b) for r in measured if r.ok]
        counted = speeds + ([0.0] * (len(measured) - len(speeds)) if failed_as_zero else [])
        rows.append({
            "baseline": b, "tasks": len(measured), "success": len(speeds),
            "faster": sum(s > FASTER for s in speeds),
            "mean": sum(counted) / len(counted) if counted else math.nan,
            "max": max(counted) if counted else math.nan,
            "p75": percentile(counted, 75), "p50": percentile(counted, 50), "p25": percentile(counted, 25),
        })
    return rows
