"""Extension builds that failed in the build step while the candidate went on: recorded there, replayed in the worker.

Many published kernels wrap `load_inline` in try/except and compute with PyTorch when their extension does not build
(CUDA-L1's H100 set on torch 2.11: `AT_DISPATCH_...(x.type(), ...)` no longer compiles, and several name functions
their C++ source never declares). The build step sees the build fail and the import succeed; without a record the
worker built the same sources again, in series, under the hang watch, and failed the same way (13-15 s a pair: 265 of
the 329 s that 34 CUDA-L1 level-1 pairs spent in workers on the H100). A compiler's diagnostic about the same build
file and sources comes back the same, so the worker raises the recorded error at once instead, and says so in the
pair's notes: such a candidate's verdict and speed are those of its fallback, not of its kernel.

The record never touches a folder a candidate can write: the build process reports its failures over its pipe (as
JSON, checked by the parent), the parent keeps them, and each pair's payload carries its own candidate's to the worker.

A build is known by its fingerprint: torch's generated build.ninja (compiler, flags, include paths, sources) with the
build folder's absolute path taken out (the build step and the worker may start it from different working
directories), and the contents of every source it compiles (torch writes their paths absolute)."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

BUILD_NOTE_EVENT = "kernelrl.kernelbench.build_failed"  # the audit event note_by_audit raises
FAILED_TO_BUILD = "failed to build"  # in every note this module writes: how a report finds such pairs
_COMPILED = re.compile(r"^build [^:\n]+: \S*compile (.+)$", re.MULTILINE)
_DIAGNOSTIC = re.compile(r"(?::\d+:\d+|\(\d+\)): (?:fatal )?error: ")  # g++'s file:line:col, nvcc's file(line)
_NOT_THE_SOURCES = ("Killed signal", "out of memory", "No space left", "Resource temporarily unavailable")
FIELDS = ("extension", "fingerprint", "error", "message")
_LIMITS = {"extension": 200, "fingerprint": 64, "error": 400, "message": 4000}


def deterministic(message: str) -> bool:
    """A compiler's diagnostic about the sources, not a compiler killed or starved while builds ran in parallel:
    only such a failure is replayed (another build of the same sources could succeed)."""
    return bool(_DIAGNOSTIC.search(message)) and not any(s in message for s in _NOT_THE_SOURCES)


def fingerprint(build_directory: str | os.PathLike) -> str:
    """What decides a build's outcome: the ninja file torch wrote and every source it compiles. OSError where a
    file cannot be read (then the build has no fingerprint: it is neither recorded nor replayed)."""
    folder = os.path.abspath(build_directory)
    text = Path(folder, "build.ninja").read_text(errors="replace")
    digest = hashlib.sha256()
    for source in _COMPILED.findall(text):  # from the file as written: absolute paths
        path = source.strip().replace("$ ", " ").replace("$:", ":")
        digest.update(Path(folder, path).read_bytes())  # Path(folder, absolute) is the absolute path
    for path in dict.fromkeys((os.path.realpath(folder), folder)):
        text = text.replace(path + os.sep, "<build>/").replace(path, "<build>")
    digest.update(text.encode())
    return digest.hexdigest()[:32]


def first_error(message: str) -> str:
    """The compiler's first error line, for a one-line note (the whole log stays in the build step's output)."""
    for line in message.splitlines():
        if _DIAGNOSTIC.search(line):
            return line.strip()[-240:]
    return message.strip().splitlines()[0][-240:] if message.strip() else "no compiler output"


def _clipped(message: str, limit: int = 4000) -> str:
    """torch's error line (its prefix names the extension) and the end of the compiler's output."""
    return message if len(message) <= limit else f"{message[:300]}\n[...]\n{message[-(limit - 300):]}"


def recording(original: Callable, failures: list[dict]) -> Callable:
    """A replacement for torch's `_run_ninja_build` (`original`) that appends each failed build with a fingerprint
    to `failures` and raises as before (the build process's; the candidate may catch the error)."""

    def run_ninja_build(build_directory, verbose, error_prefix):
        try:
            return original(build_directory, verbose, error_prefix)
        except RuntimeError as exc:
            if deterministic(str(exc)):
                try:
                    failures.append({"extension": Path(build_directory).name,
                                     "fingerprint": fingerprint(build_directory),
                                     "error": first_error(str(exc)), "message": _clipped(str(exc))})
                except OSError:  # no build file or source to know it by: the worker builds it again
                    pass
            raise

    return run_ninja_build


def checked(entries) -> list[dict]:
    """The build process's report as the parent keeps it: dicts of the known fields, strings of bounded length
    (the report crossed from a process that ran the candidate's code)."""
    out = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in FIELDS):
            out.append({k: entry[k][:_LIMITS[k]] for k in FIELDS})
    return out


def note_by_audit(note: str) -> None:
    """Tell the worker's audit hook (which keeps the pair's notes) of a failed build: the replacement below holds
    nothing that leads to the worker (a bound method of it in its closure did: corpus replaces_worker_judge)."""
    sys.audit(BUILD_NOTE_EVENT, note)


def replaying(original: Callable, known: list[dict], on_note: Callable[[str], None] = note_by_audit) -> Callable:
    """A replacement for torch's `_run_ninja_build` (the worker's). `known` holds the current pair's recorded
    failures (the worker refills it in place for each pair): a build with one's fingerprint raises that failure's
    error without running the compiler. Any failed build goes to `on_note` (the pair's notes), replayed or not: the
    candidate may catch it and run without it."""

    def run_ninja_build(build_directory, verbose, error_prefix):
        failures = {f["fingerprint"]: f for f in known}
        failure = None
        if failures:
            try:
                failure = failures.get(fingerprint(build_directory))
            except OSError:  # no build file or source to know it by: built as usual
                pass
        if failure is not None:
            on_note(f"extension {failure['extension']!r} {FAILED_TO_BUILD} in the build step ({failure['error']}); "
                    f"the worker raised that error again without compiling")
            raise RuntimeError(failure["message"])
        try:
            return original(build_directory, verbose, error_prefix)
        except RuntimeError as exc:
            on_note(f"extension {Path(build_directory).name!r} {FAILED_TO_BUILD} in the worker "
                    f"({first_error(str(exc))})")
            raise

    return run_ninja_build
