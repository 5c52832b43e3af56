"""What every measuring worker process is, whatever it measures (HGEMM, KernelBench, a test's toy workload).

The parent (`kernelrl.run.runner.LocalRunner`) spawns the process, watches for hangs and crashes by the phase the
worker last announced, and restarts a fresh worker for the tasks left; `kernelrl.run.protocol.serve` runs the
tasks and reports a `Fatal` as the running method's verdict. A workload's worker subclasses `WorkerBase` and
supplies `start()` (load what it needs before any candidate code runs) and `run_task(task)` (measure one task and
`send("task", id, records)`); the messages, the announcement of each phase and the time spent in each live here."""

from __future__ import annotations

import random
import time

from kernelrl.harness.verdicts import Verdict


class Fatal(Exception):
    """The process can no longer be trusted (a broken CUDA context, or a candidate that changed the process):
    report the verdict as the running method's, then exit; a fresh worker takes the remaining tasks."""

    def __init__(self, verdict: Verdict, detail: str = ""):
        super().__init__(verdict.reason(detail))
        self.verdict, self.detail = verdict, detail


class WorkerBase:
    """The process side of the runner protocol. `current` = (task id, method, phase) of what runs now: the
    parent's culprit if the process hangs or dies."""

    def __init__(self, conn, payload: dict):
        self.conn = conn
        self.secret = payload["secret"]  # this run's private seed: never stored, never printed
        self.rng = random.Random(self.secret)
        self.current = (None, None, None)
        self.phase_s: dict[str, float] = {}  # seconds per phase kind (the phase text before its first ':')
        self._phase_started = time.perf_counter()
        # the genuine method, captured before any candidate code runs (None: a test's worker that sends nothing)
        self._send = type(conn).send if conn is not None else None

    def send(self, *msg) -> None:
        self._send(self.conn, msg)

    def begin(self, task_id, method, phase) -> None:
        """Announce what runs next and charge the time since the last announcement to the phase that just ended,
        so each task can report where the evaluator's time goes."""
        now = time.perf_counter()
        if self.current[2] is not None:
            kind = self.current[2].split(":")[0]
            self.phase_s[kind] = self.phase_s.get(kind, 0.0) + now - self._phase_started
        self._phase_started = now
        self.current = (task_id, method, phase)
        self.send("begin", task_id, method, phase)

    def start(self) -> None:
        raise NotImplementedError

    def run_task(self, task: dict):
        raise NotImplementedError
