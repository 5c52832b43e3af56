"""One typed record of one measured method in one mode, what every worker sends and every stage reads: built here
in one place (`Record`), sent over the pipe and stored as a plain dict (`to_dict`). A KernelBench pair's record is
the same record with its baseline's fields filled in (one record per baseline)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kernelrl.harness.verdicts import Verdict


@dataclass
class Record:
    method: str
    mode: str
    verified: bool = False
    reason: str | None = None  # for people: the verdict key's text and the detail line; None when verified
    verdict: str | None = None  # the Verdict key (its value); None when verified
    detail: str | None = None  # the key's detail line (without the key's text); None when verified
    time_us_median: float | None = None
    time_us_p10: float | None = None
    time_us_p90: float | None = None
    samples: int = 0
    tflops: float | None = None
    max_rel_err: float | None = None
    extra: dict = field(default_factory=dict)
    # KernelBench pairs: the baseline this record compares with
    baseline: str | None = None
    candidate_us: float | None = None
    baseline_us: float | None = None
    speedup: float | None = None
    max_abs_err: float | None = None
    tolerance: float | None = None  # the tolerance max_rel_err was judged by (harness.tolerance)
    baseline_reason: str | None = None
    profile: str | None = None  # the tolerance profile that decided `verified` (harness.tolerance)
    profiles: dict | None = None  # each tolerance profile -> whether the pair is correct under it (times then count)
    tightest_tolerance: float | None = None  # the smallest atol = rtol every judged output met
    task_verdicts: dict | None = None  # profile -> why the task cannot tell a right output from a trivial one there
    kernelbench_rule: bool | None = None  # what KernelBench's own check says of the first checked call (judge.py)

    @classmethod
    def failed(cls, method: str, mode: str, verdict: Verdict, detail: str = "", **fields) -> "Record":
        """A method that produced no verified time: its verdict key and detail (the reason line made of them)."""
        return cls(method, mode, False, verdict.reason(detail), verdict.value, detail, **fields)

    def to_dict(self) -> dict:
        return asdict(self)
