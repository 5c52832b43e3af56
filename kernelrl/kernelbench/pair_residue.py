"""What a pair leaves in the worker process for the pairs after it, and what is done about each.

One worker judges many pairs, and some state outlives a pair however its checks end:
- libraries: the dynamic loader answers a load with a library already loaded under the same path or the same
  SONAME, whatever the file now holds. A pair that loaded one from anywhere but its own extension folder and the
  installed or content-addressed places (the Python prefixes, the system's library folders, the compilers'
  caches) leaves one a later pair may get in place of its own (another candidate's path, a relative `build/`
  folder that every pair's working directory shares, a SONAME naming a victim's path): its worker retires;
- operators: a namespace or operator registered with the dispatcher stays registered, and the next candidate that
  registers the same one fails (`Only a single TORCH_LIBRARY ...`): the worker retires after a pair that defined
  one from a file outside the installed libraries (a candidate's module, its extension's C++; torch registers
  operators of its own lazily, on a first compile or import, and those stay). An operator defined through
  `torch.library.custom_op` is registered by torch's own file: its definition is the decorated function's file.
  Open: code compiled under a torch file's name (`compile(src, torch.library.__file__, "exec")`) reads as torch's,
  so its operator stays (a later candidate defining the same name fails);
- Python modules imported by name from outside the installed places (`import helper` of a file a candidate wrote,
  an extension module): removed from `sys.modules`, so the next pair's import of that name reads its own file;
- the environment, in Python and in C (`setenv` through ctypes never reaches `os.environ`, yet every child process
  inherits it: a compiler, an LD_PRELOAD): each pair starts from the environment the worker began with, but for the
  variables torch sets for itself once (`TRITON_PTXAS_PATH`, whose setter is cached and is reset here; the CUPTI
  switches a CUDA-graph compile sets)."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

import torch

from kernelrl.harness import process_settings
from kernelrl.harness.installed import installed_places, library_prefixes
from kernelrl.kernelbench.extension_fence import inside, loaded_libraries

_DEFINED_AT = re.compile(r"^debug: registered at (.+?):\d+", re.MULTILINE)
_CUSTOM_OP_FILE = os.path.realpath(torch._library.custom_ops.__file__)  # registers every `custom_op`'s schema

# torch's own variables, each set to one value by torch itself (torch/__init__.py, its profiler)
TORCH_CONSTANTS = {"DISABLE_CUPTI_LAZY_REINIT": "1", "TEARDOWN_CUPTI": "0"}
KEPT_MODULE_PREFIX = "kernelrl_kb_"  # tasks and candidates, each under a unique name (tasks.load_module)


@dataclass
class ProcessState:
    libraries: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)
    operators: set[str] = field(default_factory=set)


def capture() -> ProcessState:
    """The libraries loaded, the modules imported and the operators registered now."""
    installed_places()  # fixed from the first capture on
    return ProcessState(loaded_libraries(), set(sys.modules), set(torch._C._dispatch_get_all_op_names()))


def _definition_file(op: str) -> str | None:
    """The file an operator was defined in: the function `torch.library.custom_op` decorated (torch's own file is
    the one that registers it; a function without Python code is nobody's: "<unknown>"), else the dispatcher's
    record of where the schema was registered. torch holds its custom-op records weakly: one registered by
    `custom_op` whose record is gone is nobody's too."""
    opdef = torch._library.custom_ops.OPDEFS.get(op)
    if opdef is not None:
        code = getattr(getattr(opdef, "_init_fn", None), "__code__", None)
        return code.co_filename if code is not None else "<unknown>"
    where = _DEFINED_AT.search(torch._C._dispatch_dump(op))
    if where is not None and os.path.realpath(where.group(1)) == _CUSTOM_OP_FILE:
        return "<unknown>"
    return where.group(1) if where is not None else None


def _defined_outside(op: str, libraries: tuple[str, ...]) -> bool:
    where = _definition_file(op)
    return where is not None and not os.path.realpath(where).startswith(libraries)


def left_behind(before: ProcessState, own_folder: str | None) -> list[str]:
    """What this pair left that would reach a later pair, each named: the reasons to retire the worker. Removes,
    on the way, the modules it imported by name from outside the installed places."""
    installed = installed_places()
    places = installed + ([os.path.realpath(own_folder)] if own_folder else [])
    reasons = []
    foreign = sorted(p for p in loaded_libraries() - before.libraries if not any(inside(p, d) for d in places))
    if foreign:
        reasons.append(f"loaded {', '.join(foreign[:3])}")
    libraries = library_prefixes()
    registered = sorted(op for op in set(torch._C._dispatch_get_all_op_names()) - before.operators
                        if _defined_outside(op, libraries))
    if registered:
        reasons.append(f"registered operators {', '.join(registered[:3])}")
    for name in set(sys.modules) - before.modules:
        where = getattr(sys.modules.get(name), "__file__", None)
        if where and not name.startswith(KEPT_MODULE_PREFIX) and \
                not any(inside(os.path.realpath(where), d) for d in installed):
            del sys.modules[name]
    return reasons


def restore_environ(base: dict[str, str]) -> None:
    """The environment, in Python and in C, as `base`, but for torch's own once-set variables (kept where they
    hold torch's value; TRITON_PTXAS_PATH dropped with its cached setter reset, so torch sets it again)."""
    keep = {k for k, v in TORCH_CONSTANTS.items() if os.environ.get(k) == v}
    for key in set(os.environ) - set(base) - keep:
        del os.environ[key]
    for key in {k.decode(errors="surrogateescape") for k in process_settings.c_environ()} - set(base) - keep:
        os.unsetenv(key)
    for key, value in base.items():
        os.environ[key] = value  # putenv too, whether or not os.environ already held it (C may differ)
    tasks = sys.modules.get("torch._inductor.runtime.compile_tasks")
    setter = getattr(tasks, "_set_triton_ptxas_path", None)
    if setter is not None and hasattr(setter, "cache_clear"):
        setter.cache_clear()
