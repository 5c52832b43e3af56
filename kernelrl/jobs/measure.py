"""Measuring as a library call: build candidates, verify and time them with the baselines on a set of shapes,
store every measurement in the database as it is taken, and write the long-format CSV. The bench job of the CLI,
the tuner, evolve and train call it (`run_bench`: `build`, then `measure` of the builder's artifacts); none of
them goes through the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import kernelrl.run.ray_runner  # noqa: F401  (registers the "ray" runner; Ray itself is imported only when used)
from kernelrl import environment
from kernelrl.adapters import cuda_l2
from kernelrl.baselines import BASELINES, native_lib
from kernelrl.build.builder import BuildRequest, BuildResult, LocalBuilder, cache_root
from kernelrl.build.toolchain import Toolchain
from kernelrl.db import Database
from kernelrl.errors import BenchError
from kernelrl.harness import sandbox
from kernelrl.harness.gpu_lock import exclusive_gpus
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.library import native
from kernelrl.library.bench import LibraryPlan
from kernelrl.results import write_csv
from kernelrl.run import referee
from kernelrl.run.runner import Runner, RunSettings, Task, verdict_records
from kernelrl.workloads.hgemm import GemmProblem

MODES = ("device", "offline", "server")


class NullUI:
    """The progress interface of run_bench, silent: for library use and tests. RichUI (kernelrl/cli/ui.py) is the
    loud one."""

    def stage(self, text): pass
    def build_done(self, result): pass
    def start_tasks(self, total, resumed): pass
    def progress(self, task, method, phase): pass
    def task_done(self, task, records): pass


def default_db() -> Path:
    return cache_root() / "results.db"


def parse_modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise BenchError(f"unknown mode {', '.join(bad) or repr(text)}: use device, offline or server "
                         f"(comma-separated)")
    return list(dict.fromkeys(modes))


def parse_baselines(text: str) -> list[str]:
    if text in ("all", ""):
        return list(BASELINES)
    if text == "none":
        return []
    names = [b.strip() for b in text.split(",") if b.strip()]
    bad = [b for b in names if b not in BASELINES]
    if bad:
        raise BenchError(f"unknown baseline {', '.join(bad)}: choose from {', '.join(BASELINES)}, all or none")
    return names


def baseline_spec(name: str) -> dict:
    if name == "torch":
        return {"name": name, "kind": "torch"}
    if name.startswith("cublas_"):
        return {"name": name, "kind": "cublas", "layout": name.split("_")[1]}
    _, flavour, layout = name.split("_")
    return {"name": name, "kind": "cublaslt", "layout": layout, "autotune": flavour == "auto"}


@dataclass
class BenchConfig:
    problems: list[GemmProblem]
    modes: list[str]
    candidates: list[str] = field(default_factory=list)
    baselines: list[str] = field(default_factory=lambda: list(BASELINES))
    settings: RunSettings = field(default_factory=RunSettings)
    db_path: Path = field(default_factory=default_db)
    csv_path: Path | None = None
    arch: str | None = None
    runner: str = "local"
    command: str = ""
    candidate_flags: tuple[str, ...] = ()
    build_workers: int | None = None
    cuda_l2_untimed_padding: bool = False  # CUDA-L2 files: pad in kernelrl_hgemm_stage, outside the timed call
    # Generated candidates (the tuner's): method name → .cu text, beside the files in `candidates`.
    sources: dict[str, str] = field(default_factory=dict)
    # Which candidates run on which problem (the tuner measures a different short list per shape); None: all.
    methods_for: Callable[[GemmProblem], set[str]] | None = None
    ray_address: str | None = None  # spread the shapes over a Ray cluster's GPUs ("local" starts one here)
    library: Path | None = None  # a tuned library folder: measured as the method "kernelrl", called as users call it
    # Appended to every method's key: this run's results are stored apart from runs of the same builds with other
    # settings (the tuner's confirmation run), so none of them is resumed from there.
    key_salt: str = ""
    # Measure nothing: the rows the database holds for these builds, and a count of the tasks left unmeasured (the
    # tuner reads back batches stored by earlier runs once its budget is spent). Nothing is written either.
    stored_only: bool = False
    # Read the rows another machine's GPU (this name, e.g. "NVIDIA H200") stored: stored_only, and no GPU needed here.
    stored_gpu: str | None = None
    # Each candidate the workers verified on a shape runs again in processes of its own (run/referee.py): for code
    # not to be trusted (files, a model's kernels); the tuner's own generated points do not need it.
    referee: bool = False

    @property
    def reads_only(self) -> bool:
        return self.stored_only or self.stored_gpu is not None


@dataclass
class BenchOutcome:
    rows: list[dict]
    env: dict
    seconds: float
    build_failures: dict[str, Rejected]  # a candidate that did not build: its verdict key and detail
    lt_search_s: float
    measured_tasks: int
    resumed_tasks: int
    unmeasured_tasks: int = 0  # what stored_only left out: shapes (and modes) the database lacks


def candidate_names(paths: list[str]) -> dict[str, str]:
    """A unique, readable method name per candidate file: its stem, suffixed on collisions."""
    names: dict[str, str] = {}
    for path in paths:
        stem = Path(path).stem
        name, i = stem, 2
        while name in names or name in BASELINES:
            name, i = f"{stem}_{i}", i + 1
        names[name] = path
    return names


def require_gpu(runner: str, env: dict | None = None) -> None:
    """A local run measures on this machine's GPU: without one, say so before anything is built or measured."""
    if runner == "local" and not (env if env is not None else environment.gpu_info()).get("gpu"):
        raise BenchError("no NVIDIA GPU found (nvidia-smi shows none): run on a machine with a GPU, "
                         "or use --runner dummy to exercise the pipeline")


