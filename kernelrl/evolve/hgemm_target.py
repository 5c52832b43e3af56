"""The HGEMM target: candidates in the evaluator's kernelrl_hgemm contract, scored on a shape set.

Evaluation is `kernelrl.jobs.measure.run_bench` in device mode, exactly as the tuner uses it, so every defence of the
evaluator applies and every measurement lands in the results database (the population's own file). Building
happens first and apart, with the same builder and cache, so compile errors reach the repair turn before any GPU
time is spent and run_bench finds the libraries already built. With the dummy runner nothing is built: a lexical
check stands in for nvcc."""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path

from kernelrl import environment
from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.build.toolchain import Toolchain, cutlass_include_dirs
from kernelrl.evolve.lexcheck import lexical_errors
from kernelrl.evolve.profile import collect_hgemm
from kernelrl.evolve.prompts import render
from kernelrl.evolve.screen import contract_hgemm, screen_hgemm
from kernelrl.evolve.target import Built, Evaluation, Target, geomean
from kernelrl.evolve.verdicts import categorize
from kernelrl.harness.verdicts import Rejected, Verdict, key_of
from kernelrl.jobs.measure import BenchConfig, BenchError, run_bench
from kernelrl.run.runner import RunSettings
from kernelrl.workloads.hgemm import GemmProblem

MAX_SHAPES_LISTED = 40
DEFAULT_BASELINES = ("torch", "cublas_tn")


def tolerance_text(acc: str) -> str:
    if acc == "fp32":
        return "fp32 accumulation, rounded to fp16 once at the store; max relative error 8·2⁻¹¹ ≈ 3.9e-3"
    return "fp16 accumulation; max relative error 2⁻¹¹·(16 + √K)"


def score_rows(rows: list[dict], names: list[str], problems: list[GemmProblem], baselines: list[str],
               objective: str) -> dict[str, Evaluation]:
    """Each candidate's verdict from run_bench's device-mode rows: failed on its first failing shape, else the
    geomean over shapes of each baseline's time over the candidate's, from the same interleaved run."""
    by = {(r["method"], f"{r['m']}x{r['n']}x{r['k']}"): r for r in rows if r["mode"] == "device"}
    out = {}
    for name in names:
        detail, failure = {}, None
        judged: Verdict | dict | None = None  # what failed: a verdict, or the failed record (which holds its key)
        for p in problems:
            r = by.get((name, p.name))
            if r is None or (r["verified"] and not r["time_us_median"]):
                failure, judged = f"on {p.name}: not measured", Verdict.NOT_TIMED
                break
            if not r["verified"]:
                failure, judged = f"on {p.name}: {r['reason']}", r
                break
            base = {b: by[(b, p.name)]["time_us_median"] for b in baselines
                    if (b, p.name) in by and by[(b, p.name)]["verified"] and by[(b, p.name)]["time_us_median"]}
            detail[p.name] = {"us": r["time_us_median"], "baselines": base}
        if failure:
            key = key_of(judged)  # the failed record's verdict key decides, never its text
            out[name] = Evaluation(categorize(judged), failure, key=key.value if key else None)
            continue
        speedups = {b: geomean([d["baselines"][b] / d["us"] for d in detail.values() if b in d["baselines"]])
                    for b in baselines}
        speedups = {b: round(s, 4) for b, s in speedups.items() if s is not None}
        if objective not in speedups:
            out[name] = Evaluation("failed", f"no verified {objective} time to compare with", None, speedups, detail)
        else:
            out[name] = Evaluation("ok", None, speedups[objective], speedups, detail)
    return out


