"""What a KernelBench candidate may not change in the worker process, and the watch over its own code (the worker's
`WatchMixin`): the guarded attributes (timers, synchronize, the harness's own functions, torch's functions the
reference calls: kernelrl/kernelbench/tamper.py), global module hooks and torch modes, TF32 and reduced-precision
flags, the persisting-L2 set-aside, an audit hook for frame and heap introspection and thread starts, and a trace
for exceptions that pass through the candidate's frames. Every candidate call runs through `_cand_call`; what it
finds is `Fatal` (this worker exits) or a `Rejected` verdict. Runs only in the worker process."""

from __future__ import annotations

import _thread
import copy
import errno
import importlib
import logging
import os
import random
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernelrl.harness.device_state import DeviceState, context_usable
from kernelrl.harness.dispatch_guard import DispatchGuard
from kernelrl.harness.guards import (TIMING_SURFACE, Snapshot, _fixed, _raw_attr, _resolve,
                                     evaluator_guards, shadowed_methods)
from kernelrl.harness.installed import library_prefixes
from kernelrl.harness.rounds import Clocks
from kernelrl.harness.sandbox import written_paths, writes_allowed
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.harness.worker_base import Fatal  # noqa: F401 - the workers' one Fatal, imported from here too
from kernelrl.harness.worker_base import os_children
from kernelrl.kernelbench import memguard, tamper
from kernelrl.kernelbench.call_trace import CallTrace
from kernelrl.kernelbench.code_origin import CodeOrigins, code_names, harness_root
from kernelrl.kernelbench.failed_builds import BUILD_NOTE_EVENT
from kernelrl.kernelbench.tamper import global_hooks

# What the candidate may not replace: (module or class path, attributes, verdict key).
GUARDED = TIMING_SURFACE + (
    ("torch.cuda", ("empty_cache", "memory_snapshot"), "harness patch"),
    ("torch.cuda.memory", ("_snapshot", "_record_memory_history", "memory_snapshot", "empty_cache"), "harness patch"),
    ("torch", ("allclose", "equal", "isfinite", "isnan", "nan_to_num", "no_grad", "compile", "as_tensor", "empty",
               "rand", "randn"), "harness patch"),
    ("torch.Tensor", ("clone", "copy_", "double", "abs", "max", "min", "all", "any", "sum", "isnan", "data_ptr",
                      "untyped_storage", "is_floating_point", "is_complex", "contiguous", "view", "to", "fill_",
                      "item", "__eq__", "__ne__", "__bool__", "__setitem__", "__getitem__"), "harness patch"),
    ("torch.nn.Module", ("__call__", "_call_impl", "to", "state_dict", "load_state_dict"), "harness patch"),
    ("builtins", ("isinstance", "issubclass", "type", "id", "len", "zip", "float", "int", "bool", "max", "min",
                  "sum", "any", "all", "print"), "harness patch"),
    ("os", ("_exit",), "harness patch"),
    ("sys", ("settrace", "gettrace", "_current_frames", "_getframe", "audit"), "harness patch"),
    ("_thread", ("start_new_thread",), "harness patch"),  # audit_thread_starts' wrappers before Python 3.12
    # what torch.compile consults on every call (is_exporting: True returns the model uncompiled, so the torch.compile
    # baselines would run eager)
    ("torch.compiler", ("is_exporting", "is_compiling", "is_dynamo_compiling", "disable", "reset", "compile"),
     "harness patch"),
    ("torch._dynamo", ("optimize", "disable", "reset", "run", "skip", "list_backends", "is_compiling"),
     "harness patch"),
    ("threading", ("_start_new_thread",), "harness patch"),
    ("multiprocessing.connection._ConnectionBase", ("send", "send_bytes", "_send_bytes"), "harness patch"),
    ("multiprocessing.connection.Connection", ("_send", "_send_bytes"), "harness patch"),
    ("kernelrl.harness.stats", ("summarize", "hidden_work", "percentile"), "harness patch"),
    ("kernelrl.harness.tolerance", ("output_tolerance",), "harness patch"),
    ("kernelrl.harness.compare", ("error_stats", "allclose", "all_finite", "same_values", "count_pattern", "_chunks"),
     "harness patch"),
    ("kernelrl.harness.device_state.DeviceState", ("snapshot", "flags", "persisting_l2", "restore"), "harness patch"),
    ("kernelrl.harness.device_state", ("context_usable",), "harness patch"),
    ("kernelrl.run.protocol", ("serve",), "harness patch"),
    ("kernelrl.harness.sandbox", ("written_paths", "writes_allowed"), "harness patch"),
    ("kernelrl.kernelbench.watch", ("written_paths", "writes_allowed"), "harness patch"),
    ("kernelrl.kernelbench.task_guard.TaskSnapshot", ("changed",), "harness patch"),
    ("kernelrl.kernelbench.trivial.OutputProbe", ("rule", "passing"), "harness patch"),
)
# Classes whose whole surface (each class of their MRO but builtins, every fixed attribute) a candidate may not
# replace: the profiler the kernel census reads (kernelbench/census.py): events() filtered of the reference's kernels
# would let PyTorch's own computation pass as the candidate's kernels.
GUARDED_CLASSES = ("torch.profiler.profile", "torch.autograd.profiler_util.EventList",
                   "torch.autograd.profiler_util.FunctionEvent")