def db_gpu(runner: str, env: dict) -> str:
    """The GPU part of a run's database keys: the card's name, or 'dummy' for made-up times."""
    return environment.gpu_key(env) if runner == "local" else "dummy"


@dataclass
class Built:
    """The builder's artifacts for one measurement, all the measuring needs of them: each method's spec (what the
    worker loads: baselines and built libraries), each method's key (the content hash results are stored and resumed
    by), the candidates that did not build with their verdicts, the cuBLAS shim's library, and the candidates made
    for one shape only (a CUDA-L2 file named M_N_K.cu: measured on that shape, not reported unsupported on others)."""

    specs: list[dict]
    keys: dict[str, str]
    failures: dict[str, Rejected] = field(default_factory=dict)
    blas_lib: str | None = None
    only_on: dict[str, tuple[int, int, int]] = field(default_factory=dict)


def run_bench(cfg: BenchConfig, ui) -> BenchOutcome:
    """Build what `cfg` names, then measure it. `ui` receives progress: ui.stage(text), ui.build_done(result),
    ui.start_tasks(shapes to measure, shapes resumed), ui.task_done(task, records) once per shape with all its
    records, ui.progress(task, method, phase)."""
    started = time.perf_counter()
    for path in cfg.candidates:
        if not Path(path).is_file():
            raise BenchError(f"candidate {path!r} not found: pass .cu files (or folders of them) to --candidates")
    if cfg.stored_gpu is not None:  # the environment that measured, as the database recorded it
        db = Database(cfg.db_path)
        try:
            env, known = db.latest_env(cfg.stored_gpu), db.gpus()
        finally:
            db.close()
        if env is None:
            raise BenchError(f"{cfg.db_path} holds no measurements on a GPU named {cfg.stored_gpu!r}: pass one of "
                             f"those it holds ({', '.join(map(repr, known)) or 'none'})")
    else:
        env = environment.collect({"runner": cfg.runner})
        require_gpu(cfg.runner, env)
    built = build(cfg, ui, env)
    return measure(built, cfg, ui, env, started)


