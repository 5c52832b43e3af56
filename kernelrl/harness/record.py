"""One typed record of one measured method in one mode, what every worker sends and every stage reads: built here
in one place (`Record`), sent over the pipe and stored as a plain dict (`to_dict`). A KernelBench pair's record is
the same record with its baseline's fields filled in (one record per baseline)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kernelrl.harness.verdicts import Verdict, verdict_of


@dataclass
class Record:
    method: str
    mode: str
    verified: bool = False
    reason: str | None = None  # the verdict key's text and a detail line; None when verified
    verdict: str | None = None  # the Verdict key (its value); None when verified
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

    @classmethod
    def failed(cls, method: str, mode: str, reason: str, **fields) -> "Record":
        """A method that produced no verified time: the reason line, and its key read from it."""
        key = verdict_of(reason)
        return cls(method, mode, False, reason, (key or Verdict.WORKER_ERROR).value, **fields)

    def to_dict(self) -> dict:
        return asdict(self)