# Frozen: the guards compare these names by identity, and a set or a list could be emptied in place
FRAME_EVENTS = frozenset({"sys._getframe", "sys._getframemodulename", "sys._current_frames", "gc.get_objects",
                          "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile"})
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
THREAD_EVENTS = frozenset({"_thread.start_new_thread", "_thread.start_joinable_thread"})
# A process started from the candidate's code and still alive after its stretch works outside the timed calls (a
# helper's review, 2026-12-07: busy children stopped during the candidate's calls and let run during the
# baselines' were accepted; corpus: busy_child_processes)
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.system", "os.exec",
                            "os.spawn"})
CODE_EVENTS = frozenset({"compile", "code.__new__", "marshal.loads"})  # code made at run time (its file name a claim)
# library helpers the stack walk looks through to the code that called them
# (bdb and pdb hand their caller the frames of a traceback and every frame above them: a helper's review,
# 2026-12-07, found the worker that way; corpus: forges_result_through_bdb)
HELPER_FILES = ("inspect.py", "traceback.py", "threading.py", "subprocess.py", "os.py", "bdb.py", "pdb.py",
                "trace.py", "doctest.py", "profile.py", "dis.py")
# the import system, looked through where code is made: a module the candidate writes and imports is its code
# (a helper's review, 2026-12-07: a try/except fallback kept in such a module escaped the trace; corpus:
# fallback_in_imported_module)
IMPORT_FILES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
HELPER_DIRS = (os.sep + "concurrent" + os.sep, os.sep + "multiprocessing" + os.sep,
               os.sep + "ctypes" + os.sep)  # ctypes.string_at is a Python wrapper around the audited read
# library functions that only hand their caller its own frame (not helpers as a whole: logging's own use of
# currentframe, to name a log line's caller, is not the candidate's): the stack walk looks through them, or
# logging.currentframe() gave a candidate its frame, and f_back and f_locals, which no audit event covers, the
# worker's (corpus: fallback_clears_trace_via_logging). torch's TorchScript name resolver walks `frames_up` frames
# past its caller and answers any name from that frame's locals: `self` there was the worker (a helper's review,
# 2026-12-07: the worker's own tagged sender forged a 50x result; corpus: forges_result_through_jit_frames)
FRAME_GETTERS = frozenset(code for f in (getattr(logging, "currentframe", None),
                                         getattr(importlib.import_module("torch._jit_internal"),
                                                 "createResolutionCallbackFromFrame", None))
                          if (code := getattr(f, "__code__", None)) is not None)
