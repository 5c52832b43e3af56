"""A second opinion on an accepted candidate from processes the candidate cannot reach (docs/reward_hacks.md).

A worker judges a candidate in the candidate's own process, and code there can reach the worker's objects by reading
memory (ctypes, or a native library's own code) and report a result of its own. So after a worker accepts, the
referee runs the candidate again in two fresh processes: one with the workload's reference only (it never loads
candidate code) and one with the candidate (confined as a worker is, trusted with nothing: it has no guard, no judge
and no result to report). This runner, in the parent, talks to both through plain frames (harness/wire.py: JSON and
raw bytes, never a pickle); the two processes are a workload's adapter on harness/referee_side.py (KernelBench:
kernelbench/referee.py; HGEMM: run/referee.py). So:

- values: for `seeds` secret seeds, the candidate's process computes its outputs and sends their bytes; the
  reference's process compares them with its own under the workload's rule (outputs above `MAX_BYTES` are judged by
  the digests below only, and a note says so);
- speed: stretches of back-to-back calls, each call on its own fresh draw of the inputs, timed here by the
  runner's clock from request to answer (the calls only), alternating reference and candidate, the candidate's
  process group stopped while the reference's run (`_Frozen`); each stretch then answers a digest of every call's
  outputs under weights drawn from a seed sent only after the stretch; whatever the candidate's process takes to make
  inputs and digest beyond the reference's own is charged to its calls. A digest off the reference's by more than ten
  standard deviations of honest rounding is `referee`.
- the two speeds: a worker's speedup over the reference more than `SPEEDUP_FACTOR` times the runner's (the median
  round), or one the runner could not time, is not believed: the candidate's times are scaled to the runner's ratio
  (or to 1x), and a note names both. A noisy worker measurement (a loaded CPU, two rounds) is corrected, and so is a
  forged one, which then earns nothing; a speed disagreement is never a verdict by itself (an honest CPU conv read 59x
  in its KernelBench worker and far less here: the two processes' conditions differ in ways not yet known). The factor
  is not calibrated on a GPU yet (hot back-to-back calls here, flushed and cloned ones in the worker).

A candidate that fails to load or raises outside its worker is `referee` as well: a candidate must not be able to
escape the second opinion by refusing it."""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import secrets
import shutil
import signal
import statistics
import tempfile
import time
from dataclasses import dataclass, field

from kernelrl.harness.verdicts import Verdict
from kernelrl.harness.worker_base import os_children
from kernelrl.harness import wire

MAX_BYTES = 256 << 20  # outputs sent whole for the value comparison, at most
FRAME_BYTES = MAX_BYTES + (1 << 20)  # a frame from either process, at most
STRETCH_S = 0.02  # a timed stretch lasts about this long on the reference's side
MAX_CALLS = 64  # calls in one stretch, at most
# a stretch's input sets and outputs may take this share of what the device had free before it: the other side's
# process keeps its own model and context beside it, and a call's temporaries come on top (a real-size level-1 task's
# inputs and output take 12.8 GB a call: five calls of it would not fit an 80 GB card)
MEMORY_SHARE = 0.5
ROUNDS = 5
SPEEDUP_FACTOR = 2.0  # beyond it the worker's speed is replaced by the runner's
SIGMAS = 10.0  # the product of two sums of random weights has heavier tails than a normal


@dataclass
class Ruling:
    verdict: Verdict | None = None
    detail: str = ""
    speedup: float | None = None  # the reference over the candidate, as the runner timed them (median round)
    notes: list[str] = field(default_factory=list)
    scale: float | None = None  # where the worker's speed is not believed: its speedups are divided by this
    seconds: float | None = None  # the ruling's wall time, process starts included (its cost beside the worker's)
    facts: dict = field(default_factory=dict)  # what the reference's process found about the workload (its facts())


class _Refused(Exception):
    """A side that failed (`role`: "reference" or "candidate"), or a disagreement (role "candidate")."""

    def __init__(self, detail: str, role: str = "candidate"):
        super().__init__(detail)
        self.role = role


