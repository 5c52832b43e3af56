"""The worker side of the runner protocol, shared by every GPU worker (HGEMM and KernelBench).

Messages to the parent: ("env", dict), ("begin", task_id, method, phase), ("task", task_id, records),
("lt_algo", dict), ("fatal", task_id, method, phase, reason), ("startup_error", text), ("recycle",) (the task
just reported may have left traces in this process: the parent starts a fresh worker for the rest), ("done",).
A worker object has `start()`, `run_task(task)` and `current` = (task_id, method, phase) of what runs now."""

from __future__ import annotations

import os
import traceback


RECYCLE = "recycle"  # what run_task returns when the worker must not evaluate anything more


def serve(conn, payload: dict, worker, fatal: tuple[type[BaseException], ...] = ()) -> None:
    """Run every task of the payload. An exception of a `fatal` type means the CUDA context may be unusable: report
    it as the running method's verdict and exit (code 3); any other exception is a worker error (code 4). Either way
    the parent restarts a fresh worker for the remaining tasks."""
    try:
        worker.start()
    except Exception as exc:  # nothing can run: say why, in one line
        conn.send(("startup_error", f"{type(exc).__name__}: {exc}"))
        return
    for task in payload["tasks"]:
        try:
            if worker.run_task(task) is RECYCLE:
                conn.send(("recycle",))
                os._exit(0)
        except fatal as exc:
            task_id, method, phase = worker.current
            conn.send(("fatal", task_id, method, phase, str(exc)))
            os._exit(3)
        except Exception as exc:
            task_id, method, phase = worker.current
            conn.send(("fatal", task_id, method, phase,
                       f"worker error: {type(exc).__name__}: {exc} | {traceback.format_exc(limit=3)[-400:]}"))
            os._exit(4)
    conn.send(("done",))
