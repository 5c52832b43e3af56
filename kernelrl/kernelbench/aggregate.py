"""Result tables in the style of CUDA-L1: per baseline, over tasks, the mean, max and 75th/50th/25th percentile
speedup (baseline time / candidate time), how many candidates succeeded, and how many beat the baseline by more
than 1 % (speedup > 1.01).

Baselines: `eager` (the task's Model), `compile_default` (torch.compile), `compile_reduce_overhead`
(torch.compile mode="reduce-overhead") and `cuda_graph` (Model captured in a CUDA graph).

A failed candidate (bad file, flagged, wrong output, crash) counts in `tasks` and not in `success`. Its speedup is
left out of the statistics by default; with `failed_as_zero=True` it enters them as 0 (CUDA-L1 reports both ways).
A task whose baseline itself was not measured (e.g. torch.compile failed) is left out of that baseline's row.

`profile_table` gives KernelBench's own metrics (fast_p, geometric mean) under each tolerance profile
(harness.tolerance): `kernelbench` (1e-2, as KernelBench v0/v0.1 and CUDA-L1 report) beside `strict`.

`verdict_counts` and `claims_table` read the CSV's rows (kb eval --csv, kb export; typed or as read back from the
file): how many pairs got each verdict, by category (a `defence` verdict names a behaviour KernelBench's own rule
does not check: its values may match), and a published set's claimed speedups against the measured ones."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kernelrl.harness.stats import geomean, percentile
from kernelrl.harness.tolerance import PROFILES
from kernelrl.harness.verdicts import category_of
from kernelrl.kernelbench.failed_builds import FAILED_TO_BUILD

BASELINES = ("eager", "compile_default", "compile_reduce_overhead", "cuda_graph")
FASTER = 1.01
FAST_P = (0.0, 1.0, 1.5, 2.0)  # KernelBench's fast_p thresholds


@dataclass
class TaskResult:
    """One task's measurement: the candidate's time (None when it failed) and each baseline's."""

    task: str
    candidate_us: float | None
    baseline_us: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    profiles: dict[str, bool] = field(default_factory=dict)  # tolerance profile -> correct under it
    timed_us: float | None = None  # the candidate's time whenever it was timed (also when a looser profile passed)
    task_verdicts: dict[str, str] = field(default_factory=dict)  # profile -> why the task cannot tell right from
    # trivial under it (kernelbench/trivial.py): out of that profile's fast_p

    @property
    def ok(self) -> bool:
        return self.candidate_us is not None and self.candidate_us > 0 and math.isfinite(self.candidate_us)

    def speedup(self, baseline: str) -> float | None:
        base = self.baseline_us.get(baseline)
        if not self.ok or not base or not math.isfinite(base):
            return None
        assert self.candidate_us is not None  # self.ok
        return base / self.candidate_us

    def speedup_under(self, baseline: str, profile: str) -> float | None:
        """The speedup where the candidate is correct under `profile` (None otherwise)."""
        base, t = self.baseline_us.get(baseline), self.timed_us or self.candidate_us
        if not self.profiles.get(profile) or not base or not t or not math.isfinite(base) or t <= 0:
            return None
        return base / t


def profile_table(results: list[TaskResult], baseline: str, profiles: tuple[str, ...] = PROFILES,
                  thresholds: tuple[float, ...] = FAST_P) -> list[dict]:
    """KernelBench's metrics under each tolerance profile, one row per profile: `tasks` (every task, failed ones
    included: KernelBench's denominator, less the tasks that cannot tell a right output from a trivial one under
    that profile, counted in `excluded`), `correct`, `fast_<p>` (the share of tasks that are correct with a speedup
    over `baseline` above p; fast_0 is the correct share) and the geometric-mean speedup over the correct tasks
    whose baseline was measured."""
    rows = []
    for prof in profiles:
        judged = [r for r in results if prof not in r.task_verdicts]
        speeds = [s for s in (r.speedup_under(baseline, prof) for r in judged) if s is not None]
        correct = sum(bool(r.profiles.get(prof)) for r in judged)
        row = {"profile": prof, "baseline": baseline, "tasks": len(judged), "excluded": len(results) - len(judged),
               "correct": correct}
        for p in thresholds:
            row[f"fast_{p:g}"] = (sum(s > p for s in speeds) if p > 0 else correct) / len(judged) \
                if judged else math.nan
        row["geomean"] = geomean(speeds)
        rows.append(row)
    return rows


