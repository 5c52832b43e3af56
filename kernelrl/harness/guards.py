"""What a candidate that runs inside the evaluator's process may not replace, and how it is seen: attributes captured
before any candidate code runs (`Snapshot`), compared after its load and after every stretch of its code, each
replaced one put back and named. KernelBench candidates are Python in the worker (kernelrl/kernelbench/watch.py
adds torch's and the task's surfaces); HGEMM candidates are native libraries, which can run Python too (a
constructor calling the Python C API at load, or a kernel entry point taking the GIL), so the HGEMM worker keeps
the same watch over the evaluator and the timers (kernelrl/run/worker.py)."""

from __future__ import annotations

import ast
import enum
import functools
import importlib
import sys
import types

# The timers and synchronisation every workload's timing goes through (verdict key "timer patch").
TIMING_SURFACE = (
    ("time", ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns", "process_time",
              "sleep"), "timer patch"),
    ("torch.cuda", ("synchronize", "Event", "Stream", "ExternalStream", "current_stream", "default_stream",
                    "stream", "set_stream", "_sleep", "elapsed_time"), "timer patch"),
    ("torch.cuda.Event", ("record", "elapsed_time", "synchronize", "query", "wait"), "timer patch"),
    ("torch.cuda.Stream", ("synchronize", "wait_stream", "wait_event", "record_event", "query"), "timer patch"),
    ("torch._C", ("_cuda_synchronize",), "timer patch"),
)


def _resolve(path: str):
    """The object at a dotted path (modules imported as needed), or None."""
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

# Values harness code never rebinds once its modules are loaded: functions, classes, modules, descriptors and
# immutable constants (a tolerance, a fraction of checked calls). Not None, containers or other objects: lazily set
# globals and caches, which the evaluator itself may rebind while it runs.
_IMMUTABLE = (int, float, complex, str, bytes, tuple, frozenset, enum.Enum, classmethod, staticmethod, property)


def _fixed(value) -> bool:
    return isinstance(value, _IMMUTABLE) or callable(value)


# Standard-library modules of pure computation the evaluator calls at judge and timing time: their functions (and
# the classes the evaluator takes from them) are guarded like its own. Not those whose globals a process sets while it
# runs (tempfile.tempdir, sys, os, threading, warnings).
PURE_STDLIB = ("math", "statistics", "random", "copy", "itertools", "functools", "operator", "zlib", "json", "weakref",
               "collections", "heapq", "bisect")


@functools.cache
def _rebound_globals(path: str) -> frozenset[str]:
    """Names a module's own code rebinds (`global` statements): its lazily set state, never guarded."""
    try:
        tree = ast.parse(open(path).read())
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    return frozenset(n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names)


def evaluator_guards(skip: tuple[str, ...] = ()) -> list[tuple]:
    """(owner, name, value, label) for what the judge and the timing look up at call time in every kernelrl module
    loaded now: each module's fixed globals (but those of `skip`, guarded whole elsewhere) and the fixed attributes
    of the classes it defines. A candidate runs in this process and can import the evaluator:
    `kernelrl.harness.compare.closeness` replaced by one that finds every output exact would otherwise make zeros
    correct (the corpus's patches_kernelrl_judge)."""
    out: list[tuple] = []
    classes: dict[int, type] = {}
    for path, module in sorted((n, m) for n, m in list(sys.modules.items())
                               if (n == "kernelrl" or n.startswith("kernelrl.")) and m is not None):
        rebound = _rebound_globals(getattr(module, "__file__", None) or "")
        for name, value in list(vars(module).items()):
            if name in rebound or not _fixed(value):
                continue
            if path not in skip:
                out.append((module, name, value, f"{path}.{name}"))
            if isinstance(value, type) and value.__module__ in (path, *PURE_STDLIB):
                classes[id(value)] = value
    for name in PURE_STDLIB:  # what the evaluator's arithmetic calls through (statistics.median, math.isnan)
        if (std := sys.modules.get(name)) is not None:
            out.extend((std, attr, v, f"{name}.{attr}") for attr, v in list(vars(std).items()) if _fixed(v))
    for cls in classes.values():  # the methods of the evaluator's classes and of those it uses (Counter's)
        out.extend((cls, attr, v, f"{cls.__module__}.{cls.__qualname__}.{attr}")
                   for attr, v in list(vars(cls).items()) if _fixed(v))
    return out


def _function(value):
    """The Python function a guarded value runs (itself, or what a classmethod/staticmethod wraps), else None."""
    inner = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
    return inner if isinstance(inner, types.FunctionType) else None