class HgemmTarget(Target, kind="hgemm"):
    def __init__(self, problems: list[GemmProblem], db_path: str | Path, baselines=DEFAULT_BASELINES,
                 objective: str | None = None, runner: str = "local", settings: RunSettings | None = None,
                 arch: str | None = None, command: str = "kernelrl evolve", referee: bool = False):
        if not problems:
            raise BenchError("no shapes to evolve for")
        if len({p.acc for p in problems}) != 1:
            raise BenchError("all shapes of one evolve run share one accumulator")
        self.problems = list(problems)
        self.baselines = list(baselines)
        self.objective = objective or (self.baselines[0] if self.baselines else "")
        if self.objective not in self.baselines:
            raise BenchError(f"the objective baseline {self.objective or '(none)'} must be one of --baselines "
                             f"({', '.join(self.baselines) or 'none given'})")
        self.db_path = Path(db_path)
        self.runner, self.arch, self.command = runner, arch, command
        self.referee = referee  # the model's kernels run again in processes of their own (run/referee.py)
        self.settings = settings or RunSettings(rounds=5)
        acc = self.problems[0].acc
        digest = hashlib.sha256(",".join(sorted(p.name for p in self.problems)).encode()).hexdigest()[:10]
        self.key = f"hgemm:{acc}:{len(self.problems)}:{digest}"
        self.title = f"HGEMM ({acc} accumulator) on {len(self.problems)} shape{'s' * (len(self.problems) > 1)}"

    def preflight(self) -> None:
        if self.runner != "local":
            return
        if not environment.gpu_info().get("gpu"):
            raise BenchError("no NVIDIA GPU found (nvidia-smi shows none): run on a machine with a GPU, "
                             "or use --runner dummy to exercise the pipeline")
        self.toolchain  # noqa: B018  (raises ToolchainError without nvcc)

    @cached_property
    def toolchain(self):
        return Toolchain.discover(arch=self.arch)

    @cached_property
    def builder(self):
        return LocalBuilder(self.toolchain)

    @cached_property
    def _task_text(self) -> str:
        shapes = [p.name for p in self.problems]
        listed = ", ".join(shapes[:MAX_SHAPES_LISTED])
        if len(shapes) > MAX_SHAPES_LISTED:
            listed += f", … and {len(shapes) - MAX_SHAPES_LISTED} more"
        arch = self.arch or (self.toolchain.arch if self.runner == "local" else "sm_90a")
        cutlass = ("CUTLASS/CuTe headers are on the include path (header-only use is fine)."
                   if cutlass_include_dirs() else "CUTLASS is not installed: plain CUDA C++ and inline PTX only.")
        return render("task_hgemm.md", acc=self.problems[0].acc, tolerance=tolerance_text(self.problems[0].acc),
                      arch=arch, cutlass=cutlass, n_shapes=len(shapes), shapes=listed,
                      baselines=", ".join(self.baselines), objective=self.objective)

    def task_text(self) -> str:
        return self._task_text

    def screen(self, source: str) -> Rejected | None:
        return screen_hgemm(source)

    def build(self, sources: dict[str, str]) -> dict[str, Built]:
        out: dict[str, Built] = {}
        to_compile = {}
        for name, source in sources.items():
            broken = contract_hgemm(source)
            if broken:
                out[name] = Built(False, str(broken), str(broken), key=broken.verdict.value)
            elif self.runner != "local":  # the dummy runner (and test runners) load nothing: nvcc is not needed
                errors = lexical_errors(source, f"{name}.cu")
                out[name] = Built(False, Verdict.COMPILE_ERROR.reason(errors[0]), "\n".join(errors),
                                  key=Verdict.COMPILE_ERROR.value) if errors else Built(True)
            else:
                to_compile[name] = source
        if to_compile:
            results = self.builder.build_many([BuildRequest(s, name=n) for n, s in to_compile.items()])
            for r in results:
                failure = r.failure
                out[r.name] = Built(r.ok, r.error, r.log, r.resources, r.lib_path,
                                    key=failure.verdict.value if failure else None)
        return out

    def evaluate(self, sources: dict[str, str], ui) -> dict[str, Evaluation]:
        cfg = BenchConfig(problems=self.problems, modes=["device"], baselines=self.baselines, settings=self.settings,
                          db_path=self.db_path, arch=self.arch, runner=self.runner, command=self.command,
                          sources=dict(sources), referee=self.referee)
        outcome = run_bench(cfg, ui)
        evals = score_rows(outcome.rows, list(sources), self.problems, self.baselines, self.objective)
        for name, failure in outcome.build_failures.items():  # built here already; only a changed toolchain lands here
            evals[name] = Evaluation(categorize(failure.verdict), str(failure), key=failure.verdict.value)
        return evals

    def profile(self, built: Built, sets) -> dict | None:
        if not built.lib_path:
            return {"error": "profiling needs a built library (the local runner on a GPU machine)", "skip_rest": True}
        problem = max(self.problems, key=lambda p: p.flops)  # the shape where the kernel's design matters most
        return collect_hgemm(built.lib_path, problem, sets)
