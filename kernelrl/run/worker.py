"""The GPU worker: a spawned process that verifies and times every method on each problem, all methods
interleaved in shuffled order in this one process, and reports plain-data records over a pipe.

The parent tracks which method is running from the `begin` messages, so a crash or hang here becomes that
method's verdict. A CUDA error that may have poisoned the context ends this process (`fatal`); the parent restarts
a fresh worker for the rest."""

from __future__ import annotations

import math
import os
import resource
from typing import TYPE_CHECKING

import torch

from kernelrl.baselines import native_lib
from kernelrl.harness import process_settings
from kernelrl.harness.device_state import DeviceState, context_usable
from kernelrl.harness.dispatch_guard import DispatchGuard
from kernelrl.harness.guards import Snapshot, shadowed_methods
from kernelrl.harness.installed import library_prefixes
from kernelrl.harness.record import Record
from kernelrl.harness.stats import hidden_work, summarize
from kernelrl.harness.timing import CUDA_CLOCKS, capture, capture_verdict, timed_replay
from kernelrl.harness.verdicts import Category, Rejected, Verdict
from kernelrl.harness.worker_base import Fatal, WorkerBase, os_threads
from kernelrl.run import methods as M
from kernelrl.run.content_probe import PERTURB_VALUE, PERTURBED, ContentProbe
from kernelrl.run.host_rounds import time_host_mode
from kernelrl.run.protocol import serve
from kernelrl.verify.checks import (ACCUMULATOR_PROBE_MIN_K, TORCH_DTYPES, GuardedBuffer, compare_output,
                                    guard_bytes_for, make_inputs, reference)
from kernelrl.workloads.hgemm import GemmProblem



