"""The reward service: evaluates completions off the training process, in batches, with deadlines and retries.

The training process only extracts code (cheap, and it lets repeats be scored once); everything that builds or runs
a candidate happens in an evaluation worker: a spawned local process by default (one per GPU), or a Ray task with
`num_gpus` when a cluster address is given. Completions of one target are measured together, so a GRPO group is
one interleaved measurement and its speedups are comparable.

A bad kernel must not stall training. The evaluator already turns a crash or a hung kernel into a verdict; the
service adds a deadline per batch around everything (nvcc included). A batch past its deadline is cancelled (its
process killed) and its candidates are evaluated again one at a time, so only the one that hangs gets the
`timeout` verdict (reward 0). A worker that dies or fails for reasons of its own is retried `retries` times; after
that its candidates get the `error` category (reward 0, counted apart from the policy's failures)."""

from __future__ import annotations

import collections
import multiprocessing as mp
import os
import socket
import threading
import time
import traceback
from dataclasses import dataclass, fields
from multiprocessing.connection import wait as wait_ready

from kernelrl.errors import UserError
from kernelrl.registry import Registered
from kernelrl.run.ray_runner import start_ray
from kernelrl.train.reward import Judgement, RewardConfig, RewardResult, compute_reward
from kernelrl.train.specs import completion_code
from kernelrl.train.targets import TargetSpec, code_name, judge


class EvalSettingsError(UserError, ValueError):
    pass