def aggregate(results: list[TaskResult], baselines: tuple[str, ...] = BASELINES,
              failed_as_zero: bool = False) -> list[dict]:
    """One row per baseline: tasks, success, faster, mean, max, p75, p50, p25 (NaN where nothing counts)."""
    rows = []
    for b in baselines:
        measured = [r for r in results if r.baseline_us.get(b)]
        # a non-finite baseline time has no speedup (None): measured, not a success
        speeds = [s for s in (r.speedup(b) for r in measured if r.ok) if s is not None]
        counted = speeds + ([0.0] * (len(measured) - len(speeds)) if failed_as_zero else [])
        rows.append({
            "baseline": b, "tasks": len(measured), "success": len(speeds),
            "faster": sum(s > FASTER for s in speeds),
            "mean": sum(counted) / len(counted) if counted else math.nan,
            "max": max(counted) if counted else math.nan,
            "p75": percentile(counted, 75), "p50": percentile(counted, 50), "p25": percentile(counted, 25),
        })
    return rows


def _number(value) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _true(value) -> bool:
    return value is True or str(value).strip().lower() in ("1", "true")


def _pairs(rows: list[dict], baseline: str | None = None) -> list[dict]:
    """One row per (task, candidate): the one for `baseline`, or the pair's only row (a verdict row)."""
    out: dict[tuple, dict] = {}
    for r in rows:
        key = (r.get("task"), r.get("candidate"))
        if key not in out or (baseline is not None and r.get("baseline") == baseline):
            out[key] = r
    return list(out.values())


def verdict_counts(rows: list[dict]) -> list[dict]:
    """{verdict, category, pairs, kernelbench_accepts, kernelbench_known} per verdict ("correct" for a verified
    pair), most frequent first: of its pairs, how many KernelBench's own check would have accepted (the record's
    `kernelbench_rule`) among those where it is known (a pair that never reached a checked call has none)."""
    counts: dict[tuple[str, str], list[int]] = {}
    for r in _pairs(rows):
        verified = _true(r.get("verified"))
        record = {"verified": verified, "verdict": r.get("verdict") or None, "reason": r.get("reason")}
        key = ("correct", "ok") if verified else (r.get("verdict") or "unknown", category_of(record).value)
        rule = r.get("kernelbench_rule")
        known = rule not in (None, "")
        n = counts.setdefault(key, [0, 0, 0])
        n[0], n[1], n[2] = n[0] + 1, n[1] + (known and _true(rule)), n[2] + known
    return [{"verdict": v, "category": c, "pairs": n, "kernelbench_accepts": a, "kernelbench_known": k}
            for (v, c), (n, a, k) in sorted(counts.items(), key=lambda kv: -kv[1][0])]


def claims_table(rows: list[dict], baseline: str = "eager", profiles: tuple[str, ...] = PROFILES) -> list[dict]:
    """Per tolerance profile, over the pairs correct under it that have both a measured and a claimed speedup
    over `baseline`: how many, the geometric means of each, how many measured below their claim, and how many ran
    without an extension that failed to build here (their candidate's own fallback was measured)."""
    out = []
    timed = [r for r in rows if r.get("baseline") == baseline]
    for prof in profiles:
        both = [(m, c, FAILED_TO_BUILD in (r.get("notes") or "")) for r in timed if _true(r.get(f"correct_{prof}"))
                and (m := _number(r.get("speedup"))) and (c := _number(r.get("claimed_speedup")))]
        out.append({"profile": prof, "baseline": baseline, "pairs": len(both),
                    "measured_geomean": geomean([m for m, _, _ in both]),
                    "claimed_geomean": geomean([c for _, c, _ in both]),
                    "below_claim": sum(m < c for m, c, _ in both),
                    "without_extension": sum(fallback for _, _, fallback in both)})
    return out


def pair_phases(records: list[dict]) -> dict[str, float]:
    """A pair's account of its worker's time (seconds per phase), which each of its records carries."""
    return next(((r.get("extra") or {}).get("task_phase_s") for r in records
                 if (r.get("extra") or {}).get("task_phase_s")), None) or {}


def phase_totals(accounts) -> dict[str, float]:
    """Seconds per worker phase summed over pairs' accounts (`pair_phases`, or the CSV's phase_s), largest first."""
    totals: dict[str, float] = {}
    for phases in accounts:
        for k, v in phases.items():
            totals[k] = totals.get(k, 0.0) + float(v)
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))
