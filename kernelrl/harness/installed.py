"""What is installed on the machine, as against what a candidate brought: the two readings the workers need.

- `library_prefixes`: where the installed Python libraries' files are (the standard library, site-packages,
  torch). Code registered from there is not a candidate's (the dispatcher guard, the operator rule of
  kernelbench/pair_residue.py).
- `installed_places`: where a shared library or a module may come from without being a pair's: those prefixes as
  Python reports them, the worker's PYTHONPATH, the system's library folders and the compilers' content-addressed
  caches (kernelbench/pair_residue.py: what a pair leaves in its worker)."""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig

import torch

SYSTEM_LIBRARY_DIRS = ("/usr", "/lib", "/lib64")
CACHE_VARIABLES = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH")  # content-addressed


def library_prefixes() -> tuple[str, ...]:
    """Where the installed libraries' files are (the standard library, site-packages, torch): their code is not a
    candidate's."""
    paths = sysconfig.get_paths()
    prefixes = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}
    prefixes.add(os.path.dirname(torch.__file__))
    return tuple(sorted(os.path.realpath(p) + os.sep for p in prefixes)) + ("<frozen",)


@functools.cache
def installed_places() -> list[str]:
    """Where a library or module may come from without being a pair's: Python's prefixes and site-packages, the
    worker's PYTHONPATH, the system's library folders, the compilers' content-addressed caches. Read once, at the
    first pair's start, before any candidate code (which could add to PYTHONPATH)."""
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages(), site.getusersitepackages(),
              *os.environ.get("PYTHONPATH", "").split(os.pathsep), *SYSTEM_LIBRARY_DIRS,
              *(os.environ[v] for v in CACHE_VARIABLES if os.environ.get(v))}
    return sorted(os.path.realpath(p) for p in places if p)