class Worker(ContentProbe, WorkerBase):
    """The HGEMM workload's worker: methods are built libraries (or cuBLAS, torch) called through ctypes."""

    if TYPE_CHECKING:  # set per task (_alloc_workspaces)
        workspaces: dict[str, torch.Tensor | None]  # per method: its guarded workspace, or None

    def __init__(self, conn, payload: dict):
        super().__init__(conn, payload)
        self.settings = payload["settings"]
        self.algo_cache = payload.get("lt_cache", {})
        self.specs = payload["methods"]
        self.kinds = {spec["name"]: spec["kind"] for spec in self.specs}
        self.stream = None
        self.blas = self.ctx = None

    # -- setup -----------------------------------------------------------------------------------------------
    def start(self):
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA GPU visible to torch")
        torch.cuda.init()
        self.stream = torch.cuda.Stream()
        self.state = DeviceState(torch, True, self.stream.cuda_stream)
        props = torch.cuda.get_device_properties(0)
        self.l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20))
        env = {"gpu": props.name, "sm_count": props.multi_processor_count, "l2_bytes": self.l2_bytes,
               "compute_capability": f"{props.major}.{props.minor}",
               "cuda_runtime": torch.version.cuda, "torch": torch.__version__}
        if self.settings.get("blas_lib"):
            self.blas = native_lib.load(self.settings["blas_lib"])
            self.ctx = self.blas.kr_blas_create()
            if not self.ctx:
                raise RuntimeError("cuBLAS context: " + native_lib.last_error(self.blas))
            env.update(native_lib.versions(self.blas))
        # Before any candidate library loads: a native library can run Python in this process (a constructor that
        # calls the Python C API at load, an entry point that takes the GIL) and replace the checks or the timers
        self.tamper = Snapshot.capture()
        self.dispatch = DispatchGuard(library_prefixes())  # and torch's operators, whose kernels the checks run on
        self.loaded: set[str | None] = set()  # candidate libraries loaded in this process
        # the process's own settings (signal handlers, interval timers, limits, file-mode mask, libc's
        # environment): a library's constructor or entry point reaches them from C, and a timer or handler it left
        # would end or steer a later method's call (process_settings.py)
        self.process0, self.environ0 = process_settings.read(), process_settings.c_environ()
        self.send("env", env)

    def make_method(self, spec: dict) -> M.Method:
        kind = spec["kind"]
        if kind == "torch":
            return M.TorchMatmul()
        if kind == "cublas":
            return M.Cublas(self.blas, self.ctx, spec["layout"])
        if kind == "cublaslt":
            return M.CublasLt(self.blas, self.ctx, spec["layout"], spec["autotune"], self.algo_cache)
        if kind == "candidate":
            method = M.Candidate(spec["name"], spec["lib_path"])
            method.staged = bool(spec.get("untimed_stage"))
            if method.staged and self.settings["cache"] == "cold":
                raise Rejected(Verdict.UNSUPPORTED, "untimed input staging needs --cache hot (one staged input set)")
            return method
        if kind == "library":
            return M.LibraryCall(spec["name"], spec["root"])
        raise ValueError(f"unknown method kind {kind!r}")

    # -- one problem -----------------------------------------------------------------------------------------
    def run_task(self, task: dict):
        problem = GemmProblem(**task["problem"])
        task_id = task["id"]
        torch.backends.cuda.matmul.allow_tf32 = False
        if hasattr(torch.backends.cuda.matmul, "allow_fp16_accumulation"):
            torch.backends.cuda.matmul.allow_fp16_accumulation = problem.acc == "fp16"
        self.state0 = self.state.snapshot()  # every method starts from this state; a change is its verdict
        results = {}  # method name -> dict(verdict fields, timings per mode)
        live: dict[str, M.Method] = {}
        for spec in self.specs:
            name = spec["name"]
            if name in task.get("skip", ()):
                continue
            results[name] = {"errors": [], "max_rel_err": 0.0, "extra": {}, "times": {}}
            self.begin(task_id, name, "load")
            before = os_threads()
            try:
                method = self.make_method(spec)
                self._admit(method, spec, problem)
                live[name] = method
            except Rejected as exc:
                self._reject(results[name], exc)
            if not self._trusted(name):  # a library's own threads (cuBLAS, torch) are not a candidate's
                # every operator's kernels read at a library's first load in this process (its constructors run
                # then; about 70 ms), the cheap check after later ones
                library = spec.get("lib_path") or spec.get("root")  # a candidate's .so, a tuned library's folder
                first = library not in self.loaded
                self.loaded.add(library)
                self._check_tamper("loading the candidate", everything=first)
                moved = self._put_back_process()
                if moved and name in live:
                    self._reject(results[name], _process_verdict(moved, "loading the candidate"))
                    live.pop(name).close()
                self.check_no_background(before, "loading the candidate")
                self.check_device_settled(CUDA_CLOCKS.now, CUDA_CLOCKS.sync, "loading the candidate")
        self._guards: list[GuardedBuffer] = []
        self.live, self.results = live, results  # methods still in the running, and their verdicts so far
        self.need_bt = any(M.reads_bt(x, problem) for x in live.values())
        self.pristine: dict[int, tuple] = {}  # id(set) -> (A, B, Bt or None) as the harness made them
        self.set0: M.Buffers | None = self._alloc_set(problem, self.need_bt)
        self._alloc_workspaces(problem, live)
        self._verify_all(task_id, problem, live, self.set0, results)
        for mode in task["modes"]:
            self._time_mode(task_id, problem, mode, live, results)
        for method in live.values():
            method.close()
        self._guards, self.workspaces, self.set0, self.pristine = [], {}, None, {}
        if torch.cuda.memory_reserved() > (16 << 30):  # return big shapes' memory; small ones reuse the cache
            torch.cuda.empty_cache()
        self.begin(task_id, None, "report")  # closes the last phase
        phases = self.take_phases()
        records = _records(problem, task["modes"], results)
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
        for record in records:
            record["extra"]["task_phase_s"] = phases
            record["extra"]["worker_max_rss_mb"] = round(rss_mb)
        self.report(task_id, records)

    def _admit(self, method: M.Method, spec: dict, problem: GemmProblem):
        mismatch = M.layout_mismatch(method, problem)
        if mismatch:
            raise Rejected(Verdict.UNSUPPORTED, mismatch)
        if isinstance(method, M.LibraryCall) and problem.dtype != "fp16" and problem.layout == "nn":
            raise Rejected(Verdict.UNSUPPORTED, "the library's hgemm (nn) is fp16; bf16 runs through kernelrl.linear "
                                                "(--layout nt)")
        if isinstance(method, M.Candidate):
            info = method.info()
            if info.get("acc", problem.acc) != problem.acc:
                raise Rejected(Verdict.ACC_MISMATCH, f"the candidate declares acc={info.get('acc')!r}, "
                                                     f"the problem asks for {problem.acc}")
            declared = info.get("dtype", (info.get("params") or {}).get("dtype", "fp16"))
            if declared != problem.dtype:
                raise Rejected(Verdict.UNSUPPORTED, f"the candidate computes {declared} (kernelrl_hgemm_info's dtype), "
                                                    f"the problem is {problem.dtype}")
            if not method.supports(problem.m, problem.n, problem.k):
                raise Rejected(Verdict.UNSUPPORTED, "kernelrl_hgemm_supports returned 0 for this shape")
        if isinstance(method, M.TorchMatmul) and problem.acc == "fp16" and \
                not hasattr(torch.backends.cuda.matmul, "allow_fp16_accumulation"):
            raise Rejected(Verdict.UNSUPPORTED, "this torch has no fp16-accumulation switch")

    # -- buffers ---------------------------------------------------------------------------------------------
    def _alloc_set(self, problem: GemmProblem, need_bt: bool) -> M.Buffers:
        """One input set with guard bands, filled with random normal data (never time on constant data)."""
        m, n, k = problem.m, problem.n, problem.k
        dt = TORCH_DTYPES[problem.dtype]
        a, b, c = self._guarded((m, k), dt), self._guarded((k, n), dt), self._guarded((m, n), dt)
        bt = self._guarded((n, k), dt) if need_bt else None
        ga, gb = make_inputs(m, n, k, "normal", self.rng.getrandbits(62), device="cuda", dtype=problem.dtype)
        bufs = M.Buffers(a.tensor, b.tensor, bt.tensor if bt is not None else None, c.tensor)
        self._set_pristine(bufs, ga, gb)
        self._restore([bufs])
        return bufs

    def _set_pristine(self, bufs, a, b) -> None:
        """The inputs as the harness made them: A, B, and B transposed where a TN method reads Bt."""
        self.pristine[id(bufs)] = (a, b, b.t().contiguous() if bufs.bt is not None else None)

    def _restore(self, sets) -> None:
        """Put every input of these sets back as the harness made them, so what one method wrote into its inputs
        never becomes another method's input (its own verdict stays its own). One fused multi-tensor copy for all
        sets: cold mode rotates up to 4096 small sets, and three copy kernels each before every replay would cost
        tens of milliseconds."""
        dst, src = [], []
        for bufs in sets:
            a, b, bt = self.pristine[id(bufs)]
            dst += [bufs.a, bufs.b]
            src += [a, b]
            if bt is not None:
                dst.append(bufs.bt)
                src.append(bt)
        try:
            torch._foreach_copy_(dst, src)
        except (AttributeError, RuntimeError):  # a torch without the fused copy
            for d, s in zip(dst, src):
                d.copy_(s)

    def _perturb(self, bufs, ref=None) -> None:
        """Change a few elements of A (secret positions, far-out values) in the set and in its pristine copy, and
        in `ref` (the fp32 reference) the rows they move: the next call sees contents no call has seen."""
        a, b, _ = self.pristine[id(bufs)]  # only A changes: Bt stays as it is
        m, k = a.shape
        for _ in range(PERTURBED):
            i, j = self.rng.randrange(m), self.rng.randrange(k)
            new = PERTURB_VALUE if self.rng.random() < 0.5 else -PERTURB_VALUE
            if ref is not None:
                ref[i].add_(b[j].float(), alpha=new - float(a[i, j]))
            a[i, j] = new
            bufs.a[i, j] = new

    def _alloc_workspaces(self, problem: GemmProblem, live: dict):
        self.workspaces = {}
        for name, method in live.items():
            size = method.workspace_bytes(problem.m, problem.n, problem.k)
            self.workspaces[name] = self._guarded((size,), dtype=torch.uint8).tensor if size else None

    def _guarded(self, shape, dtype=torch.float16):
        row_bytes = shape[-1] * torch.empty((), dtype=dtype).element_size()
        buf = GuardedBuffer(shape, dtype=dtype, device="cuda", guard_bytes=guard_bytes_for(shape[0], row_bytes))
        self._guards.append(buf)
        return buf

    def _guards_intact(self) -> bool:
        return bool(torch.stack([g.intact_flag() for g in self._guards]).all())

    def _rearm(self):
        for g in self._guards:
            g.rearm()

    # -- verification ----------------------------------------------------------------------------------------
    def _fill(self, problem, bufs: M.Buffers, kind: str, seed: int):
        a, b = make_inputs(problem.m, problem.n, problem.k, kind, seed, device="cuda", dtype=problem.dtype)
        self._set_pristine(bufs, a, b)
        self._restore([bufs])
        self._stage_inputs(problem, bufs)
        return a, b, reference(a, b)

    def _stage_inputs(self, problem, bufs: M.Buffers, only: str | None = None):
        """New inputs: let candidates with untimed staging (--untimed-padding) prepare them, outside any timing."""
        for name, method in list(getattr(self, "live", {}).items()):
            if isinstance(method, M.Candidate) and method.staged and only in (None, name):
                torch.cuda.synchronize()
                rc = method.stage(problem, bufs, self.workspaces.get(name), self.stream)
                self._sync(name, "stage")
                if rc:  # its verdict; it leaves the running for this problem
                    self._reject(self.results[name], Rejected(
                        Verdict.RETURNED_ERROR, f"{rc} ({self._error_name(rc)}) from kernelrl_hgemm_stage"))
                    self.live.pop(name).close()

    def _checked_call(self, task_id, problem, name, method, bufs, call, a, b, ref, exact, phase, results,
                      previous=None):
        """Restore the inputs, poison C, call once, and run every check. Raises Rejected with the first failure."""
        self.begin(task_id, name, phase)
        self._restore([bufs])
        bufs.c.fill_(float("nan"))
        ws = self.workspaces.get(name)
        if ws is not None and isinstance(method, M.Candidate) and not method.staged:
            ws.fill_(0xFF)  # a kernel that relies on a zeroed workspace must zero it itself, inside the call
        self._rearm()
        torch.cuda.synchronize()
        with torch.cuda.stream(self.stream):
            rc = call()
        self._sync(name, phase)
        self._check_state(phase)
        if rc:
            raise Rejected(Verdict.RETURNED_ERROR, f"{rc} ({self._error_name(rc)})")
        self._judge(problem, bufs, a, b, ref, exact, results[name], previous)

    def _check_tamper(self, phase: str, everything: bool = False) -> None:
        """The evaluator's and the timers' Python after a method's code ran: a replaced one is put back, and the
        worker, no longer trustworthy, ends with that method's verdict (the parent starts a fresh one for the
        others)."""
        changed = self.tamper.changed()
        if changed:
            key = Verdict.TIMER_PATCH if any(k == "timer patch" for k, _ in changed) else Verdict.HARNESS_PATCH
            raise Fatal(key, f"{', '.join(label for _, label in changed)} replaced during {phase}: a kernel library "
                             f"that runs Python in the evaluator's process (the Python C API) can rewrite its checks")
        foreign = self.dispatch.foreign(everything=everything)
        if foreign:
            raise Fatal(Verdict.HARNESS_PATCH, f"{'; '.join(foreign[:3])} during {phase}: the checks compute on "
                                               f"PyTorch's operators in this process")
        shadowed = shadowed_methods(self)
        if shadowed:  # e.g. `_judge` set on this object: the class's method, which the snapshot watches, bypassed
            for name in shadowed:
                del self.__dict__[name]
            raise Fatal(Verdict.HARNESS_PATCH, f"{', '.join(shadowed)} set on the worker object during {phase}, over "
                                               f"its class's methods (corpus: cheat_replaces_worker_judge)")

    def _check_state(self, phase: str) -> None:
        """The device-global state after a method ran: any change is put back and is that method's verdict (after
        the Python the evaluator runs on, _check_tamper)."""
        self._check_tamper(phase)
        now = self.state.snapshot()
        changed = self.state.changed(self.state0, now)
        if changed:
            self.state.restore(self.state0)
            raise Rejected(Verdict.DEVICE_STATE, f"the method changed {', '.join(changed)} during {phase}")
        moved = self._put_back_process()
        if moved:
            raise _process_verdict(moved, phase)

    def _put_back_process(self) -> list[str]:
        """What differs from the process's settings at start-up, each named, all put back."""
        moved = process_settings.process_changes(self.process0, process_settings.read()) + \
            process_settings.environ_changes(self.environ0, process_settings.c_environ())
        if moved:
            process_settings.restore(self.process0)
            process_settings.restore_c_environ(self.environ0)
        return moved

    @staticmethod
    def _reject(result: dict, exc: Rejected, prefix: str = "") -> None:
        """Add a verdict; the first one is the record's key and detail. A correctness failure of a call made during
        timing (the method verified before) is the timing check's own defence verdict, its detail that failure."""
        result["errors"].append(f"{prefix}{exc}")
        result["failed_timing"] = result.get("failed_timing") or bool(prefix)
        verdict = exc.verdict
        if prefix and verdict.category is Category.CORRECTNESS:
            verdict = Verdict.DURING_TIMING
        if "verdict" not in result:
            result["verdict"], result["detail"] = verdict.value, exc.detail if verdict is exc.verdict else str(exc)

    def _judge(self, problem, bufs, a, b, ref, exact, result, previous=None):
        """`exact`: the verdict of any difference from `ref` (inputs whose result is exact), or None: the tolerance."""
        # One synchronization for all the guard and input checks.
        flags = [g.intact_flag() for g in self._guards] + [(bufs.a == a).all(), (bufs.b == b).all()]
        if bufs.bt is not None:
            flags.append((bufs.bt == b.t()).all())
        flags = torch.stack(flags).tolist()
        if not all(flags[:len(self._guards)]):
            raise Rejected(Verdict.OUT_OF_BOUNDS, "a guard band around a buffer was overwritten")
        if not all(flags[len(self._guards):]):
            raise Rejected(Verdict.MODIFIED_INPUTS, "A or B changed during the call")
        outcome = compare_output(bufs.c, ref, problem.acc, problem.k, exact=exact is not None,
                                 exact_verdict=exact or Verdict.EXACT_INPUTS)
        if outcome.verdict is Verdict.PRECISION:
            raise Rejected(Verdict.PRECISION, f"{outcome.detail} on inputs an fp32 accumulator "
                           f"sums exactly (+1024, sixteenths, -1024): it accumulates, or reduces split-K partials, "
                           f"in fp16 while claiming fp32")
        if math.isfinite(outcome.max_rel_err) and exact is None:
            result["max_rel_err"] = max(result["max_rel_err"], outcome.max_rel_err)
        if not outcome.ok:
            if previous is not None and outcome.verdict is Verdict.WRONG_VALUES and \
                    compare_output(bufs.c, previous, problem.acc, problem.k).ok:
                raise Rejected(Verdict.STALE_RESULT, "the output is the answer for the previous inputs, which "
                                                     "differ from these in a few elements (a result cached by a "
                                                     "sample of the input contents)")
            raise Rejected(outcome.verdict, outcome.detail)

    def _verify_all(self, task_id, problem, live: dict, bufs: M.Buffers, results: dict):
        """Five checks before any timing: normal inputs (public seed), normal inputs (this run's secret seed), the
        secret inputs again with a few elements changed (a result cached by a sample of the contents comes back
        stale), 0/1 inputs (exact), and for fp32 accumulation the `accumulator` inputs (exact in fp32, not in fp16;
        untrusted methods only). Every method gets the inputs as the harness made them. Methods that fail leave
        `live`. Also runs each method's one-time preparation."""
        public = hash_seed(problem, 0)
        for name in list(live):
            self.begin(task_id, name, "prepare")
            try:
                with torch.cuda.stream(self.stream):
                    facts = live[name].prepare(problem, self.stream, bufs, self.workspaces.get(name))
                self._sync(name, "prepare")
                self._check_state("prepare")
                results[name]["extra"].update(facts)
                tuning = getattr(live[name], "new_tuning", None)
                if tuning:
                    self.algo_cache[tuning["key"]] = tuning
                    self.send("lt_algo", tuning)
                    live[name].new_tuning = None
            except Rejected as exc:
                self._reject(results[name], exc)
                live.pop(name).close()
        calls = {name: method.bind(problem, bufs, self.workspaces.get(name), self.stream)
                 for name, method in live.items()}
        previous: torch.Tensor | None = None
        checks = [("normal", public, None), ("normal", self.secret ^ public, None), ("near", None, None),
                  ("binary", self.secret ^ (public + 1), Verdict.EXACT_INPUTS)]
        if problem.acc == "fp32" and problem.k >= ACCUMULATOR_PROBE_MIN_K:
            checks.append(("accumulator", self.secret ^ (public + 2), Verdict.PRECISION))
        for kind, seed, exact in checks:
            if kind == "near":  # the last inputs, a few elements changed
                assert previous is not None  # a "normal" check ran before
                ref = previous.clone()
                self._perturb(bufs, ref)
                self._restore([bufs])  # what an earlier method wrote into the set must not reach the staging
                self._stage_inputs(problem, bufs)
                a, b, _ = self.pristine[id(bufs)]
            else:
                a, b, ref = self._fill(problem, bufs, kind, seed)
            for name in list(live):
                if kind == "accumulator" and self._trusted(name):
                    continue  # NVIDIA's own (exact on every shape of benchmarks/experiments/accumulator_probe_torch.py)
                try:
                    self._checked_call(task_id, problem, name, live[name], bufs, calls[name], a, b, ref, exact,
                                       f"verify:{kind}", results, previous if kind == "near" else None)
                except Rejected as exc:
                    self._reject(results[name], exc)
                    live.pop(name).close()
            previous = ref
        del a, b, ref, previous
        # The last check left 0/1 data in set 0; time on random normal data (constant or sparse data runs faster).
        self._fill(problem, bufs, "normal", self.rng.getrandbits(62))

    # -- timing ----------------------------------------------------------------------------------------------
    def _time_mode(self, task_id, problem, mode: str, live: dict, results: dict):
        if not live:
            return
        if mode == "device":
            self._time_device(task_id, problem, live, results)
        elif mode in ("offline", "server"):
            time_host_mode(self, task_id, problem, mode, live, results)
        else:
            raise ValueError(f"unknown mode {mode!r}")

    def _time_device(self, task_id, problem, live, results):
        """CUDA-graph replay of back-to-back calls, timed with events; cold cache rotates input sets whose total
        exceeds twice the L2, so each call reads its operands from HBM. Every replay starts from pristine inputs."""
        s = self.settings
        set_bytes = problem.min_bytes
        nsets = 1
        if s["cache"] == "cold":
            nsets = max(2, min(4096, math.ceil(2 * self.l2_bytes / set_bytes), (8 << 30) // set_bytes))
        kept_guards = list(self._guards)
        sets = [self.set0] + [self._alloc_set(problem, self.need_bt) for _ in range(nsets - 1)]
        est = M._estimate_s(problem)
        calls_per_graph = max(nsets, min(s["max_graph_calls"], math.ceil(s["graph_target_ms"] * 1e-3 / est)))
        calls_per_graph = math.ceil(calls_per_graph / nsets) * nsets
        graphs = {}
        for name in list(live):
            self.begin(task_id, name, "capture")
            try:
                graphs[name] = self._capture(problem, name, live[name], sets, calls_per_graph)
                self._check_state("capture")
            except Rejected as exc:
                self._reject(results[name], exc)
                live.pop(name).close()
        ev_samples = {name: [] for name in graphs}
        wall_samples = {name: [] for name in graphs}
        for name, graph in graphs.items():  # warm-up replay
            self.begin(task_id, name, "warmup")
            self._restore(sets)
            with torch.cuda.stream(self.stream):  # a graph replays on the current stream
                graph.replay()
            self._sync(name, "warmup")
        for _ in range(s["rounds"]):
            order = list(graphs)
            self.rng.shuffle(order)
            for name in order:
                self.begin(task_id, name, "time:device")
                self._restore(sets)
                # timed_replay calls the lambda before it returns, within this iteration: `name` is the current one.
                event_us, wall_us = timed_replay(graphs[name], self.stream,
                                                 lambda: self._sync(name, "time:device"))  # noqa: B023
                ev_samples[name].append(event_us / calls_per_graph)
                wall_samples[name].append(wall_us / calls_per_graph)
                try:
                    self._check_state("device timing")
                except Rejected as exc:
                    self._reject(results[name], exc, "during timing: ")
        # Calls made during timing are checked too: refill set 0 in place, poison every output, replay.
        a, b, ref = self._fill(problem, sets[0], "normal", self.rng.getrandbits(62))
        for name in list(graphs):
            try:
                self.begin(task_id, name, "recheck:device")
                self._restore(sets)
                for bufs in sets:
                    bufs.c.fill_(float("nan"))
                self._rearm()
                torch.cuda.synchronize()  # the poison (default stream) must land before the replay writes
                with torch.cuda.stream(self.stream):
                    graphs[name].replay()
                self._sync(name, "recheck:device")
                self._judge(problem, sets[0], a, b, ref, None, results[name])
                for bufs in sets[1:]:
                    if bool(torch.isnan(bufs.c).any()):
                        raise Rejected(Verdict.UNWRITTEN_OUTPUT, "on a rotated input set during graph replay")
            except Rejected as exc:
                self._reject(results[name], exc, "during timing: ")
        del a, b, ref
        overheads = {}
        for name in graphs:
            ev, wall = summarize(ev_samples[name]), summarize(wall_samples[name])
            overheads[name] = [(w - e) * calls_per_graph for w, e in zip(wall_samples[name], ev_samples[name])]
            results[name]["times"]["device"] = {**ev, "wall_median": wall["median"], "calls_per_graph": calls_per_graph,
                                                "input_sets": nsets}
        self._flag_hidden(graphs, overheads, {n: r["times"]["device"]["median"] * calls_per_graph
                                              for n, r in results.items() if n in graphs}, results)
        self._probe_contents(task_id, problem, live, graphs, sets, results)
        del graphs
        self._restore(sets)
        for bufs in sets[1:]:
            self.pristine.pop(id(bufs), None)
        del sets
        self._guards = kept_guards  # the rotated sets are freed; set 0 and the workspaces stay guarded

    def _trusted(self, name: str) -> bool:
        return self.kinds[name] not in ("candidate", "library")

    def _flag_hidden(self, names, overheads: dict, region_us: dict, results: dict) -> None:
        """The one hidden-work rule (harness.stats) against the trusted baselines' own overhead."""
        trusted = [summarize(overheads[n])["median"] for n in names
                   if self._trusted(n) and not results[n]["errors"] and overheads[n]]
        for name in names:
            if not self._trusted(name):
                flag = hidden_work(overheads[name], trusted, region_us[name])
                if flag:
                    self._reject(results[name], flag)

    def _capture(self, problem, name, method, sets, calls_per_graph):
        bound = [method.bind(problem, bufs, self.workspaces.get(name), self.stream) for bufs in sets]
        try:
            graph, codes = capture([bound[i % len(bound)] for i in range(calls_per_graph)], self.stream)
        except RuntimeError as exc:
            self._after_error(name, "capture", exc)
            raise capture_verdict(exc) from None
        bad = [c for c in codes if c]
        if bad:
            raise Rejected(Verdict.RETURNED_ERROR, f"{bad[0]} ({self._error_name(bad[0])}) during graph capture")
        return graph

    def _try_judge(self, problem, bufs, a, b, ref, result, mode):
        try:
            self._judge(problem, bufs, a, b, ref, None, result)
        except Rejected as exc:
            if not result.get("failed_timing"):  # one verdict for a method's timing, the first
                self._reject(result, exc, f"during timing ({mode}): ")

    # -- errors ----------------------------------------------------------------------------------------------
    def _sync(self, name, phase):
        try:
            torch.cuda.synchronize()
        except RuntimeError as exc:
            self._after_error(name, phase, exc)

    def _after_error(self, name, phase, exc):
        """A CUDA error from a method: sticky errors (illegal address, launch failure) poison the context."""
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not context_usable(torch):
            raise Fatal(Verdict.CRASH, text)

    def _error_name(self, code: int) -> str:
        if self.blas is not None:
            return (self.blas.kr_cuda_error_name(int(code)) or b"?").decode()
        return "cudaError"


def _process_verdict(moved: list[str], phase: str) -> Rejected:
    return Rejected(Verdict.DEVICE_STATE, f"the method changed {', '.join(moved[:3])} during {phase}: put back (a "
                                          f"timer, handler or limit it leaves would reach the methods after it)")


def hash_seed(problem: GemmProblem, salt: int) -> int:
    return (problem.m * 1_000_003 + problem.n * 10_007 + problem.k * 101 + salt) & 0x7FFF_FFFF


def _records(problem: GemmProblem, modes, results: dict) -> list[dict]:
    out = []
    for name, res in results.items():
        reason = "; ".join(dict.fromkeys(res["errors"])) or None
        for mode in modes:
            t = res["times"].get(mode)
            median = t["median"] if t else None
            out.append(Record(
                name, mode, verified=reason is None and t is not None,
                reason=reason or (None if t else Verdict.NOT_TIMED.value),
                verdict=res.get("verdict") or (None if reason or t else Verdict.NOT_TIMED.value),
                detail=res.get("detail") if reason else None if t else "",
                time_us_median=median, time_us_p10=t["p10"] if t else None, time_us_p90=t["p90"] if t else None,
                samples=t["n"] if t else 0, tflops=problem.flops / (median * 1e6) if median else None,
                max_rel_err=res["max_rel_err"] if not reason or t else None,
                extra={**res["extra"],
                       **{k: v for k, v in (t or {}).items() if k not in ("median", "p10", "p90", "n")}},
            ).to_dict())
    return out


def worker_main(conn, payload: dict):
    """Entry point of the spawned process."""
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    serve(conn, payload, Worker(conn, payload), fatal=(Fatal,))