class _Side:
    def __init__(self, ctx, role: str, target, payload: dict, timeout_s: float, load_timeout_s: float | None = None):
        self.role, self.timeout_s, self.load_timeout_s = role, timeout_s, max(timeout_s, load_timeout_s or 0.0)
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=target, args=(child, role, payload), daemon=True)
        self.proc.start()
        child.close()
        self.loaded = False

    def load(self) -> dict:
        """Wait for the process's first answer (its task, and candidate, loaded), once."""
        reply: dict = {}
        if not self.loaded:  # a process start, imports, the device's context, a library's load: its own bound
            reply, _ = self.ask({}, timeout_s=self.load_timeout_s)
            self.loaded = True
        return reply

    def ask(self, header: dict, body: bytes = b"", timeout_s: float | None = None) -> tuple[dict, bytes]:
        """Send a request and read its answer. Each request carries a fresh number its answer must repeat: a frame
        written ahead of the request (a `done` before `go`), or a late answer to an earlier one, is not its answer."""
        nonce = secrets.randbelow(1 << 62)
        if header:
            wire.send(self.conn, {**header, "n": nonce}, body)
        if not self.conn.poll(timeout_s or self.timeout_s):
            raise _Refused(f"the {self.role}'s process gave no answer within {timeout_s or self.timeout_s:.0f} s "
                           f"({header.get('op', 'load')})", self.role)
        try:
            reply, data = wire.recv(self.conn, FRAME_BYTES)
        except (EOFError, OSError):
            self.proc.join(2)
            raise _Refused(f"the {self.role}'s process died (exit code {self.proc.exitcode}) during "
                           f"{header.get('op', 'load')}", self.role) from None
        except ValueError as exc:
            raise _Refused(f"the {self.role}'s process answered what is not a frame: {exc}", self.role) from None
        if "error" in reply:
            raise _Refused(f"the {self.role} {header.get('op', 'load')}: {reply['error']}", self.role)
        if header and reply.get("n") != nonce:
            raise _Refused(f"the {self.role}'s process answered {header.get('op')} with a frame that is not its "
                           f"answer", self.role)
        return reply, data

    def timed(self, header: dict) -> tuple[float, dict]:
        t0 = time.perf_counter()
        reply, _ = self.ask(header)
        return time.perf_counter() - t0, reply

    def close(self) -> None:
        """Stop the process; the candidate's whole process group and every process it started, found before they
        could be orphaned, are killed as well (nothing it left running may skew the next pair's timing)."""
        descendants = _descendants(self.proc.pid) if self.role == "candidate" and self.proc.pid else []
        try:
            wire.send(self.conn, {"op": "stop"})
        except (OSError, ValueError):
            pass
        self.proc.join(5)
        if self.role == "candidate" and self.proc.pid:
            for kill in (lambda: os.killpg(self.proc.pid, signal.SIGKILL),
                         *(lambda p=p: os.kill(p, signal.SIGKILL) for p in descendants)):
                try:
                    kill()
                except OSError:  # gone already
                    pass
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)


class _Frozen:
    """The candidate's process group stopped (SIGSTOP) for the duration: whatever it runs in the background (threads,
    processes it started) cannot slow the reference while the reference is timed."""

    def __init__(self, side: _Side):
        self.pid = side.proc.pid

    def _signal(self, sig) -> None:
        try:
            os.killpg(self.pid, sig)
        except (OSError, TypeError):
            pass

    def __enter__(self):
        self._signal(signal.SIGSTOP)

    def __exit__(self, *exc):
        self._signal(signal.SIGCONT)


