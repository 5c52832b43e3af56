"""The C++ fast path of the tuned library (fastpath.cpp), built once per machine and torch version.

The Python dispatch costs a few microseconds per call (attribute lookups, ctypes argument conversion). The fast path
does the same checks and the launch in one C++ call; the Python runtime still decides every shape once and registers
the plan (function pointer, workspace, alignment) here. Building needs a C++ compiler and ninja (torch's extension
builder), about 50 s the first time a library is loaded on a machine; the result lives in
$KERNELRL_CACHE/torch_extensions. Where it cannot be built or loaded, the library says so once and keeps the Python
path. KERNELRL_FASTPATH=0 turns it off."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from pathlib import Path

import torch

from kernelrl.build.builder import cache_root

SOURCE = Path(__file__).with_name("fastpath.cpp")
KERNEL, LT, TORCH = 0, 1, 2  # plan kinds, as in fastpath.cpp
_lock = threading.Lock()
_module = None
_failed: str | None = None


def enabled() -> bool:
    return os.environ.get("KERNELRL_FASTPATH", "1").strip().lower() not in ("0", "false", "no", "off")


def build_name() -> str:
    """The extension's name: one per torch version and source text, so neither a torch upgrade nor an edit of the
    source reuses a stale build."""
    digest = hashlib.sha256(SOURCE.read_bytes() + torch.__version__.encode()).hexdigest()[:12]
    return f"kernelrl_fastpath_{digest}"


def load(say=None):
    """The compiled module, or None (why: `failure()`). Built on the first call in a process tree; later calls and
    later processes load the cached build."""
    global _module, _failed
    if _module is not None or _failed is not None or not enabled():
        return _module
    with _lock:
        if _module is None and _failed is None:
            try:
                _module = _build(say)
            except Exception as exc:  # no compiler, no ninja, an ABI mismatch: the Python path still works
                last = str(exc).strip().splitlines()[-1:] or [type(exc).__name__]
                _failed = f"{type(exc).__name__}: {last[0]}"[:300]
                print(f"kernelrl: the C++ dispatch fast path is unavailable ({_failed}); using the Python path",
                      file=sys.stderr)
    return _module


def failure() -> str | None:
    return _failed


def _build(say):
    # only to build: importing it looks for a CUDA toolkit, and may say so on stderr, where nothing is built
    from torch.utils.cpp_extension import load as load_extension
    name = build_name()
    build_dir = cache_root() / "torch_extensions" / name
    built = build_dir / f"{name}.so"
    if built.is_file():  # built before (its name pins source and torch): import it, no compiler or ninja needed
        spec = importlib.util.spec_from_file_location(name, built)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    build_dir.mkdir(parents=True, exist_ok=True)
    if say is not None:
        say("building the C++ dispatch fast path (once per machine and torch version)")
    return load_extension(name, [str(SOURCE)], build_directory=str(build_dir), extra_cflags=["-O2"], verbose=False)
