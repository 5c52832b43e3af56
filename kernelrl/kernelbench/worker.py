"""The dynamic evaluation of KernelBench-format pairs: a spawned worker process that loads each task and its
candidate, checks the candidate's outputs against the reference (several seeds, two input distributions), and
times the candidate beside the baselines, interleaved in shuffled order.

It speaks the HGEMM worker's protocol (`begin`, `task`, `fatal`, `done`, `startup_error`) so `LocalRunner` turns
a crash or hang into the verdict of whatever ran ("candidate", "reference" or a baseline) and restarts a fresh
worker for the rest. Candidate code runs only here, never in the parent.

Records (plain dicts, one per (pair, baseline)): method "candidate", mode "kb", baseline, verified, reason,
max_abs_err, max_rel_err, candidate_us, baseline_us, speedup (baseline median / candidate median). A worker crash
or hang gives the runner's `verdict_records` instead (method = what was running, verified False)."""

from __future__ import annotations

import math
import random
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.run.protocol import serve

DEFAULT_BASELINES = ("eager", "compile_default", "compile_reduce_overhead", "cuda_graph")
MODE = "kb"


# -- parent side -------------------------------------------------------------------------------------------------
@dataclass
class KBSettings:
    device: str = "cuda"
    baselines: tuple[str, ...] = DEFAULT_BASELINES
    n_seeds: int = 3  # the last seed is this run's secret
    rounds: int = 5
    calls_per_round: int = 3
    input_sets: int = 3
    warmup_calls: int = 2
    hang_timeout_s: float = 120.0
    flush_l2_mb: int = 256

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["baselines"] = list(self.baselines)
        return d


@dataclass
class KBTask:
    """One (task, candidate) pair for the worker; duck-types `runner.Task` for LocalRunner."""

    id: int
    task_path: str
    candidate_path: str
    name: str = ""
    modes: list[str] = field(default_factory=lambda: [MODE])
    skip: set[str] = field(default_factory=set)

    def to_payload(self) -> dict:
        return {"id": self.id, "task_path": str(self.task_path), "candidate_path": str(self.candidate_path),
                "name": self.name, "modes": self.modes, "skip": sorted(self.skip)}


def run_pairs(pairs: list[tuple[str, str]], settings: KBSettings, worker_target=None, on_progress=None) \
        -> dict[int, list[dict]]:
    """Evaluate (task path, candidate path) pairs in spawned workers; records per pair index."""
    from kernelrl.run.runner import LocalRunner

    tasks = [KBTask(i, str(t), str(c), name=Path(c).stem) for i, (t, c) in enumerate(pairs)]
    out: dict[int, list[dict]] = {t.id: [] for t in tasks}
    LocalRunner(worker_target=worker_target or worker_main).run(
        tasks, [], settings, lambda task, records: out[task.id].extend(records), on_progress=on_progress)
    return out


def pair_verdict(records: list[dict]) -> tuple[bool, str | None]:
    """(correct, reason) of one pair from its records: a failed candidate or reference decides; a baseline that
    crashed only loses that baseline."""
    for r in records:
        if r.get("method") in ("candidate", "reference") and not r.get("verified"):
            return False, r.get("reason") or "not evaluated"
    if not any(r.get("method") == "candidate" for r in records):
        return False, "not evaluated"
    return True, None


def task_result(name: str, records: list[dict], baselines=DEFAULT_BASELINES):
    """An aggregate.TaskResult from one pair's records. A failed candidate gets NaN baseline times so it counts
    in each requested baseline's `tasks` and not in `success`."""
    from kernelrl.kernelbench.aggregate import TaskResult

    ok, reason = pair_verdict(records)
    if not ok:
        return TaskResult(name, None, {b: math.nan for b in baselines}, reason or "")
    cand = [r for r in records if r.get("method") == "candidate"]
    cand_us = next((r["candidate_us"] for r in cand if r.get("candidate_us")), None)
    base = {r["baseline"]: r["baseline_us"] for r in cand if r.get("baseline_us")}
    return TaskResult(name, cand_us, base, "")


# -- worker side -------------------------------------------------------------------------------------------------
class Rejected(Exception):
    """The candidate failed a check; the message is the verdict."""


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


def _tol(dtype) -> tuple[float, float]:
    import torch
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    return 1e-4, 1e-4