# ctypes' audited reads of raw memory (an object's bytes at an address): a scan of the heap for the worker object
# (a helper's review, 2026-12-07; corpus: reads_worker_through_ctypes). Unaudited routes remain (ctypes.memmove
# into a tensor, a pointer indexed past its object): a candidate in this process can read what this process holds.
MEMORY_EVENTS = frozenset({"ctypes.string_at", "ctypes.wstring_at", "ctypes.cdata"})
AUDITED_THREADS = sys.version_info >= (3, 12)  # thread starts raise audit events from Python 3.12 on


def _process_memory(path) -> bool:
    """/proc/<pid>/mem (or /proc/self/mem, any thread's): a process's memory read as a file."""
    try:
        parts = os.fsdecode(path).split("/")
    except TypeError:  # a file descriptor
        return False
    return len(parts) >= 4 and parts[:2] == ["", "proc"] and parts[-1] == "mem"


def audit_thread_starts() -> bool:
    """Before Python 3.12 a thread start raises no audit event: make threading's and _thread's start function raise
    the one 3.12 raises, so the watch names the code that started each thread (a candidate's own thread, or torch
    compiling a candidate's torch.compile, which is library code) instead of blaming every new thread on the
    candidate. Called once, before the guards are captured (which then guard the wrappers). True: thread starts are
    audited."""
    if AUDITED_THREADS:
        return True
    original = _thread.start_new_thread

    def start_new_thread(function, args, kwargs=None):
        sys.audit("_thread.start_new_thread", function, args, kwargs)
        return original(function, args, kwargs) if kwargs is not None else original(function, args)

    _thread.start_new_thread = start_new_thread
    threading._start_new_thread = start_new_thread  # type: ignore[attr-defined]  # what Thread.start calls
    return True


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


# The worker's own state that nothing rebinds once it has started: compared by identity after every stretch of
# candidate code (`_instance_changes`). The worker object was reachable without an audited call (sys.gettrace()
# during a traced call returned a bound method of it, and so did a closure of its ninja-build wrapper: both closed,
# call_trace.py and failed_builds.note_by_audit), and code in its process may find another route; an attribute set
# on it shadows the class's, which the guards read: replaced clocks ran the candidate's timer at a
# tenth of its speed (19x: benchmarks/results/cpu/inprocess_cheats/), a replaced `_judge` found zeros correct (a
# helper's review, 2026-12-07; corpus: replaces_worker_clock, replaces_worker_judge).
INSTANCE_FIXED = ("torch", "device", "cuda", "s", "secret", "rng", "_clock", "_cuda_sync", "_Event", "_event_record",
                  "_event_elapsed", "_current_frames", "_manual_seed", "_settrace", "_gettrace", "clocks", "state",
                  "threads_audited", "guards", "guard_snapshot", "surface_labels", "hooks0", "compiler0",
                  "precision0", "switches0", "l2_0", "library", "origins", "trace", "dispatch", "launch_dir",
                  "pair_dir", "hits", "known_failures", "conn", "_channel")

# The worker's own modules: every global of each is guarded like the KBWorker class's attributes.
HARNESS_MODULES = ("kernelrl.kernelbench.worker_process", "kernelrl.kernelbench.watch", "kernelrl.kernelbench.inputs",
                   "kernelrl.kernelbench.judge", "kernelrl.kernelbench.timing", "kernelrl.kernelbench.pairs",
                   "kernelrl.kernelbench.memory_plan", "kernelrl.kernelbench.trivial",
                   "kernelrl.kernelbench.task_guard", "kernelrl.kernelbench.reference_probe",
                   "kernelrl.kernelbench.memory_report")


