"""HGEMM's host-timed modes on the shared rounds loop (kernelrl/harness/rounds.py): the paper's offline mode (host
clock around each call, device-wide synchronize before and after) and server mode (the same after an exponential
idle gap at the target rate). Each method's turn starts from pristine inputs, and a few elements of A change
(untimed) before every call, so no call sees contents an earlier call saw; in two rounds (the middle and the last)
the inputs are drawn afresh and each method's first call is judged against the changed contents."""

from __future__ import annotations

import time

import torch

from kernelrl.harness.rounds import host_timed_rounds
from kernelrl.harness.stats import summarize
from kernelrl.harness.timing import CUDA_CLOCKS
from kernelrl.harness.verdicts import Rejected, Verdict


class HostRounds:
    """The HGEMM worker's side of one host-timed mode: what happens around each call of each method's turn."""

    def __init__(self, worker, task_id, problem, mode: str, live: dict, calls: dict, results: dict):
        self.w, self.task_id, self.problem, self.mode = worker, task_id, problem, mode
        self.live, self.calls, self.results = live, calls, results
        s = worker.settings
        self.gap = 1.0 / s["qps"] if mode == "server" else 0.0
        self.check_rounds = {s["rounds"] // 2, s["rounds"] - 1}
        self.filled_round = None
        self.a = self.b = self.ref = None
        self.checked = False
        self.rc = 0

    def turn(self, name, rnd):
        w, bufs = self.w, self.w.set0
        self.checked = rnd in self.check_rounds
        if self.checked and self.filled_round != rnd:  # fresh inputs once per checked round
            self.a, self.b, self.ref = w._fill(self.problem, bufs, "normal", w.rng.getrandbits(62))
            self.filled_round = rnd
        w.begin(self.task_id, name, f"time:{self.mode}")
        w._restore([bufs])
        self.rc = 0
        return True

    def prepare(self, name, rnd, rep):
        w, bufs = self.w, self.w.set0
        w._perturb(bufs, self.ref if self.checked else None)
        if getattr(self.live[name], "staged", False):
            w._stage_inputs(self.problem, bufs, only=name)
        if self.checked and rep == 0:
            bufs.c.fill_(float("nan"))
            w._rearm()
        if self.gap:
            time.sleep(w.rng.expovariate(1.0 / self.gap))
        return None

    def call(self, name, prepared):
        return self.calls[name]()

    def after(self, name, rnd, rep, prepared, rc, error):
        if error is not None:
            raise error  # a CUDA error here is the method's crash, handled where every method's is
        if rc:
            self.rc = rc
            return False
        if self.checked and rep == 0:
            self.w._try_judge(self.problem, self.w.set0, self.a, self.b, self.ref, self.results[name], self.mode)
        return True

    def end_turn(self, name, rnd):
        w = self.w
        if self.rc:
            w._reject(self.results[name], Rejected(Verdict.RETURNED_ERROR, f"{self.rc} during {self.mode} timing"))
        try:
            w._check_state(f"{self.mode} timing")
        except Rejected as exc:
            w._reject(self.results[name], exc, "during timing: ")


def time_host_mode(worker, task_id, problem, mode: str, live: dict, results: dict) -> None:
    """Time every live method in this host-timed mode; their times (and any verdict) go into `results`."""
    s, bufs = worker.settings, worker.set0
    calls = {name: m.bind(problem, bufs, worker.workspaces.get(name), worker.stream) for name, m in live.items()}
    with torch.cuda.stream(worker.stream):
        for name in calls:  # warm-up call, untimed
            worker.begin(task_id, name, "warmup")
            worker._restore([bufs])
            calls[name]()
            worker._sync(name, "warmup")
        rounds = HostRounds(worker, task_id, problem, mode, live, calls, results)
        host, off_stream = host_timed_rounds(list(calls), s["rounds"], s["calls_per_round"], worker.rng, rounds,
                                             CUDA_CLOCKS)
    worker._restore([bufs])
    for name in calls:
        results[name]["times"][mode] = {**summarize(host[name]),
                                        "sync_overhead_us": summarize(off_stream[name])["median"]}
    worker._flag_hidden(list(calls), off_stream, {n: results[n]["times"][mode]["median"] for n in calls}, results)