def _flatten(out) -> list:
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flatten(o)]
    return [out]


class KBWorker:
    def __init__(self, conn, payload: dict):
        self.conn = conn
        self.s = payload["settings"]
        self.secret = payload["secret"]
        self.rng = random.Random(self.secret)
        self.current = (None, None, None)
        self.flush_buf = None

    def send(self, *msg):
        self.conn.send(msg)

    def begin(self, task_id, method, phase):
        self.current = (task_id, method, phase)
        self.send("begin", task_id, method, phase)

    def start(self):
        import torch
        self.device = torch.device(self.s["device"])
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("no CUDA GPU visible to torch")
            torch.cuda.init()
            if self.s.get("flush_l2_mb"):
                self.flush_buf = torch.empty(self.s["flush_l2_mb"] << 20, dtype=torch.uint8, device=self.device)
            props = torch.cuda.get_device_properties(0)
            self.send("env", {"gpu": props.name, "torch": torch.__version__, "cuda_runtime": torch.version.cuda})
        else:
            self.send("env", {"gpu": "cpu", "torch": torch.__version__, "cuda_runtime": None})
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    def sync(self):
        import torch
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    # -- inputs ------------------------------------------------------------------------------------------------
    def _inputs(self, mod, seed: int, dist: str) -> list:
        import torch
        torch.manual_seed(seed)
        raw = list(mod.get_inputs())
        out = []
        gen = torch.Generator().manual_seed(seed ^ 0x5A5A)
        for x in raw:
            if isinstance(x, torch.Tensor):
                if dist == "uniform" and x.is_floating_point():
                    x = (torch.rand(x.shape, generator=gen, dtype=torch.float32) * 4 - 2).to(x.dtype)
                x = x.to(self.device)
            out.append(x)
        return out

    @staticmethod
    def _clone(inputs: list) -> list:
        import torch
        return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]

    # -- one pair ----------------------------------------------------------------------------------------------
    def run_task(self, task: dict):
        import torch
        from kernelrl.kernelbench.tasks import load_module

        tid, skip = task["id"], set(task.get("skip", ()))
        if "candidate" in skip or "reference" in skip:
            self.send("task", tid, [])  # the runner already reported this pair's verdict
            return
        baselines = [b for b in self.s["baselines"] if b not in skip]
        self.base_seed = zlib.crc32(task["name"].encode()) & 0x7FFF_FFFF
        self.begin(tid, "reference", "load")
        tmod = load_module(task["task_path"])
        init = list(tmod.get_init_inputs())
        torch.manual_seed(self.base_seed)
        ref = tmod.Model(*init).to(self.device)
        ref_state = ref.state_dict()
        self.begin(tid, "candidate", "load")
        try:
            cmod = load_module(task["candidate_path"])
            torch.manual_seed(self.base_seed)
            cand = cmod.ModelNew(*list(tmod.get_init_inputs()))
            own = cand.state_dict()
            shared = {k: v for k, v in ref_state.items() if k in own and own[k].shape == v.shape}
            if shared:
                cand.load_state_dict(shared, strict=False)
            cand = cand.to(self.device)
        except Exception as exc:
            return self._report(tid, baselines, f"exception: {_short(exc)}", {}, {})
        errs = {"max_abs_err": 0.0, "max_rel_err": 0.0}
        try:
            self._verify(tid, tmod, ref, cand, errs)
        except Rejected as exc:
            return self._report(tid, baselines, str(exc), errs, {})
        times, reason, base_reasons = self._time(tid, tmod, ref, cand, baselines, errs)
        self._report(tid, baselines, reason, errs, times, base_reasons)

    def _report(self, tid, baselines, reason, errs, times, base_reasons=None):
        self.begin(tid, None, "report")
        cand_us = times.get("candidate")
        records = []
        for b in baselines:
            base_us = times.get(b)
            ok = reason is None and cand_us is not None
            records.append({"method": "candidate", "mode": MODE, "baseline": b, "verified": ok,
                            "reason": reason, "time_us_median": cand_us if ok else None,
                            "candidate_us": cand_us if ok else None, "baseline_us": base_us,
                            "speedup": base_us / cand_us if ok and base_us and cand_us else None,
                            "max_abs_err": errs.get("max_abs_err"), "max_rel_err": errs.get("max_rel_err"),
                            "baseline_reason": (base_reasons or {}).get(b), "samples": 0, "extra": {}})
        self.send("task", tid, records)

    def _call(self, model, inputs):
        import torch
        with torch.no_grad():
            return model(*inputs)

    def _verify(self, tid, tmod, ref, cand, errs):
        seeds = [self.base_seed + i for i in range(max(1, self.s["n_seeds"]) - 1)] + [self.secret & 0x7FFF_FFFF]
        prev = None
        for seed in seeds:
            for dist in ("task", "uniform"):
                phase = f"verify:{dist}:{'secret' if seed == seeds[-1] else seed - self.base_seed}"
                pristine = self._inputs(tmod, seed, dist)
                ref_in = self._clone(pristine)
                self.begin(tid, "reference", phase)
                ref_out = self._call(ref, ref_in)
                self.sync()
                cand_in = self._clone(pristine)
                self.begin(tid, "candidate", phase)
                try:
                    out = self._call(cand, cand_in)
                    self.sync()
                except Exception as exc:
                    raise Rejected(f"exception: {_short(exc)}") from None
                self._judge(out, ref_out, cand_in, pristine, ref_in, prev, errs)
                prev = (out, ref_out)

    def _judge(self, out, ref_out, cand_in, pristine, ref_in, prev, errs):
        import torch
        outs, refs = _flatten(out), _flatten(ref_out)
        if len(outs) != len(refs):
            raise Rejected(f"wrong shape: {len(outs)} outputs, expected {len(refs)}")
        in_ptrs = {x.data_ptr() for x in cand_in if isinstance(x, torch.Tensor)}
        ref_in_ptrs = {x.data_ptr() for x in ref_in if isinstance(x, torch.Tensor)}
        for x, p in zip(cand_in, pristine):
            if isinstance(x, torch.Tensor) and not (x.shape == p.shape and torch.equal(
                    torch.nan_to_num(x), torch.nan_to_num(p)) and torch.equal(x.isnan(), p.isnan())):
                raise Rejected("modified inputs")
        prev_ptrs = set()
        if prev is not None:
            ref_prev = {r.untyped_storage().data_ptr() for r in _flatten(prev[1]) if isinstance(r, torch.Tensor)}
            prev_ptrs = {o.untyped_storage().data_ptr() for o in _flatten(prev[0]) if isinstance(o, torch.Tensor)}
            prev_ptrs -= ref_prev if any(r.untyped_storage().data_ptr() in ref_prev
                                         for r in refs if isinstance(r, torch.Tensor)) else set()
        for o, r in zip(outs, refs):
            if not isinstance(r, torch.Tensor):
                if o != r:
                    raise Rejected("wrong values")
                continue
            if not isinstance(o, torch.Tensor):
                raise Rejected(f"wrong type: {type(o).__name__}, expected a tensor")
            if type(o) is not torch.Tensor:
                raise Rejected("tensor subclass")
            if o.data_ptr() in in_ptrs and r.data_ptr() not in ref_in_ptrs:
                raise Rejected("returned an input")
            if o.untyped_storage().data_ptr() in prev_ptrs:
                raise Rejected("same tensor every call")
            if o.shape != r.shape:
                raise Rejected(f"wrong shape: {tuple(o.shape)}, expected {tuple(r.shape)}")
            if o.dtype != r.dtype:
                raise Rejected(f"wrong dtype: {o.dtype}, expected {r.dtype}")
            if o.device != r.device:
                raise Rejected(f"wrong device: {o.device}, expected {r.device}")
            if not (o.is_floating_point() or o.is_complex()):
                if not torch.equal(o, r):
                    raise Rejected("wrong values")
                continue
            if not bool(torch.isfinite(o).all()):
                raise Rejected("NaN/Inf" + ("" if bool(torch.isfinite(r).all()) else " (in the reference too)"))
            atol, rtol = _tol(r.dtype)
            diff = (o.double() - r.double()).abs()
            if diff.numel():
                errs["max_abs_err"] = max(errs["max_abs_err"], float(diff.max()))
                errs["max_rel_err"] = max(errs["max_rel_err"], float((diff / (r.double().abs() + atol)).max()))
            if not torch.allclose(o, r, atol=atol, rtol=rtol):
                raise Rejected(f"wrong values: max abs error {float(diff.max()):.3g} exceeds the {r.dtype} "
                               f"tolerance (atol=rtol={atol:g})")

    # -- timing ------------------------------------------------------------------------------------------------
    def _baseline_fn(self, name, ref, static_in):
        import torch
        if name == "eager":
            return lambda *xs: self._call(ref, xs)
        if name in ("compile_default", "compile_reduce_overhead"):
            compiled = torch.compile(ref, mode="reduce-overhead" if name == "compile_reduce_overhead" else None)
            return lambda *xs: self._call(compiled, xs)
        if name == "cuda_graph":
            if self.device.type != "cuda":
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

    def _time(self, tid, tmod, ref, cand, baselines, errs):
        import torch
        from kernelrl.run.stats import hidden_work, summarize

        s = self.s
        pool = [self._inputs(tmod, self.base_seed + 1000 + i, "task") for i in range(max(1, s["input_sets"]))]
        self.begin(tid, "reference", "timing references")
        pool_ref = [self._call(ref, self._clone(p)) for p in pool]
        fns, base_reasons = {}, {}
        for b in baselines:
            self.begin(tid, b, "prepare")
            try:
                fn = self._baseline_fn(b, ref, self._clone(pool[0]))
                for i in range(max(1, s["warmup_calls"])):
                    xs = self._clone(pool[i % len(pool)])
                    getattr(fn, "stage", lambda _: None)(xs)
                    fn(*xs)
                self.sync()
                fns[b] = fn
            except Exception as exc:
                base_reasons[b] = f"baseline failed: {_short(exc)}"
        fns["candidate"] = lambda *xs: self._call(cand, xs)
        self.begin(tid, "candidate", "warmup")
        try:
            for i in range(max(1, s["warmup_calls"])):
                fns["candidate"](*self._clone(pool[i % len(pool)]))
            self.sync()
        except Exception as exc:
            return {}, f"during timing: exception: {_short(exc)}", base_reasons
        samples = {n: [] for n in fns}
        overhead = {n: [] for n in fns}
        cuda = self.device.type == "cuda"
        check_rounds = {s["rounds"] // 2, s["rounds"] - 1}
        reason = None
        k = 0
        for rnd in range(s["rounds"]):
            order = list(fns)
            self.rng.shuffle(order)
            for name in order:
                self.begin(tid, name, "time")
                fn = fns[name]
                for rep in range(s["calls_per_round"] + (1 if cuda else 0)):
                    idx = k % len(pool)
                    k += 1
                    xs = self._clone(pool[idx])  # fresh tensors every call, made outside the timed region
                    stage = getattr(fn, "stage", None)
                    if stage:
                        stage(xs)
                    if self.flush_buf is not None:
                        self.flush_buf.fill_(rep & 0xFF)
                    events = cuda and rep == s["calls_per_round"]  # the extra call: hidden-work check
                    self.sync()
                    t0 = time.perf_counter()
                    try:
                        if events:
                            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            start.record()
                        out = fn(*xs)
                        if events:
                            end.record()
                        self.sync()
                    except Exception as exc:
                        if name == "candidate":
                            return {}, f"during timing: exception: {_short(exc)}", base_reasons
                        base_reasons[name] = f"baseline failed: {_short(exc)}"
                        break
                    wall = (time.perf_counter() - t0) * 1e6
                    if events:
                        overhead[name].append(wall - start.elapsed_time(end) * 1e3)
                    else:
                        samples[name].append(wall)
                    if name == "candidate" and rnd in check_rounds and rep == 0 and reason is None:
                        try:
                            self._judge(out, pool_ref[idx], xs, pool[idx], pool[idx], None, errs)
                        except Rejected as exc:
                            reason = f"during timing: {exc}"
                    del out
        times = {}
        for name in fns:
            if name != "candidate" and name in base_reasons:
                continue
            times[name] = summarize(samples[name])["median"]
        if cuda and reason is None:
            reason = hidden_work(overhead["candidate"], [summarize(overhead[n])["median"] for n in fns
                                                         if n != "candidate" and overhead[n] and n not in base_reasons],
                                 times["candidate"])
        return times, reason, base_reasons


def worker_main(conn, payload: dict):
    """Entry point of the spawned process (the runner protocol of kernelrl.run.protocol)."""
    serve(conn, payload, KBWorker(conn, payload))
