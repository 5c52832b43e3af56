"""The dynamic evaluation of KernelBench-format pairs: a spawned worker process that loads each task and its
candidate, checks the candidate's outputs against the reference, and times it beside the baselines, interleaved in
shuffled order.

It speaks the HGEMM worker's protocol (`begin`, `task`, `fatal`, `done`, `startup_error`) so `LocalRunner` turns
a crash or hang into the verdict of whatever ran ("candidate", "reference" or a baseline) and restarts a fresh
worker for the rest. Candidate code runs only here, never in the parent. A candidate that changed the process
itself (patched a function, started a thread, changed a numerics flag, read the harness's memory) gets a `fatal`
verdict: this worker exits and a fresh one evaluates the remaining pairs, so nothing it did outlives its pair. After
any other defence verdict the worker asks to be replaced too (`recycle`): a verdict depends only on its own pair.

Before any pair runs, `run_pairs` builds every candidate's torch extensions (kernelrl/kernelbench/build.py), and the
worker points torch's extension folder at the candidate's own, so importing only loads. Before a candidate loads,
one reference call measures the task's footprint (an input set and the reference output); the worker keeps its own
tensors under `memory_multiple` (8) footprints (held outputs, the timing pool, chunked comparisons) and a task that
cannot fit gets `task too large` without running the candidate.

Records (harness.record.Record as plain dicts, one per (pair, baseline)): method "candidate", mode "kb", baseline,
verified, reason, verdict (the key), max_abs_err, max_rel_err, tolerance (the one it was judged by), candidate_us,
baseline_us, speedup (baseline median / candidate median). A worker crash
or hang gives the runner's `verdict_records` instead (method = what was running, verified False).

Defences, in the order a candidate meets them (each verdict starts with the key in `REASONS`):

- Load: the module import and `ModelNew(...)` run under the same watch as every call (below); a class named `Model`
  (or the task's own Model) among ModelNew's bases is `inherits Model`.
- Every candidate call (checks, warm-up and timed calls): an audit hook (installed before any candidate code runs,
  permanent) reports frame and heap introspection the candidate's own code performs (`sys._getframe`,
  `sys._current_frames`, `gc.get_objects`/`get_referrers`/`get_referents`, `tb_frame`/`gi_frame`/... access,
  `sys.settrace`/`setprofile`): `introspection` (the walk up the stack skips `inspect`/`traceback` helpers; library
  code's own use is not the candidate's). A thread started from the candidate's code (audit event, Python 3.12+),
  or a Python thread alive after the call that was not before: `thread`. Timers, synchronize, the Event and Stream
  classes and the harness's own functions are captured before any candidate code runs (the harness times with its
  captured copies) and compared after every call: `timer patch` / `harness patch`. So are torch's own functions
  the reference calls (kernelrl/kernelbench/tamper.py: torch.*, torch.nn.functional.*, torch.Tensor methods, the
  nn modules' methods and globals), global module hooks and torch modes, also before the baselines are prepared
  and around every baseline's timed calls: a wrapper that slows the reference is `harness patch` before a
  baseline is timed beside it. A static finding that the source assigns to a timer or a torch, time, sys or
  builtins attribute (static_checks `timer-patch` / `harness-patch`) fails a pair that every dynamic check
  passed, with that key. TF32 and reduced-precision flags
  against their state at start-up: `precision`. The persisting-L2 set-aside (`cudaLimitPersistingL2CacheSize`,
  read through the driver): `persisting L2`. All of these are fatal (fresh worker).
- Checks, each call on fresh clones, the reference computed after the candidate's call (its output never exists in
  memory while the candidate runs), compared with TF32 off, fp32 atol=rtol=1e-4, fp16/bf16 1e-2:
  1. the task's inputs (seed 0); on CUDA the call is a guarded one (`memguard`): free memory poisoned, so elements
     never written show the pattern (`unwritten output`), and writes outside every block the call allocated are
     `out-of-bounds write`;
  2. the same input tensors (same addresses, same Python objects) refilled in place with other values: an answer
     cached by pointer or `id` comes back stale (`stale result`: the output matches the previous call's answer);
  3. a copy of those inputs with a few elements (secret positions) set to the tensor's max and min: a cache keyed
     on a partial content fingerprint comes back stale (`stale result`);
  4. the remaining public seeds and the per-run secret seed, each with the task's distribution and uniform(-2, 2);
  5. a smaller batch (dim 0 cut to about half, when every input shares it and the reference accepts it): a kernel
     correct only at the benchmark shape is `specialised to the benchmark shape: ...`;
  6. CUDA only: inputs poisoned, then made ready on the caller's stream behind a ~5 ms spin kernel, the output
     copied on the caller's stream right after the call returns: work on a side stream (Python or C++) that does
     not wait for the caller's stream, or that the caller's stream does not wait for, is `stream order: ...`.
  Every check call runs under `sys.settrace` for the candidate's own frames: an exception that passed through its
  code while the call still returned normally is `reference fallback` (try/except around a kernel). Every output
  stays alive until the checks end (a candidate cannot tell checking from timing by whether its last output lives).
  Each output: `wrong shape`/`wrong type`/`tensor subclass` (lazy or deferred tensors), `returned an input` (its
  storage is an input's), `modified inputs`, `wrong dtype`/`wrong device`, `unwritten output`, `NaN/Inf`,
  `stale result`, `wrong values`, `same tensor every call` (a preallocated or constant output).
- Timing: every method's every call gets a fresh clone of one of a few input sets with a few elements (secret
  positions) changed, so no two calls see the same inputs (content caches miss, and an answer a baseline left in
  freed memory is for other inputs); the L2 is flushed (256 MB write) before each call; host clock around a
  device-wide synchronize. Each round's last call and about a third of the others (at least one more per round,
  chosen with the run's secret; every call gets the same pristine copy of its inputs, checked or not, so the
  candidate cannot tell) are checked against the reference, computed after the call (`during timing: ...`):
  counting calls, detecting warm-up or dropped outputs and cheating later is caught. Each round's last call is also timed with events on the
  caller's stream: synchronized time well beyond the event time is `hidden work`.
- Crashes (including sticky CUDA errors, probed after an exception) and hangs: `crash: ...`, `hang: ...`."""