def _internals(function) -> tuple:
    """What a function runs besides its identity: its code, defaults and the callables its closure holds. Each is
    writable in place (`f.__code__ = other.__code__`, `f.__kwdefaults__ = {...}`, `cell.cell_contents = g`) while
    the function object, all an identity guard compares, stays the same (corpus: rewrites_judge_code,
    rewrites_module_call_code). Closure cells holding data are left out: a closure may keep its own state there."""
    cells = tuple(c.cell_contents if _filled(c) and callable(c.cell_contents) else _MISSING
                  for c in function.__closure__ or ())
    kwdefaults = function.__kwdefaults__
    return (function.__code__, function.__defaults__,
            tuple(kwdefaults.items()) if kwdefaults is not None else None, cells)


def _filled(cell) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:  # an empty cell (a closure variable not yet assigned)
        return False
    return True


def _same(a: tuple, b: tuple) -> bool:
    """Internals compared by identity, element by element (values never by ==: a tensor's or an array's answers)."""
    code_a, defaults_a, kw_a, cells_a = a
    code_b, defaults_b, kw_b, cells_b = b
    return (code_a is code_b and _same_items(defaults_a, defaults_b) and _same_items(cells_a, cells_b)
            and (kw_a is kw_b or (kw_a is not None and kw_b is not None and len(kw_a) == len(kw_b)
                                  and all(ka == kb and va is vb for (ka, va), (kb, vb) in zip(kw_a, kw_b)))))


def _same_items(a, b) -> bool:
    return a is b or (a is not None and b is not None and len(a) == len(b) and all(x is y for x, y in zip(a, b)))


class Snapshot:
    """Attributes as they were when captured: (owner, name, original, label, verdict key) each, and of every
    function among them what it runs (`_internals`)."""

    def __init__(self, entries: list[tuple]):
        self.entries = entries
        self.internals = {id(f): (f, _internals(f), label) for *_, original, label, _ in entries
                          if (f := _function(original)) is not None}

    @classmethod
    def capture(cls, surface=TIMING_SURFACE, evaluator: bool = True) -> "Snapshot":
        """`surface`'s (path, names, key) attributes and, with `evaluator`, every loaded kernelrl module's
        (evaluator_guards, key "harness patch")."""
        entries, seen = [], set()
        for path, names, key in surface:
            owner = _resolve(path)
            for name in names if owner is not None else ():
                original = _raw_attr(owner, name)
                if original is not _MISSING and (id(owner), name) not in seen:
                    seen.add((id(owner), name))
                    entries.append((owner, name, original, f"{path}.{name}", key))
        for owner, name, original, label in (evaluator_guards() if evaluator else ()):
            if (id(owner), name) not in seen:
                seen.add((id(owner), name))
                entries.append((owner, name, original, label, "harness patch"))
        return cls(entries)

    def changed(self) -> list[tuple[str, str]]:
        """(verdict key, label) of every attribute replaced since the capture; each is put back."""
        out = []
        for owner, name, original, label, key in self.entries:
            if _raw_attr(owner, name) is not original:
                out.append((key, label))
                try:
                    setattr(owner, name, original)
                except (AttributeError, TypeError):
                    pass
        return out + [("harness patch", label) for label in self.rewritten()]

    def rewritten(self) -> list[str]:
        """A label for every guarded function whose code, defaults or closure changed in place; each is put back."""
        out = []
        for function, internals, label in self.internals.values():
            if not _same(_internals(function), internals):
                out.append(f"{label} (its code, defaults or closure rewritten in place)")
                _restore(function, internals)
        return out


def _restore(function, internals: tuple) -> None:
    """Put back (the worker ends after such a verdict; what is put back protects only the rest of its checks)."""
    code, defaults, kwdefaults, cells = internals
    try:
        function.__code__, function.__defaults__ = code, defaults
        function.__kwdefaults__ = dict(kwdefaults) if kwdefaults is not None else None
        for cell, value in zip(function.__closure__ or (), cells):
            if value is not _MISSING:
                cell.cell_contents = value
    except (ValueError, TypeError):  # a closure of another size than the code now there expects
        pass


def shadowed_methods(obj) -> list[str]:
    """The names in `obj`'s own dict that hide a callable of its class: set on a worker object, such a name bypasses
    the class's method, which the snapshot watches (a candidate that found the worker through the heap)."""
    cls = type(obj)
    return sorted(name for name in list(vars(obj)) if callable(getattr(cls, name, None)))