def _descendants(pid: int) -> list[int]:
    """Every live process below `pid` (harness.worker_base.os_children, level by level)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        children = os_children(todo.pop())
        out += children
        todo += children
    return out


def rule(target, payload: dict, timeout_s: float, claimed_speedup: float | None, seeds: int = 2,
         load_timeout_s: float | None = None) -> Ruling:
    """The referee's ruling on one accepted candidate: `target(conn, role, payload)` (a module-level function, run in
    each spawned process) serves the reference's side and the candidate's, `payload` tells them what to load (a
    scratch folder, removed afterwards, is added as `scratch`); `claimed_speedup`: the worker's speedup over the
    reference. `timeout_s` bounds every answer, `load_timeout_s` (where longer) each process's first."""
    started = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    payload = {**payload, "scratch": tempfile.mkdtemp(prefix="kernelrl-referee-")}
    ref = _Side(ctx, "reference", target, payload, timeout_s, load_timeout_s)
    cand = _Side(ctx, "candidate", target, payload, timeout_s, load_timeout_s)
    ruling = Ruling()
    try:
        ruling.facts = {k: v for k, v in ref.load().items() if k != "ready"}
        ready = cand.load()
        if ready.get("confined") is not True:  # said by the candidate's own process: a note, never a pass
            ruling.notes.append(f"the candidate's process was not confined ({str(ready.get('sandbox'))[:200]})")
        for _ in range(seeds):
            _values(ref, cand, secrets.randbelow(1 << 31), ruling)
        ruling.speedup = _speed(ref, cand, ruling)
        if claimed_speedup and ruling.speedup is None and claimed_speedup > 1.0:  # nothing to believe it by
            ruling.scale = claimed_speedup
            ruling.notes.append(f"the runner could not time it: the worker's {claimed_speedup:.2f}x is not believed "
                                f"(its speedups are divided by it)")
        if claimed_speedup and ruling.speedup and claimed_speedup > SPEEDUP_FACTOR * ruling.speedup:
            ruling.scale = claimed_speedup / ruling.speedup
            ruling.notes.append(f"the worker's {claimed_speedup:.2f}x is more than {SPEEDUP_FACTOR:g} times the "
                                f"runner's {ruling.speedup:.2f}x: its speedups are the runner's ratio")
    except (ValueError, TypeError, OverflowError, KeyError, RecursionError) as exc:  # an answer not as asked for
        ruling.verdict, ruling.detail = Verdict.REFEREE, f"its process answered what the runner cannot read: " \
                                                         f"{type(exc).__name__}: {str(exc)[:200]}"
    except _Refused as exc:
        if exc.role == "candidate":
            ruling.verdict, ruling.detail = Verdict.REFEREE, str(exc)
        else:
            cand.close()
            ref.close()  # a fresh one for the second try: one still busy (or stalled by what it was sent) answers late
            ref = _Side(ctx, "reference", target, payload, timeout_s, load_timeout_s)
            _reference_failed(ref, exc, ruling)
    finally:
        cand.close()
        ref.close()
        shutil.rmtree(payload["scratch"], ignore_errors=True)
        ruling.seconds = time.perf_counter() - started
    return ruling


def _reference_failed(ref: _Side, exc: _Refused, ruling: Ruling) -> None:
    """The reference's side failed. The candidate's process shares the machine (its memory, its GPU, signals where
    Landlock cannot scope them) and could make the reference fail to escape the ruling: with the candidate's process
    stopped (the caller), the reference (a fresh one if it died) runs once more; if it runs now, the candidate kept it
    from running (its verdict), else the task itself cannot be refereed here (a note, no verdict)."""
    try:
        ref.load()
        ref.ask({"op": "outputs", "seed": secrets.randbelow(1 << 31), "max_bytes": 0})
        ref.ask({"op": "prepare", "seed": 1, "calls": 1})
        ref.ask({"op": "go"})
        ref.ask({"op": "digest", "seed": 1})
    except _Refused:
        ruling.notes.append(f"not refereed: the reference could not run in its own process ({exc})")
        return
    ruling.verdict, ruling.detail = Verdict.REFEREE, (f"the reference failed beside the candidate's process ({exc}) "
                                                      f"and ran once that process was stopped")


def _values(ref: _Side, cand: _Side, seed: int, ruling: Ruling) -> None:
    """The candidate's outputs for `seed` against the reference's. The reference answers first (a task whose outputs
    the referee cannot read is the task's matter, a note); it also decides whether they are small enough to send
    whole, so a candidate cannot skip the comparison by saying its own are too large."""
    theirs, _ = ref.ask({"op": "outputs", "seed": seed, "max_bytes": 0})
    size = _count(theirs.get("bytes"))
    if size is None:
        raise _Refused(f"the reference's outputs could not be read ({theirs})", "reference")
    if size > MAX_BYTES:
        ref.ask({"op": "drop"})
        note = (f"outputs of {size >> 20} MiB, above the {MAX_BYTES >> 20} MiB sent whole: judged by the stretches' "
                f"digests only")
        if note not in ruling.notes:
            ruling.notes.append(note)
        return
    header, body = cand.ask({"op": "outputs", "seed": seed, "max_bytes": MAX_BYTES})
    if not header.get("sent") or len(body) != size:
        raise _Refused(f"outside its worker, its outputs for fresh inputs came back as {len(body)} bytes where the "
                       f"reference's are {size}")
    verdict, _ = ref.ask({"op": "compare"}, body)  # read with the reference's own dtypes and shapes
    if not verdict.get("ok"):
        raise _Refused(f"outside its worker, on fresh inputs, its outputs are wrong: {verdict.get('detail')}")


def _count(x) -> int | None:
    return x if type(x) is int and x >= 0 else None


