"""What a completion is judged against, as plain data, and the judge that runs inside an evaluation worker.

A dataset row carries its target as a JSON `TargetSpec`, so the reward function, a spawned evaluation process and a
Ray task on another node all rebuild the same evolve target (kernelrl/evolve/hgemm_target.py, kb_target.py) from
it. The judge reuses those targets' static screen and build, and the evaluator itself for the verdict and the
timings (run_bench for HGEMM, the KernelBench worker for tasks), so every defence of the evaluator applies to what
the policy writes. It keeps what the evolve targets drop and the reward needs: each shape's max_rel_err and the
tolerance it is judged by."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from kernelrl.evolve.hgemm_target import DEFAULT_BASELINES, HgemmTarget, score_rows
from kernelrl.evolve.kb_target import KernelBenchTarget
from kernelrl.evolve.verdicts import categorize
from kernelrl.harness.tolerance import output_tolerance
from kernelrl.harness.verdicts import Verdict, key_of
from kernelrl.jobs.measure import BenchConfig, NullUI, run_bench
from kernelrl.kernelbench.static_checks import task_input_dtype
from kernelrl.kernelbench.worker import KBSettings, failed_record, pair_verdict, run_pairs, task_result
from kernelrl.run.runner import RunSettings
from kernelrl.train.recorded import judge_recorded
from kernelrl.train.reward import Judgement
from kernelrl.verify.checks import tolerance
from kernelrl.workloads.hgemm import parse_shapes

KINDS = ("hgemm", "kernelbench")
COMPLETIONS = ("code", "spec")


@dataclass(frozen=True)
class TargetSpec:
    kind: str  # "hgemm" or "kernelbench"
    baselines: tuple[str, ...] = ()
    objective: str | None = None
    rounds: int = 5
    hang_timeout_s: float = 60.0
    work_dir: str = ""  # HGEMM: the results database lives here; KernelBench: candidate files are written here
    # HGEMM
    shapes: tuple[str, ...] = ()
    acc: str = "fp32"
    runner: str = "local"  # "dummy": made-up times on the CPU, for tests and dry runs; "recorded": a replay
    arch: str | None = None
    completion: str = "code"  # "code": a fenced .cu file; "spec": a kernel spec (kernelrl/space/spec.py)
    recorded: str = ""  # runner "recorded": the table of committed measurements it replays
    # KernelBench
    task_path: str = ""
    device: str = "cuda"
    own_kernels: bool = False  # the kernel census: a call that runs every kernel the reference's does is rejected

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown target kind {self.kind!r}: choose from {', '.join(KINDS)}")
        if self.completion not in COMPLETIONS:
            raise ValueError(f"completion {self.completion!r}: choose from {', '.join(COMPLETIONS)}")
        object.__setattr__(self, "baselines", tuple(self.baselines))
        object.__setattr__(self, "shapes", tuple(self.shapes))

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "TargetSpec":
        d = json.loads(text)
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})

    @property
    def entry(self) -> tuple[str, str]:
        """A code completion's file: its language (an extract.LANGUAGES key) and the entry point it must define."""
        return ("python", "ModelNew") if self.kind == "kernelbench" else ("cuda", "kernelrl_hgemm")

    @property
    def label(self) -> str:
        if self.kind == "hgemm":
            return f"hgemm[{','.join(self.shapes)}]"
        return f"kb[{Path(self.task_path).stem}]"


def make_target(spec: TargetSpec):
    """The evolve target a spec describes (cheap: nothing is built or run)."""
    work = Path(spec.work_dir or ".")
    if spec.kind == "hgemm":
        problems = parse_shapes(",".join(spec.shapes), acc=spec.acc)
        return HgemmTarget(problems, work / "rewards.db", spec.baselines or DEFAULT_BASELINES, spec.objective,
                           spec.runner, RunSettings(rounds=spec.rounds, hang_timeout_s=spec.hang_timeout_s),
                           spec.arch, command="kernelrl train")
    return KernelBenchTarget(spec.task_path, work / "kb_candidates", spec.device, spec.baselines or None,
                             spec.objective, spec.rounds, spec.hang_timeout_s, own_kernels=spec.own_kernels)


def code_name(code: str) -> str:
    """The method name a candidate is measured under: its content, so a repeat resumes from the database."""
    return "rl_" + hashlib.sha256(code.encode()).hexdigest()[:16]


@dataclass
class _Pending:
    code: str
    judgement: Judgement | None = None
    resources: dict = field(default_factory=dict)


