"""Timing a KernelBench candidate beside its baselines (the worker's `TimingMixin`): the baselines (eager,
torch.compile in two modes, a CUDA graph), prepared once per task and worker; shuffled rounds of calls on fresh
perturbed inputs with the L2 flushed before each; a sample of the candidate's timed calls checked against the
reference; the hidden-work check from each round's event-timed last call; and no candidate code beside a
baseline's timed calls. Runs only in the worker process."""

from __future__ import annotations

from time import perf_counter as _perf_counter  # bound when the worker module loads, before any candidate code

import torch

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
        # input sets in the pool: as asked, but together at most two footprints' worth of inputs
        sets = max(1, min(s["input_sets"], int(2 * self.footprint // max(1, self.input_bytes))))
        pool = [self._inputs(tmod, self.base_seed + 1000 + i, "task") for i in range(sets)]
        fns, base_reasons = {}, {}
        k = 0
        self._untouched(tid, "before the baselines were prepared")  # the guards are captured afresh after it
        for b in baselines:
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
        # Only harness code ran since the last check: what the baselines' compilers changed (torch._dynamo wraps
        # torch.manual_seed on import, for one) is the new normal.
        self.guards = self._capture_guards()
        self.precision0 = self._precision()
        fns["candidate"] = None
        self.begin(tid, "candidate", "warmup")
        try:
            for _ in range(max(1, s["warmup_calls"])):
                self._cand_call(cand, self._fresh(pool, k), "warm-up")
                k += 1
        except Rejected as exc:
            return {}, Rejected(Verdict.DURING_TIMING, str(exc)), base_reasons
        samples = {n: [] for n in fns}
        overhead = {n: [] for n in fns}
        n_calls = s["calls_per_round"] + (1 if self.cuda else 0)
        reason = None
        for rnd in range(s["rounds"]):
            order = list(fns)
            self.rng.shuffle(order)
            for name in order:
                if name in base_reasons:
                    continue  # a baseline that failed is not called again
                is_cand = name == "candidate"
                if not is_cand:
                    self._untouched(tid, f"before {name} was timed")
                self.begin(tid, name, "time")
                fn = fns[name]
                # the round's last call always (a candidate turning stale after N calls is caught whatever the
                # secret), one more at random and about a third besides
                checks = {n_calls - 1, self.rng.randrange(n_calls)} | {r for r in range(n_calls)
                                                                       if self.rng.random() < CHECK_FRACTION}
                for rep in range(n_calls):
                    xs = self._fresh(pool, k)  # fresh tensors and values every call, made outside the timed region
                    k += 1
                    pristine = self._clone(xs) if is_cand else None  # for every candidate call, checked or not
                    stage = getattr(fn, "stage", None)
                    if stage:
                        stage(xs)
                    if self.flush_buf is not None:
                        self.flush_buf.fill_(rep & 0xFF)
                    events = self.cuda and rep == n_calls - 1  # the extra call: hidden-work check
                    self.sync()
                    watched = self._watch() if is_cand else None
                    t0 = _perf_counter()
                    try:
                        if events:
                            start, end = self._Event(enable_timing=True), self._Event(enable_timing=True)
                            self._event_record(start)
                        out = self._call(cand, xs) if is_cand else fn(*xs)
                        if events:
                            self._event_record(end)
                        self.sync()
                    except Exception as exc:
                        if is_cand:
                            self._unwatch(watched, "timing")
                            self._probe_context(exc)
                            return {}, Rejected(Verdict.DURING_TIMING, f"exception: {_short(exc)}"), base_reasons
                        base_reasons[name] = f"baseline failed: {_short(exc)}"
                        break
                    wall = (_perf_counter() - t0) * 1e6
                    if is_cand:
                        self._unwatch(watched, "timing")
                    if events:
                        overhead[name].append(wall - self._event_elapsed(start, end) * 1e3)
                    else:
                        samples[name].append(wall)
                    if is_cand and rep in checks and reason is None:
                        ref_in, ref_out = self._reference(tid, ref, pristine, "time")
                        self.begin(tid, "candidate", "time")
                        try:
                            self._judge(out, ref_out, xs, pristine, ref_in, None, errs)
                        except Rejected as exc:
                            reason = Rejected(Verdict.DURING_TIMING, str(exc))
                        del ref_out
                    del out
                if not is_cand:
                    self._untouched(tid, f"while {name} was timed")
        times = {}
        for name in fns:
            if name != "candidate" and name in base_reasons:
                continue
            times[name] = summarize(samples[name])["median"]
        if self.cuda and reason is None:
            reason = hidden_work(overhead["candidate"], [summarize(overhead[n])["median"] for n in fns
                                                         if n != "candidate" and overhead[n] and n not in base_reasons],
                                 times["candidate"])
        return times, reason, base_reasons
