"""What every measuring worker process is, whatever it measures (HGEMM, KernelBench, a test's toy workload).

The parent (`kernelrl.run.runner.LocalRunner`) spawns the process, watches for hangs and crashes by the phase the
worker last announced, and restarts a fresh worker for the tasks left; `kernelrl.run.protocol.serve` runs the
tasks and reports a `Fatal` as the running method's verdict. A workload's worker subclasses `WorkerBase` and
supplies `start()` (load what it needs before any candidate code runs) and `run_task(task)` (measure one task and
`send("task", id, records)`); the messages, the announcement of each phase and the time spent in each live here."""

from __future__ import annotations

import multiprocessing
import os
import random
import threading
import time

from kernelrl.harness.channel import KEY_FIELD, Sender
from kernelrl.harness.verdicts import Verdict

# How long the GPU may stay busy after a candidate's load returned before that is its verdict. A load enqueues
# microseconds of work (weights made on the device, a host-to-device copy finishing); a candidate that leaves a
# kernel running keeps the SMs busy while the harness verifies and times other methods beside it.
LOAD_SETTLE_BUDGET_S = 0.1


class Fatal(Exception):
    """The process can no longer be trusted (a broken CUDA context, or a candidate that changed the process):
    report the verdict as the running method's, then exit; a fresh worker takes the remaining tasks."""

    def __init__(self, verdict: Verdict, detail: str = ""):
        super().__init__(verdict.reason(detail))
        self.verdict, self.detail = verdict, detail


def os_children(pid: int | str = "self") -> set[int]:
    """A process's child processes, this one's by default (Linux /proc/<pid>/task/*/children; empty elsewhere)."""
    out: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out.update(int(pid) for pid in fh.read().split())
        except (OSError, ValueError):  # a thread that ended meanwhile
            pass
    return out


def os_threads() -> dict[int, str]:
    """This process's threads as the OS sees them (Linux /proc/self/task: native threads too, which Python's
    threading module does not list): thread id -> name. Elsewhere, Python's own threads."""
    try:
        ids = os.listdir("/proc/self/task")
    except OSError:
        # a thread still starting has no native id yet
        return {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
    out = {}
    for tid in ids:
        try:
            with open(f"/proc/self/task/{tid}/comm") as fh:
                out[int(tid)] = fh.read().strip()
        except OSError:  # it ended while we looked
            continue
    return out


def host_available() -> int:
    """The host's available memory in bytes (/proc/meminfo MemAvailable; 0 where it cannot be read: nothing is
    spilled)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def forget_spawn_arguments() -> None:
    """The process object keeps the arguments it was started with (`multiprocessing.current_process()._args`):
    the connection to the parent and the payload. Any code in the process could read them there without an
    audited call, and a candidate sent the runner its own result for its pair (corpus: forges_worker_result). From
    here on only the worker and this module's frames hold them."""
    process = multiprocessing.current_process()
    for name, empty in (("_args", ()), ("_kwargs", {}), ("_target", None)):
        if hasattr(process, name):
            setattr(process, name, empty)


class WorkerBase:
    """The process side of the runner protocol. `current` = (task id, method, phase) of what runs now: the
    parent's culprit if the process hangs or dies."""

    def __init__(self, conn, payload: dict):
        self.conn = conn
        self.secret = payload.pop("secret")  # this run's private seed: never stored, never printed, and not left
        # in the payload, which the worker's process may hold elsewhere
        self.rng = random.Random(self.secret)
        self.current = (None, None, None)
        self.writable: list = []  # the folders this process may write beneath (set by protocol.serve)
        self.phase_s: dict[str, float] = {}  # seconds per "method kind" (kind: the phase text before its first ':')
        self._clock = time.perf_counter  # captured before any candidate code runs
        self._phase_started = self._clock()
        # the tagged sender, made before any candidate code runs (None: a test's worker that sends nothing)
        self._channel = Sender(conn, payload.pop(KEY_FIELD)) if conn is not None else None

    def send(self, *msg) -> None:
        assert self._channel is not None, "a worker made without a connection sends nothing"
        self._channel.send(msg)

    def report(self, task_id, records: list[dict]) -> None:
        """A task's records, announced as its report first: the runner takes a result only so (runner._follow). A
        worker that announced it already (to close the task's last phase before taking its times) is not announced
        twice."""
        if self.current != (task_id, None, "report"):
            self.begin(task_id, None, "report")
        self.send("task", task_id, records)

    def begin(self, task_id, method, phase) -> None:
        """Announce what runs next and charge the time since the last announcement to the phase that just ended,
        so each task can report where the evaluator's time goes."""
        now = self._clock()
        _, was_method, was_phase = self.current
        if was_phase is not None and was_phase != "report":  # after a report: waiting for the next task
            kind = was_phase.split(":")[0] if was_method is None else f"{was_method} {was_phase.split(':')[0]}"
            self.phase_s[kind] = self.phase_s.get(kind, 0.0) + now - self._phase_started
        self._phase_started = now
        self.current = (task_id, method, phase)
        self.send("begin", task_id, method, phase)

    def rephase(self, phase) -> None:
        """The same task and method go on in another phase (a finer account of where their time goes)."""
        self.begin(self.current[0], self.current[1], phase)

    def take_phases(self) -> dict[str, float]:
        """Seconds per "method kind" since the last take (a task's, when called as it reports), rounded; reset."""
        phases = {k: round(v, 4) for k, v in sorted(self.phase_s.items(), key=lambda kv: -kv[1])}
        self.phase_s = {}
        return phases

    def check_no_background(self, before: dict[int, str], what: str) -> None:
        """Fatal `background activity` when threads that were not there `before` still run: work a candidate
        started outside its calls escapes the timer and slows whatever runs beside it, baselines included, so
        this process measures nothing more (the parent gives the verdict to the running method and goes on in a
        fresh worker without it)."""
        new = {tid: name for tid, name in os_threads().items() if tid not in before}
        if new:
            names = ", ".join(sorted(set(new.values())))
            raise Fatal(Verdict.BACKGROUND_ACTIVITY, f"{what} left {len(new)} thread(s) running ({names}): work "
                        f"outside the calls escapes the timer and slows what runs beside it; start no threads")

    def check_device_settled(self, now, sync, what: str, budget_s: float = LOAD_SETTLE_BUDGET_S) -> float:
        """Wait for the device (`sync`, timed by the host clock `now`, both captured before candidate code) and
        return the seconds it took; Fatal `background activity` when that is over `budget_s`: GPU work still
        running after the candidate's load returned runs outside its calls, beside whatever is measured next."""
        t0 = now()
        sync()
        waited = now() - t0
        if waited > budget_s:
            raise Fatal(Verdict.BACKGROUND_ACTIVITY, f"{what} left the GPU busy for {waited * 1e3:.0f} ms after it "
                        f"returned (at most {budget_s * 1e3:.0f} ms): work outside the calls slows what runs beside "
                        f"it; finish (synchronize) any work a load starts before returning")
        return waited

    def prepare(self) -> None:
        """Work that needs neither the device nor a task (imports): run before the process waits for its tasks,
        so a hot spare has it done by the time it takes over. Nothing here may touch the GPU: a spare runs beside
        a worker that is timing."""

    def start(self) -> None:
        raise NotImplementedError

    def run_task(self, task: dict):
        raise NotImplementedError
