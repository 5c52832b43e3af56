"""Slowing the reference instead of speeding up the candidate: what the KernelBench worker guards beyond its own
functions, and the static findings that decide a verdict.

The reference and its baselines are timed in the process that imported the candidate, so a candidate that replaces
a torch function the reference calls (`torch.softmax`, `torch.nn.functional.gelu`, a `torch.Tensor` method, an
`nn.Module` subclass's `forward`, a global `F` an nn module calls through) with a slower wrapper looks faster
without being faster. `surface()` names every such attribute; the worker captures them with its other guards
before any candidate code runs, compares them after every candidate call and around every baseline's timed calls,
and a replaced one is `harness patch` (fatal: a fresh worker takes the next pair). Global module hooks and torch
function modes slow every module or op call the same way without replacing anything: `global_hooks()` counts them.

`static_tampering` turns the static layer's `timer-patch` / `harness-patch` findings (an assignment or `setattr` to
an attribute of torch, time, sys or builtins) into the pair's verdict, so a patch the dynamic checks missed (made
only on a path they never took) still fails the pair. Used only in the worker process (it imports torch)."""

from __future__ import annotations

import gc
import importlib
import sys

import torch
import torch.nn.modules
from torch.nn.modules import module as nn_module

from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.kernelbench.static_checks import scan, task_input_dtype

SURFACE_MODULES = ("torch", "torch.nn.functional", "torch._C._nn", "torch.linalg", "torch.special", "torch.fft")
SURFACE_CLASSES = ("torch.Tensor", "torch.no_grad")
# torch's compiler replaces these on first use (torch._dynamo wraps manual_seed when it loads, its mutation guard
# patches nn.Module.__init__/__setstate__ on the first compile), and no timed reference call runs them.
UNTIMED = frozenset({"manual_seed", "__init__", "__setstate__"})
DATA = (str, bytes, int, float, bool, tuple, list, dict, set, frozenset, type(None))
STATIC_KEYS = {"timer-patch": Verdict.TIMER_PATCH, "harness-patch": Verdict.HARNESS_PATCH}


def _guardable(value, modules: bool = False) -> bool:
    if isinstance(value, DATA):
        return False
    if modules and type(value).__name__ == "module":
        return True  # a module global an nn module calls through (activation.py's F)
    return callable(value) or isinstance(value, (property, classmethod, staticmethod))


def surface() -> list[tuple[object, str, str, bool]]:
    """(owner, name, label, is_class) of every torch attribute a reference's forward may look up at call time."""
    out = []

    def module(obj, label, modules=False):
        for name, value in list(vars(obj).items()):
            if name not in UNTIMED and _guardable(value, modules):
                out.append((obj, name, f"{label}.{name}", False))

    def klass(obj, label, names=None):
        for name in names if names is not None else dir(obj):
            if name in UNTIMED or name in ("__class__", "__dict__", "__doc__", "__weakref__"):
                continue
            value = next((k.__dict__[name] for k in obj.__mro__ if name in k.__dict__), None)
            if value is not None and _guardable(value):
                out.append((obj, name, f"{label}.{name}", True))

    for path in SURFACE_MODULES:
        module(importlib.import_module(path) if path != "torch._C._nn" else torch._C._nn, path)
    for path in SURFACE_CLASSES:
        owner, _, attr = path.rpartition(".")
        klass(getattr(importlib.import_module(owner), attr), path)
    klass(type(torch._C._VariableFunctions), "torch._C._VariableFunctions")  # torch._VF's functions
    for name, mod in list(sys.modules.items()):  # the nn classes' own files (as torch.nn loaded them), globals
        if name.startswith("torch.nn.modules.") and mod is not None:
            module(mod, name, modules=True)
    for name, cls in list(vars(torch.nn).items()):
        if isinstance(cls, type) and issubclass(cls, torch.nn.Module):
            klass(cls, f"torch.nn.{name}", list(vars(cls)))
    return out


def global_hooks() -> dict[str, int]:
    """How many global nn.Module hooks and torch function / dispatch modes are installed (each slows every module
    or op call of the reference without replacing an attribute)."""
    counts = {f"torch.nn.modules.module.{name}": len(getattr(nn_module, name))
              for name in ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_pre_hooks",
                           "_global_backward_hooks", "_global_module_registration_hooks",
                           "_global_parameter_registration_hooks", "_global_buffer_registration_hooks")
              if hasattr(nn_module, name)}
    for name in ("_len_torch_function_stack", "_len_torch_dispatch_stack"):
        fn = getattr(torch._C, name, None)
        if fn is not None:
            counts[f"torch._C.{name}"] = fn()
    # code that runs inside the harness's own work: torch.compile's start and end callbacks (the baselines' compile),
    # the garbage collector's callbacks (the harness collects between phases)
    handler = getattr(sys.modules.get("torch._dynamo.callback"), "callback_handler", None)
    for name in ("start_callbacks", "end_callbacks"):
        if isinstance(getattr(handler, name, None), list):
            counts[f"torch._dynamo.callback.callback_handler.{name}"] = len(getattr(handler, name))
    counts["gc.callbacks"] = len(gc.callbacks)
    return counts


# torch's compiler settings: what the torch.compile baselines compile under (a candidate that sets
# torch._dynamo.config.disable makes them eager, and its speedup over torch.compile a speedup over eager)
COMPILER_CONFIGS = ("torch._dynamo.config", "torch._inductor.config", "torch._functorch.config")
_SETTING = (bool, int, float, str, type(None))


def load_compiler_configs() -> None:
    """Import the compiler's config modules (about 0.8 s, once per worker, before the guards are captured), so
    that their settings are known before any candidate code runs."""
    for name in COMPILER_CONFIGS:
        importlib.import_module(name)


def compiler_settings() -> dict[str, object]:
    """Every plain (bool, number, string, None) compiler setting of the config modules loaded now: name -> value.
    Values, not whether a setting was overridden: torch's own first compile sets some to their defaults again."""
    out: dict[str, object] = {}
    for name in COMPILER_CONFIGS:
        copy = getattr(sys.modules.get(name), "get_config_copy", None)
        if copy is not None:
            out.update((f"{name}.{key}", value) for key, value in copy().items() if isinstance(value, _SETTING))
    return out


def changed_settings(before: dict[str, object], now: dict[str, object]) -> list[str]:
    """The settings known at both times whose value changed."""
    return sorted(k for k in before.keys() & now.keys() if before[k] != now[k] and before[k] == before[k])


def static_tampering(source: str, task_source: str) -> Rejected | None:
    """The verdict of a candidate whose source assigns to a timer or a torch/time/sys/builtins attribute, or None."""
    findings = [f for f in scan(source, task_input_dtype(task_source)) if f.rule in STATIC_KEYS]
    if not findings:
        return None
    key = (STATIC_KEYS["timer-patch"] if any(f.rule == "timer-patch" for f in findings)
           else STATIC_KEYS[findings[0].rule])
    return Rejected(key, f"the source {findings[0].message} (line {findings[0].line}); the reference, the baselines "
                         f"and the timers share the candidate's process, so such a patch is never allowed")