def _speed(ref: _Side, cand: _Side, ruling: Ruling) -> float | None:
    """Eager over the candidate from alternating stretches (each call on its own fresh draw), each checked by a
    digest of every call's outputs under a seed sent after it: the median rounds' ratio, None where too fast to
    time. The calls (`go`) are timed, and whatever the candidate's process takes to
    make its inputs and digest beyond the reference's own is added to its calls (work moved there still counts)."""
    probe_seed = secrets.randbelow(1 << 31)
    for side in (ref, cand):  # warm-up: first calls (lazy compiles, cuDNN's search) are not timed
        side.ask({"op": "prepare", "seed": probe_seed, "calls": 1})
        side.ask({"op": "go"})
        side.ask({"op": "digest", "seed": 0})
    with _Frozen(cand):
        sizes, _ = ref.ask({"op": "prepare", "seed": probe_seed, "calls": 1})
        one, went_once = ref.timed({"op": "go"})
        ref.ask({"op": "digest", "seed": 0})
    calls, by_time = stretch_calls(one, sizes, went_once)
    if calls < by_time:
        ruling.notes.append(f"stretches of {calls} calls where {by_time} would last {STRETCH_S * 1e3:.0f} ms: "
                            f"{MEMORY_SHARE:.0%} of the device's free memory holds no more")
    went: dict[str, list[float]] = {"reference": [], "candidate": []}
    for _ in range(ROUNDS):
        seed, late = secrets.randbelow(1 << 30), secrets.randbelow(1 << 31)
        answers, harness = {}, {}
        for side in (ref, cand):
            with _Frozen(cand) if side is ref else contextlib.nullcontext():
                prepared, _ = side.timed({"op": "prepare", "seed": seed, "calls": calls})
                went[side.role].append(side.timed({"op": "go"})[0])
                digested, answers[side.role] = side.timed({"op": "digest", "seed": late, "keep": side is ref})
                harness[side.role] = (prepared, digested)
                if side is ref:  # the same digest with the spreads, untimed, and the stretch freed
                    answers["reference"], _ = ref.ask({"op": "digest", "seed": late, "spread": True})
        # time its process spent making inputs or digesting beyond what the reference's took is charged to its calls:
        # work moved out of the timed calls still counts (an honest process slower there only reads slower)
        went["candidate"][-1] += sum(max(0.0, mine - its) for mine, its in zip(harness["candidate"],
                                                                                 harness["reference"]))
        _check_digests(answers["reference"], answers["candidate"])
    r, c = statistics.median(went["reference"]), statistics.median(went["candidate"])
    if r <= 0 or c <= 0:
        ruling.notes.append(f"the referee's stretches ({calls} calls) were too short to time")
        return None
    return r / c


def stretch_calls(one_s: float, prepared: dict, went: dict) -> tuple[int, int]:
    """(calls in a stretch, the calls that would fill STRETCH_S): as many as fill it, at most MAX_CALLS, and no more
    input sets and outputs than MEMORY_SHARE of the free memory the reference's process saw before its probe call
    holds (`prepared`, `went`: that probe's answers; where they give no sizes, time alone decides)."""
    by_time = max(1, min(MAX_CALLS, math.ceil(STRETCH_S / max(one_s, 1e-6))))
    free, inputs, outputs = _count(prepared.get("free")), _count(prepared.get("input_bytes")), \
        _count(went.get("output_bytes"))
    if not free or inputs is None or outputs is None or inputs + outputs == 0:
        return by_time, by_time
    return max(1, min(by_time, int(MEMORY_SHARE * free) // (inputs + outputs))), by_time


def _check_digests(ref: dict, cand: dict) -> None:
    rows_r, rows_c = ref.get("digests") or [], cand.get("digests") or []
    spreads, tolerances = ref.get("spreads") or [], ref.get("tolerances") or []
    if len(rows_c) != len(rows_r):
        raise _Refused(f"its stretch answered {len(rows_c)} calls' digests for {len(rows_r)} calls")
    for call, (dr, dc, sp) in enumerate(zip(rows_r, rows_c, spreads)):
        if not isinstance(dc, list) or len(dc) != len(dr):
            raise _Refused(f"call {call} of a timed stretch answered {dc!r} for {len(dr)} outputs")
        for i, (a, b, s) in enumerate(zip(dr, dc, sp)):
            tol = tolerances[i] if i < len(tolerances) else 1e-2
            if type(b) is not float or not math.isfinite(b) or not abs(b - a) <= SIGMAS * tol * s:
                raise _Refused(f"the outputs of call {call} of a timed stretch do not match the reference's "
                               f"(output {i}: weighted sum {b!r} against {a:.6g}, allowed {SIGMAS * tol * s:.3g}): "
                               f"its timed calls did not compute what its checked ones did")
