"""The worker side of the runner protocol, shared by every GPU worker (HGEMM and KernelBench).

Messages to the parent, each tagged with the worker's key (kernelrl/harness/channel.py): ("env", dict), ("begin",
task_id, method, phase), ("task", task_id, records), ("lt_algo", dict), ("fatal", task_id, method, phase, verdict
key, detail), ("startup_error", text), ("recycle",) (the task just reported may have left traces in this process:
the parent starts a fresh worker for the rest), ("done",).
A worker object has `start()`, `run_task(task)` and `current` = (task_id, method, phase) of what runs now.

A hot spare (LocalRunner(hot_spare=True)) is spawned with `tasks` None and a `task_pipe`: it imports its modules
(torch: the slow part of a start) and runs the worker's `prepare()` (imports that need no device: torch's compiler
configs for KernelBench), then waits there, before `start()` touches the GPU, until the parent sends the tasks left
(and the cuBLASLt algorithms found meanwhile) to make it the worker.

Before any workload code runs, the process confines its own writes (kernelrl/harness/sandbox.py) to the run's
scratch folder, the compilers' caches, /dev and the folders the payload's `writable` names, and reports how in its
environment (`sandbox`)."""

from __future__ import annotations

import os
import tempfile
import traceback

from kernelrl.harness.sandbox import confine_worker
from kernelrl.harness.verdicts import Verdict
from kernelrl.harness.worker_base import Fatal, forget_spawn_arguments


RECYCLE = "recycle"  # what run_task returns when the worker must not evaluate anything more


def serve(conn, payload: dict, worker, fatal: tuple[type[Fatal], ...] = ()) -> None:
    """Run every task of the payload. An exception of a `fatal` type (with a `verdict` key and a `detail`) means the
    CUDA context may be unusable: report it as the running method's verdict and exit (code 3); any other exception
    is a worker error (code 4). Either way the parent restarts a fresh worker for the remaining tasks."""
    forget_spawn_arguments()
    worker.prepare()  # a hot spare does this while it waits (WorkerBase.prepare)
    tasks = tasks_of(payload)
    if tasks is None:  # a spare that was never needed
        return
    confinement, worker.writable = confine_worker(payload.get("scratch") or tempfile.mkdtemp(prefix="kernelrl-"),
                                                  payload.get("writable") or [], payload.get("unconfined_because"))
    worker.send("env", {"sandbox": str(confinement)})
    try:
        worker.start()
    except Exception as exc:  # nothing can run: say why, in one line
        worker.send("startup_error", f"{type(exc).__name__}: {exc}")
        return
    for task in tasks:
        try:
            if worker.run_task(task) is RECYCLE:
                worker.send("recycle")
                os._exit(0)
        except fatal as exc:
            task_id, method, phase = worker.current
            worker.send("fatal", task_id, method, phase, exc.verdict.value, exc.detail)
            os._exit(3)
        except Exception as exc:
            task_id, method, phase = worker.current
            worker.send("fatal", task_id, method, phase, Verdict.WORKER_ERROR.value,
                        f"{type(exc).__name__}: {exc} | {traceback.format_exc(limit=3)[-400:]}")
            os._exit(4)
    worker.send("done")


def tasks_of(payload: dict) -> list | None:
    """The payload's tasks; a hot spare's, when the parent sends them (None: it is not needed, exit)."""
    if payload.get("tasks") is not None:
        return payload["tasks"]
    try:
        message = payload["task_pipe"].recv()
    except (EOFError, OSError):
        return None
    if message is None:
        return None
    payload.setdefault("lt_cache", {}).update(message.get("lt_cache") or {})  # the worker holds this dict
    payload["tasks"] = message["tasks"]
    return payload["tasks"]
