"""The task's own module as it was loaded, compared after every stretch of candidate code.

The reference and every input set come from the task's module (its `Model`, `get_inputs` and the sizes they read),
which sits in `sys.modules` in the same process as the candidate. A candidate that sets the module's `batch_size`
smaller is timed on its own small inputs; one that wraps `Model.forward` slows the reference and every baseline
built from it (a "speedup" for nothing); and the worker keeps the
task for the next pair, so the next candidate is measured on the changed task too. Every name of the module and of
the classes it defines (their functions' code and defaults included, and containers' contents) is recorded when
the task loads; a difference after candidate code ran is `harness patch`, the values are put back, and the worker
is not trusted further (a fresh one takes the next pair, loading the task anew)."""

from __future__ import annotations

import copy
import types

_MISSING = object()
_SMALL = 10_000  # containers up to this many items are compared by value too (sizes, shape lists)
# created by Python itself on first use, not by a candidate: warnings' registry, class annotations (3.10+)
_VOLATILE = {"__warningregistry__", "__annotations__", "__annotate__", "__static_attributes__",
             "__firstlineno__"}


def _value_copy(value):
    if isinstance(value, (list, dict, set, bytearray)) and len(value) <= _SMALL:
        try:
            return copy.deepcopy(value)
        except Exception:
            return _MISSING
    return _MISSING


def _added_matters(name: str, owner) -> bool:
    """Whether a name added to (or removed from) the task's module or a class of it can change what the task does.
    On a class, every name (a `__call__` added to Model overrides nn.Module's). On the module, not those with a
    leading double underscore: the task's code reads none it did not define (those are compared by identity), and
    torch.compile's dynamo adds such globals to the module of every function it traces (`__compiled_fn_1_...`,
    `__resume_at_...`, `__import_...`, `__builtins_dict___0`) when the harness prepares the compiled baselines."""
    return isinstance(owner, type) or not name.startswith("__")


class TaskSnapshot:
    """The task module's names and its classes' attributes, by identity (and by value for small containers), the
    module's type and each class's type and bases (a swapped `__class__` or `__bases__` changes lookups without
    changing any name)."""

    def __init__(self, module: types.ModuleType):
        self.types: list[tuple[object, str, object, object]] = [(module, "task module", type(module), None)]
        self.owners: list[tuple[object, str, frozenset]] = []
        self.entries: list[tuple[object, str, object, object, str]] = []
        self.code: list[tuple[types.FunctionType, tuple, str]] = []
        classes = [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__]
        for c in classes:
            self.types.append((c, f"task class {c.__qualname__}", type(c), c.__bases__))
        for owner, label in [(module, "task module"), *((c, f"task class {c.__qualname__}") for c in classes)]:
            names = {n: v for n, v in vars(owner).items() if n not in _VOLATILE}
            self.owners.append((owner, label, frozenset(n for n in names if _added_matters(n, owner))))
            for name, value in names.items():
                saved = _MISSING if name.startswith("__") else _value_copy(value)  # __builtins__: by identity
                self.entries.append((owner, name, value, saved, f"{label}: {name}"))
                fn = getattr(value, "__func__", value)  # staticmethod, classmethod
                if isinstance(fn, types.FunctionType):
                    self.code.append((fn, _code_of(fn), f"{label}: {name}"))

    def changed(self) -> list[str]:
        """What differs from the snapshot, one phrase each; replaced values and code are put back."""
        out = []
        for owner, label, kind, bases in self.types:
            if type(owner) is not kind:
                out.append(f"{label}: its type replaced")
                _put_back(owner, "__class__", kind)
            if bases is not None and isinstance(owner, type) and owner.__bases__ is not bases:  # a class's entry
                out.append(f"{label}: its base classes replaced")
                _put_back(owner, "__bases__", bases)
        for owner, label, names in self.owners:
            now = frozenset(n for n in vars(owner) if n not in _VOLATILE and _added_matters(n, owner))
            if now != names:
                out.append(f"{label}: names added or removed ({', '.join(sorted(now ^ names))[:200]})")
        for owner, name, value, saved, label in self.entries:
            current = vars(owner).get(name, _MISSING)
            if current is not value:
                out.append(f"{label} replaced")
                _put_back(owner, name, value)
            elif saved is not _MISSING and not _equal(saved, current):
                out.append(f"{label} changed in place")
                _put_back(owner, name, copy.deepcopy(saved))
        for fn, code, label in self.code:
            if any(a is not b for a, b in zip(_code_of(fn), code)):
                out.append(f"{label}: its code or defaults replaced")
                fn.__code__, fn.__defaults__, fn.__kwdefaults__ = code
        return out


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # contents that do not compare to one truth value (tensors): identity was checked
        return True


def _code_of(fn: types.FunctionType) -> tuple:
    return fn.__code__, fn.__defaults__, fn.__kwdefaults__


def _put_back(owner, name, value) -> None:
    try:
        setattr(owner, name, value)
    except (AttributeError, TypeError):
        pass
