"""Runners execute tasks (one problem, several timing modes, all methods) and stream back records.

LocalRunner drives the spawned GPU worker and turns its crashes and hangs into verdicts for the method that was
running; DummyRunner makes up times on the CPU so everything above it can be tested without a GPU."""

from __future__ import annotations

import multiprocessing as mp
import secrets
import shutil
import signal
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable, Protocol

from kernelrl.library.export import shape_key
from kernelrl.errors import UserError
from kernelrl.harness.channel import KEY_FIELD, Forged, Receiver, new_key
from kernelrl.harness.record import Record
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.registry import Registered
from kernelrl.workloads.hgemm import GemmProblem


@dataclass
class RunSettings:
    cache: str = "hot"
    qps: float = 100.0
    rounds: int = 7
    calls_per_round: int = 3
    graph_target_ms: float = 0.5
    max_graph_calls: int = 500
    hang_timeout_s: float = 60.0
    blas_lib: str | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Task:
    id: int
    problem: GemmProblem
    modes: list[str]
    skip: set[str] = field(default_factory=set)

    def to_payload(self) -> dict:
        return {"id": self.id, "problem": self.problem.to_dict(), "modes": self.modes, "skip": sorted(self.skip)}


class RunnerError(UserError, RuntimeError):
    """The runner itself cannot work (no GPU, the worker cannot start); one line says why."""


class Runner(Registered):
    """Base class; `Runner.create(kind)` picks an implementation from the registry."""

    registry: dict[str, type["Runner"]] = {}

    def run(self, tasks: list[Task], methods: list[dict], settings: RunSettings,
            on_records: Callable[[Task, list[dict]], None], lt_cache: dict | None = None,
            on_lt_algo: Callable[[dict], None] | None = None, on_env: Callable[[dict], None] | None = None,
            on_progress: Callable[[Task, str, str], None] | None = None) -> None:
        raise NotImplementedError


class _HasModes(Protocol):  # a Task, or a workload's task that duck-types it (kernelbench.pairs.KBTask)
    modes: list[str]


def verdict_records(task: _HasModes, method: str, verdict: Verdict, detail: str = "") -> list[dict]:
    """Records for a method that never produced timings: one per mode, unverified, with its key and detail."""
    return [Record.failed(method, mode, verdict, detail).to_dict() for mode in task.modes]