def build(cfg: BenchConfig, ui, env: dict) -> Built:
    """Every candidate file and generated source of `cfg` built (content-hash cached, in parallel) and the cuBLAS
    shim where a baseline needs it; with the dummy runner nothing is built, the keys hash the sources."""
    names, elsewhere = for_asked_shapes(candidate_names(cfg.candidates), cfg.problems)
    if elsewhere:
        more = ", ..." if len(elsewhere) > 3 else ""
        ui.stage(f"left out {len(elsewhere)} CUDA-L2 file(s) made for shapes not asked for "
                 f"({', '.join(elsewhere[:3])}{more}): each runs on its own shape only")
    clash = set(names) & set(cfg.sources) | set(cfg.sources) & set(BASELINES)
    if clash:
        raise BenchError(f"candidate names used twice: {', '.join(sorted(clash))}")
    keys = {b: "" for b in cfg.baselines}
    specs = [baseline_spec(b) for b in cfg.baselines]
    failures: dict[str, Rejected] = {}
    blas_lib = None
    if cfg.runner == "local":
        toolchain = Toolchain.discover(arch=cfg.arch)
        if cfg.stored_gpu is None:  # a read of another machine's rows keeps the arch its run recorded
            env["arch"] = toolchain.arch
        builder = LocalBuilder(toolchain)
        requests, adapted = [], set()
        for n, p in names.items():
            try:
                request, is_cuda_l2 = candidate_request(n, p, cfg)
            except ValueError as exc:  # a CUDA-L2-looking file the adapter cannot read: its verdict, not a stop
                keys[n] = hashlib.sha256(Path(p).read_bytes()).hexdigest()[:24]
                failures[n] = Rejected(Verdict.ADAPTER, str(exc))
                continue
            requests.append(request)
            if is_cuda_l2:
                adapted.add(n)
        requests += [BuildRequest(text, name=n, flags=cfg.candidate_flags) for n, text in cfg.sources.items()]
        if any(s["kind"].startswith("cublas") for s in specs) and not cfg.reads_only:  # nothing will call it
            requests.append(native_lib.build_request(toolchain))
        ui.stage(f"building {len(requests)} libraries with nvcc {toolchain.version} for {toolchain.arch}")
        results: list[BuildResult] = builder.build_many(requests, workers=cfg.build_workers, on_done=ui.build_done)
        results = _rebuild_shim_failures(results, requests, adapted, names, cfg, builder, ui)
        for result in results:
            if result.name == "kr_blas":
                if not result.ok:
                    raise BenchError(f"building the cuBLAS baseline library failed: {result.error}")
                blas_lib = result.lib_path
            elif result.ok:
                keys[result.name] = result.key
                specs.append({"name": result.name, "kind": "candidate", "lib_path": result.lib_path,
                              "resources": result.resources})
                if result.name in adapted and cfg.cuda_l2_untimed_padding:
                    specs[-1]["untimed_stage"] = True  # exports kernelrl_hgemm_stage; the worker must call it
            else:
                keys[result.name] = result.key
                failure = result.failure
                assert failure is not None  # not result.ok
                failures[result.name] = failure
    else:
        texts = {**{n: Path(p).read_text(errors="replace") for n, p in names.items()}, **cfg.sources}
        for name, text in texts.items():
            keys[name] = hashlib.sha256(text.encode()).hexdigest()[:24]
            specs.append({"name": name, "kind": "candidate", "lib_path": names.get(name)})
    only_on = {n: shape for n, p in names.items() if (shape := cuda_l2_shape(p)) is not None}
    if cfg.key_salt:
        keys = {name: f"{key}:{cfg.key_salt}" for name, key in keys.items()}
    return Built(specs, keys, failures, blas_lib, only_on)