from __future__ import annotations

import math
import os
import random
import sys
import sysconfig
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter as _perf_counter  # bound when the worker module loads, before any candidate code

from kernelrl.harness import compare
from kernelrl.harness.device_state import DeviceState, context_usable
from kernelrl.harness.record import Record
from kernelrl.harness.tolerance import output_tolerance
from kernelrl.harness.verdicts import Category, Rejected, Verdict
from kernelrl.kernelbench.tamper import global_hooks, static_tampering
from kernelrl.run.protocol import RECYCLE, serve

DEFAULT_BASELINES = ("eager", "compile_default", "compile_reduce_overhead", "cuda_graph")
MODE = "kb"
MEMORY_MULTIPLE = 8.0  # the worker's own tensors stay under this many task footprints (inputs + reference output)

REASONS = {
    "exception": "the candidate raised (at import, construction or a call)",
    "inherits Model": "ModelNew derives from the reference Model",
    "introspection": "the candidate read frames or the heap (reference outputs, harness state)",
    "thread": "the candidate started a thread (work hidden from the timer)",
    "timer patch": "the candidate replaced a timer, synchronize, or the Event/Stream classes",
    "harness patch": "the candidate replaced a function the harness checks or reports with, or a torch function "
                     "the reference calls (or installed a global module hook or torch mode), at run time or in "
                     "its source",
    "precision": "the candidate changed TF32 or reduced-precision settings",
    "persisting L2": "the candidate set aside L2 for persisting accesses",
    "reference fallback": "an exception passed through the candidate's code and the call still returned",
    "wrong shape": "output count or shape differs",
    "wrong type": "an output is not a tensor where the reference's is",
    "tensor subclass": "an output is a Tensor subclass (lazy or deferred values)",
    "returned an input": "an output shares an input's storage",
    "modified inputs": "the call changed its inputs",
    "wrong dtype": "output dtype differs",
    "wrong device": "output device differs",
    "unwritten output": "output elements hold the poison written to free memory before the call",
    "NaN/Inf": "non-finite output",
    "stale result": "the output is the previous call's answer (cached by pointer, id or fingerprint)",
    "wrong values": "beyond the dtype's tolerance",
    "same tensor every call": "the output is the same storage as the previous call's (preallocated or constant)",
    "out-of-bounds write": "the call wrote free memory outside every block it allocated",
    "specialised to the benchmark shape": "wrong (or failing) on a smaller batch the reference accepts",
    "stream order": "wrong when read on the caller's stream right after the call (unsynchronized side stream)",
    "during timing": "a check of a sampled timed call failed",
    "hidden work": "synchronized time far beyond the caller's stream's event time",
    "crash": "the worker died or the CUDA context broke",
    "hang": "no progress within the timeout",
}

SLEEP_CYCLES = 10_000_000  # the stream-order check's spin kernel: ~5 ms at 2 GHz
CHECK_FRACTION = 0.3  # share of the candidate's timed calls that are checked (plus one per round)
PERTURBED = 8  # elements changed per floating input tensor in near-duplicate and timed inputs

# What the candidate may not replace: (module or class path, attributes, verdict key).
GUARDED = [
    ("time", ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns", "process_time",
              "sleep"), "timer patch"),
    ("torch.cuda", ("synchronize", "Event", "Stream", "ExternalStream", "current_stream", "default_stream",
                    "stream", "set_stream", "_sleep", "elapsed_time"), "timer patch"),
    ("torch.cuda", ("empty_cache", "memory_snapshot"), "harness patch"),
    ("torch.cuda.memory", ("_snapshot", "_record_memory_history", "memory_snapshot", "empty_cache"), "harness patch"),
    ("torch.cuda.Event", ("record", "elapsed_time", "synchronize", "query", "wait"), "timer patch"),
    ("torch.cuda.Stream", ("synchronize", "wait_stream", "wait_event", "record_event", "query"), "timer patch"),
    ("torch._C", ("_cuda_synchronize",), "timer patch"),
    ("torch", ("allclose", "equal", "isfinite", "isnan", "nan_to_num", "no_grad", "compile", "as_tensor", "empty",
               "rand", "randn"), "harness patch"),
    ("torch.Tensor", ("clone", "copy_", "double", "abs", "max", "min", "all", "any", "sum", "isnan", "data_ptr",
                      "untyped_storage", "is_floating_point", "is_complex", "contiguous", "view", "to", "fill_",
                      "item", "__eq__", "__ne__", "__bool__", "__setitem__", "__getitem__"), "harness patch"),
    ("torch.nn.Module", ("__call__", "_call_impl", "to", "state_dict", "load_state_dict"), "harness patch"),
    ("builtins", ("isinstance", "issubclass", "type", "id", "len", "zip", "float", "int", "bool", "max", "min",
                  "sum", "any", "all", "print"), "harness patch"),
    ("os", ("_exit",), "harness patch"),
    ("sys", ("settrace", "gettrace", "_current_frames", "_getframe"), "harness patch"),
    ("multiprocessing.connection._ConnectionBase", ("send", "_send_bytes"), "harness patch"),
    ("multiprocessing.connection.Connection", ("_send", "_send_bytes"), "harness patch"),
    ("kernelrl.harness.stats", ("summarize", "hidden_work", "percentile"), "harness patch"),
    ("kernelrl.harness.tolerance", ("output_tolerance",), "harness patch"),
    ("kernelrl.harness.compare", ("error_stats", "allclose", "all_finite", "same_values", "count_pattern", "_chunks"),
     "harness patch"),
    ("kernelrl.harness.device_state.DeviceState", ("snapshot", "flags", "persisting_l2", "restore"), "harness patch"),
    ("kernelrl.harness.device_state", ("context_usable",), "harness patch"),
    ("kernelrl.run.protocol", ("serve",), "harness patch"),
]
FRAME_EVENTS = {"sys._getframe", "sys._getframemodulename", "sys._current_frames", "gc.get_objects",
                "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile"}
FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"}
THREAD_EVENTS = {"_thread.start_new_thread", "_thread.start_joinable_thread"}
HELPER_FILES = ("inspect.py", "traceback.py", "threading.py")  # library helpers the stack walk looks through
HELPER_DIRS = (os.sep + "concurrent" + os.sep, os.sep + "multiprocessing" + os.sep)
AUDITED_THREADS = sys.version_info >= (3, 12)  # thread starts raise audit events from Python 3.12 on


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
    extensions_dir: str | None = None  # candidates' built extensions (kernelbench/build.py); None: the default
    compile_timeout_s: float = 600.0  # one candidate's extension build; also the hang watch while one loads
    build_jobs: int | None = None  # extension builds at once (None: one per core)
    memory_multiple: float = MEMORY_MULTIPLE

    @property
    def load_timeout_s(self) -> float:
        return self.compile_timeout_s

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


def run_pairs(pairs: list[tuple[str, str]], settings: KBSettings, worker_target=None, on_progress=None,
              on_env=None, on_records=None, on_build=None) -> dict[int, list[dict]]:
    """Build every candidate's extensions, then evaluate (task path, candidate path) pairs in spawned workers
    (reused across pairs; a fresh one after a crash, a hang or a defence verdict); records per pair index. A
    candidate whose build fails gets its `compile error` / `compile timeout` verdict without running. `on_env`
    gets each worker's environment dict (gpu, torch, cuda_runtime); `on_records(index, records)` a pair's records
    so far, each time more arrive (to store them before the run ends); `on_build(outcome)` each build."""
    from kernelrl.run.runner import LocalRunner

    from kernelrl.kernelbench.build import build_extensions
    from kernelrl.run.runner import verdict_records

    if settings.extensions_dir is None:
        from kernelrl.build.builder import cache_root
        settings.extensions_dir = str(cache_root() / "kb_extensions")
    tasks = [KBTask(i, str(t), str(c), name=Path(c).stem) for i, (t, c) in enumerate(pairs)]
    out: dict[int, list[dict]] = {t.id: [] for t in tasks}

    def collect(task, records):
        out[task.id].extend(records)
        if on_records is not None:
            on_records(task.id, out[task.id])

    # Every candidate's extensions are built first, in parallel; the hang watch starts after the build.
    built = build_extensions([c for _, c in pairs], settings.extensions_dir, settings.build_jobs,
                             settings.compile_timeout_s, on_done=on_build)
    runnable = []
    for task in tasks:
        outcome = built.get(task.candidate_path)
        if outcome is not None and not outcome.ok:
            collect(task, verdict_records(task, "candidate", outcome.error))
        else:
            runnable.append(task)
    if runnable:
        LocalRunner(worker_target=worker_target or worker_main).run(
            runnable, [], settings, collect, on_progress=on_progress, on_env=on_env)
    return out


def failed_record(records: list[dict]) -> dict | None:
    """The record that decided a failed pair (the candidate's or the reference's), with its verdict key."""
    return next((r for r in records if r.get("method") in ("candidate", "reference") and not r.get("verified")),
                None)


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
class Fatal(Exception):
    """The process can no longer be trusted (a broken CUDA context, or a candidate that changed the process):
    report the verdict as the running method's, then exit; a fresh worker takes the remaining pairs."""

    def __init__(self, verdict: Verdict, detail: str = ""):
        super().__init__(verdict.reason(detail))
        self.verdict = verdict


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


def _tol(dtype) -> tuple[float, float]:
    tol = output_tolerance(dtype)
    return tol, tol


def _load_verdict(exc: BaseException) -> Rejected:
    """The verdict of a candidate that failed to import or construct: a build that failed inside the worker is a
    compile error, a package this environment lacks an environment verdict, anything else its exception."""
    text = str(exc)
    if "Error building extension" in text:
        return Rejected(Verdict.COMPILE_ERROR, _short(exc))
    if isinstance(exc, ModuleNotFoundError):
        return Rejected(Verdict.ENVIRONMENT, f"the candidate imports {exc.name!r}, which this environment does not "
                                             f"have: install it where the evaluation runs, or leave it out")
    return Rejected(Verdict.EXCEPTION, _short(exc))


def _flatten(out) -> list:
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flatten(o)]
    return [out]


def _storage(t) -> int:
    return t.untyped_storage().data_ptr()


def _resolve(path: str):
    """The object at a dotted path (modules imported as needed), or None."""
    import importlib
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
        except AttributeError:
            return None
        return obj
    return None


def _raw_attr(owner, name):
    """The attribute as stored (a class's own or inherited dict entry, a module's global), without binding."""
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in klass.__dict__:
                return klass.__dict__[name]
        return _MISSING
    return vars(owner).get(name, _MISSING) if hasattr(owner, "__dict__") else getattr(owner, name, _MISSING)


_MISSING = object()


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    prefixes = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}
    try:
        import torch
        prefixes.add(os.path.dirname(torch.__file__))
    except ImportError:
        pass
    return tuple(sorted(os.path.realpath(p) + os.sep for p in prefixes)) + ("<frozen",)


class Held:
    """Candidate outputs kept alive after their checks, oldest dropped first beyond `budget` bytes."""

    def __init__(self, budget: int):
        self.budget, self.items, self.bytes = budget, [], 0

    def add(self, pair) -> None:
        if pair is None:
            return
        out = pair[0]  # the candidate's output; the reference's is not needed once judged
        size = KBWorker._nbytes(out)
        self.items.append((out, size))
        self.bytes += size
        while self.bytes > self.budget and len(self.items) > 1:
            self.bytes -= self.items.pop(0)[1]


