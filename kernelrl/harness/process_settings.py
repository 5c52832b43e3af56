"""The interpreter's own settings, which every pair starts from as the worker began: a candidate may change any
of them, and the next pair in the worker would run under its change (a lower recursion limit or open-files limit
making an honest candidate fail, warnings turned into errors, a builtin replaced, an import hook answering a later
candidate's import with its own module, a file-mode mask, a signal handler, an interval timer due to fire in a
later pair). Read once before any candidate code, put back at each pair's start; a
hard resource limit lowered cannot be raised again by an unprivileged process, so that pair retires its worker.

Signal handlers are read twice: as Python knows them (`signal.getsignal`) and as the kernel holds them (libc's
`sigaction`), since a native library (a KernelBench extension, an HGEMM candidate's constructor) installs its own
without Python seeing it. The HGEMM worker compares the process's part (`process_changes`: limits, mask, timers,
handlers, libc's environment) after every candidate's code and makes a change that method's verdict."""

from __future__ import annotations

import builtins
import ctypes
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
# sizeof(struct sigaction) on Linux (x86-64 and aarch64): the handler (8 bytes), glibc's 1024-bit mask of which the
# kernel keeps the first 64 (libc leaves the rest as it finds it), the flags at 136, the restorer
SIGACTION_BYTES = 152
_KEPT = (slice(0, 16), slice(136, 140))  # what the kernel holds: the handler, its 64-bit mask, the flags
SA_RESTORER = 0x04000000  # set by libc on every sigaction it makes: not a difference


def _load_libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


LIBC = _load_libc()  # this process's C library: sigaction and environ


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
    dispositions: dict[int, bytes]  # per signal, the handler, mask and flags the kernel holds (libc's sigaction)


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


def _dispositions() -> dict[int, bytes]:
    """Each signal's handler as the kernel holds it (empty where libc's sigaction cannot be called)."""
    out: dict[int, bytes] = {}
    if LIBC is None or not hasattr(LIBC, "sigaction"):
        return out
    for sig in SIGNALS:
        buf = ctypes.create_string_buffer(SIGACTION_BYTES)
        if LIBC.sigaction(int(sig), None, buf) == 0:
            handler = int.from_bytes(buf.raw[:8], "little")
            flags = int.from_bytes(buf.raw[_KEPT[1]], "little") & ~SA_RESTORER
            # the default action and ignoring use neither mask nor flags (libc and Python set them differently)
            out[int(sig)] = buf.raw[:8] + bytes(12) if handler in (0, 1) else \
                buf.raw[_KEPT[0]] + flags.to_bytes(4, "little")
    return out


def c_environ() -> dict[bytes, bytes]:
    """The process's environment as C sees it (libc's `environ`), which os.environ does not follow."""
    try:
        env = ctypes.POINTER(ctypes.c_char_p).in_dll(LIBC, "environ")
    except (OSError, ValueError, TypeError):  # TypeError: no C library (LIBC None)
        return {}
    out: dict[bytes, bytes] = {}
    i = 0
    while env[i] is not None:
        key, _, value = env[i].partition(b"=")
        out[key] = value
        i += 1
    return out


def read() -> Settings:
    return Settings(sys.getrecursionlimit(), sys.getswitchinterval(), (gc.isenabled(), gc.get_threshold()),
                    tuple(warnings.filters), dict(vars(builtins)), tuple(sys.meta_path), tuple(sys.path_hooks),
                    tuple(sys.path), _limits(), _umask(), _handlers(),
                    {t: signal.getitimer(t) for t in TIMERS}, _dispositions())


def process_changes(base: Settings, now: Settings) -> list[str]:
    """What differs in the process's own part (what native code reaches without Python): one phrase each."""
    out = [f"the resource limit {name} to {now.limits.get(name)} (was {value})"
           for name, value in base.limits.items() if now.limits.get(name) != value]
    if now.umask != base.umask:
        out.append(f"the file-mode mask to {now.umask:#o} (was {base.umask:#o})")
    out += [f"the interval timer {_timer_name(t)} to {now.timers.get(t)} (was {v})"
            for t, v in base.timers.items() if now.timers.get(t) != v]
    out += [f"the handler of {_signal_name(sig)}" for sig, raw in base.dispositions.items()
            if now.dispositions.get(sig) != raw]
    return out


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:  # a real-time signal
        return f"signal {sig}"


def _timer_name(which: int) -> str:
    return {signal.ITIMER_REAL: "ITIMER_REAL", signal.ITIMER_VIRTUAL: "ITIMER_VIRTUAL",
            signal.ITIMER_PROF: "ITIMER_PROF"}.get(which, str(which))


def environ_changes(base: dict[bytes, bytes], now: dict[bytes, bytes]) -> list[str]:
    names = sorted(k.decode(errors="replace") for k in base.keys() | now.keys() if base.get(k) != now.get(k))
    return [f"the environment variable{'s' if len(names) > 1 else ''} {', '.join(names[:3])}"] if names else []


def restore_c_environ(base: dict[bytes, bytes]) -> None:
    """libc's environment (and os.environ with it) as `base`."""
    now = c_environ()
    for key in now.keys() - base.keys():
        os.unsetenv(key)
        os.environ.pop(key.decode(errors="surrogateescape"), None)
    for key, value in base.items():
        if now.get(key) != value:
            os.environ[key.decode(errors="surrogateescape")] = value.decode(errors="surrogateescape")


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
    _restore_dispositions(base.dispositions)
    now = _limits()
    for name, (soft, _hard) in base.limits.items():
        if name in now and now[name][0] != soft:
            try:
                resource.setrlimit(LIMITS[name], (soft, now[name][1]))
            except (OSError, ValueError):
                pass  # a hard limit now below it: the pair that lowered it retired its worker (`lowered_limits`)


def _restore_dispositions(base: dict[int, bytes]) -> None:
    """Handlers a native library installed behind Python's back, put back as the kernel held them."""
    now = _dispositions()
    for sig, kept in base.items():
        if LIBC is not None and now.get(sig) != kept:
            raw = bytearray(SIGACTION_BYTES)
            raw[_KEPT[0]], raw[_KEPT[1]] = kept[:16], kept[16:]
            LIBC.sigaction(sig, ctypes.create_string_buffer(bytes(raw), SIGACTION_BYTES), None)


def lowered_limits(base: Settings) -> list[str]:
    """The hard resource limits now below the worker's own: no later pair could have them back."""
    now = _limits()
    infinite = resource.RLIM_INFINITY
    return [f"lowered the hard limit {name} to {now[name][1]}" for name, (_soft, hard) in base.limits.items()
            if name in now and now[name][1] != hard and (hard == infinite or 0 <= now[name][1] < hard)]