def measure(built: Built, cfg: BenchConfig, ui, env: dict | None = None, started: float | None = None) \
        -> BenchOutcome:
    """Measure built methods (the builder's artifacts; nothing is rebuilt here) on cfg's problems, modes and
    settings: every record stored in cfg's database as it arrives, resumed where stored rows match the keys. The
    library call behind the bench job, the tuner, evolve and train."""
    started = time.perf_counter() if started is None else started
    env = env if env is not None else environment.collect({"runner": cfg.runner})
    gpu = cfg.stored_gpu or db_gpu(cfg.runner, env)
    specs, keys, failures = list(built.specs), dict(built.keys), dict(built.failures)
    settings = cfg.settings
    if built.blas_lib:
        settings.blas_lib = built.blas_lib
    plan = None
    if cfg.library is not None:
        plan = LibraryPlan.make(cfg.library, cfg.problems)
        spec = plan.spec()
        keys[spec["name"]] = plan.key
        specs.append(spec)
        if cfg.runner != "dummy":  # build the C++ fast path here, once, not inside a timed worker's first task
            native.load(say=ui.stage)
    db = Database(cfg.db_path)
    run_id = None if cfg.reads_only else db.start_run(cfg.command, env)
    tasks, resumed = [], 0
    candidates = {s["name"] for s in specs if s["kind"] == "candidate"} | set(failures)

    def runs_here(problem) -> set[str]:
        here = candidates if cfg.methods_for is None else candidates & set(cfg.methods_for(problem))
        shape = (problem.m, problem.n, problem.k)
        return {name for name in here if built.only_on.get(name, shape) == shape}

    for i, problem in enumerate(cfg.problems):
        here = runs_here(problem)
        wanted = {(s["name"], keys[s["name"]]) for s in specs if s["kind"] != "candidate" or s["name"] in here}
        todo = [mode for mode in cfg.modes
                if not wanted <= db.measured(gpu, problem, mode, settings.cache, settings.qps)]
        if todo:
            tasks.append(Task(i, problem, todo, skip=candidates - here))
        else:
            resumed += 1
    if cfg.runner == "local" and (resumed or cfg.reads_only):  # rows read back: say which runs could not be
        unconfined = sum(n for text, n in db.envs(gpu).items() if not sandbox.confined(json.loads(text)))
        if unconfined:  # protected from their candidates
            ui.stage(f"{unconfined} measurements stored for {gpu} come from runs whose workers were not confined "
                     f"(harness/sandbox.py): their candidates could have written this database")
    # A candidate that did not build gets its verdict on every shape it was meant for, without running anything
    # (a read-only run stores nothing: a build here says nothing of the machine that measured).
    for name, failure in (failures.items() if not cfg.reads_only else ()):
        for problem in cfg.problems:
            if name not in runs_here(problem):
                continue
            task = Task(-1, problem, list(cfg.modes))
            db.add(gpu, problem, settings.cache, settings.qps,
                   verdict_records(task, name, failure.verdict, failure.detail), keys, env, run_id,
                   supersede=False)  # no times: it pairs with nothing, and an earlier run's group stays whole

    unmeasured = 0
    if cfg.reads_only:
        unmeasured, tasks = len(tasks), []
    lt_search = 0.0
    worker_env: dict = {}

    def on_env(info: dict):
        worker_env.update(info)
        env.update({k: v for k, v in info.items() if k not in env or not env[k]})
        env.update({k: info[k] for k in ("cublas", "cublaslt", "cuda_runtime", "sandbox") if k in info})
        assert run_id is not None  # workers run (and report) only where tasks do: never in a reads_only run
        db.update_run_env(run_id, env)

    def on_lt_algo(tuning: dict):
        nonlocal lt_search
        lt_search += tuning["search_s"]
        db.add_lt_algo(gpu, worker_env.get("cublaslt") or 0, tuning)

    # A shape's records can come in parts (a crashed method's verdict first, then the rest when the worker has run
    # the others): each part is stored as it comes, and the UI hears of the shape once, when every method has
    # reported on it, so its count of shapes done never passes the number of shapes.
    expected = {t.id: {s["name"] for s in specs} - t.skip for t in tasks}
    partial: dict[int, tuple[Task, list[dict]]] = {}

    measured: dict[int, tuple[Task, list[dict]]] = {}  # every task's records, for the referee

    def on_records(task: Task, records: list[dict]):
        db.add(gpu, task.problem, settings.cache, settings.qps, records, keys, env, run_id)
        measured.setdefault(task.id, (task, []))[1].extend(records)
        held = partial.setdefault(task.id, (task, []))[1]
        held += records
        if {r["method"] for r in held} >= expected.get(task.id, set()):
            ui.task_done(task, partial.pop(task.id)[1])

    ui.start_tasks(len(tasks), resumed)
    if tasks:
        if cfg.ray_address:
            runner = Runner.create("ray", address=cfg.ray_address, inner=cfg.runner)
        else:
            runner = Runner.create(cfg.runner)
        lt_cache = dict(db.lt_algos(gpu).items())
        # local timing holds this machine's GPUs (harness/gpu_lock.py); Ray workers time on their own nodes
        hold = exclusive_gpus(say=ui.stage) if cfg.runner == "local" and not cfg.ray_address else nullcontext()
        if cfg.runner == "local":
            ui.stage(sandbox.describe())  # what the candidates' workers may write; "none" where unconfined
        with hold:
            runner.run(tasks, specs, settings, on_records, lt_cache=lt_cache, on_lt_algo=on_lt_algo, on_env=on_env,
                       on_progress=ui.progress)
            if cfg.referee and (cfg.runner != "local" or cfg.ray_address):
                ui.stage("the referee runs with the local runner only: these measurements were not refereed")
            elif cfg.referee:
                for task, records in measured.values():
                    _referee_task(task, records, specs, settings, ui,
                                  lambda t, rs: db.add(gpu, t.problem, settings.cache, settings.qps, rs, keys, env,
                                                       run_id))
        for task, records in partial.values():  # a report left short of a method: the shape is done all the same
            ui.task_done(task, records)
    rows = db.rows(gpu, cfg.problems, cfg.modes, settings.cache, settings.qps, methods=keys)
    for row in rows:
        row["gpu"] = gpu
    if plan is not None:
        rows = plan.rows(rows)
    db.close()
    if cfg.csv_path:
        write_csv(rows, cfg.csv_path)
    return BenchOutcome(rows=rows, env=env, seconds=time.perf_counter() - started, build_failures=failures,
                        lt_search_s=lt_search, measured_tasks=len(tasks), resumed_tasks=resumed,
                        unmeasured_tasks=unmeasured)