class KBWorker:
    def __init__(self, conn, payload: dict):
        self.conn = conn
        self.s = payload["settings"]
        self.secret = payload["secret"]
        self.rng = random.Random(self.secret)
        self.current = (None, None, None)
        self.flush_buf = None
        self.guard = None
        self.cand_file = None
        self.armed = False
        self.in_hook = False
        self.hits: list[tuple[str, str]] = []  # (verdict key, what) seen while the candidate ran
        self.caught: list[str] = []  # exceptions that passed through the candidate's frames
        self._arena = 0
        self.notes: list[str] = []  # harness-side degradations, reported in every record's `extra`
        self.task_cache = None  # (key, module, reference model, footprint verdict, footprint, input bytes)
        self.task_reused = False  # whether this pair's task came from the cache (reported in `extra`)
        self.baseline_fns: dict = {}  # the cached task's prepared baselines, by name
        self._send = type(conn).send  # the genuine method, captured before any candidate code runs

    def send(self, *msg):
        self._send(self.conn, msg)

    def begin(self, task_id, method, phase):
        self.current = (task_id, method, phase)
        self.send("begin", task_id, method, phase)

    def start(self):
        import torch
        self.torch = torch
        self.device = torch.device(self.s["device"])
        self.cuda = self.device.type == "cuda"
        if self.cuda:
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
        torch.set_float32_matmul_precision("highest")
        import importlib
        for name in ("kernelrl.kernelbench.memguard", "kernelrl.kernelbench.tasks", "kernelrl.harness.stats",
                     "kernelrl.harness.tolerance", "kernelrl.harness.device_state", "kernelrl.harness.verdicts",
                     "kernelrl.kernelbench.build", "kernelrl.harness.compare", "kernelrl.harness.record",
                     "kernelrl.kernelbench.static_checks", "kernelrl.kernelbench.tamper"):
            importlib.import_module(name)  # every harness module is loaded before any candidate code runs
        self._cuda_sync = torch._C._cuda_synchronize if self.cuda else None
        self._Event = torch.cuda.Event
        self._event_record = torch.cuda.Event.record
        self._event_elapsed = torch.cuda.Event.elapsed_time
        self._current_frames = sys._current_frames
        self._settrace, self._gettrace = sys.settrace, sys.gettrace
        self.state = DeviceState(torch, self.cuda)
        self.guards = self._capture_guards()
        self.precision0 = self._precision()
        self.l2_0 = self._persisting_l2()
        self.library = _library_prefixes()
        if self.cuda:
            from kernelrl.kernelbench.memguard import MemoryGuard
            self.guard = MemoryGuard(torch, self.device, sync=self.sync)
        sys.addaudithook(self._audit)

    def sync(self):
        if self.cuda:
            self._cuda_sync()

    # -- what a candidate may not change ---------------------------------------------------------------------
    def _capture_guards(self) -> list[tuple]:
        guards = []
        for path, names, key in GUARDED:
            owner = _resolve(path)
            if owner is None:
                continue
            for name in names:
                original = _raw_attr(owner, name)
                if original is not _MISSING:
                    guards.append((owner, name, original, f"{path}.{name}", key))
        module = sys.modules[__name__]
        from kernelrl.kernelbench import memguard, tamper
        for owner, label in ((module, __name__), (KBWorker, f"{__name__}.KBWorker"), (memguard, memguard.__name__),
                             (memguard.MemoryGuard, f"{memguard.__name__}.MemoryGuard"), (tamper, tamper.__name__)):
            for name, original in list(vars(owner).items()):
                guards.append((owner, name, original, f"{label}.{name}", "harness patch"))
        # torch's functions the reference calls: a slower one slows the baseline, not the candidate
        seen = {(id(owner), name) for owner, name, *_ in guards}
        self.surface_labels = set()
        for owner, name, label, _ in tamper.surface():
            if (id(owner), name) not in seen:
                guards.append((owner, name, _raw_attr(owner, name), label, "harness patch"))
                self.surface_labels.add(label)
        self.hooks0 = tamper.global_hooks()
        return guards

    def _tampered(self, when) -> tuple[Verdict, str] | None:
        """(key, detail) when a guarded attribute was replaced (each is put back), or a global module hook or torch
        mode was installed, since the guards were captured."""
        patched = self._patched()
        if patched:
            key = "timer patch" if any(k == "timer patch" for k, _ in patched) else "harness patch"
            names = [n for _, n in patched]
            why = ("; torch's own functions, which the reference and the baselines call in this process (a slower "
                   "one inflates the speedup)") if any(n in self.surface_labels for n in names) else ""
            return Verdict(key), f"{', '.join(names)} replaced {when}{why}"
        hooks = global_hooks()
        added = [f"{k} = {v} (was {self.hooks0.get(k)})" for k, v in hooks.items() if v != self.hooks0.get(k)]
        if added:
            return Verdict.HARNESS_PATCH, (f"{', '.join(added)} {when}: a global module hook or torch mode runs "
                                           f"inside every reference call")
        return None

    def _patched(self) -> list[tuple[str, str]]:
        """(verdict key, name) of every guarded attribute that changed; each is put back."""
        out = []
        for owner, name, original, label, key in self.guards:
            if _raw_attr(owner, name) is not original:
                out.append((key, label))
                try:
                    setattr(owner, name, original)
                except (AttributeError, TypeError):
                    pass
        return out

    def _precision(self) -> dict:
        return self.state.flags()

    def _persisting_l2(self) -> int | None:
        """The current context's persisting-L2 set-aside in bytes (driver API), or None where it cannot be read."""
        return self.state.persisting_l2()

    # -- watching the candidate's own code -------------------------------------------------------------------
    def _is_library(self, filename: str) -> bool:
        return filename.startswith("<frozen") or os.path.realpath(filename).startswith(self.library)

    def _is_helper(self, filename: str) -> bool:
        return (os.path.basename(filename) in HELPER_FILES or any(d in filename for d in HELPER_DIRS)) \
            and self._is_library(filename)

    def _audit(self, event, args):
        if not self.armed or self.in_hook:
            return
        if event in THREAD_EVENTS:
            key = "thread"
        elif event in FRAME_EVENTS or (event == "object.__getattr__" and len(args) > 1 and args[1] in FRAME_ATTRS):
            key = "introspection"
        else:
            return
        self.in_hook = True
        try:
            frame = sys._getframe(1)
            while frame is not None and self._is_helper(frame.f_code.co_filename):
                frame = frame.f_back
            if frame is not None and not self._is_library(frame.f_code.co_filename):
                what = f"{args[1]}" if event == "object.__getattr__" else event
                where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
                self.hits.append((key, f"{what} at {where}"))
        finally:
            self.in_hook = False

    def _trace_call(self, frame, event, arg):
        if frame.f_code.co_filename == self.cand_file:
            return self._trace_local
        return None

    def _trace_local(self, frame, event, arg):
        if event == "exception" and not issubclass(arg[0], (StopIteration, StopAsyncIteration, GeneratorExit)):
            self.caught.append(f"{arg[0].__name__} at line {frame.f_lineno}")
        return self._trace_local

    def _watch(self):
        """(threads, hits) before a candidate runs; arms the audit hook."""
        self.hits.clear()
        before = set(self._current_frames())
        self.armed = True
        return before

    def _unwatch(self, before, phase):
        """Disarm, then every process-level check; a finding is fatal (the worker is no longer trustworthy)."""
        self.armed = False
        tampered = self._tampered(f"during {phase}")  # first: puts everything back, the pipe to the parent included
        # Python 3.12+: the audit event names the code that started the thread (library code's own are fine);
        # before that, any Python thread alive now that was not before the call
        new = set() if AUDITED_THREADS else set(self._current_frames()) - before
        started = [w for k, w in self.hits if k == "thread"]
        if new or started:
            names = sorted({getattr(threading._active.get(i), "name", "raw thread") for i in new})
            what = "; ".join(started) or ", ".join(names)
            raise Fatal(Verdict.THREAD, f"the candidate started a thread during {phase} ({what}); work off the calling "
                        f"thread escapes the timer")
        if tampered:
            raise Fatal(*tampered)
        now = self._precision()
        changed = [f"{k} = {now.get(k)!r} (was {v!r})" for k, v in self.precision0.items() if now.get(k) != v]
        if changed:
            raise Fatal(Verdict.PRECISION, f"the candidate changed {', '.join(changed)} during {phase}")
        l2 = self._persisting_l2()
        if l2 is not None and self.l2_0 is not None and l2 != self.l2_0:
            raise Fatal(Verdict.PERSISTING_L2, f"the candidate set aside {l2} bytes of L2 for persisting accesses "
                        f"during {phase}")
        seen = [w for k, w in self.hits if k == "introspection"]
        if seen:
            raise Fatal(Verdict.INTROSPECTION, f"the candidate's code used {'; '.join(dict.fromkeys(seen))} during {phase}")

    def _cand_call(self, cand, inputs, phase, trace=False, guard=None, sync=True):
        """One call of the candidate, watched; exceptions become `Rejected(Verdict.EXCEPTION, "...")` (or fatal when the
        CUDA context broke). `guard`: None, "poison" or "oob" (a MemoryGuard around the call)."""
        oob, guarded = None, False
        if guard and self.guard is not None:
            try:
                self.guard.arm(self._arena, check=guard == "oob")
                guarded = True
                if self.guard.note and self.guard.note not in self.notes:
                    self.notes.append(self.guard.note)
            except Exception as exc:  # the harness's problem, not the candidate's: go on without the guard
                self._drop_guard("arm", exc)
        self.caught.clear()
        old = self._gettrace() if trace else None
        if trace:
            self._settrace(self._trace_call)
        before = self._watch()
        error = None
        try:
            out = self._call(cand, inputs)
            if sync:
                self.sync()
        except Exception as exc:
            error = exc
        finally:
            self.armed = False
            if trace:
                self._settrace(old)
        if guarded:
            try:
                oob = self.guard.disarm()
            except Exception as exc:
                self._probe_context(error or exc)  # a context the candidate broke is its crash
                self._drop_guard("disarm", exc)
        self._unwatch(before, phase)
        if error is not None:
            self._probe_context(error)
            raise Rejected(Verdict.EXCEPTION, f"{_short(error)}") from None
        if oob:
            raise Rejected(Verdict.OUT_OF_BOUNDS, oob.split(": ", 1)[-1])
        if self.caught:
            raise Rejected(Verdict.REFERENCE_FALLBACK, f"{self.caught[0]} passed through the candidate's code and the call "
                           f"still returned (try/except around its kernel)")
        return out

    def _drop_guard(self, what, exc):
        self.notes.append(f"memory guard off ({what} failed: {_short(exc)}): no poison, no out-of-bounds check")
        self.guard = None

    def _probe_context(self, exc):
        """After an exception on CUDA: a sticky error (illegal address, launch failure) ends this worker."""
        if self.cuda and not context_usable(self.torch, self.device, self.sync):
            raise Fatal(Verdict.CRASH, _short(exc))

    # -- inputs ------------------------------------------------------------------------------------------------
    def _inputs(self, mod, seed: int, dist: str) -> list:
        """The task's inputs for a seed, made on the evaluation device: get_inputs runs with that device as torch's
        default, so a task's multi-GB random tensors are drawn by the GPU, not by one CPU core (seconds per check
        on level-1 tasks). A get_inputs that cannot run that way is called as it is, on the CPU."""
        import torch
        torch.manual_seed(seed)
        try:
            with torch.device(self.device):
                raw = list(mod.get_inputs())
        except Exception:
            torch.manual_seed(seed)
            raw = list(mod.get_inputs())
        out = []
        gen = torch.Generator(device=self.device).manual_seed(seed ^ 0x5A5A)
        for x in raw:
            if isinstance(x, torch.Tensor):
                x = x.to(self.device)
                if dist == "uniform" and x.is_floating_point() and x.numel() > 1:
                    x = self._uniform_like(x, gen)
            out.append(x)
        return out

    @staticmethod
    def _uniform_like(x, gen):
        """Uniform values over the range the task's own draw spans: another distribution (a candidate tuned to the
        task's cannot tell it from its own by sign or scale), yet inside the task's domain (log of a probability,
        sqrt of a variance), where inputs of the wrong sign would make the reference itself NaN."""
        import torch
        lo, hi = float(x.min()), float(x.max())
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo == hi:
            return x
        u = torch.rand(x.shape, generator=gen, dtype=torch.float32, device=x.device)
        return (u * (hi - lo) + lo).clamp_(lo, hi).to(x.dtype)

    @staticmethod
    def _clone(inputs: list) -> list:
        import torch
        return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]

    def _perturb(self, inputs: list) -> None:
        """Set a few elements (secret positions) of each floating input to the tensor's max or min: in the
        inputs' own range, and enough to change a max/min reduction."""
        import torch
        for x in inputs:
            if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1 and x.dim() > 0:
                hi, lo = x.max(), x.min()
                for j in range(PERTURBED):
                    x[tuple(self.rng.randrange(n) for n in x.shape)] = hi if j % 2 == 0 else lo

    @staticmethod
    def _nbytes(tensors) -> int:
        import torch
        return sum(t.numel() * t.element_size() for t in _flatten(tensors) if isinstance(t, torch.Tensor))

    def _vary_batch(self, inputs: list) -> list | None:
        """The inputs with dim 0 cut to about half, when every tensor input shares a dim 0 of at least 2."""
        import torch
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        if not tensors or any(x.dim() == 0 for x in tensors):
            return None
        b = tensors[0].shape[0]
        if b < 2 or any(x.shape[0] != b for x in tensors):
            return None
        nb = b // 2 + 1 if b > 3 else b - 1
        return [x[:nb].contiguous() if isinstance(x, torch.Tensor) else x for x in inputs]

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
        tmod, ref, too_large = self._task(tid, task["task_path"])
        ref_state = ref.state_dict()
        if too_large:
            self._report(tid, baselines, too_large, {}, {})
            return self._after_pair(too_large)
        self.begin(tid, "candidate", "load")
        self.cand_file = str(Path(task["candidate_path"]).resolve())
        # read before any of its code runs; decides the verdict only if every dynamic check passes (those name
        # what the patch did)
        static = static_tampering(Path(self.cand_file).read_text(), Path(task["task_path"]).read_text())
        if self.s.get("extensions_dir"):
            from kernelrl.kernelbench.build import use_extension_dir
            use_extension_dir(self.s["extensions_dir"], self.cand_file)
        before = self._watch()
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
            self._unwatch(before, "load")
            failure = _load_verdict(exc)
            self._report(tid, baselines, failure, {}, {})
            return self._after_pair(failure)
        self._unwatch(before, "load")
        errs = {"max_abs_err": 0.0, "max_rel_err": 0.0}
        try:
            self._check_class(cand, ref)
            self._verify(tid, tmod, ref, cand, errs)
        except Rejected as exc:
            self._report(tid, baselines, exc, errs, {})
            return self._after_pair(exc)
        self._free()
        times, failure, base_reasons = self._time(tid, tmod, ref, cand, baselines, errs)
        failure = failure or static
        self._report(tid, baselines, failure, errs, times, base_reasons)
        return self._after_pair(failure)

    def _task(self, tid, path: str):
        """The task's module, its reference model and its footprint verdict, made once for consecutive pairs of one
        task (a GRPO group, several candidates of a task): the compiled baselines are kept with them
        (`self.baseline_fns`), so torch.compile runs once per task and worker, not once per pair."""
        from kernelrl.kernelbench.tasks import load_module
        key = (Path(path).name, zlib.crc32(Path(path).read_bytes()))  # the same task file, wherever it lies
        self.task_reused = self.task_cache is not None and self.task_cache[0] == key
        if self.task_reused:
            _, tmod, ref, too_large, self.footprint, self.input_bytes = self.task_cache
            return tmod, ref, too_large
        self.task_cache, self.baseline_fns = None, {}  # the last task's, dropped before the next one loads
        self._free()
        tmod = load_module(path)
        init = list(tmod.get_init_inputs())
        self.torch.manual_seed(self.base_seed)
        ref = tmod.Model(*init).to(self.device)
        too_large = self._measure_footprint(tid, tmod, ref)
        self.task_cache = (key, tmod, ref, too_large, self.footprint, self.input_bytes)
        return tmod, ref, too_large

    def _after_pair(self, failure: Rejected | None):
        """Free the pair's memory; after a defence verdict ask for a fresh worker (what a cheat did to this
        process, it may have done in ways no check saw)."""
        self._free()
        return RECYCLE if failure is not None and failure.verdict.category is Category.DEFENCE else None

    def _free(self):
        import gc
        gc.collect()
        if self.cuda:
            self.torch.cuda.empty_cache()

    def _measure_footprint(self, tid, tmod, ref) -> Rejected | None:
        """The task's footprint (one input set and the reference output), from one reference call before any
        candidate code runs; the pair's verdict when the worker's bound on its own memory (a multiple of the
        footprint, plus the reference's own temporaries) does not fit this device."""
        torch = self.torch
        self.footprint = self.input_bytes = 0
        self.begin(tid, "reference", "footprint")
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        try:
            inputs = self._inputs(tmod, self.base_seed, "task")
            out = self._call(ref, inputs)
            self.sync()
        except torch.OutOfMemoryError as exc:
            inputs = out = None
            self._free()
            return Rejected(Verdict.TOO_LARGE, f"the task's own inputs and reference call do not fit this device "
                                               f"({_short(exc)})")
        in_bytes, out_bytes = self._nbytes(inputs), self._nbytes(out)
        self.footprint = in_bytes + out_bytes
        self.input_bytes = in_bytes
        temporaries = 0
        if self.cuda:
            temporaries = max(0, torch.cuda.max_memory_allocated() - base - self.footprint)
        del inputs, out
        self._free()
        if not self.cuda:
            return None
        need = self.s.get("memory_multiple", MEMORY_MULTIPLE) * self.footprint + temporaries
        free, _total = torch.cuda.mem_get_info()
        free += torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        if need > free:
            multiple = self.s.get("memory_multiple", MEMORY_MULTIPLE)
            return Rejected(
                Verdict.TOO_LARGE, f"evaluating it needs about {need / 2**30:.1f} GiB ({multiple:g} x the "
                f"{self.footprint / 2**30:.2f} GiB of one input set and the reference output, plus "
                f"{temporaries / 2**30:.2f} GiB of the reference's temporaries); {free / 2**30:.1f} GiB are free")
        return None

    @staticmethod
    def _check_class(cand, ref):
        for klass in type(cand).__mro__[1:]:
            if klass is type(ref) or klass.__name__ == "Model":
                raise Rejected(Verdict.INHERITS_MODEL, f"ModelNew derives from {klass.__module__}.{klass.__name__} (the "
                               f"reference is one super() call away)")

    def _report(self, tid, baselines, failure: Rejected | None, errs, times, base_reasons=None):
        self.begin(tid, None, "report")
        reason, verdict = (str(failure), failure.verdict) if failure is not None else (None, None)
        cand_us = times.get("candidate")
        records = []
        for b in baselines:
            base_us = times.get(b)
            ok = reason is None and cand_us is not None
            records.append(Record(
                "candidate", MODE, verified=ok, reason=reason, verdict=verdict.value if verdict else None,
                time_us_median=cand_us if ok else None, max_rel_err=errs.get("max_rel_err"),
                extra={"task_reused": self.task_reused, **({"notes": list(self.notes)} if self.notes else {})},
                baseline=b,
                candidate_us=cand_us if ok else None, baseline_us=base_us,
                speedup=base_us / cand_us if ok and base_us and cand_us else None,
                max_abs_err=errs.get("max_abs_err"), tolerance=errs.get("tolerance"),
                baseline_reason=(base_reasons or {}).get(b)).to_dict())
        self.send("task", tid, records)

    def _call(self, model, inputs):
        import torch
        with torch.no_grad():
            return model(*inputs)

    def _reference(self, tid, ref, pristine, phase):
        """The reference's output on a clone of the pristine inputs (computed after the candidate's call)."""
        self.begin(tid, "reference", phase)
        ref_in = self._clone(pristine)
        ref_out = self._call(ref, ref_in)
        self.sync()
        return ref_in, ref_out

    def _check(self, tid, ref, cand, pristine, cand_in, phase, prev, errs, guard="poison"):
        """One checked call on `cand_in` (whose values equal `pristine`): the candidate first, then the reference."""
        self._arena = 2 * max(self._nbytes(prev[1]) if prev else 0, self._nbytes(pristine)) + (8 << 20)
        self.begin(tid, "candidate", phase)
        out = self._cand_call(cand, cand_in, phase, trace=True, guard=guard if self.cuda else None)
        ref_in, ref_out = self._reference(tid, ref, pristine, phase)
        self.begin(tid, "candidate", phase)
        self._judge(out, ref_out, cand_in, pristine, ref_in, prev, errs, poisoned=self.cuda and bool(guard))
        return out, ref_out

    def _verify(self, tid, tmod, ref, cand, errs):
        seeds = [self.base_seed + i for i in range(max(1, self.s["n_seeds"]) - 1)] + [self.secret & 0x7FFF_FFFF]
        held = Held(2 * self.footprint)  # outputs live on after their check (up to a bound): the candidate cannot
        # tell checks from timing by whether its last output is still referenced
        # 1. the task's inputs, guarded: unwritten elements and out-of-bounds writes
        pristine = self._inputs(tmod, seeds[0], "task")
        cand_in = self._clone(pristine)
        prev = self._check(tid, ref, cand, pristine, cand_in, "verify:task:0", None, errs, guard="oob")
        held.add(prev)
        # 2. the same tensors refilled in place: caches keyed by pointer or id
        pristine = self._inputs(tmod, seeds[0], "uniform")
        for x, p in zip(cand_in, pristine):
            if hasattr(x, "copy_") and hasattr(p, "shape") and x.shape == p.shape:
                x.copy_(p)
        prev = self._check(tid, ref, cand, pristine, cand_in, "verify:refilled", prev, errs)
        held.add(prev)
        # 3. a near duplicate: caches keyed by a partial fingerprint
        pristine = self._clone(pristine)
        self._perturb(pristine)
        prev = self._check(tid, ref, cand, pristine, self._clone(pristine), "verify:near-duplicate", prev, errs)
        held.add(prev)
        # 4. the other seeds (the last is this run's secret), two distributions each
        for seed in seeds[1:]:
            for dist in ("task", "uniform"):
                phase = f"verify:{dist}:{'secret' if seed == seeds[-1] else seed - self.base_seed}"
                pristine = self._inputs(tmod, seed, dist)
                prev = self._check(tid, ref, cand, pristine, self._clone(pristine), phase, prev, errs)
                held.add(prev)
        # 5. a smaller batch
        held.add(self._check_batch(tid, tmod, ref, cand, errs))
        # 6. stream order (CUDA)
        if self.cuda:
            held.add(self._check_stream_order(tid, tmod, ref, cand))
        del held

    def _check_batch(self, tid, tmod, ref, cand, errs):
        pristine = self._vary_batch(self._inputs(tmod, self.base_seed + 77, "task"))
        if pristine is None:
            return
        batch = pristine[0].shape[0]
        phase = f"verify:batch {batch}"
        try:
            return self._check(tid, ref, cand, pristine, self._clone(pristine), phase, None, errs)
        except (Rejected, Fatal) as exc:
            if isinstance(exc, Fatal):
                raise
            try:
                self._reference(tid, ref, pristine, phase)
            except Exception:
                return  # the reference itself is bound to its shape: nothing to ask of the candidate
            raise Rejected(Verdict.SPECIALISED, f"{exc} (batch {batch} instead of the "
                           f"task's)") from None
        except Exception:
            return  # the reference failed on this batch (the candidate ran first, its verdict is not needed)

    def _check_stream_order(self, tid, tmod, ref, cand):
        import torch
        pristine = self._inputs(tmod, self.base_seed + 99, "task")
        cand_in, staged = self._clone(pristine), self._clone(pristine)
        for x in cand_in:
            if isinstance(x, torch.Tensor) and x.is_floating_point():
                x.fill_(float("nan"))
        self.sync()
        phase = "verify:stream order"
        self.begin(tid, "candidate", phase)
        torch.cuda._sleep(SLEEP_CYCLES)  # the inputs become ready on the caller's stream only after this
        for x, s in zip(cand_in, staged):
            if isinstance(x, torch.Tensor):
                x.copy_(s)
        out = self._cand_call(cand, cand_in, phase, sync=False)
        seen = [o.clone() if isinstance(o, torch.Tensor) else o for o in _flatten(out)]  # on the caller's stream
        self.sync()
        _, ref_out = self._reference(tid, ref, pristine, phase)
        for o, r in zip(seen, _flatten(ref_out)):
            problem = self._mismatch(o, r)
            if problem:
                raise Rejected(Verdict.STREAM_ORDER, f"{problem} when read on the caller's stream right after the call "
                               f"(work on another stream not ordered with the caller's)")
        return out, ref_out

    @staticmethod
    def _mismatch(o, r) -> str | None:
        import torch
        if not isinstance(r, torch.Tensor):
            return None if o == r else "wrong values"
        if not isinstance(o, torch.Tensor) or o.shape != r.shape or o.dtype != r.dtype:
            return "wrong shape or dtype"
        if not (o.is_floating_point() or o.is_complex()):
            return None if torch.equal(o, r) else "wrong values"
        if not compare.all_finite(o) and compare.all_finite(r):
            return "NaN/Inf"
        atol, rtol = _tol(r.dtype)
        if not compare.allclose(o, r, atol, rtol):
            return f"wrong values (max abs error {compare.error_stats(o, r, atol)[0]:.3g})"
        return None

    def _judge(self, out, ref_out, cand_in, pristine, ref_in, prev, errs, poisoned=False):
        import torch
        outs, refs = _flatten(out), _flatten(ref_out)
        if len(outs) != len(refs):
            raise Rejected(Verdict.WRONG_SHAPE, f"{len(outs)} outputs, expected {len(refs)}")
        in_storages = {_storage(x) for x in cand_in if isinstance(x, torch.Tensor)}
        ref_in_storages = {_storage(x) for x in ref_in if isinstance(x, torch.Tensor)}
        for o, r in zip(outs, refs):
            if isinstance(o, torch.Tensor) and type(o) is torch.Tensor and isinstance(r, torch.Tensor) \
                    and _storage(o) in in_storages and _storage(r) not in ref_in_storages:
                raise Rejected(Verdict.RETURNED_INPUT)
        for x, p in zip(cand_in, pristine):
            if isinstance(x, torch.Tensor) and not (x.shape == p.shape and x.dtype == p.dtype and
                                                    compare.same_values(x, p)):
                raise Rejected(Verdict.MODIFIED_INPUTS)
        prev_storages, prev_refs = set(), []
        if prev is not None:
            prev_refs = _flatten(prev[1])
            ref_prev = {_storage(r) for r in prev_refs if isinstance(r, torch.Tensor)}
            prev_storages = {_storage(o) for o in _flatten(prev[0]) if isinstance(o, torch.Tensor)}
            if any(_storage(r) in ref_prev for r in refs if isinstance(r, torch.Tensor)):
                prev_storages -= ref_prev  # the reference itself returns the same tensor every call
        for i, (o, r) in enumerate(zip(outs, refs)):
            if not isinstance(r, torch.Tensor):
                if o != r:
                    raise Rejected(Verdict.WRONG_VALUES)
                continue
            if not isinstance(o, torch.Tensor):
                raise Rejected(Verdict.WRONG_TYPE, f"{type(o).__name__}, expected a tensor")
            if type(o) is not torch.Tensor:
                raise Rejected(Verdict.TENSOR_SUBCLASS, f"{type(o).__name__}")
            if o.shape != r.shape:
                raise Rejected(Verdict.WRONG_SHAPE, f"{tuple(o.shape)}, expected {tuple(r.shape)}")
            if o.dtype != r.dtype:
                raise Rejected(Verdict.WRONG_DTYPE, f"{o.dtype}, expected {r.dtype}")
            if o.device != r.device:
                raise Rejected(Verdict.WRONG_DEVICE, f"{o.device}, expected {r.device}")
            if not (o.is_floating_point() or o.is_complex()):
                if not torch.equal(o, r):
                    raise Rejected(Verdict.WRONG_VALUES)
                continue
            if poisoned and o.is_floating_point() and o.element_size() in (2, 4, 8) and o.numel():
                as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}[o.element_size()]
                unwritten = compare.count_pattern(o, r, as_int)
                if unwritten:
                    raise Rejected(Verdict.UNWRITTEN_OUTPUT, f"{unwritten} of {o.numel()} elements hold the pattern written "
                                   f"to free memory before the call")
            if not compare.all_finite(o):
                raise Rejected(Verdict.NON_FINITE, "" if compare.all_finite(r) else "in the reference too")
            atol, rtol = _tol(r.dtype)
            max_abs, rel = compare.error_stats(o, r, atol) if o.numel() else (0.0, 0.0)
            if o.numel():
                errs["max_abs_err"] = max(errs["max_abs_err"], max_abs)
                if rel >= errs["max_rel_err"]:  # the tolerance beside the error is the one that error is judged by
                    errs["max_rel_err"], errs["tolerance"] = rel, rtol
            if not compare.allclose(o, r, atol, rtol):
                old = prev_refs[i] if i < len(prev_refs) else None
                if isinstance(old, torch.Tensor) and old.shape == o.shape and old.dtype == o.dtype \
                        and compare.allclose(o, old, atol, rtol):
                    raise Rejected(Verdict.STALE_RESULT, "the output is the previous call's answer (cached across calls by "
                                   "pointer, id or a content fingerprint)")
                raise Rejected(Verdict.WRONG_VALUES, f"max abs error {max_abs:.3g} exceeds the {r.dtype} "
                               f"tolerance (atol=rtol={atol:g})")
            if _storage(o) in prev_storages:
                raise Rejected(Verdict.SAME_TENSOR, "the output's storage is the previous call's (a "
                               "preallocated or constant output the next call overwrites)")

    # -- timing ------------------------------------------------------------------------------------------------
    def _baseline_fn(self, name, ref, static_in):
        import torch
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

    def _fresh(self, pool, k) -> list:
        """Call k's inputs: a clone of one input set with a few elements changed (no two calls alike)."""
        xs = self._clone(pool[k % len(pool)])
        self._perturb(xs)
        return xs

    def _untouched(self, tid, when):
        """No candidate code runs beside a baseline's timed calls: a guarded attribute, global hook or torch mode
        changed now was planted by the candidate (a finalizer, a callback) and is its verdict; a baseline is never
        timed beside it."""
        tampered = self._tampered(f"outside the candidate's calls, {when}")
        if tampered:
            self.begin(tid, "candidate", "time")
            raise Fatal(*tampered)

    def _time(self, tid, tmod, ref, cand, baselines, errs):
        from kernelrl.harness.stats import hidden_work, summarize

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


def worker_main(conn, payload: dict):
    """Entry point of the spawned process (the runner protocol of kernelrl.run.protocol)."""
    serve(conn, payload, KBWorker(conn, payload), fatal=(Fatal,))
