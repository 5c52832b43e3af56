"""Targets: what an evolve run optimises, and how a candidate for it is described, screened, built and judged.

Two kinds: `hgemm` (a shape set; candidates are .cu files in the evaluator's HGEMM contract) and `kernelbench`
(one KernelBench-format task; candidates are Python files defining ModelNew). The loop only talks to this
interface, so a new kind of workload is one subclass."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.harness.verdicts import Rejected
from kernelrl.registry import Registered


@dataclass
class Built:
    """A candidate after the build stage: ok, or the error (its reason line; category compile), its verdict key and
    the log for the repair turn."""

    ok: bool
    error: str | None = None
    log: str = ""
    resources: dict = field(default_factory=dict)
    lib_path: str | None = None
    key: str | None = None  # the Verdict key of a failed build (compile error, contract, syntax, ...)


@dataclass
class Evaluation:
    category: str
    verdict: str | None = None  # the reason line shown to people and in prompts
    score: float | None = None
    speedups: dict = field(default_factory=dict)
    detail: dict = field(default_factory=dict)
    key: str | None = None  # the Verdict key of a failure, where an evaluator gave one


def geomean(values: Iterable[float]) -> float | None:
    kept = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, kept)) / len(kept)) if kept else None


class Target(Registered):
    registry: dict[str, type["Target"]] = {}

    fence = "cuda"  # the code block language asked for in prompts
    language = "cuda"  # the extract.LANGUAGES entry accepted in replies
    entry = "kernelrl_hgemm"  # what one complete file must define
    extension = ".cu"
    comment = "//"
    key = ""  # the population key: a run resumes the population with the same key
    title = ""
    objective = ""  # the baseline the score is a speedup over

    def preflight(self) -> None:
        """Raise (one line) when this machine cannot evaluate candidates, before any model call is spent."""

    def task_text(self) -> str:
        raise NotImplementedError

    def screen(self, source: str) -> Rejected | None:
        """A static rejection (category rejected: its key and detail), or None."""
        return None

    def build(self, sources: dict[str, str]) -> dict[str, Built]:
        raise NotImplementedError

    def evaluate(self, sources: dict[str, str], ui) -> dict[str, Evaluation]:
        raise NotImplementedError

    def profile(self, built: Built, sets) -> dict | None:
        """Profiler metrics for a built candidate, or {"error": ...}; "skip_rest" when no candidate of this
        target can be profiled here."""
        return {"error": f"profiling is not available for {self.title}", "skip_rest": True}

    def seed_matches(self, path: Path) -> bool:
        """Whether a --seed file belongs to this target (several targets can share one run)."""
        return path.suffix == self.extension

    def export_stem(self, candidate, rank: int) -> str:
        return candidate.name