def _referee_task(task: Task, records: list[dict], specs: list[dict], settings: RunSettings, ui,
                  store: Callable[[Task, list[dict]], None], device: str = "cuda") -> None:
    """The referee's ruling on every candidate the workers verified on this task's shape, stored over its records; a
    line for each ruling that changed anything."""
    by_name = {s["name"]: s for s in specs if s["kind"] == "candidate"}
    for name in referee.to_referee(records, set(by_name)):
        ruling = referee.referee(task.problem, by_name[name], device, settings.hang_timeout_s,
                                 referee.claimed_speedup(records, name, set(by_name)))
        store(task, referee.apply(records, name, ruling))
        if ruling.verdict is not None or ruling.scale or ruling.notes:
            ui.stage(f"referee, {name} on {task.problem.name}: "
                     + (ruling.verdict.reason(ruling.detail) if ruling.verdict else "; ".join(ruling.notes)))


def _rebuild_shim_failures(results: list[BuildResult], requests: list[BuildRequest], adapted: set[str],
                           names: dict[str, str], cfg: BenchConfig, builder, ui) -> list[BuildResult]:
    """A CUDA-L2 wrapper that failed against kernelrl's stand-in torch header is built again with torch's own: the
    stand-in is a compile-time saving, never a reason for a verdict."""
    shim = (str(cuda_l2.SHIM_DIR),)
    again = [r.name for r, q in zip(results, requests) if not r.ok and r.name in adapted and q.include_dirs == shim]
    if not again:
        return results
    ui.stage(f"{len(again)} CUDA-L2 wrapper(s) did not build against kernelrl's stand-in torch header "
             f"({', '.join(again[:3])}{'...' if len(again) > 3 else ''}): building them with torch's headers")
    redone = builder.build_many([cuda_l2.build_request(names[n], name=n, untimed_padding=cfg.cuda_l2_untimed_padding,
                                                       extra_flags=cfg.candidate_flags, torch_api="torch")
                                 for n in again], workers=cfg.build_workers, on_done=ui.build_done)
    by_name = {r.name: r for r in redone}
    return [by_name.get(r.name, r) for r in results]


def candidate_request(name: str, path: str, cfg: BenchConfig) -> tuple[BuildRequest, bool]:
    """The build of one candidate file and whether it is a CUDA-L2 kernel file: those are built as the adapter's
    wrapper around them (against kernelrl's stand-in torch header where the file allows, else torch's headers and
    libraries). Raises ValueError for a CUDA-L2-looking file that the adapter cannot read."""
    if cuda_l2.is_cuda_l2_source(Path(path).read_text(errors="replace")):
        return cuda_l2.build_request(path, name=name, untimed_padding=cfg.cuda_l2_untimed_padding,
                                     extra_flags=cfg.candidate_flags), True
    return BuildRequest.from_file(path, name=name, flags=cfg.candidate_flags), False


def for_asked_shapes(names: dict[str, str], problems) -> tuple[dict[str, str], list[str]]:
    """(the candidates to build, the names left out): a CUDA-L2 file made for a shape `problems` does not hold
    would be measured nowhere (it runs on its own shape only) and its build costs a minute or more."""
    if not problems:
        return names, []
    asked = {(p.m, p.n, p.k) for p in problems}
    keep = {n: p for n, p in names.items() if (shape := cuda_l2_shape(p)) is None or shape in asked}
    return keep, [n for n in names if n not in keep]


def cuda_l2_shape(path: str) -> tuple[int, int, int] | None:
    """The one shape a CUDA-L2 kernel file is for (from its name, M_N_K.cu), or None (not such a file)."""
    text = Path(path).read_text(errors="replace")
    if not cuda_l2.is_cuda_l2_source(text):
        return None
    try:
        return cuda_l2.parse_cuda_l2(text, path).shape
    except ValueError:
        return None


def expand_candidates(paths: list[str]) -> list[str]:
    """Files as given; folders contribute their *.cu files, sorted."""
    out: list[str] = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            out.extend(str(f) for f in sorted(p.glob("*.cu")))
        else:
            out.append(str(p))
    return out


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