class WatchMixin:
    """KBWorker's guards and watch (attributes it sets: kernelrl/kernelbench/worker_process.py)."""

    if TYPE_CHECKING:  # set by KBWorker.start() (declared for the type checker only: a class attribute, even an
        # annotation, would be one more name the guards watch)
        guards: list[tuple]
        guard_snapshot: Snapshot
        instance0: tuple[dict, dict]
        snapshot0: tuple[tuple, tuple]
        rng: random.Random
        clocks: Clocks
        children_at_watch: set[int]
        s: dict
        state: DeviceState
        library: tuple[str, ...]
        origins: CodeOrigins
        trace: CallTrace
        hits: list[tuple[str, str]]
        dispatch: DispatchGuard
        threads_audited: bool
        begin: Callable[..., None]
        switches0: dict
        switches_at_watch: dict | None
        pair_notes: list[str]

    # -- what a candidate may not change ---------------------------------------------------------------------
    def _capture_guards(self) -> list[tuple]:
        guards = Snapshot.capture(GUARDED, evaluator=False).entries
        for path in HARNESS_MODULES:
            module = importlib.import_module(path)  # all loaded at start-up, before any candidate code
            for name, original in list(vars(module).items()):
                guards.append((module, name, original, f"{path}.{name}", "harness patch"))
        # the worker's class: its own attributes and its mixins', as looked up on it (a patch on either is seen)
        cls = type(self)
        label = f"{cls.__module__}.{cls.__qualname__}"
        for name in dict.fromkeys(n for k in cls.__mro__ if k is not object for n in vars(k)):
            guards.append((cls, name, _raw_attr(cls, name), f"{label}.{name}", "harness patch"))
        for holder, label in ((memguard, memguard.__name__), (memguard.MemoryGuard, f"{memguard.__name__}.MemoryGuard"),
                              (tamper, tamper.__name__)):
            for name, original in list(vars(holder).items()):
                guards.append((holder, name, original, f"{label}.{name}", "harness patch"))
        seen = {(id(owner), name) for owner, name, *_ in guards}
        for path in GUARDED_CLASSES:  # as looked up on the class: a patch on it or on a base is seen
            klass = _resolve(path)
            if not isinstance(klass, type):
                continue
            for name in dict.fromkeys(n for k in klass.__mro__ if k.__module__ != "builtins" for n in vars(k)):
                original = _raw_attr(klass, name)
                if _fixed(original) and (id(klass), name) not in seen:
                    seen.add((id(klass), name))
                    guards.append((klass, name, original, f"{path}.{name}", "harness patch"))
        for owner, name, original, label in evaluator_guards(skip=HARNESS_MODULES):  # the rest of the evaluator
            if (id(owner), name) not in seen:
                seen.add((id(owner), name))
                guards.append((owner, name, original, label, "harness patch"))
        # torch's functions the reference calls: a slower one slows the baseline, not the candidate
        self.surface_labels = set()
        for owner, name, label, _ in tamper.surface():
            if (id(owner), name) not in seen:
                guards.append((owner, name, _raw_attr(owner, name), label, "harness patch"))
                self.surface_labels.add(label)
        self.hooks0 = tamper.global_hooks()
        self.compiler0 = tamper.compiler_settings()
        self.guard_snapshot = Snapshot(guards)  # now: what each guarded function runs, before candidate code
        return guards

    def _recapture_after_baselines(self, tid) -> None:
        """Only harness code ran while the baselines were prepared, unless the candidate registered code that runs
        inside it (a compile callback, a finalizer): adopt only what torch's own compiler is known to replace there
        (tamper.UNTIMED: it wraps manual_seed on import and nn.Module.__init__ / __setstate__ on the first compile);
        any other replaced name, compiler setting or torch kernel is the candidate's, as `_untouched`'s are."""
        replaced = [label for owner, name, original, label, _ in self.guards
                    if _raw_attr(owner, name) is not original and name not in tamper.UNTIMED]
        changed = self._instance_changes() + replaced + self.guard_snapshot.rewritten() + \
            tamper.changed_settings(self.compiler0, tamper.compiler_settings()) + self.dispatch.foreign()
        if changed:
            self.begin(tid, "candidate", "time")
            raise Fatal(Verdict.HARNESS_PATCH, f"{', '.join(changed[:4])} changed while the baselines were prepared: "
                                               f"code the candidate registered ran inside the harness's own work")
        self.guards = self._capture_guards()
        self.precision0 = self._precision()
        self._freeze_instance()

    def _freeze_instance(self) -> None:
        """INSTANCE_FIXED as they are now, the settings' contents and the clocks' fields (a frozen dataclass is
        frozen against `=` only: object.__setattr__ rebinds its fields in place), after start and each re-capture."""
        names = vars(self)
        fixed = {n: names[n] for n in INSTANCE_FIXED if n in names}
        fixed.update({f"clocks.{k}": v for k, v in vars(self.clocks).items()})
        self.instance0 = (fixed, copy.deepcopy(self.s))
        # what the guard snapshot holds, emptied in place, would compare nothing (a helper's review: accepted)
        self.snapshot0 = (tuple(self.guard_snapshot.entries), tuple(self.guard_snapshot.internals.items()))

    def _instance_changes(self) -> list[str]:
        """Each of the worker's fixed attributes rebound, each method shadowed by an attribute set on the worker,
        and a change of its settings, since `_freeze_instance`; each is put back."""
        fixed, settings = self.instance0
        names, gone = vars(self), object()
        out = [f"the worker's {n}" for n, v in fixed.items() if "." not in n and names.get(n, gone) is not v]
        names.update({n: v for n, v in fixed.items() if "." not in n})
        clocks = vars(self.clocks)
        for name, value in fixed.items():
            field = name.partition("clocks.")[2]
            if field and clocks.get(field, gone) is not value:
                out.append(f"the worker's {name}")
                object.__setattr__(self.clocks, field, value)
        for name in [n for n in shadowed_methods(self) if n not in fixed]:
            out.append(f"the worker's {name} (set on the worker over its class's method)")
            del names[name]
        if self.s != settings:
            out.append("the worker's settings")
            self.s.clear()
            self.s.update(copy.deepcopy(settings))
        entries, internals = self.snapshot0
        snapshot = self.guard_snapshot
        if len(snapshot.entries) != len(entries) or any(a is not b for a, b in zip(snapshot.entries, entries)) or \
                len(snapshot.internals) != len(internals) or any(snapshot.internals.get(k) is not v
                                                                 for k, v in internals):
            out.append("the worker's guards (emptied or changed in place)")
            snapshot.entries[:] = entries
            snapshot.internals.clear()
            snapshot.internals.update(internals)
        shadowed = sorted(k for k, v in vars(self.rng).items() if callable(v))
        if shadowed:  # methods set on the worker's random generator (which picks the checked calls)
            out.append(f"the worker's rng ({', '.join(shadowed)} set on it)")
            for name in shadowed:
                del vars(self.rng)[name]
        return out

    def _tampered(self, when) -> tuple[Verdict, str] | None:
        """(key, detail) when a guarded attribute was replaced (each is put back), or a global module hook or torch
        mode was installed, since the guards were captured."""
        worker = self._instance_changes()
        if worker:
            return Verdict.HARNESS_PATCH, f"{', '.join(worker[:4])} replaced {when}: the worker judges and times here"
        patched = self._patched()
        if patched:
            key = "timer patch" if any(k == "timer patch" for k, _ in patched) else "harness patch"
            names = [n for _, n in patched]
            why = ("; torch's own functions, which the reference and the baselines call in this process (a slower "
                   "one inflates the speedup)") if any(n in self.surface_labels for n in names) else ""
            return Verdict(key), f"{', '.join(names)} replaced {when}{why}"
        snapshot = getattr(self, "task_snapshot", None)
        task = snapshot.changed() if snapshot is not None else []
        if task:
            return Verdict.HARNESS_PATCH, (f"{'; '.join(task)[:400]} {when}: the reference and every input set come "
                                           f"from the task's module")
        hooks = global_hooks()
        added = [f"{k} = {v} (was {self.hooks0.get(k)})" for k, v in hooks.items() if v != self.hooks0.get(k)]
        if added:
            return Verdict.HARNESS_PATCH, (f"{', '.join(added)} {when}: a global module hook, torch mode or callback "
                                           f"runs inside the reference's calls or the harness's own work")
        moved = tamper.changed_settings(self.compiler0, tamper.compiler_settings())
        if moved:
            return Verdict.HARNESS_PATCH, (f"{', '.join(moved[:4])} changed {when}: the torch.compile baselines "
                                           f"compile under torch's compiler settings, which the candidate may not set")
        dispatch = getattr(self, "dispatch", None)
        foreign = dispatch.foreign(everything=when == "during load") if dispatch is not None else []
        if foreign:
            return Verdict.HARNESS_PATCH, (f"{'; '.join(foreign[:3])} {when}: PyTorch's own operators compute the "
                                           f"reference, the baselines and the checks in this process")
        return None

    def _patched(self) -> list[tuple[str, str]]:
        """(verdict key, name) of every guarded attribute that changed; each is put back."""
        return self.guard_snapshot.changed()

    def _precision(self) -> dict:
        return self.state.flags()

    def _persisting_l2(self) -> int | None:
        """The current context's persisting-L2 set-aside in bytes (driver API), or None where it cannot be read."""
        return self.state.persisting_l2()

    # -- watching the candidate's own code -------------------------------------------------------------------
    def _know_library(self) -> None:
        """Where library code is (before any candidate code), and the harness's own: code from there is known by
        what its files compile to, not by the names code carries (code_origin.py)."""
        self.library = library_prefixes()
        self.origins = CodeOrigins(self.library + (harness_root(),))
        self.trace = CallTrace(self.origins)

    def _is_library(self, code) -> bool:
        """Library or harness code, by its file name and by being what that file compiles to (code_origin.py: a
        name is only a claim)."""
        return self.origins.trusted(code)

    def _is_helper(self, code) -> bool:
        filename = code.co_filename
        return (os.path.basename(filename) in HELPER_FILES or any(d in filename for d in HELPER_DIRS)) \
            and self._is_library(code)

    def _is_import(self, code) -> bool:
        name = code.co_filename
        return (name in IMPORT_FILES or (os.sep + "importlib" + os.sep) in name) and self._is_library(code)

    def _audit(self, event, args):
        if event == BUILD_NOTE_EVENT:  # failed_builds.replaying: a failed build, whoever catches it
            self._build_note(str(args[0]) if args else "")
            return
        if not self.armed or self.in_hook:
            return
        if self.writable and (written := [p for p in written_paths(event, args)
                                           if not writes_allowed(p, self.writable)]):
            self._note_write(event, written)  # whoever's frame opens it: torch.save(model, path) is the candidate's
            # refused here too, so that a Python write fails where the kernel cannot confine the process
            raise PermissionError(errno.EACCES, "the evaluation worker writes only beneath its scratch folder",
                                  written[0])
        if event in CODE_EVENTS:
            self._note_code(event, args)
            return
        if event in THREAD_EVENTS:
            key = "thread"
        elif event in PROCESS_EVENTS:
            key = "process"
        elif event in FRAME_EVENTS or event in MEMORY_EVENTS or (
                event == "object.__getattr__" and len(args) > 1 and args[1] in FRAME_ATTRS) or (
                event == "open" and args and _process_memory(args[0])):
            key = "introspection"
        else:
            return
        self.in_hook = True
        try:
            frame = sys._getframe(1)
            while frame is not None and (self._is_helper(frame.f_code) or frame.f_code in FRAME_GETTERS or (
                    # audit_thread_starts' wrapper
                    frame.f_code.co_filename == __file__ and self._is_library(frame.f_code))):
                frame = frame.f_back
            if frame is not None and not self._is_library(frame.f_code):
                what = f"{args[1]}" if event == "object.__getattr__" else f"open {args[0]}" if event == "open" \
                    else event
                where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
                if self.origins.named_trusted(frame.f_code.co_filename):
                    where += " (code compiled under that file's name: not the file's own)"
                self.hits.append((key, f"{what} at {where}"))
                if key == "introspection":  # refused too: what it asked for (the heap's objects, a frame) could
                    # lead to the findings recorded here, which it would empty before they are read (corpus:
                    # clears_watch_hits); the verdict is the same
                    raise PermissionError(errno.EACCES, f"the evaluation worker refuses {what} from a candidate")
        finally:
            self.in_hook = False

    def _note_code(self, event, args):
        """Code made by the candidate's own code (not by a library on its behalf: dataclasses, namedtuple, torch's
        compilers): a string compiled, a code object built or renamed (`code.replace`), one unmarshalled. The file
        names it carries mark the candidate's code for the exception trace."""
        self.in_hook = True
        try:
            frame = sys._getframe(2)
            while frame is not None and (self._is_helper(frame.f_code) or self._is_import(frame.f_code)):
                frame = frame.f_back
            if frame is None or self._is_library(frame.f_code):
                return
            if event == "marshal.loads":
                names = code_names(args[0]) if args else set()
            else:  # compile: (source, filename); code.__new__: (code, filename, name, ...)
                names = {os.fsdecode(args[1]) if isinstance(args[1], (str, bytes, os.PathLike)) else str(args[1])} \
                    if len(args) > 1 else set()
            self.trace.note_compiled(names)
        finally:
            self.in_hook = False

    def _note_write(self, event, paths):
        self.in_hook = True
        try:
            frame = sys._getframe(2)
            while frame is not None and self._is_library(frame.f_code):
                frame = frame.f_back
            where = f" at {os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" if frame is not None else ""
            self.hits.append(("write", f"{event} {', '.join(paths)}{where}"))
        finally:
            self.in_hook = False

    def _watch(self):
        """(threads, hits) before a candidate runs; arms the audit hook."""
        self.hits.clear()
        before = set(self._current_frames())
        # the switches as this stretch found them: a getter torch resolves lazily (on a first use the harness made)
        # is not a change of the candidate's
        self.switches_at_watch = self.state.switches()
        self.children_at_watch = os_children()
        self.armed = True
        return before

    def _unwatch(self, before, phase, os_threads_before=None):
        """Disarm, then every process-level check; a finding is fatal (the worker is no longer trustworthy).
        With `os_threads_before` (a load), threads still running are `background activity` whatever started
        them, on every Python version; a Python thread that was started and has ended is still `thread`."""
        self.armed = False
        tampered = self._tampered(f"during {phase}")  # first: puts everything back, the pipe to the parent included
        resume = self.current[2]
        self.rephase(f"watch {resume}")  # after _tampered: it restores the pipe that begin() writes to
        if os_threads_before is not None:
            self.check_no_background(os_threads_before, f"the candidate's {phase}")
        # Python 3.12+: the audit event names the code that started the thread (library code's own are fine);
        # before that, any Python thread alive now that was not before the call
        # (`before` None: a baseline's call, where a new thread is torch's own: inductor's timer, say)
        new = set() if self.threads_audited or before is None else set(self._current_frames()) - before
        started = [w for k, w in self.hits if k == "thread"]
        if new or started:
            names = sorted({getattr(threading._active.get(i), "name", "raw thread") for i in new})
            what = "; ".join(started) or ", ".join(names)
            raise Fatal(Verdict.THREAD, f"the candidate started a thread during {phase} ({what}); work off the calling "
                        f"thread escapes the timer")
        spawned = [w for k, w in self.hits if k == "process"]
        alive = os_children() - self.children_at_watch
        if spawned and alive:
            raise Fatal(Verdict.BACKGROUND_ACTIVITY, f"the candidate's code started a process during {phase} "
                        f"({'; '.join(dict.fromkeys(spawned))}) and {len(alive)} still run: work in another process "
                        f"escapes the timer and competes with what is measured; start no processes")
        if tampered:
            raise Fatal(*tampered)
        now = self._precision()
        changed = [f"{k} = {now.get(k)!r} (was {v!r})" for k, v in self.precision0.items() if now.get(k) != v]
        if changed:
            raise Fatal(Verdict.PRECISION, f"the candidate changed {', '.join(changed)} during {phase}")
        self._put_back_switches(phase)
        l2 = self._persisting_l2()
        if l2 is not None and self.l2_0 is not None and l2 != self.l2_0:
            raise Fatal(Verdict.PERSISTING_L2, f"the candidate set aside {l2} bytes of L2 for persisting accesses "
                        f"during {phase}")
        written = [w for k, w in self.hits if k == "write"]
        if written:
            raise Fatal(Verdict.FILE_WRITE, f"the candidate wrote outside the worker's scratch folder during {phase} "
                        f"({'; '.join(dict.fromkeys(written))}); write temporary files under tempfile.gettempdir()")
        seen = [w for k, w in self.hits if k == "introspection"]
        if seen:
            raise Fatal(Verdict.INTROSPECTION,
                        f"the candidate's code used {'; '.join(dict.fromkeys(seen))} during {phase}")
        self.rephase(resume)

    def _put_back_switches(self, phase: str) -> None:
        """torch's kernel-choice switches (cuDNN, oneDNN, the attention kernels, the BLAS library) put back as this
        stretch of candidate code found them (each pair starts from the worker's own: run_task): the reference, the
        baselines and every later pair run under the same ones, whatever a candidate set (turned off, they would
        slow the reference; left on, they would reach the next pair). Said in the notes."""
        before = self.switches_at_watch if self.switches_at_watch is not None else self.switches0
        self.switches_at_watch = None
        moved = self.state.changed(before, self.state.switches())
        if moved:
            self.state.restore_switches(before)
            note = (f"set {', '.join(moved)} during {phase}: put back (the reference, the baselines and every pair "
                    f"run under the worker's torch settings)")
            if note not in self.pair_notes:
                self.pair_notes.append(note)

    def _cand_call(self, cand, inputs, phase, trace=False, guard=None, sync=True):
        """One call of the candidate, watched; exceptions become `Rejected(Verdict.EXCEPTION, "...")` (or fatal when the
        CUDA context broke). `guard`: None, "poison" or "oob" (a MemoryGuard around the call)."""
        oob, guarded = None, False
        if guard and self.guard is not None:
            self.rephase(f"guard {phase}")
            try:
                self.guard.arm(self._arena, check=guard == "oob")
                guarded = True
                if self.guard.note and self.guard.note not in self.notes:
                    self.notes.append(self.guard.note)
            except Exception as exc:  # the harness's problem, not the candidate's: go on without the guard
                self._drop_guard("arm", exc)
            self.rephase(phase)
        self.trace.caught.clear()
        self._seed_call()  # a random task's call and its reference under one seed (worker_process._random_reference)
        old = self._gettrace() if trace else None
        if trace:
            self._settrace(self.trace.call)
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
            self.rephase(f"guard {phase}")
            try:
                oob = self.guard.disarm()
                if self.guard.note and self.guard.note not in self.notes:  # e.g. the comparison ran on the host
                    self.notes.append(self.guard.note)
            except Exception as exc:
                self._probe_context(error or exc)  # a context the candidate broke is its crash
                self._drop_guard("disarm", exc)
        self._unwatch(before, phase)
        if error is not None:
            self._probe_context(error)
            raise Rejected(Verdict.EXCEPTION, f"{_short(error)}") from None
        if oob is not None:
            raise oob
        if self.trace.caught:
            raise Rejected(Verdict.REFERENCE_FALLBACK, f"{self.trace.caught[0]} passed through the candidate's code "
                           f"and the call still returned (try/except around its kernel)")
        return out

    def _drop_guard(self, what, exc):
        self.notes.append(f"memory guard off ({what} failed: {_short(exc)}): no poison, no out-of-bounds check")
        self.guard = None

    def _probe_context(self, exc):
        """After an exception on CUDA: a sticky error (illegal address, launch failure) ends this worker."""
        if self.cuda and not context_usable(self.torch, self.device, self.sync):
            raise Fatal(Verdict.CRASH, f"{_short(exc)} (during {self.current[2]})")  # which check or call broke it

