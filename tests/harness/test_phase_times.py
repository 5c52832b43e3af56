"""Where a worker's time goes: `WorkerBase.begin` charges the time since the last announcement to the phase that
ended, by method and phase kind, and `take_phases` hands a task's totals over (the records' `task_phase_s`)."""

import pickle

from kernelrl.harness.channel import KEY_FIELD
from kernelrl.harness.worker_base import WorkerBase


class Conn:
    def __init__(self):
        self.sent = []

    def send_bytes(self, data):
        self.sent.append(data)


def worker_with_clock(times):
    worker = WorkerBase(Conn(), {"secret": 1, KEY_FIELD: bytes(32)})
    ticks = iter(times)
    worker._clock = lambda: next(ticks)
    return worker


def test_each_phase_is_charged_to_its_method_and_kind():
    w = worker_with_clock([0.0, 1.0, 3.0, 3.5, 4.0])
    w.begin(0, "candidate", "verify:task:0")  # t=0
    w.begin(0, "reference", "verify:task:0")  # t=1: 1 s of candidate verify
    w.begin(0, "candidate", "verify:refilled")  # t=3: 2 s of reference verify
    w.begin(0, None, "report")  # t=3.5: 0.5 s more candidate verify
    assert w.take_phases() == {"reference verify": 2.0, "candidate verify": 1.5}


def test_the_wait_after_a_report_is_not_charged_to_the_next_task():
    w = worker_with_clock([0.0, 1.0, 9.0, 10.0])
    w.begin(0, "candidate", "time")
    w.begin(0, None, "report")  # t=1
    assert w.take_phases() == {"candidate time": 1.0}
    w.begin(1, "reference", "load")  # t=9: the 8 s in between were the parent's
    w.begin(1, None, "report")  # t=10
    assert w.take_phases() == {"reference load": 1.0}


def _kinds(conn) -> list[tuple]:
    return [pickle.loads(data[32:])[:2] for data in conn.sent]  # each message after its 32-byte tag


def test_a_report_is_announced_once_whether_or_not_the_worker_announced_it_first():
    w = worker_with_clock([0.0, 1.0, 2.0, 3.0])
    w.begin(0, "candidate", "time")
    w.begin(0, None, "report")  # as the workers do, to close the last phase before take_phases
    w.report(0, [])
    w.report(1, [])  # not announced before
    assert _kinds(w.conn) == [("begin", 0), ("begin", 0), ("task", 0), ("begin", 1), ("task", 1)]