def judge(spec: TargetSpec, codes: dict[str, str], ui=None) -> dict[str, Judgement]:
    """Screen, build and evaluate extracted candidates (name → source) against one target; one Judgement each.
    Evaluation errors of a candidate are its verdict; only a failure of the evaluator itself raises."""
    ui = ui or NullUI()
    if spec.runner == "recorded":
        return judge_recorded(spec.recorded, spec.shapes, spec.acc, spec.objective or spec.baselines[0], codes)
    target = make_target(spec)
    pending = {name: _Pending(code) for name, code in codes.items()}
    for _name, p in pending.items():
        rejected = target.screen(p.code)
        if rejected is not None:
            p.judgement = Judgement("rejected", str(rejected), target.objective, code_chars=len(p.code),
                                    key=rejected.verdict.value)
    todo = {n: p.code for n, p in pending.items() if p.judgement is None}
    for name, built in (target.build(todo) if todo else {}).items():
        pending[name].resources = built.resources or {}
        if not built.ok:
            key = built.key or Verdict.COMPILE_ERROR.value  # a build that names no key did not compile
            pending[name].judgement = Judgement(categorize(key), built.error or Verdict(key).reason(), target.objective,
                                                code_chars=len(pending[name].code), resources=built.resources or {},
                                                key=key)
    ready = {n: p.code for n, p in pending.items() if p.judgement is None}
    if ready:
        evaluate = _evaluate_hgemm if spec.kind == "hgemm" else _evaluate_kernelbench
        for name, j in evaluate(target, ready, ui).items():
            j.code_chars, j.resources = len(ready[name]), pending[name].resources
            pending[name].judgement = j
    return {n: p.judgement or Judgement("failed", Verdict.NOT_EVALUATED.value, target.objective,
                                        key=Verdict.NOT_EVALUATED.value) for n, p in pending.items()}


def _evaluate_hgemm(target, sources: dict[str, str], ui) -> dict[str, Judgement]:
    """run_bench in device mode, as HgemmTarget.evaluate does, keeping each shape's error and tolerance."""
    cfg = BenchConfig(problems=target.problems, modes=["device"], baselines=target.baselines,
                      settings=target.settings, db_path=target.db_path, arch=target.arch, runner=target.runner,
                      command=target.command, sources=dict(sources))
    outcome = run_bench(cfg, ui)
    evals = score_rows(outcome.rows, list(sources), target.problems, target.baselines, target.objective)
    errs = {(r["method"], f"{r['m']}x{r['n']}x{r['k']}"): r.get("max_rel_err") for r in outcome.rows
            if r["mode"] == "device"}
    out = {}
    for name in sources:
        if name in outcome.build_failures:
            failure = outcome.build_failures[name]
            out[name] = Judgement(categorize(failure.verdict), str(failure), target.objective,
                                  key=failure.verdict.value)
            continue
        ev = evals[name]
        shapes = {p.name: {**ev.detail[p.name], "max_rel_err": errs.get((name, p.name)),
                           "tolerance": tolerance(p.acc, p.k)} for p in target.problems if p.name in ev.detail}
        out[name] = Judgement(ev.category, ev.verdict, target.objective, shapes, key=ev.key)
    return out


def _evaluate_kernelbench(target, sources: dict[str, str], ui) -> dict[str, Judgement]:
    """The KernelBench worker on every pair, as KernelBenchTarget.evaluate does, keeping the error and the
    tolerance the worker recorded beside it (one rule, harness.tolerance; max_rel_err is |out - ref| / (|ref| +
    atol))."""
    names = list(sources)
    paths = [target._write(n, sources[n]) for n in names]
    settings = KBSettings(device=target.device, baselines=target.baselines, rounds=target.rounds,
                          hang_timeout_s=target.hang_timeout_s, own_kernels=target.own_kernels)
    ui.stage(f"evaluating {len(names)} candidates for {target.task.name} on {target.device}")
    records = run_pairs([(str(target.task.path), str(p)) for p in paths], settings)
    out = {}
    for i, name in enumerate(names):
        recs = records.get(i, [])
        ok, reason = pair_verdict(recs)
        if not ok:
            judged = failed_record(recs) or Verdict.NOT_EVALUATED  # its key decides, not its text
            key = key_of(judged)
            out[name] = Judgement(categorize(judged), reason, target.objective, key=key.value if key else None)
            continue
        res = task_result(target.task.name, recs, target.baselines)
        err = max((r["max_rel_err"] for r in recs if r.get("max_rel_err") is not None), default=None)
        # the tolerance the worker judged that error by (harness.tolerance, by the reference output's dtype)
        tol = next((r["tolerance"] for r in recs if r.get("tolerance")), None) or \
            output_tolerance(task_input_dtype(target.task.source))
        shapes = {target.task.name: {"us": res.candidate_us, "baselines": dict(res.baseline_us),
                                     "max_rel_err": err, "tolerance": tol}}
        out[name] = Judgement("ok", None, target.objective, shapes)
    return out
