"""The KernelBench worker's checks of its own state (kernelrl/kernelbench/watch.py, `_instance_changes`), each
change made directly on a started CPU worker: the corpus cheats that made them (replaces_worker_*,
empties_worker_guards, steers_worker_rng) no longer reach the worker, and these checks stay behind for a route not
yet found. The worker runs in a spawned process: its start installs an audit hook and replaces sys.gettrace."""

from __future__ import annotations

import dataclasses
import multiprocessing as mp

import pytest

from kernelrl.harness.channel import KEY_FIELD
from kernelrl.kernelbench.worker import KBSettings
from kernelrl.kernelbench.worker_process import KBWorker


class _Sink:
    def send_bytes(self, data) -> None:
        pass


def _judge(*args, **kwargs):
    return None


def _frozen_now() -> float:
    return 0.0


CHANGES = {
    "a method set on the worker": (lambda w: setattr(w, "_judge", _judge), "_judge (set on the worker"),
    "its clocks replaced": (lambda w: setattr(w, "clocks", dataclasses.replace(w.clocks, now=_frozen_now)),
                            "the worker's clocks"),
    "a clock set in place": (lambda w: object.__setattr__(w.clocks, "now", _frozen_now), "the worker's clocks.now"),
    "its guard snapshot emptied": (lambda w: w.guard_snapshot.entries.clear(), "the worker's guards"),
    "a method set on its generator": (lambda w: setattr(w.rng, "random", _frozen_now), "the worker's rng"),
    "its settings changed": (lambda w: w.s.update(rounds=1), "the worker's settings"),
    "its call trace replaced": (lambda w: setattr(w, "trace", None), "the worker's trace"),
    "its audit findings replaced": (lambda w: setattr(w, "hits", []), "the worker's hits"),
    "its channel to the runner replaced": (lambda w: setattr(w, "_channel", None), "the worker's _channel"),
}


def _apply_each(conn) -> None:
    worker = KBWorker(_Sink(), {"settings": KBSettings(device="cpu").to_dict(), "secret": 12345, KEY_FIELD: bytes(32)})
    worker.prepare()
    worker.start()
    out = {"before any change": worker._instance_changes()}
    for name, (change, _) in CHANGES.items():
        change(worker)
        out[name] = worker._instance_changes()
        out[f"{name}, then"] = worker._instance_changes()  # put back: nothing left to find
    conn.send(out)


@pytest.fixture(scope="module")
def found() -> dict:
    parent, child = mp.get_context("spawn").Pipe()
    proc = mp.get_context("spawn").Process(target=_apply_each, args=(child,))
    proc.start()
    out = parent.recv() if parent.poll(240) else None
    proc.join(30)
    assert out is not None, "the worker did not start"
    return out


def test_a_started_worker_finds_nothing_changed(found):
    assert found["before any change"] == []


@pytest.mark.parametrize("name", CHANGES)
def test_each_change_of_the_worker_s_own_state_is_found(found, name):
    assert any(CHANGES[name][1] in line for line in found[name]), found[name]


@pytest.mark.parametrize("name", CHANGES)
def test_each_change_is_put_back(found, name):
    assert found[f"{name}, then"] == []
