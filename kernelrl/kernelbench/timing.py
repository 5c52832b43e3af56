"""Timing a KernelBench candidate beside its baselines (the worker's `TimingMixin`): the baselines (eager,
torch.compile in two modes, a CUDA graph), prepared once per task and worker; shuffled rounds of calls on fresh
perturbed inputs with the L2 flushed before each; a sample of the candidate's timed calls checked against the
reference; the hidden-work check from each round's event-timed last call; and no candidate code beside a
baseline's timed calls. Runs only in the worker process."""

from __future__ import annotations

import torch

from kernelrl.harness.rounds import Settle, calls_per_turn, host_timed_rounds
from kernelrl.harness.stats import hidden_work, summarize
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.kernelbench.watch import Fatal, _short

CHECK_FRACTION = 0.3  # share of the candidate's timed calls that are checked (plus one per round)


class TimingMixin:
    """KBWorker's timing (it provides `_call`, `begin`, `sync`; the watch: kernelrl/kernelbench/watch.py)."""

    def _baseline_fn(self, name, ref, static_in):
        if name == "eager":
            return lambda *xs: self._call(ref, xs)
        if name in ("compile_default", "compile_reduce_overhead"):
            compiled = torch.compile(ref, mode="reduce-overhead" if name == "compile_reduce_overhead" else None)
            return lambda *xs: self._call(compiled, xs)
        if name == "cuda_graph":
            if not self.cuda:
                raise RuntimeError("needs CUDA")
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    self._call(ref, static_in)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = self._call(ref, static_in)

            def replay(*xs):
                graph.replay()
                return static_out

            replay.stage = lambda xs: [s.copy_(x) for s, x in zip(static_in, xs) if isinstance(s, torch.Tensor)]
            return replay
        raise ValueError(f"unknown baseline {name!r}")

    def _untouched(self, tid, when):
        """No candidate code runs beside a baseline's timed calls: a guarded attribute, global hook or torch mode
        changed now was planted by the candidate (a finalizer, a callback) and is its verdict; a baseline is never
        timed beside it."""
        tampered = self._tampered(f"outside the candidate's calls, {when}")
        if tampered:
            self.begin(tid, "candidate", "time")
            raise Fatal(*tampered)

    def _time(self, tid, tmod, ref, cand, baselines, errs):
        s = self.s
        self.rounds_run = 0
        self.time_spread = {}
        # input sets in the pool: as the task's memory plan says (kernelbench/memory_plan.py: as asked, fewer or
        # on the host where the device cannot hold them beside the rest)
        plan = self.mem_plan
        pool = [self._pool_set(tmod, self.base_seed + 1000 + i, plan.pool_on_host) for i in range(plan.input_sets)]
        fns, base_reasons = {}, {}
        k = 0
        self._untouched(tid, "before the baselines were prepared")  # the guards are captured afresh after it
        for b in baselines:
            if b in plan.skipped_baselines:
                base_reasons[b] = ("not timed: its static copies of the task's inputs and output do not fit beside "
                                   "the checks' (memory plan)")
                continue
            self.begin(tid, b, "prepare")
            try:
                fn = self.baseline_fns.get(b)
                if fn is None:  # compiled once per task and worker (see _task)
                    fn = self.baseline_fns[b] = self._baseline_fn(b, ref, self._clone(pool[0]))
                for _ in range(max(1, s["warmup_calls"])):
                    xs = self._fresh(pool, k)
                    k += 1
                    getattr(fn, "stage", lambda _: None)(xs)
                    fn(*xs)
                self.sync()
                fns[b] = fn
            except Exception as exc:
                base_reasons[b] = f"baseline failed: {_short(exc)}"
        # What the baselines' compilers changed (torch._dynamo wraps torch.manual_seed on import, for one) is the
        # new normal; nothing else may have changed (watch._recapture_after_baselines).
        self._recapture_after_baselines(tid)  # the precision flags are read again there too
        fns["candidate"] = None
        self.begin(tid, "candidate", "warmup")
        try:
            for _ in range(max(1, s["warmup_calls"])):
                self._cand_call(cand, self._fresh(pool, k), "warm-up")
                k += 1
        except Rejected as exc:  # out of memory: the task's verdict where the reference runs out as well
            exc = self._out_of_memory(tid, ref, pool[0], "warm-up", exc)
            return {}, exc if exc.verdict is Verdict.TOO_LARGE else Rejected(Verdict.DURING_TIMING, str(exc)), \
                base_reasons
        rounds = _PairRounds(self, tid, ref, cand, fns, pool, k, base_reasons, errs)
        try:
            settle = Settle(min_rounds=2, spread=s["settle_spread"], min_round_s=s["settle_round_s"]) \
                if s.get("settle_spread") else None
            samples, overhead = host_timed_rounds(list(fns), s["rounds"], s["calls_per_round"], self.rng, rounds,
                                                  self.clocks, settle)
            self.rounds_run = len(samples["candidate"]) // max(1, s["calls_per_round"])
        except _CandidateRaised as exc:
            return {}, exc.verdict, base_reasons
        except Rejected as exc:  # the reference of a checked call ran out of memory: the task's verdict
            if exc.verdict is not Verdict.TOO_LARGE:
                raise
            return {}, exc, base_reasons
        reason = rounds.reason
        times = {}
        for name in fns:
            if name != "candidate" and name in base_reasons:
                continue
            summary = summarize(samples[name])
            times[name] = summary["median"]
            # each side's spread over its timed calls: a self-pair off 1.00 says whether a slow spell caused it
            self.time_spread[name] = {k: summary[k] for k in ("p10", "p90", "n")}
        if self.cuda and reason is None:
            reason = hidden_work(overhead["candidate"], [summarize(overhead[n])["median"] for n in fns
                                                         if n != "candidate" and overhead[n] and n not in base_reasons],
                                 times["candidate"])
        return times, reason, base_reasons


