"""The KernelBench target: one task (Model, get_inputs, get_init_inputs); candidates are Python files defining
ModelNew, usually with inline CUDA.

Screening is the KernelBench static layer (kernelrl/kernelbench/static_checks.py): where `kb eval` only flags a
finding, evolve rejects it and keeps it as a negative example, since a model being optimised against the
evaluator is exactly who would find those constructs. Evaluation is the KernelBench worker (spawned, crash- and
hang-safe), so every dynamic check applies. There is no separate build: load_inline compiles inside the worker,
and a failed build comes back as the candidate's verdict."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from kernelrl.evolve.population import safe_name
from kernelrl.evolve.prompts import render
from kernelrl.evolve.target import Built, Evaluation, Target
from kernelrl.evolve.verdicts import categorize
from kernelrl.harness.verdicts import Rejected, Verdict, key_of
from kernelrl.jobs.measure import BenchError
from kernelrl.kernelbench.static_checks import scan, task_input_dtype
from kernelrl.kernelbench.tasks import NUMBER_RE, check_pair, inspect_candidate, inspect_task
from kernelrl.kernelbench.worker import (DEFAULT_BASELINES, KBSettings, failed_record, pair_verdict, run_pairs,
                                        task_result)


class KernelBenchTarget(Target, kind="kernelbench"):
    fence = "python"
    language = "python"
    entry = "ModelNew"
    extension = ".py"
    comment = "#"

    def __init__(self, task_path: str | Path, work_dir: str | Path, device: str = "cuda",
                 baselines: tuple[str, ...] | None = None, objective: str | None = None, rounds: int = 5,
                 hang_timeout_s: float = 120.0, own_kernels: bool = False):
        self.task = inspect_task(task_path)
        if self.task.error:
            raise BenchError(f"task {task_path}: {self.task.error}")
        self.device = device
        self.baselines = tuple(baselines or (DEFAULT_BASELINES if device == "cuda" else ("eager",)))
        unknown = [b for b in self.baselines if b not in DEFAULT_BASELINES]
        if unknown:
            raise BenchError(f"unknown KernelBench baseline {unknown[0]}: choose from {', '.join(DEFAULT_BASELINES)}")
        self.objective = objective or self.baselines[0]
        if self.objective not in self.baselines:
            raise BenchError(f"the objective baseline {self.objective} must be one of {', '.join(self.baselines)}")
        self.rounds, self.hang_timeout_s = rounds, hang_timeout_s
        self.own_kernels = own_kernels  # the kernel census (kernelbench/census.py): PyTorch's output earns nothing
        digest = hashlib.sha256(self.task.source.encode()).hexdigest()[:10]
        self.key = f"kb:{self.task.name}:{digest}"
        self.title = f"KernelBench task {self.task.name}"
        self.work_dir = Path(work_dir) / safe_name(f"{self.task.name}_{digest}")

    def preflight(self) -> None:
        if self.device == "cuda":
            if not torch.cuda.is_available():
                raise BenchError("no CUDA device for the KernelBench evaluation: run on a GPU machine, or pass "
                                 "--kb-device cpu for a CPU dry run")

    def task_text(self) -> str:
        return render("task_kernelbench.md", task_name=self.task.name, task_source=self.task.source.rstrip(),
                      objective=self.objective, baselines=", ".join(self.baselines), device=self.device)

    def screen(self, source: str) -> Rejected | None:
        findings = [f for f in scan(source, task_input_dtype(self.task.source)) if f.rule != "syntax"]
        return Rejected(Verdict.STATIC_CHECKS, "; ".join(map(str, findings[:3]))) if findings else None

    def _write(self, name: str, source: str) -> Path:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        path = self.work_dir / f"{name}.py"
        if not path.exists() or path.read_text() != source:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(source)
            tmp.replace(path)
        return path

    def build(self, sources: dict[str, str]) -> dict[str, Built]:
        out = {}
        for name, source in sources.items():
            path = self._write(name, source)
            cand = inspect_candidate(path)
            if cand.error:
                key = Verdict.SYNTAX if cand.syntax_error else Verdict.CONTRACT
                out[name] = Built(False, key.reason(cand.error), cand.error, key=key.value)
                continue
            reasons = check_pair(self.task, cand).reasons
            out[name] = Built(False, Verdict.CONTRACT.reason(reasons[0]), reasons[0], key=Verdict.CONTRACT.value) \
                if reasons else Built(True, lib_path=str(path))
        return out

    def evaluate(self, sources: dict[str, str], ui) -> dict[str, Evaluation]:
        names = list(sources)
        paths = [self._write(n, sources[n]) for n in names]
        settings = KBSettings(device=self.device, baselines=self.baselines, rounds=self.rounds,
                              hang_timeout_s=self.hang_timeout_s, own_kernels=self.own_kernels)
        ui.stage(f"evaluating {len(names)} candidates for {self.task.name} on {self.device}")
        records = run_pairs([(str(self.task.path), str(p)) for p in paths], settings)
        out = {}
        for i, name in enumerate(names):
            ok, reason = pair_verdict(records.get(i, []))
            if not ok:
                judged = failed_record(records.get(i, [])) or Verdict.NOT_EVALUATED  # its key decides, not its text
                key = key_of(judged)
                out[name] = Evaluation(categorize(judged), reason, key=key.value if key else None)
                continue
            res = task_result(self.task.name, records[i], self.baselines)
            speedups = {b: round(s, 4) for b in self.baselines if (s := res.speedup(b)) is not None}
            detail = {self.task.name: {"us": res.candidate_us, "baselines": dict(res.baseline_us)}}
            if self.objective not in speedups:
                out[name] = Evaluation("failed", f"no {self.objective} time to compare with", None, speedups, detail)
            else:
                out[name] = Evaluation("ok", None, speedups[self.objective], speedups, detail)
        return out

    def seed_matches(self, path: Path) -> bool:
        """A seed file for this task: the same stem, or KernelBench's `<n>_` problem number."""
        if path.suffix != ".py":
            return False
        if path.stem == self.task.stem:
            return True
        a, b = NUMBER_RE.match(path.stem), NUMBER_RE.match(self.task.stem)
        return bool(a and b and a.group(1) == b.group(1))

    def export_stem(self, candidate, rank: int) -> str:
        # The best one takes the task's own name, so `kernelrl kb eval --candidates DIR` pairs it with the task.
        return self.task.stem if rank == 0 else f"{self.task.stem}__{candidate.name}"