class LocalRunner(Runner, kind="local"):
    """One worker process at a time, restarted after a crash, a hang, a fatal verdict or a recycle. With
    `hot_spare`, the next worker is spawned as soon as one becomes active and waits, its modules imported and the
    GPU untouched (kernelrl/run/protocol.py: tasks_of), so a restart costs no start-up (2-4 s: Python and torch);
    its import runs on another core beside the measurements."""

    def __init__(self, max_restarts: int = 50, worker_target=None, hot_spare: bool = False):
        self.max_restarts = max_restarts
        self.worker_target = worker_target  # tests substitute a CPU-only stand-in for the GPU worker
        self.hot_spare = hot_spare

    def run(self, tasks, methods, settings, on_records, lt_cache=None, on_lt_algo=None, on_env=None,
            on_progress=None):
        if self.worker_target is None:
            from kernelrl.run.worker import worker_main  # the GPU worker's module: CUDA-side code, for spawning
        else:
            worker_main = self.worker_target
        ctx = mp.get_context("spawn")
        secret = secrets.randbits(62)  # this run's private seed: never stored, never printed
        pending = {t.id: t for t in tasks}
        lt_cache = dict(lt_cache or {})
        # the one folder besides caches where this run's workers may write (harness/sandbox.py), gone at the end
        scratch = tempfile.mkdtemp(prefix="kernelrl-worker-")
        writable = [str(p) for p in getattr(settings, "writable_dirs", ())]

        def spawn(tasks_left: list | None) -> tuple:
            """(process, its message pipe, the pipe a spare's tasks go down or None)."""
            parent, child = ctx.Pipe(duplex=False)
            key = new_key()  # this worker's alone: its messages are checked with it before they are unpickled
            payload = {"tasks": tasks_left, "methods": methods, "settings": settings.to_dict(), "secret": secret,
                       "lt_cache": dict(lt_cache), "scratch": scratch, "writable": writable,
                       "unconfined_because": unconfined_because, KEY_FIELD: key}
            receive = send = None
            if tasks_left is None:  # a hot spare: it waits for them (protocol.tasks_of)
                receive, send = ctx.Pipe(duplex=False)
                payload["task_pipe"] = receive
            proc = ctx.Process(target=worker_main, args=(child, payload), daemon=True)
            proc.start()
            child.close()
            if receive is not None:
                receive.close()
            return proc, Receiver(parent, key), send

        restarts, spare, unconfined_because = 0, None, None
        try:
            while pending:
                left = [t.to_payload() for t in pending.values()]
                proc = None
                if spare is not None:
                    try:  # the spare takes over; one that died waiting is replaced by a fresh start
                        spare[2].send({"tasks": left, "lt_cache": lt_cache})
                        spare[2].close()
                        proc, parent, _ = spare
                    except (OSError, ValueError):
                        _kill(spare[0])
                if proc is None:
                    proc, parent, _ = spawn(left)
                spare = spawn(None) if self.hot_spare else None
                outcome, current, culprit = self._follow(proc, parent, pending, settings, on_records, lt_cache,
                                                         on_lt_algo, on_env, on_progress)
                parent.close()
                if outcome == "done":
                    break
                if outcome == "unconfined retry":  # the sandbox kept the GPU from starting: never a run that
                    # cannot start; the next workers run without it, and say so (their env's `sandbox`)
                    unconfined_because = culprit
                    print(f"kernelrl: the GPU worker could not start under the worker sandbox ({culprit}); the run "
                          f"goes on with unconfined workers (KERNELRL_SANDBOX=off does the same from the start)",
                          file=sys.stderr, flush=True)
                    if spare is not None:
                        _kill(spare[0])
                        spare = None
                    continue
                if outcome == "recycled":
                    continue
                task_id, method, _phase = current
                if task_id is None or task_id not in pending or method is None:
                    raise RunnerError(f"the GPU worker failed before running anything: {culprit}")
                task = pending[task_id]
                task.skip.add(method)
                on_records(task, verdict_records(task, method, culprit.verdict, culprit.detail))
                restarts += 1
                if restarts > self.max_restarts:
                    raise RunnerError(f"gave up after {restarts} worker restarts; last: {method}: {culprit}")
        finally:
            if spare is not None:  # not needed: told to exit, and made sure of
                try:
                    spare[2].send(None)
                except (OSError, ValueError):
                    pass
                _kill(spare[0])
            shutil.rmtree(scratch, ignore_errors=True)

    @staticmethod
    def _follow(proc, parent, pending, settings, on_records, lt_cache, on_lt_algo, on_env, on_progress) -> tuple:
        """Read one worker's messages until it is done, asks to be recycled, or fails: (outcome, what ran last,
        the failure's Rejected or None); outcome is "done", "recycled" or "failed", or "unconfined retry" (with the
        start-up error as the third) when a worker confined by Landlock could not start."""
        current: tuple = (None, None, None)  # (task id, method, phase) of what runs now, as the worker said
        confined = False
        while True:
            timeout = _phase_timeout(settings, current[2])
            if not parent.poll(timeout):
                _kill(proc)
                return "failed", current, Rejected(Verdict.HANG, f"no progress for {timeout:.0f} s during "
                                                                 f"{current[2] or 'start-up'}")
            try:
                msg = parent.recv()
            except Forged as exc:  # written to the pipe by other code in the worker's process: nothing unpickled
                _kill(proc)
                return "failed", (current[0], current[1] or "candidate", current[2]), Rejected(
                    Verdict.HARNESS_PATCH, f"{exc} arrived during {current[2] or 'start-up'}: code in the worker's "
                                           f"process wrote to its connection to the runner")
            except (EOFError, OSError):
                proc.join(5)
                return "failed", current, Rejected(
                    Verdict.CRASH, f"the worker died ({_exit_text(proc.exitcode)}) during "
                                   f"{current[2] or 'start-up'}{_DIED_HINTS.get(current[2], '')}")
            kind = msg[0]
            if kind == "begin":
                current = msg[1:]
                if on_progress:
                    on_progress(pending.get(msg[1]), msg[2], msg[3])
            elif kind == "task":
                if current[1:] != (None, "report") or msg[1] != current[0] or msg[1] not in pending:
                    # the worker announces each report of its own (WorkerBase.begin(task, None, "report")) and
                    # reports a pair once: anything else was written to its connection by other code in its
                    # process (a candidate that reached it; corpus: forges_worker_result)
                    _kill(proc)
                    return "failed", (current[0], current[1] or "candidate", current[2]), Rejected(
                        Verdict.HARNESS_PATCH, f"a result for pair {msg[1]} that the worker had not announced arrived "
                                               f"during {current[2] or 'start-up'}: code in the worker's process "
                                               f"wrote to its connection to the runner")
                task = pending.pop(msg[1])
                on_records(task, msg[2])
            elif kind == "lt_algo":
                lt_cache[msg[1]["key"]] = msg[1]
                if on_lt_algo:
                    on_lt_algo(msg[1])
            elif kind == "env":
                confined = confined or str(msg[1].get("sandbox", "")).startswith("Landlock")
                if on_env:
                    on_env(msg[1])
            elif kind == "startup_error":
                _kill(proc)
                if confined:
                    return "unconfined retry", current, msg[1]
                raise RunnerError(f"the GPU worker could not start: {msg[1]}")
            elif kind == "fatal":
                proc.join(10)
                _kill(proc)
                return "failed", msg[1:4], Rejected(Verdict(msg[4]), msg[5])
            elif kind == "recycle":  # the worker asks to be replaced (its last candidate may have left traces)
                proc.join(10)
                _kill(proc)
                return "recycled", current, None
            elif kind == "done":
                proc.join(10)
                return "done", current, None


