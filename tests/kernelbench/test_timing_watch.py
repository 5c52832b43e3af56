"""The watch around a KernelBench pair's timed calls (kernelbench/timing.py's _PairRounds): every method's calls are
watched, so the harness's work between calls is the same on both sides of a ratio, and what the watch finds after a
baseline's call is the candidate's verdict."""

import random

import pytest

from kernelrl.harness.rounds import Clocks, host_timed_rounds
from kernelrl.harness.verdicts import Verdict
from kernelrl.kernelbench.timing import _PairRounds
from kernelrl.kernelbench.watch import Fatal


class _Plan:
    timing_pristine_on_host = False


class FakeWorker:
    """The worker surface _PairRounds uses, on the host, recording the watch's calls and the phases begun."""

    cuda = False
    flush_buf = None
    mem_plan = _Plan()

    def __init__(self, finding_after: str | None = None):
        self.s = {"calls_per_round": 2}
        self.clocks = Clocks(now=lambda: 0.0, sync=lambda: None)
        self.rng = random.Random(0)
        self.watched: list[str] = []  # the method whose call each _unwatch closed
        self.phases: list[tuple[str, str]] = []
        self.finding_after = finding_after  # a method after whose call the watch finds something
        self._calling = None

    def _fresh(self, pool, k):
        return [k]

    def _clone(self, xs):
        return list(xs)

    def _seed_call(self):
        pass

    def _watch(self):
        return object()

    def _unwatch(self, before, phase):
        self.watched.append(self._calling)
        if self._calling == self.finding_after:
            raise Fatal(Verdict.THREAD, f"a thread started during {phase}")

    def _untouched(self, tid, when):
        pass

    def begin(self, tid, name, phase):
        self.phases.append((name, phase))

    def _call(self, model, xs):
        self._calling = "candidate"
        return xs

    def _reference(self, tid, ref, pristine, phase):
        return pristine, pristine

    def _judge(self, *args):
        pass


def _baseline(worker, name):
    def call(*xs):
        worker._calling = name
        return xs
    return call


def _rounds(worker, names):
    fns = {n: None if n == "candidate" else _baseline(worker, n) for n in names}
    return _PairRounds(worker, 0, object(), object(), fns, [None], 0, {}, {})


def test_every_timed_call_is_watched_the_baselines_too():
    w = FakeWorker()
    names = ["candidate", "eager", "compile_default"]
    host_timed_rounds(names, 3, 2, random.Random(1), _rounds(w, names), w.clocks)
    assert sorted(set(w.watched)) == sorted(names)
    assert all(w.watched.count(n) == 3 * 2 for n in names)  # 3 rounds of 2 calls each


def test_what_the_watch_finds_after_a_baseline_s_call_is_the_candidate_s_verdict():
    w = FakeWorker(finding_after="eager")
    names = ["candidate", "eager"]
    with pytest.raises(Fatal) as caught:
        host_timed_rounds(names, 2, 2, random.Random(1), _rounds(w, names), w.clocks)
    assert caught.value.verdict is Verdict.THREAD and "eager's timed call" in caught.value.detail
    assert w.phases[-1] == ("candidate", "time")  # the verdict is recorded against the candidate's timing
