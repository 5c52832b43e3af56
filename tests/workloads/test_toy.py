"""A third workload through the same skeleton (issue 27): a toy CPU operator, y = 2x, whose adapter is this file
alone. It supplies only what differs (inputs, loading and calling a candidate, the reference, the check); the
process, its protocol, the hang and crash watch, the background-thread check, the timed rounds and the restarts are
kernelrl's (`harness.worker_base`, `harness.rounds`, `run.protocol`, `run.runner.LocalRunner`). Its check changes
the inputs between timed calls, as the HGEMM and KernelBench workers do, so a candidate that caches its first answer
is caught."""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field

import pytest

from kernelrl.harness.record import Record
from kernelrl.harness.rounds import Clocks, host_timed_rounds
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.harness.worker_base import Fatal, WorkerBase, os_threads
from kernelrl.run.protocol import serve
from kernelrl.run.runner import LocalRunner, RunSettings

SIZE, ROUNDS, CALLS = 256, 3, 5


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
        calls, failed = {}, {}
        for name, source in self.methods.items():
            if name in task["skip"]:
                continue
            self.begin(task["id"], name, "load")
            scope: dict = {}
            before = os_threads()
            try:
                exec(source, scope)  # noqa: S102 - the toy's "build": a candidate is Python source
            except Exception as exc:  # noqa: BLE001 - any candidate error is its verdict
                failed[name] = Rejected(Verdict.EXCEPTION, f"{type(exc).__name__}: {exc}")
                continue
            self.check_no_background(before, "loading the candidate")  # Fatal: serve() reports it
            calls[name] = scope["run"]
        # the harness's one host-timed loop; this adapter only makes inputs, calls and checks
        host, _ = host_timed_rounds(list(calls), ROUNDS, CALLS, self.rng, ToyRounds(self, task["id"], calls, failed),
                                    Clocks(now=time.perf_counter, sync=lambda: None))
        records = [Record.failed(name, "offline", exc.verdict, exc.detail).to_dict() for name, exc in failed.items()]
        records += [Record(name, "offline", verified=True, time_us_median=statistics.median(host[name]),
                           samples=len(host[name])).to_dict() for name in calls if name not in failed]
        self.report(task["id"], records)


class ToyRounds:
    """The toy's side of each timed call: fresh inputs every call, each output checked against 2x."""

    def __init__(self, worker: ToyWorker, task_id: int, calls: dict, failed: dict):
        self.w, self.task_id, self.calls, self.failed = worker, task_id, calls, failed

    def turn(self, name, rnd):
        if name in self.failed:
            return False
        self.w.begin(self.task_id, name, "timing")
        return True

    def prepare(self, name, rnd, rep):
        return self.w.inputs()

    def call(self, name, x):
        return self.calls[name](x)

    def after(self, name, rnd, rep, x, y, error):
        if error is not None:
            self.failed[name] = Rejected(Verdict.EXCEPTION, f"{type(error).__name__}: {error}")
        elif y != [2 * v for v in x]:
            self.failed[name] = Rejected(Verdict.WRONG_VALUES, "y differs from 2x on fresh inputs")
        return name not in self.failed

    def end_turn(self, name, rnd):
        pass


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


def measure(names: list[str], tasks: int = 1, hot_spare: bool = False) -> dict[tuple[int, str], dict]:
    out = {}
    methods = [{"name": n, "source": CANDIDATES[n]} for n in names]
    LocalRunner(worker_target=toy_main, hot_spare=hot_spare).run(
        [ToyTask(i) for i in range(tasks)], methods, RunSettings(hang_timeout_s=3.0),
        lambda task, records: out.update({(task.id, r["method"]): r for r in records}))
    return out


@pytest.fixture(scope="module")
def verdicts():
    return measure(list(CANDIDATES), tasks=2)


def test_an_honest_candidate_is_verified_and_timed(verdicts):
    r = verdicts[(0, "honest")]
    assert r["verified"] and r["time_us_median"] > 0 and r["samples"] == ROUNDS * CALLS


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



def test_a_hot_spare_takes_over_after_each_failure_with_the_same_verdicts(verdicts):
    with_spare = measure(list(CANDIDATES), tasks=2, hot_spare=True)  # crashes, hangs, threads: three restarts a task
    assert {k: (r["verified"], r["verdict"]) for k, r in with_spare.items()} == \
        {k: (r["verified"], r["verdict"]) for k, r in verdicts.items()}


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