class _CandidateRaised(Exception):
    """The candidate raised during timing: its verdict, and no more calls."""

    def __init__(self, verdict: Rejected):
        self.verdict = verdict


class _PairRounds:
    """What a KernelBench pair's timed rounds do around each call (harness/rounds.py times them): fresh perturbed
    inputs every call, made outside the timed region, and the L2 flushed; a baseline's staging; the watch around
    every call, a baseline's too; the round's last call (the event-timed one on a GPU), one more at random and about
    a third besides judged against the reference, so a candidate turning stale after N calls is caught whatever the
    secret; no candidate code beside a baseline's turn.

    Why a baseline's calls are watched as well: the watch's process-level checks after a call (thousands of guarded
    attributes compared, in Python) leave the host's caches cold for the next call, and a launch-bound model's call
    is slower for it. Watched on one side only, an identical model read 0.976 over eager on launch-bound level-3
    networks; watched on both, 1.006, as the harness-free control reads (benchmarks/results/h100/kernelbench/
    selfpair_probe.md). What a baseline's watch finds is the candidate's: no candidate code may run beside it."""

    def __init__(self, worker, tid, ref, cand, fns, pool, k, base_reasons, errs) -> None:
        self.w, self.tid, self.ref, self.cand, self.fns, self.pool = worker, tid, ref, cand, fns, pool
        self.k, self.base_reasons, self.errs = k, base_reasons, errs
        self.calls = calls_per_turn(worker.s["calls_per_round"], worker.clocks)
        self.checks: set[int] = set()
        self.reason: Rejected | None = None  # the first sampled call that failed its judgement

    def turn(self, name, rnd):
        if name in self.base_reasons:
            return False  # a baseline that failed is not called again
        if name != "candidate":
            self.w._untouched(self.tid, f"before {name} was timed")
        self.w.begin(self.tid, name, "time")
        rng = self.w.rng
        self.checks = {self.calls - 1, rng.randrange(self.calls)} | {r for r in range(self.calls)
                                                                     if rng.random() < CHECK_FRACTION}
        return True

    def prepare(self, name, rnd, rep):
        w = self.w
        xs = w._fresh(self.pool, self.k)
        self.k += 1
        is_cand = name == "candidate"
        # for every candidate call, checked or not; on the host where the memory plan says
        pristine = (w._to_host(xs) if w.cuda and w.mem_plan.timing_pristine_on_host else w._clone(xs)) if is_cand \
            else None
        stage = getattr(self.fns[name], "stage", None)
        if stage:
            stage(xs)
        if w.flush_buf is not None:
            w.flush_buf.fill_(rep & 0xFF)
        if is_cand:
            w._seed_call()  # a random task: the sampled check's reference repeats this seed
        return xs, pristine, w._watch()

    def call(self, name, prepared):
        xs = prepared[0]
        return self.w._call(self.cand, xs) if name == "candidate" else self.fns[name](*xs)

    def after(self, name, rnd, rep, prepared, out, error):
        w = self.w
        xs, pristine, watched = prepared
        if name != "candidate":
            self._unwatch_baseline(name, watched)
            if error is not None:
                self.base_reasons[name] = f"baseline failed: {_short(error)}"
                return False
            return True
        w._unwatch(watched, "timing")
        if error is not None:
            w._probe_context(error)
            failed = Rejected(Verdict.EXCEPTION, _short(error))
            error.__traceback__ = None  # the failed call's frames (and the memory they hold) go
            failed = w._out_of_memory(self.tid, self.ref, pristine, "time", failed)
            if failed.verdict is Verdict.TOO_LARGE:  # the reference runs out as well: not the candidate's verdict
                raise failed
            raise _CandidateRaised(Rejected(Verdict.DURING_TIMING, f"exception: {failed.detail}"))
        if rep in self.checks and self.reason is None:
            ref_in, ref_out = w._reference(self.tid, self.ref, pristine, "time")
            w.begin(self.tid, "candidate", "judge time")
            try:
                w._judge(out, ref_out, xs, pristine, ref_in, None, self.errs)
            except Rejected as exc:
                self.reason = Rejected(Verdict.DURING_TIMING, str(exc))
            w.begin(self.tid, "candidate", "time")
        return True

    def _unwatch_baseline(self, name, watched):
        """The watch after a baseline's timed call: the same work as after the candidate's (see the class), and a
        finding is the candidate's verdict, as `_untouched`'s are."""
        try:  # the same walk; a Python thread new since the call is not held against the candidate (Python < 3.12
            # cannot say who started it, and torch's compile workers start their own)
            self.w._unwatch(None, f"{name}'s timed call, beside which none of the candidate's code may run")
        except Fatal:
            self.w.begin(self.tid, "candidate", "time")
            raise

    def end_turn(self, name, rnd):
        if name != "candidate":  # a failed baseline's turn too: a finalizer may have run in it
            self.w._untouched(self.tid, f"while {name} was timed")