# A fresh worker's own start-up (spawning Python, importing torch, creating the CUDA context) is no candidate's doing:
# on a loaded machine it can outlast a short hang timeout, so it gets this allowance however short that timeout is.
STARTUP_TIMEOUT_S = 120.0


def _phase_timeout(settings, phase: str | None) -> float:
    """Seconds without a message before a hang verdict: `STARTUP_TIMEOUT_S` before the worker's first method
    (phase None), the settings' `load_timeout_s` while a method loads (importing a candidate may still have to load
    a large built extension), else `hang_timeout_s`."""
    load = getattr(settings, "load_timeout_s", None) or 0.0
    if phase is None:
        return max(STARTUP_TIMEOUT_S, load, settings.hang_timeout_s)
    if load and phase == "load":
        return max(load, settings.hang_timeout_s)
    return settings.hang_timeout_s


def _kill(proc) -> None:
    if proc.is_alive():
        proc.kill()
    proc.join(10)


# What a death in a phase most often means, for the verdict's detail line. A call that synchronizes the device (or
# allocates) fails while a CUDA graph captures it, and a file that exits on every CUDA error then takes the worker
# with it; the host-clock modes time such calls.
_DIED_HINTS = {"capture": (" of the call into a CUDA graph: a call that synchronizes the device or allocates fails "
                           "there, and exits if it checks that error; measure it in offline mode (--mode offline), "
                           "which times each call by the host clock")}


def _exit_text(code) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


class DummyRunner(Runner, kind="dummy"):
    """Made-up but deterministic times: a method named `*slow*` is 2× the baseline time, `*fast*` 0.8×,
    `*lucky*` 0.7× in a short run (under 10 rounds) and 1.2× in a long one (the winner's curse), `*broken*` fails
    verification, `*crash*` dies like a crashed worker would. For CPU tests of everything above."""

    def __init__(self, delay_s: float = 0.0):
        self.delay_s = delay_s
        self.calls = 0

    def run(self, tasks, methods, settings, on_records, lt_cache=None, on_lt_algo=None, on_env=None,
            on_progress=None):
        if on_env:
            on_env({"gpu": "dummy", "sm_count": 0, "torch": "dummy", "cuda_runtime": None})
        for task in tasks:
            self.calls += 1
            records = []
            for spec in methods:
                name = spec["name"]
                if name in task.skip:
                    continue
                if on_progress:
                    on_progress(task, name, "time")
                if "crash" in name:
                    task.skip.add(name)
                    on_records(task, verdict_records(task, name, Verdict.CRASH, "the worker died (signal SIGSEGV)"))
                    continue
                if "broken" in name:
                    records += verdict_records(task, name, Verdict.WRONG_VALUES,
                                               "error 1 exceeds the fp32 tolerance")
                    continue
                for mode in task.modes:
                    base = _dummy_time_us(task.problem, mode, spec, settings.rounds)
                    records.append(Record(name, mode, True, time_us_median=base, time_us_p10=base * 0.98,
                                          time_us_p90=base * 1.03, samples=7,
                                          tflops=task.problem.flops / (base * 1e6), max_rel_err=1e-4).to_dict())
            if self.delay_s:
                time.sleep(self.delay_s)
            on_records(task, records)


def _dummy_time_us(problem: GemmProblem, mode: str, spec: dict, rounds: int = 7) -> float:
    if spec.get("kind") == "library":  # a library takes the time of what it dispatches the shape to
        key = shape_key(problem.m, problem.n, problem.k, problem.acc, problem.dtype, problem.layout)
        return _dummy_time_us(problem, mode, {"name": spec["runs"].get(key, "torch")}, rounds)
    base = max(problem.flops / 600e12, problem.min_bytes / 3e12) * 1e6 + 2.0 + (8.0 if mode != "device" else 0.0)
    jitter = 1.0 + (zlib.crc32(f"{spec['name']}{problem}".encode()) % 100) / 1000.0
    name = spec["name"]
    factor = 2.0 if "slow" in name else 0.8 if "fast" in name else (0.7 if rounds < 10 else 1.2) if "lucky" in name \
        else 1.0
    return base * factor * jitter

