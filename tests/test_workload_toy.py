"""A third workload through the same skeleton (issue 27): a toy CPU operator, y = 2x, whose adapter is this file
alone. It supplies only what differs (inputs, loading and calling a candidate, the reference, the check); the
process, its protocol, the hang and crash watch, the background-thread check and the restarts are kernelrl's (`harness.worker_base`,
`run.protocol`, `run.runner.LocalRunner`). Its check changes the inputs between timed calls, as the HGEMM and
KernelBench workers do, so a candidate that caches its first answer is caught."""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field

import pytest

from kernelrl.harness.record import Record
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.harness.worker_base import Fatal, WorkerBase, os_threads
from kernelrl.run.protocol import serve
from kernelrl.run.runner import LocalRunner, RunSettings

SIZE, CALLS = 256, 5


@dataclass
class ToyTask:  # what LocalRunner needs of a task
    id: int
    modes: list[str] = field(default_factory=lambda: ["offline"])
    skip: set[str] = field(default_factory=set)

    def to_payload(self) -> dict:
        return {"id": self.id, "modes": self.modes, "skip": sorted(self.skip)}


class ToyWorker(WorkerBase):
    def start(self) -> None:
        self.methods = {m["name"]: m["source"] for m in self.payload_methods}

    def inputs(self) -> list[float]:
        return [self.rng.uniform(-1, 1) for _ in range(SIZE)]

    def run_task(self, task: dict) -> None:
        records = []
        for name, source in self.methods.items():
            if name in task["skip"]:
                continue
            self.begin(task["id"], name, "load")
            scope: dict = {}
            before = os_threads()
            try:
                exec(source, scope)  # noqa: S102 - the toy's "build": a candidate is Python source
                self.check_no_background(before, "loading the candidate")
                call = scope["run"]
                self.begin(task["id"], name, "timing")
                times = []
                for _ in range(CALLS):  # fresh inputs every call, each output checked
                    x = self.inputs()
                    t0 = time.perf_counter()
                    y = call(x)
                    times.append((time.perf_counter() - t0) * 1e6)
                    if y != [2 * v for v in x]:
                        raise Rejected(Verdict.WRONG_VALUES, "y differs from 2x on fresh inputs")
            except Rejected as exc:
                records.append(Record.failed(name, "offline", exc.verdict, exc.detail).to_dict())
                continue
            except Fatal:
                raise  # this process measures nothing more: serve() reports it, a fresh worker goes on
            except Exception as exc:  # noqa: BLE001 - any candidate error is its verdict
                records.append(Record.failed(name, "offline", Verdict.EXCEPTION, f"{type(exc).__name__}: {exc}")
                               .to_dict())
                continue
            records.append(Record(name, "offline", verified=True, time_us_median=statistics.median(times),
                                  samples=len(times)).to_dict())
        self.send("task", task["id"], records)


def toy_main(conn, payload: dict) -> None:
    worker = ToyWorker(conn, payload)
    worker.payload_methods = payload["methods"]
    serve(conn, payload, worker, fatal=(Fatal,))


CANDIDATES = {
    "honest": "def run(x):\n    return [2 * v for v in x]\n",
    "wrong": "def run(x):\n    return [3 * v for v in x]\n",
    "stale": "memo = []\ndef run(x):\n    memo.append(memo[0] if memo else [2 * v for v in x])\n    return memo[-1]\n",
    "raises": "def run(x):\n    raise ValueError('no')\n",
    "hangs": "import time\ndef run(x):\n    time.sleep(3600)\n",
    "crashes": "import os\ndef run(x):\n    os._exit(9)\n",
    "threads": "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
               "def run(x):\n    return [2 * v for v in x]\n",
}


def measure(names: list[str], tasks: int = 1) -> dict[tuple[int, str], dict]:
    out = {}
    methods = [{"name": n, "source": CANDIDATES[n]} for n in names]
    LocalRunner(worker_target=toy_main).run(
        [ToyTask(i) for i in range(tasks)], methods, RunSettings(hang_timeout_s=3.0),
        lambda task, records: out.update({(task.id, r["method"]): r for r in records}))
    return out


@pytest.fixture(scope="module")
def verdicts():
    return measure(list(CANDIDATES), tasks=2)


def test_an_honest_candidate_is_verified_and_timed(verdicts):
    r = verdicts[(0, "honest")]
    assert r["verified"] and r["time_us_median"] > 0 and r["samples"] == CALLS


@pytest.mark.parametrize("name, key", [("wrong", Verdict.WRONG_VALUES), ("stale", Verdict.WRONG_VALUES),
                                       ("raises", Verdict.EXCEPTION), ("hangs", Verdict.HANG),
                                       ("crashes", Verdict.CRASH), ("threads", Verdict.BACKGROUND_ACTIVITY)])
def test_each_failure_is_its_own_verdict_on_every_task(verdicts, name, key):
    for task in (0, 1):
        r = verdicts[(task, name)]
        assert not r["verified"] and r["verdict"] == key.value, r


def test_a_verdict_does_not_depend_on_its_neighbours(verdicts):
    alone = measure(["honest", "stale"])
    assert alone[(0, "stale")]["verdict"] == verdicts[(0, "stale")]["verdict"]
    assert alone[(0, "honest")]["verified"] and verdicts[(1, "honest")]["verified"]



def test_a_thread_left_running_is_seen_by_the_os_thread_list():
    before = os_threads()
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="kr-probe", daemon=True)
    t.start()
    try:
        time.sleep(0.05)
        assert {tid: n for tid, n in os_threads().items() if tid not in before}  # a new OS thread, however named
    finally:
        stop.set()
        t.join()
