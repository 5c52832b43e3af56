"""The parent side of the KernelBench dynamic evaluation: its settings, the pairs it hands the worker, `run_pairs`
(build every candidate's extensions, then evaluate the pairs in spawned workers) and what a pair's records say
(`pair_verdict`, `failed_record`, `task_result`). Nothing here imports torch; the worker process itself
(kernelrl/kernelbench/worker_process.py) is imported only inside it, through `worker_main`. What the worker
checks, and in which order: kernelrl/kernelbench/worker.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.build.builder import cache_root
from kernelrl.harness.tolerance import output_tolerance
from kernelrl.harness.verdicts import Verdict
from kernelrl.kernelbench import referee
from kernelrl.kernelbench.aggregate import TaskResult
from kernelrl.kernelbench.build import build_extensions, extension_dir
from kernelrl.kernelbench.requirements import environment_detail, missing_packages

DEFAULT_BASELINES = ("eager", "compile_default", "compile_reduce_overhead", "cuda_graph")
MODE = "kb"


@dataclass
class KBSettings:
    device: str = "cuda"
    baselines: tuple[str, ...] = DEFAULT_BASELINES
    n_seeds: int = 3  # the last seed is this run's secret
    rounds: int = 5  # at most: a large task stops earlier once its rounds agree (harness.rounds.Settle)
    calls_per_round: int = 3
    settle_spread: float | None = 0.02  # rounds' medians within this: stop (None: always `rounds`)
    settle_round_s: float = 1.0  # only rounds at least this long are cut short
    input_sets: int = 3
    warmup_calls: int = 2
    hang_timeout_s: float = 120.0
    flush_l2_mb: int = 256
    extensions_dir: str | None = None  # candidates' built extensions (kernelbench/build.py); None: the default
    compile_timeout_s: float = 600.0  # one candidate's extension build; also the hang watch while one loads
    build_jobs: int | None = None  # extension builds at once (None: one per core)
    memory_cap_gib: float | None = None  # the device memory the memory plan may count on, at most (kernelbench/
    # memory_plan.py; e.g. 79 to evaluate as on an 80 GB card); None: what is free
    tolerance_profile: str = "strict"  # the profile that decides `verified` (harness.tolerance); both are reported
    # this run's candidates' extension folders (set by run_pairs): the ones each pair's fence watches, not every
    # folder an earlier or concurrent run left under a shared root (kernelbench/extension_fence.py)
    fenced: list[str] = field(default_factory=list)
    build_on_device: bool = True  # models constructed under the device (weights initialised there), not the CPU
    referee: bool = True  # an accepted pair is run again outside its worker's process (kernelbench/referee.py): its
    # values and its speed from processes the candidate cannot reach; off only to study the worker alone
    own_kernels: bool = False  # a pair that passed everything is `reference kernels` where its call launched every
    # kernel the reference's does (kernelbench/census.py): PyTorch computed the output, beside or instead of its own.
    # On CUDA each census ends its worker (the profiler's CUPTI session must not reach another pair's CUDA graphs):
    # the next pair starts a fresh one (the hot spare) and prepares its task's baselines again

    def __post_init__(self):
        output_tolerance("float32", self.tolerance_profile)  # UnknownProfile: one line that names the choices

    @property
    def writable_dirs(self) -> list[str]:
        """Where the workers may write besides their scratch folder and caches (harness/sandbox.py): the
        extension root, which torch's builder writes its lock and build files into as a candidate loads."""
        return [self.extensions_dir] if self.extensions_dir else []

    @property
    def load_timeout_s(self) -> float:
        return self.compile_timeout_s

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["baselines"] = list(self.baselines)
        return d