@dataclass
class EvalSettings:
    ray_address: str | None = None  # None: local worker processes; "local" or "ray://host:port" / "auto": Ray
    workers: int = 1  # local: evaluation processes, one GPU each; Ray: tasks in flight (default: the cluster's GPUs)
    gpus_per_worker: float = 1.0  # Ray: num_gpus of each task (0 for a dummy-runner dry run)
    gpus: list | None = None  # local: the GPU of each worker (physical ids); default 0..workers-1 when workers > 1
    timeout_s: float = 900.0  # per batch, building included
    retries: int = 2  # after a worker died or failed by itself
    batch_size: int = 16  # candidates of one target per evaluation (one interleaved measurement)
    cache: bool = True  # score a repeated (target, code) once per run

    def __post_init__(self):
        if self.workers < 1 or self.batch_size < 1 or self.retries < 0 or self.timeout_s <= 0:
            raise EvalSettingsError("evaluation: workers and batch_size at least 1, retries at least 0, "
                                    "timeout_s positive")
        if self.gpus is not None and len(self.gpus) != self.workers:
            raise EvalSettingsError(f"evaluation.gpus names {len(self.gpus)} GPUs for {self.workers} workers")

    @classmethod
    def from_dict(cls, d: dict | None) -> "EvalSettings":
        d = dict(d or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise EvalSettingsError(f"unknown evaluation setting {', '.join(unknown)}; known: "
                                    f"{', '.join(sorted(known))}")
        return cls(**d)


@dataclass
class Batch:
    spec: str  # TargetSpec JSON
    codes: dict  # name → code
    attempt: int = 0


def worker_place() -> str:
    """Where this evaluation worker runs: host and the GPU it was given (the local executor and Ray both pin one
    through CUDA_VISIBLE_DEVICES), so the metrics show how batches spread over GPUs and nodes."""
    return f"{socket.gethostname()}:gpu{os.environ.get('CUDA_VISIBLE_DEVICES', '-') or '-'}"


def judge_batch(spec_json: str, codes: dict) -> dict:
    """Runs in the evaluation worker: {"ok": {name: judgement dict}, "where": place} or {"error": one line}."""
    try:
        found = judge(TargetSpec.from_json(spec_json), codes)
        return {"ok": {n: j.to_dict() for n, j in found.items()}, "where": worker_place()}
    except Exception as exc:  # the evaluator failed (not a kernel): the service retries
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return {"error": last[:500]}


class WorkerLost(RuntimeError):
    """The evaluation worker died (or the Ray task was lost) without an answer."""


# -- executors: where a batch runs --------------------------------------------------------------------------------
class Executor(Registered):
    """Starts batches, waits for them, cancels those past their deadline. Jobs are opaque handles."""

    registry: dict[str, type["Executor"]] = {}
    capacity = 1

    def start(self, batch: Batch): raise NotImplementedError
    def wait(self, jobs: list, timeout: float) -> list: raise NotImplementedError
    def result(self, job) -> dict: raise NotImplementedError
    def cancel(self, job) -> None: raise NotImplementedError
    def close(self) -> None: pass


def _serve(conn, judge_fn) -> None:
    """The local evaluation worker: one batch at a time, until told to stop (None) or the pipe closes. It says
    "ready" first: its imports (judge_fn's module came with it) are done, and a batch's deadline starts after them."""
    conn.send("ready")
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        conn.send(judge_fn(*msg))


class _Proc:
    def __init__(self, slot: int, env: dict, judge_fn):
        ctx = mp.get_context("spawn")  # a fresh interpreter: no CUDA state or threads inherited from the trainer
        self.conn, child = ctx.Pipe()
        with _ENV_LOCK:  # spawn copies os.environ at start: set the GPU pin just around it
            saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            try:
                # not a daemon: the evaluator starts its own GPU worker processes; if the trainer dies, the pipe
                # closes and the worker's recv() ends its loop
                self.proc = ctx.Process(target=_serve, args=(child, judge_fn), name=f"kernelrl-reward-{slot}")
                self.proc.start()
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
        child.close()
        self.ready = self._await_ready()

    def _await_ready(self) -> bool:
        """Whether the worker started within STARTUP_TIMEOUT_S (a slow start is not the candidate's hang)."""
        try:
            if self.conn.poll(STARTUP_TIMEOUT_S) and self.conn.recv() == "ready":
                return True
        except (EOFError, OSError):
            pass
        self.kill()
        return False

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
            self.proc.join(10)
        except (OSError, BrokenPipeError):
            pass
        self.kill()


_ENV_LOCK = threading.Lock()
STARTUP_TIMEOUT_S = 300.0  # a fresh worker's interpreter and imports (torch), on a loaded machine


class LocalExecutor(Executor, kind="local"):
    """Persistent spawned worker processes, one per slot: imports are paid once, not per batch; a slot whose batch
    ran past its deadline is killed and started afresh for the next."""

    def __init__(self, settings: EvalSettings, judge_fn=judge_batch):
        self.judge_fn = judge_fn  # a module-level function: the spawned process imports it by name
        self.capacity = settings.workers
        # each worker sees one GPU (set on the child, so it holds whatever the trainer's own CUDA_VISIBLE_DEVICES)
        self.gpus = [str(g) for g in settings.gpus] if settings.gpus is not None else \
            [str(i) for i in range(settings.workers)] if settings.workers > 1 else None
        self.procs: dict[int, _Proc | None] = {i: None for i in range(self.capacity)}
        self.busy: dict[int, object] = {}

    def _proc(self, slot: int) -> _Proc:
        p = self.procs[slot]
        if p is None or not p.proc.is_alive():
            if p is not None:
                p.kill()
            p = self.procs[slot] = _Proc(slot, {"CUDA_VISIBLE_DEVICES": self.gpus[slot]} if self.gpus else {},
                                          self.judge_fn)
        return p

    def start(self, batch: Batch):
        slot = next(i for i in range(self.capacity) if i not in self.busy)
        p = self._proc(slot)
        try:
            if not p.ready:
                raise OSError("the worker did not start")
            p.conn.send((batch.spec, batch.codes))
        except (OSError, BrokenPipeError):
            self.procs[slot] = None  # restarted on the next start; this job reads as lost
        self.busy[slot] = batch
        return slot

    def wait(self, jobs, timeout):
        by_conn = {}
        for slot in jobs:
            p = self.procs[slot]
            if p is None:
                return [slot]  # lost at start
            by_conn[p.conn] = slot
            by_conn[p.proc.sentinel] = slot
        ready = wait_ready(list(by_conn), timeout=max(0.0, timeout))
        return list(dict.fromkeys(by_conn[r] for r in ready))

    def result(self, slot) -> dict:
        self.busy.pop(slot, None)
        p = self.procs[slot]
        try:
            if p is None or not p.conn.poll(0):
                raise EOFError
            return p.conn.recv()
        except (EOFError, OSError):
            code = p.proc.exitcode if p is not None else None
            if p is not None:
                p.kill()
            self.procs[slot] = None
            raise WorkerLost(f"the evaluation process died (exit code {code})") from None

    def cancel(self, slot) -> None:
        self.busy.pop(slot, None)
        proc = self.procs[slot]
        if proc is not None:
            proc.kill()
            self.procs[slot] = None

    def close(self) -> None:
        for slot, p in self.procs.items():
            if p is not None:
                p.stop()
            self.procs[slot] = None


class RayExecutor(Executor, kind="ray"):
    """One Ray task per batch with `num_gpus` (the evaluator inside uses the local runner on the GPU Ray gives it).
    Tasks, not actors: a task past its deadline is force-cancelled, which kills its worker process and so whatever
    the kernel left on the GPU."""

    def __init__(self, settings: EvalSettings, judge_fn=judge_batch):
        try:
            import ray
        except ImportError:
            raise EvalSettingsError("evaluation over Ray needs Ray: pip install -e '.[ray]'") from None
        self.ray = ray
        start_ray(settings.ray_address)
        gpus = settings.gpus_per_worker
        if gpus > 0:
            total = ray.cluster_resources().get("GPU", 0)
            if total < gpus:
                raise EvalSettingsError(f"the Ray cluster has {total:g} GPUs; each reward task needs {gpus:g} "
                                        "(set evaluation.gpus_per_worker: 0 for a dummy-runner dry run)")
            self.capacity = max(1, min(settings.workers if settings.workers > 1 else 10 ** 6, int(total // gpus)))
        else:
            self.capacity = max(1, settings.workers)
        self.remote = ray.remote(judge_fn).options(num_gpus=gpus, num_cpus=1, max_retries=0)

    def start(self, batch: Batch):
        return self.remote.remote(batch.spec, batch.codes)

    def wait(self, jobs, timeout):
        done, _ = self.ray.wait(list(jobs), num_returns=1, timeout=max(0.0, timeout))
        return done

    def result(self, job) -> dict:
        try:
            return self.ray.get(job)
        except Exception as exc:  # the task's worker died, or the node went away
            raise WorkerLost(f"the Ray reward task was lost ({type(exc).__name__})") from None

    def cancel(self, job) -> None:
        try:
            self.ray.cancel(job, force=True)
        except Exception:
            pass


# -- the service ---------------------------------------------------------------------------------------------------
class RewardService:
    def __init__(self, settings: EvalSettings | None = None, reward: RewardConfig | None = None,
                 judge_fn=judge_batch, clock=time.monotonic, executor: Executor | None = None):
        self.settings = settings or EvalSettings()
        self.judge_fn = judge_fn
        self.reward = reward or RewardConfig()
        self.clock = clock
        self.cache: dict[tuple[str, str], Judgement] = {}
        self._executor: Executor | None = executor
        # batches, timeouts, retries, lost, cached; 'on HOST:gpuN' each
        self.stats: collections.Counter[str] = collections.Counter()

    @property
    def executor(self) -> Executor:
        if self._executor is None:
            kind = "ray" if self.settings.ray_address else "local"
            self._executor = Executor.create(kind, settings=self.settings, judge_fn=self.judge_fn)
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()
            self._executor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- scoring --------------------------------------------------------------------------------------------------
    def score(self, items: list[tuple[str, str]]) -> list[RewardResult]:
        """(target spec JSON, completion text) pairs → one RewardResult each, in order."""
        return [compute_reward(j, self.reward) for j in self.judge(items)]

    def judge(self, items: list[tuple[str, str]]) -> list[Judgement]:
        out: list[Judgement | None] = [None] * len(items)
        wanted: dict[tuple[str, str], list[int]] = {}
        for i, (spec_json, text) in enumerate(items):
            code, verdict = completion_code(TargetSpec.from_json(spec_json), text)
            if code is None:
                out[i] = verdict
                continue
            key = (spec_json, code)
            if self.settings.cache and key in self.cache:
                out[i] = self.cache[key]
                self.stats["cached"] += 1
                continue
            wanted.setdefault(key, []).append(i)
        by_spec: dict[str, dict[str, str]] = {}
        for spec_json, code in wanted:
            by_spec.setdefault(spec_json, {})[code_name(code)] = code
        batches = []
        for spec_json, codes in by_spec.items():
            names = list(codes)
            for k in range(0, len(names), self.settings.batch_size):
                batches.append(Batch(spec_json, {n: codes[n] for n in names[k:k + self.settings.batch_size]}))
        found = self._run(batches) if batches else {}
        for (spec_json, code), idx in wanted.items():
            j = found.get((spec_json, code_name(code))) or Judgement("error", "not evaluated")
            if self.settings.cache and j.category not in ("timeout", "error"):
                self.cache[(spec_json, code)] = j
            for i in idx:
                out[i] = j
        return out  # type: ignore[return-value]  # each slot: a verdict, a cached or a `wanted` one

    def _run(self, batches: list[Batch]) -> dict[tuple[str, str], Judgement]:
        """Every batch to an answer: done, split after a timeout, retried after a lost worker, or given up."""
        ex = self.executor
        queue = collections.deque(batches)
        running: dict = {}  # job → (batch, deadline)
        found: dict[tuple[str, str], Judgement] = {}

        def give_up(batch: Batch, category: str, why: str):
            objective = TargetSpec.from_json(batch.spec).objective or ""
            for name, code in batch.codes.items():
                found[(batch.spec, name)] = Judgement(category, why, objective, code_chars=len(code))

        while queue or running:
            while queue and len(running) < ex.capacity:
                batch = queue.popleft()
                self.stats["batches"] += 1
                job = ex.start(batch)  # a fresh worker has started and imported by now: not part of the deadline
                running[job] = (batch, self.clock() + self.settings.timeout_s)
            soonest = min(d for _, d in running.values())
            for job in ex.wait(list(running), soonest - self.clock()):
                batch, _ = running.pop(job)
                try:
                    answer = ex.result(job)
                except WorkerLost as exc:
                    answer = {"error": str(exc)}
                    self.stats["lost"] += 1
                if "ok" in answer:
                    if answer.get("where"):
                        self.stats[f"on {answer['where']}"] += 1
                    for name, d in answer["ok"].items():
                        found[(batch.spec, name)] = Judgement.from_dict(d)
                elif batch.attempt < self.settings.retries:
                    self.stats["retries"] += 1
                    queue.append(Batch(batch.spec, batch.codes, batch.attempt + 1))
                else:
                    give_up(batch, "error", f"evaluation failed after {batch.attempt + 1} attempts: "
                                            f"{answer.get('error')}")
            now = self.clock()
            for job in [j for j, (_, d) in running.items() if d <= now]:
                batch, _ = running.pop(job)
                ex.cancel(job)
                self.stats["timeouts"] += 1
                if len(batch.codes) > 1:  # find the one that hangs: the others still get their measurement
                    queue.extend(Batch(batch.spec, {n: c}) for n, c in batch.codes.items())
                else:
                    give_up(batch, "timeout", f"timeout: the evaluation ran past {self.settings.timeout_s:g} s")
        return found


def completion_text(completion) -> str:
    """A TRL completion as text: conversational completions are lists of messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(m.get("content") or "" for m in completion if isinstance(m, dict))
    return str(completion)

