"""The GPU worker: a spawned process that verifies and times every method on each problem, all methods
interleaved in shuffled order in this one process, and reports plain-data records over a pipe.

The parent tracks which method is running from the `begin` messages, so a crash or hang here becomes that
method's verdict. A CUDA error that may have poisoned the context ends this process (`fatal`); the parent restarts
a fresh worker for the rest."""

from __future__ import annotations

import math
import os
import random
import resource
import time

import torch

from kernelrl.run import methods as M
from kernelrl.run.protocol import serve
from kernelrl.run.stats import hidden_work, summarize
from kernelrl.verify.checks import GuardedBuffer, compare_output, guard_bytes_for, make_inputs, reference
from kernelrl.workloads.hgemm import GemmProblem


class Fatal(Exception):
    """The CUDA context may be unusable: report, then exit."""


class Rejected(Exception):
    """A method failed a check; the message is the verdict."""


class Worker:
    def __init__(self, conn, payload: dict):
        self.conn = conn
        self.settings = payload["settings"]
        self.secret = payload["secret"]
        self.algo_cache = payload.get("lt_cache", {})
        self.specs = payload["methods"]
        self.kinds = {spec["name"]: spec["kind"] for spec in self.specs}
        self.rng = random.Random(self.secret)
        self.stream = None
        self.blas = self.ctx = None
        self.current = (None, None, None)
        self.phase_s: dict[str, float] = {}
        self._phase_started = time.perf_counter()

    # -- messaging -------------------------------------------------------------------------------------------
    def send(self, *msg):
        self.conn.send(msg)

    def begin(self, task_id, method, phase):
        """Announce what runs next (the parent's culprit if we die) and charge the time since the last
        announcement to the phase that just ended, so each task reports where the evaluator's time goes."""
        now = time.perf_counter()
        if self.current[2] is not None:
            kind = self.current[2].split(":")[0]
            self.phase_s[kind] = self.phase_s.get(kind, 0.0) + now - self._phase_started
        self._phase_started = now
        self.current = (task_id, method, phase)
        self.send("begin", task_id, method, phase)

    # -- setup -----------------------------------------------------------------------------------------------
    def start(self):
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA GPU visible to torch")
        torch.cuda.init()
        self.stream = torch.cuda.Stream()
        props = torch.cuda.get_device_properties(0)
        self.l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20))
        env = {"gpu": props.name, "sm_count": props.multi_processor_count, "l2_bytes": self.l2_bytes,
               "cuda_runtime": torch.version.cuda, "torch": torch.__version__}
        if self.settings.get("blas_lib"):
            from kernelrl.baselines import native_lib
            self.blas = native_lib.load(self.settings["blas_lib"])
            self.ctx = self.blas.kr_blas_create()
            if not self.ctx:
                raise RuntimeError("cuBLAS context: " + native_lib.last_error(self.blas))
            env.update(native_lib.versions(self.blas))
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
                raise Rejected("untimed input staging needs --cache hot (one staged input set)")
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
        results = {}  # method name -> dict(verdict fields, timings per mode)
        live: dict[str, M.Method] = {}
        for spec in self.specs:
            name = spec["name"]
            if name in task.get("skip", ()):
                continue
            results[name] = {"errors": [], "max_rel_err": 0.0, "extra": {}, "times": {}}
            self.begin(task_id, name, "load")
            try:
                method = self.make_method(spec)
                self._admit(method, spec, problem)
                live[name] = method
            except (M.MethodError, Rejected) as exc:
                results[name]["errors"].append(str(exc))
        self._guards = []
        self.live, self.results = live, results  # methods still in the running, and their verdicts so far
        self.need_bt = any(x.needs_bt for x in live.values())
        self.set0 = self._alloc_set(problem, self.need_bt)
        self._alloc_workspaces(problem, live)
        self._verify_all(task_id, problem, live, self.set0, results)
        for mode in task["modes"]:
            self._time_mode(task_id, problem, mode, live, results)
        for method in live.values():
            method.close()
        self._guards, self.workspaces, self.set0 = [], {}, None
        if torch.cuda.memory_reserved() > (16 << 30):  # return big shapes' memory; small ones reuse the cache
            torch.cuda.empty_cache()
        self.begin(task_id, None, "report")  # closes the last phase
        phases = {k: round(v, 4) for k, v in self.phase_s.items()}
        self.phase_s = {}
        records = _records(problem, task["modes"], results)
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
        for record in records:
            record["extra"]["task_phase_s"] = phases
            record["extra"]["worker_max_rss_mb"] = round(rss_mb)
        self.send("task", task_id, records)

    def _admit(self, method: M.Method, spec: dict, problem: GemmProblem):
        if isinstance(method, M.Candidate):
            info = method.info()
            if info.get("acc", problem.acc) != problem.acc:
                raise Rejected(f"accumulator mismatch: the candidate declares acc={info.get('acc')!r}, "
                               f"the problem asks for {problem.acc}")
            if not method.supports(problem.m, problem.n, problem.k):
                raise Rejected("unsupported: kernelrl_hgemm_supports returned 0 for this shape")
        if isinstance(method, M.TorchMatmul) and problem.acc == "fp16" and \
                not hasattr(torch.backends.cuda.matmul, "allow_fp16_accumulation"):
            raise Rejected("this torch has no fp16-accumulation switch")

    # -- buffers ---------------------------------------------------------------------------------------------
    def _alloc_set(self, problem: GemmProblem, need_bt: bool) -> M.Buffers:
        """One input set with guard bands, filled with random normal data (never time on constant data)."""
        m, n, k = problem.m, problem.n, problem.k
        a, b, c = self._guarded((m, k)), self._guarded((k, n)), self._guarded((m, n))
        bt = self._guarded((n, k)) if need_bt else None
        ga, gb = make_inputs(m, n, k, "normal", self.rng.getrandbits(62), device="cuda")
        a.tensor.copy_(ga)
        b.tensor.copy_(gb)
        if bt is not None:
            bt.tensor.copy_(gb.t())
        return M.Buffers(a.tensor, b.tensor, bt.tensor if bt is not None else None, c.tensor)

    def _alloc_workspaces(self, problem: GemmProblem, live: dict):
        self.workspaces = {}
        for name, method in live.items():
            size = method.workspace_bytes(problem.m, problem.n, problem.k)
            self.workspaces[name] = self._guarded((size,), dtype=torch.uint8).tensor if size else None

    def _guarded(self, shape, dtype=torch.float16):
        row_bytes = shape[-1] * (2 if dtype == torch.float16 else 1)
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
        a, b = make_inputs(problem.m, problem.n, problem.k, kind, seed, device="cuda")
        bufs.a.copy_(a)
        bufs.b.copy_(b)
        if bufs.bt is not None:
            bufs.bt.copy_(b.t())
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
                    self.results[name]["errors"].append(
                        f"kernelrl_hgemm_stage returned error {rc} ({self._error_name(rc)})")
                    self.live.pop(name).close()

    def _checked_call(self, task_id, problem, name, method, bufs, call, a, b, ref, exact, phase, results):
        """Poison C, call once, and run every check. Raises Rejected with the first failure."""
        self.begin(task_id, name, phase)
        bufs.c.fill_(float("nan"))
        ws = self.workspaces.get(name)
        if ws is not None and isinstance(method, M.Candidate) and not method.staged:
            ws.fill_(0xFF)  # a kernel that relies on a zeroed workspace must zero it itself, inside the call
        self._rearm()
        torch.cuda.synchronize()
        with torch.cuda.stream(self.stream):
            rc = call()
        self._sync(name, phase)
        if rc:
            raise Rejected(f"returned error {rc} ({self._error_name(rc)})")
        self._judge(problem, bufs, a, b, ref, exact, results[name])

    def _judge(self, problem, bufs, a, b, ref, exact, result):
        # One synchronization for all the guard and input checks.
        flags = [g.intact_flag() for g in self._guards] + [(bufs.a == a).all(), (bufs.b == b).all()]
        if bufs.bt is not None:
            flags.append((bufs.bt == b.t()).all())
        flags = torch.stack(flags).tolist()
        if not all(flags[:len(self._guards)]):
            raise Rejected("out-of-bounds write: a guard band around a buffer was overwritten")
        if not all(flags[len(self._guards):]):
            raise Rejected("modified its inputs: A or B changed during the call")
        outcome = compare_output(bufs.c, ref, problem.acc, problem.k, exact=exact)
        if math.isfinite(outcome.max_rel_err) and not exact:
            result["max_rel_err"] = max(result["max_rel_err"], outcome.max_rel_err)
        if not outcome.ok:
            raise Rejected(outcome.reason)

    def _verify_all(self, task_id, problem, live: dict, bufs: M.Buffers, results: dict):
        """Three checks before any timing: normal inputs (public seed), normal inputs (this run's secret seed),
        0/1 inputs (exact). Methods that fail leave `live`. Also runs each method's one-time preparation."""
        public = hash_seed(problem, 0)
        for name in list(live):
            self.begin(task_id, name, "prepare")
            try:
                with torch.cuda.stream(self.stream):
                    facts = live[name].prepare(problem, self.stream, bufs, self.workspaces.get(name))
                self._sync(name, "prepare")
                results[name]["extra"].update(facts)
                tuning = getattr(live[name], "new_tuning", None)
                if tuning:
                    self.algo_cache[tuning["key"]] = tuning
                    self.send("lt_algo", tuning)
                    live[name].new_tuning = None
            except (M.MethodError, Rejected) as exc:
                results[name]["errors"].append(str(exc))
                live.pop(name).close()
        calls = {name: method.bind(problem, bufs, self.workspaces.get(name), self.stream)
                 for name, method in live.items()}
        for kind, seed, exact in (("normal", public, False), ("normal", self.secret ^ public, False),
                                  ("binary", self.secret ^ (public + 1), True)):
            a, b, ref = self._fill(problem, bufs, kind, seed)
            for name in list(live):
                try:
                    self._checked_call(task_id, problem, name, live[name], bufs, calls[name], a, b, ref, exact,
                                       f"verify:{kind}", results)
                except Rejected as exc:
                    results[name]["errors"].append(str(exc))
                    live.pop(name).close()
            del a, b, ref
        # The last check left 0/1 data in set 0; time on random normal data (constant or sparse data runs faster).
        self._fill(problem, bufs, "normal", self.rng.getrandbits(62))

    # -- timing ----------------------------------------------------------------------------------------------
    def _time_mode(self, task_id, problem, mode: str, live: dict, results: dict):
        if not live:
            return
        if mode == "device":
            self._time_device(task_id, problem, live, results)
        elif mode in ("offline", "server"):
            self._time_host(task_id, problem, mode, live, results)
        else:
            raise ValueError(f"unknown mode {mode!r}")

    def _time_device(self, task_id, problem, live, results):
        """CUDA-graph replay of back-to-back calls, timed with events; cold cache rotates input sets whose total
        exceeds twice the L2, so each call reads its operands from HBM."""
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
            except Rejected as exc:
                results[name]["errors"].append(str(exc))
                live.pop(name).close()
        ev_samples = {name: [] for name in graphs}
        wall_samples = {name: [] for name in graphs}
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for name, graph in graphs.items():  # warm-up replay
            self.begin(task_id, name, "warmup")
            with torch.cuda.stream(self.stream):  # a graph replays on the current stream
                graph.replay()
            self._sync(name, "warmup")
        for _ in range(s["rounds"]):
            order = list(graphs)
            self.rng.shuffle(order)
            for name in order:
                self.begin(task_id, name, "time:device")
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                with torch.cuda.stream(self.stream):
                    start.record()
                    graphs[name].replay()
                    end.record()
                self._sync(name, "time:device")
                wall = time.perf_counter() - t0
                ev_samples[name].append(start.elapsed_time(end) * 1e3 / calls_per_graph)
                wall_samples[name].append(wall * 1e6 / calls_per_graph)
        # Calls made during timing are checked too: refill set 0 in place, poison every output, replay.
        a, b, ref = self._fill(problem, sets[0], "normal", self.rng.getrandbits(62))
        for name in list(graphs):
            try:
                self.begin(task_id, name, "recheck:device")
                for bufs in sets:
                    bufs.c.fill_(float("nan"))
                self._rearm()
                torch.cuda.synchronize()  # the poison (default stream) must land before the replay writes
                with torch.cuda.stream(self.stream):
                    graphs[name].replay()
                self._sync(name, "recheck:device")
                self._judge(problem, sets[0], a, b, ref, False, results[name])
                for bufs in sets[1:]:
                    if bool(torch.isnan(bufs.c).any()):
                        raise Rejected("unwritten output on a rotated input set during graph replay")
            except Rejected as exc:
                results[name]["errors"].append(f"during timing: {exc}")
        for name in graphs:
            ev, wall = summarize(ev_samples[name]), summarize(wall_samples[name])
            hidden = wall["median"] - ev["median"]
            entry = {**ev, "wall_median": wall["median"], "calls_per_graph": calls_per_graph, "input_sets": nsets}
            # Work hidden from the stream's events (another stream, a host thread) shows up only in wall time.
            if hidden * calls_per_graph > 200 + 0.5 * ev["median"] * calls_per_graph:
                results[name]["errors"].append(
                    f"hidden work: synchronized time {wall['median']:.2f} us exceeds the stream's event time "
                    f"{ev['median']:.2f} us per call")
            results[name]["times"]["device"] = entry
        del graphs, sets
        self._guards = kept_guards  # the rotated sets are freed; set 0 and the workspaces stay guarded

    def _capture(self, problem, name, method, sets, calls_per_graph):
        bound = [method.bind(problem, bufs, self.workspaces.get(name), self.stream) for bufs in sets]
        graph = torch.cuda.CUDAGraph()
        codes = []
        try:
            with torch.cuda.graph(graph, stream=self.stream):
                for i in range(calls_per_graph):
                    codes.append(bound[i % len(bound)]())
        except RuntimeError as exc:
            self._after_error(name, "capture", exc)
            raise Rejected(f"graph capture failed: {str(exc).splitlines()[0]}") from None
        bad = [c for c in codes if c]
        if bad:
            raise Rejected(f"returned error {bad[0]} ({self._error_name(bad[0])}) during graph capture")
        return graph

    def _time_host(self, task_id, problem, mode, live, results):
        """The paper's offline mode (host clock around each call, device-wide synchronize before and after) and
        server mode (the same after an exponential idle gap at the target rate)."""
        s = self.settings
        bufs = self.set0
        calls = {name: m.bind(problem, bufs, self.workspaces.get(name), self.stream) for name, m in live.items()}
        host = {name: [] for name in calls}
        overhead = {name: [] for name in calls}
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        gap = 1.0 / s["qps"] if mode == "server" else 0.0
        check_rounds = {s["rounds"] // 2, s["rounds"] - 1}
        for name in calls:  # warm-up call, untimed
            self.begin(task_id, name, "warmup")
            with torch.cuda.stream(self.stream):
                calls[name]()
            self._sync(name, "warmup")
        with torch.cuda.stream(self.stream):
            for rnd in range(s["rounds"]):
                checked = rnd in check_rounds
                if checked:
                    a, b, ref = self._fill(problem, bufs, "normal", self.rng.getrandbits(62))
                order = list(calls)
                self.rng.shuffle(order)
                for name in order:
                    self.begin(task_id, name, f"time:{mode}")
                    for rep in range(s["calls_per_round"]):
                        if checked and rep == 0:
                            bufs.c.fill_(float("nan"))
                        if gap:
                            time.sleep(self.rng.expovariate(1.0 / gap))
                        torch.cuda.synchronize()
                        t0 = time.perf_counter()
                        rc = calls[name]()
                        torch.cuda.synchronize()
                        host[name].append((time.perf_counter() - t0) * 1e6)
                        if rc:
                            break
                        if checked and rep == 0:
                            self._try_judge(problem, bufs, a, b, ref, results[name], name, mode)
                    # One extra call with stream events inside the host window, for the hidden-work check.
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    start.record(self.stream)
                    rc2 = calls[name]()
                    end.record(self.stream)
                    torch.cuda.synchronize()
                    wall = (time.perf_counter() - t0) * 1e6
                    overhead[name].append(wall - start.elapsed_time(end) * 1e3)
                    if rc or rc2:
                        results[name]["errors"].append(f"returned error {rc or rc2} during {mode} timing")
        baseline_overheads = [summarize(overhead[n])["median"] for n in calls
                              if self.kinds[n] not in ("candidate", "library") and not results[n]["errors"]]
        for name in calls:
            stats = summarize(host[name])
            flag = hidden_work(overhead[name], baseline_overheads, stats["median"])
            if flag:
                results[name]["errors"].append(flag)
            results[name]["times"][mode] = {**stats, "sync_overhead_us": summarize(overhead[name])["median"]}

    def _try_judge(self, problem, bufs, a, b, ref, result, name, mode):
        try:
            self._judge(problem, bufs, a, b, ref, False, result)
        except Rejected as exc:
            if not any(e.startswith("during timing") for e in result["errors"]):
                result["errors"].append(f"during timing ({mode}): {exc}")

    # -- errors ----------------------------------------------------------------------------------------------
    def _sync(self, name, phase):
        try:
            torch.cuda.synchronize()
        except RuntimeError as exc:
            self._after_error(name, phase, exc)

    def _after_error(self, name, phase, exc):
        """A CUDA error from a method: sticky errors (illegal address, launch failure) poison the context."""
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        try:
            torch.cuda.synchronize()
            torch.zeros(1, device="cuda").add_(1).item()
        except RuntimeError:
            raise Fatal(f"crash: {text}") from None

    def _error_name(self, code: int) -> str:
        if self.blas is not None:
            return (self.blas.kr_cuda_error_name(int(code)) or b"?").decode()
        return "cudaError"


def hash_seed(problem: GemmProblem, salt: int) -> int:
    return (problem.m * 1_000_003 + problem.n * 10_007 + problem.k * 101 + salt) & 0x7FFF_FFFF


def _records(problem: GemmProblem, modes, results: dict) -> list[dict]:
    out = []
    for name, res in results.items():
        reason = "; ".join(dict.fromkeys(res["errors"])) or None
        for mode in modes:
            t = res["times"].get(mode)
            median = t["median"] if t else None
            out.append({"method": name, "mode": mode, "time_us_median": median,
                        "time_us_p10": t["p10"] if t else None, "time_us_p90": t["p90"] if t else None,
                        "samples": t["n"] if t else 0,
                        "tflops": problem.flops / (median * 1e6) if median else None,
                        "max_rel_err": res["max_rel_err"] if not reason or t else None,
                        "verified": reason is None and t is not None, "reason": reason or (None if t else "not timed"),
                        "extra": {**res["extra"], **{k: v for k, v in (t or {}).items()
                                                     if k not in ("median", "p10", "p90", "n")}}})
    return out


def worker_main(conn, payload: dict):
    """Entry point of the spawned process."""
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    serve(conn, payload, Worker(conn, payload), fatal=(Fatal,))