@dataclass
class KBTask:
    """One (task, candidate) pair for the worker; duck-types `runner.Task` for LocalRunner."""

    id: int
    task_path: str
    candidate_path: str
    name: str = ""
    modes: list[str] = field(default_factory=lambda: [MODE])
    skip: set[str] = field(default_factory=set)
    failed_builds: list[dict] = field(default_factory=list)  # the build step's, replayed in the worker
    built_contents: dict[str, str] | None = None  # its extension folder as built (extension_fence); None: not built

    def to_payload(self) -> dict:
        return {"id": self.id, "task_path": str(self.task_path), "candidate_path": str(self.candidate_path),
                "name": self.name, "modes": self.modes, "skip": sorted(self.skip),
                "failed_builds": self.failed_builds, "built_contents": self.built_contents}


def run_pairs(pairs: list[tuple[str, str]], settings: KBSettings, worker_target=None, on_progress=None,
              on_env=None, on_records=None, on_build=None, ray_address: str | None = None,
              ray_workers: int | None = None, hot_spare: bool | None = None) -> dict[int, list[dict]]:
    """Build every candidate's extensions, then evaluate (task path, candidate path) pairs in spawned workers
    (reused across pairs; a fresh one after a crash, a hang or a defence verdict); records per pair index. A
    candidate whose build fails gets its `compile error` / `compile timeout` verdict without running. `on_env`
    gets each worker's environment dict (gpu, torch, cuda_runtime); `on_records(index, records)` a pair's records
    so far, each time more arrive (to store them before the run ends); `on_build(outcome)` each build.
    `hot_spare` (default: with the real worker) keeps the next worker spawned and waiting (LocalRunner).

    With `ray_address` ("local" or a cluster's address), the pairs are spread over the cluster's GPUs (one actor
    each, `ray_workers` of them at most; on `device="cpu"`, over CPUs), each actor running the same local runner on
    its share; records then arrive share by share. The extensions are built here first, on a filesystem the actors
    share (one host)."""
    from kernelrl.run.ray_runner import RayRunner
    from kernelrl.run.runner import LocalRunner, Runner, verdict_records  # loads torch (kernelrl.library.runtime)

    if settings.extensions_dir is None:
        settings.extensions_dir = str(cache_root() / "kb_extensions")
    settings.fenced = sorted({str(extension_dir(settings.extensions_dir, c)) for _, c in pairs
                              if Path(c).is_file()})
    tasks = [KBTask(i, str(t), str(c), name=Path(c).stem) for i, (t, c) in enumerate(pairs)]
    out: dict[int, list[dict]] = {t.id: [] for t in tasks}

    def collect(task, records):
        out[task.id].extend(records)
        if on_records is not None:
            on_records(task.id, out[task.id])

    # A candidate that needs a package this environment lacks gets its verdict without a worker or a build.
    lacking = {c: missing_packages(c) for c in {c for _, c in pairs}}
    # Every other candidate's extensions are built first, in parallel; the hang watch starts after the build.
    built = build_extensions([c for _, c in pairs if not lacking[c]], settings.extensions_dir, settings.build_jobs,
                             settings.compile_timeout_s, on_done=on_build, tasks={c: t for t, c in pairs},
                             device=settings.device,
                             # a lazy compile among parallel builds runs slower than alone; a hang costs this much
                             warm_up_timeout_s=min(settings.compile_timeout_s, 2 * settings.hang_timeout_s))
    runnable = []
    for task in tasks:
        outcome = built.get(task.candidate_path)
        if lacking[task.candidate_path]:
            collect(task, verdict_records(task, "candidate", Verdict.ENVIRONMENT,
                                          environment_detail(lacking[task.candidate_path])))
        elif outcome is not None and outcome.verdict is not None:  # not outcome.ok
            collect(task, verdict_records(task, "candidate", outcome.verdict, outcome.detail))
        else:
            # builds that failed while the candidate went on: the worker raises their errors without compiling
            # (failed_builds.py); carried in the pair's payload, never through a folder a candidate can write
            task.failed_builds = outcome.failed if outcome is not None else []
            # what its folder held once built, for the worker to compare (None: the build step did not build it)
            task.built_contents = outcome.contents if outcome is not None else None
            runnable.append(task)
    if runnable:
        target = worker_target or worker_main
        # a defence verdict recycles the worker (routine with cheats about): the next one waits ready, imported
        spare = worker_target is None if hot_spare is None else hot_spare
        runner: Runner
        if ray_address is None:
            runner = LocalRunner(worker_target=target, hot_spare=spare)
        else:
            runner = RayRunner(ray_address, workers=ray_workers,
                               inner_options={"worker_target": target, "hot_spare": spare},
                               gpus=settings.device != "cpu")
        runner.run(runnable, [], settings, collect, on_progress=on_progress, on_env=on_env)
        if settings.referee:
            for task in runnable:
                if pair_verdict(out[task.id])[0]:  # a forged result is always an acceptance
                    referee.apply(out[task.id], referee.referee(task.task_path, task.candidate_path, settings,
                                                                referee.claimed_speedup(out[task.id]),
                                                                failed_builds=task.failed_builds))
                    if on_records is not None:
                        on_records(task.id, out[task.id])
    return out


