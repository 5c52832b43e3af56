"""The interpreter's own settings, which every pair starts from as the worker began: a candidate may change any
of them, and the next pair in the worker would run under its change (a lower recursion limit or open-files limit
making an honest candidate fail, warnings turned into errors, a builtin replaced, an import hook answering a later
candidate's import with its own module, a file-mode mask, a signal handler, an interval timer due to fire in a
later pair). Read once before any candidate code, put back at each pair's start; a
hard resource limit lowered cannot be raised again by an unprivileged process, so that pair retires its worker."""

from __future__ import annotations

import builtins
import gc
import os
import resource
import signal
import sys
import warnings
from dataclasses import dataclass

LIMITS = {name: getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")}
TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
# the handlers a candidate may set (SIGKILL and SIGSTOP cannot be caught)
SIGNALS = tuple(s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP))


@dataclass(frozen=True)
class Settings:
    recursion_limit: int
    switch_interval: float
    gc: tuple[bool, tuple[int, ...]]
    warning_filters: tuple
    builtins: dict
    meta_path: tuple
    path_hooks: tuple
    path: tuple
    limits: dict[str, tuple[int, int]]
    umask: int
    handlers: dict
    timers: dict


def _limits() -> dict[str, tuple[int, int]]:
    out = {}
    for name, which in LIMITS.items():
        try:
            out[name] = resource.getrlimit(which)
        except (OSError, ValueError):
            pass
    return out


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it
    os.umask(mask)
    return mask


def _handlers() -> dict:
    out = {}
    for sig in SIGNALS:
        try:
            out[sig] = signal.getsignal(sig)
        except (OSError, ValueError):
            pass
    return out


def read() -> Settings:
    return Settings(sys.getrecursionlimit(), sys.getswitchinterval(), (gc.isenabled(), gc.get_threshold()),
                    tuple(warnings.filters), dict(vars(builtins)), tuple(sys.meta_path), tuple(sys.path_hooks),
                    tuple(sys.path), _limits(), _umask(), _handlers(),
                    {t: signal.getitimer(t) for t in TIMERS})


def restore(base: Settings) -> None:
    """Every setting as in `base` (soft resource limits as far as the hard ones now allow)."""
    sys.setrecursionlimit(base.recursion_limit)
    sys.setswitchinterval(base.switch_interval)
    (gc.enable if base.gc[0] else gc.disable)()
    gc.set_threshold(*base.gc[1])
    if tuple(warnings.filters) != base.warning_filters:
        warnings.filters[:] = list(base.warning_filters)  # type: ignore[index]  # a list at run time
        mutated = getattr(warnings, "_filters_mutated", None) or getattr(warnings, "_filters_mutated_lock_held", None)
        if mutated is not None:
            mutated()  # the C warnings module caches what the filters said
    names = vars(builtins)
    for name in set(names) - set(base.builtins):
        del names[name]
    for name, value in base.builtins.items():
        if names.get(name) is not value:
            names[name] = value
    if (tuple(sys.meta_path), tuple(sys.path_hooks), tuple(sys.path)) != (base.meta_path, base.path_hooks,
                                                                           base.path):
        sys.meta_path[:], sys.path_hooks[:], sys.path[:] = list(base.meta_path), list(base.path_hooks), list(base.path)
        sys.path_importer_cache.clear()  # finders a hook made for a path
    os.umask(base.umask)
    for which, (delay, interval) in base.timers.items():
        if signal.getitimer(which) != (delay, interval):
            signal.setitimer(which, delay, interval)  # a timer a pair set, stopped before it fires in this one
    for sig, handler in base.handlers.items():
        if handler is not None and signal.getsignal(sig) is not handler:
            try:
                signal.signal(sig, handler)
            except (OSError, ValueError):
                pass
    now = _limits()
    for name, (soft, _hard) in base.limits.items():
        if name in now and now[name][0] != soft:
            try:
                resource.setrlimit(LIMITS[name], (soft, now[name][1]))
            except (OSError, ValueError):
                pass  # a hard limit now below it: the pair that lowered it retired its worker (`lowered_limits`)


def lowered_limits(base: Settings) -> list[str]:
    """The hard resource limits now below the worker's own: no later pair could have them back."""
    now = _limits()
    infinite = resource.RLIM_INFINITY
    return [f"lowered the hard limit {name} to {now[name][1]}" for name, (_soft, hard) in base.limits.items()
            if name in now and now[name][1] != hard and (hard == infinite or 0 <= now[name][1] < hard)]
