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


# set on the model by torch.compile when the harness compiles the reference for its baselines (a marker dynamo
# reads; torch 2.13)
_COMPILE_MARKS = frozenset({"_is_torch_compile"})


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
    changing any name); with `reference`, the reference model instance too (`ReferenceSnapshot`)."""

    def __init__(self, module: types.ModuleType, reference=None):
        self.reference = ReferenceSnapshot(reference) if reference is not None else None
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
        if self.reference is not None:
            out += self.reference.changed()
        return out

    def reference_values(self, when: str) -> str | None:
        """The reference's parameters compared with the task's: a verdict's detail when a candidate changed them
        (they are put back; the verdict asks for a fresh worker)."""
        moved = self.reference.values_changed() if self.reference is not None else []
        if not moved:
            return None
        return f"{'; '.join(moved[:3])} {when}: the checks' reference outputs and every baseline come from this model"


class ReferenceSnapshot:
    """The reference model the worker keeps for the task's pairs (the checks' reference outputs and every baseline
    come from it), as the task made it: each module's class, the names on the instance, its parameters, buffers,
    submodules and hooks by identity, its plain settings (`training`, sizes) by value, and each parameter's storage,
    version counter and values.

    Why: the task module's snapshot left the instance out. A candidate that reached it (a helper's review,
    2026-12-07, CPU worker) set a `forward` on it that ran the honest one four times (accepted at 5x, and the honest
    pair after it in the same worker read 6.4x: the worker keeps the task), or one that answered the checks with the
    candidate's own wrong values (accepted, 8x). `changed()` (every stretch of candidate code) is cheap: identities
    and numbers; `values_changed()` copies every parameter (and an eval-mode module's buffers) to the host and
    compares it, after the load, before every reference call and at the pair's end (an in-place write through
    `.data` moves no version counter). Plain tensor attributes are compared by name only: some tasks set theirs in
    every call (level 3's 33_VanillaRNN keeps its hidden state so)."""

    def __init__(self, model):
        self.modules: list[tuple[object, str, type, dict, dict, dict]] = []
        for name, module in model.named_modules():
            names = dict(vars(module))
            tables = {k: dict(v) for k, v in names.items() if isinstance(v, dict)}  # parameters, hooks, ...
            plain = {k: v for k, v in names.items() if isinstance(v, (bool, int, float, str, tuple, type(None)))}
            self.modules.append((module, f"the reference model{'.' + name if name else ''}", type(module), names,
                                 tables, plain))
        self.params = [(f"the reference model's {n}", p, _storage_of(p), p._version,
                        p.detach().to("cpu", copy=True)) for n, p in model.named_parameters()]
        # a module in eval mode computes with its buffers (batch norm's running statistics) and changes none of
        # them: their values are the task's too (in training mode the model's own calls update them)
        self.params += [(f"the reference model's {f'{m}.' if m else ''}{n}", b, _storage_of(b), None,
                         b.detach().to("cpu", copy=True)) for m, module in model.named_modules() if not module.training
                        for n, b in module.named_buffers(recurse=False) if b is not None]
        self.buffers = [(f"the reference model's {n}", b, _storage_of(b)) for n, b in model.named_buffers()]

    def changed(self) -> list[str]:
        """What differs, one phrase each; names set on an instance are removed, replaced entries put back."""
        out = []
        for module, label, kind, names, tables, plain in self.modules:
            if type(module) is not kind:
                out.append(f"{label}: its class replaced")
                _put_back(module, "__class__", kind)
            now = vars(module)
            added = sorted(set(now) - set(names) - _COMPILE_MARKS)
            if added:
                out.append(f"{label}: {', '.join(added)[:200]} set on the instance")
                for name in added:
                    del now[name]
            for name, table in tables.items():
                current = now.get(name, _MISSING)
                if current is not names[name] or current.keys() != table.keys() or any(
                        current[k] is not v for k, v in table.items()):  # by identity: tensors have no one truth
                    out.append(f"{label}: its {name} changed")
                    now[name] = names[name]
                    names[name].clear()
                    names[name].update(table)
            for name, value in plain.items():
                if not _same(now.get(name, _MISSING), value):
                    out.append(f"{label}: {name} changed")
                    now[name] = value
        for label, tensor, storage, version in [(b[0], b[1], b[2], None) for b in self.buffers] + \
                [(p[0], p[1], p[2], p[3]) for p in self.params]:
            if type(tensor) is not storage[-1]:  # a subclass whose __torch_function__ slows every use
                out.append(f"{label}: its class replaced")
                _put_back(tensor, "__class__", storage[-1])
            elif _storage_of(tensor) != storage or (version is not None and tensor._version != version):
                out.append(f"{label} changed ({'written in place' if _storage_of(tensor) == storage else 'replaced'})")
        return out

    def values_changed(self) -> list[str]:
        """The parameters whose values differ from the task's (each is put back)."""
        out = []
        for label, param, _, _, saved in self.params:
            now = param.detach()
            if not (now.shape == saved.shape and now.to("cpu").equal(saved)):
                out.append(f"{label}: its values changed")
                if now.shape == saved.shape:
                    now.copy_(saved)
        return out


def _storage_of(tensor) -> tuple:
    return tensor.data_ptr(), tuple(tensor.shape), tensor.stride(), tensor.dtype, str(tensor.device), type(tensor)


def _same(a, b) -> bool:
    return a is b or (type(a) is type(b) and _equal(a, b))


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