def progress_line(done: int, total: int, what: str, verdict: str, elapsed_s: float,
                  evaluating_s: float | None = None) -> str:
    """One pair's progress line: its count, what ran, its verdict, the time so far and an estimate of the rest:
    the mean pair so far times the pairs left, the mean over `evaluating_s` (the time since the build step ended)
    where given, else over all of `elapsed_s`."""
    per_pair = (elapsed_s if evaluating_s is None else evaluating_s) / done if done else 0.0
    eta = f", about {per_pair * (total - done):.0f} s left" if 0 < done < total else ""
    return f"[{done}/{total}] {what}: {verdict} ({elapsed_s:.0f} s{eta})"


def failed_record(records: list[dict]) -> dict | None:
    """The record that decided a failed pair (the candidate's or the reference's), with its verdict key."""
    return next((r for r in records if r.get("method") in ("candidate", "reference") and not r.get("verified")),
                None)


def pair_verdict(records: list[dict]) -> tuple[bool, str | None]:
    """(correct, reason) of one pair from its records: a failed candidate or reference decides; a baseline that
    crashed only loses that baseline."""
    for r in records:
        if r.get("method") in ("candidate", "reference") and not r.get("verified"):
            return False, r.get("reason") or "not evaluated"
    if not any(r.get("method") == "candidate" for r in records):
        return False, "not evaluated"
    return True, None


def task_result(name: str, records: list[dict], baselines=DEFAULT_BASELINES):
    """An aggregate.TaskResult from one pair's records. A failed candidate gets NaN baseline times so it counts
    in each requested baseline's `tasks` and not in `success`."""
    ok, reason = pair_verdict(records)
    cand = [r for r in records if r.get("method") == "candidate"]
    profiles = next((r["profiles"] for r in cand if r.get("profiles")), None) or {}
    timed_us = next((r["candidate_us"] for r in cand if r.get("candidate_us")), None)
    base = {r["baseline"]: r["baseline_us"] for r in cand if r.get("baseline_us")}
    task_says = next((r["task_verdicts"] for r in cand if r.get("task_verdicts")), None) or {}
    if not ok:
        if timed_us is None:
            base = {b: math.nan for b in baselines}
        return TaskResult(name, None, base, reason or "", profiles, timed_us, task_says)
    return TaskResult(name, timed_us, base, "", profiles, timed_us, task_says)


def worker_main(conn, payload: dict):
    """Entry point of the spawned process (the runner protocol of kernelrl.run.protocol)."""
    try:
        from kernelrl.kernelbench.worker_process import serve_worker  # its modules import torch at their top
    except Exception as exc:  # nothing can run: say why, as a failing start() does (torch was imported there)
        conn.send(("startup_error", f"{type(exc).__name__}: {exc}"))
        return
    serve_worker(conn, payload)
